#pragma once
// Writing files all or none: every file is first written to a temporary file next to it
// ("<file>.tmp<pid>"), and only when all of them are written are they renamed onto their
// targets, so a reader never sees a partial file. A symlink is written through (the temporary
// goes next to the file it points to, and the link stays); a target that exists and is neither a
// regular file nor a directory (/dev/null, a FIFO, /dev/stdout) is written in place, after every
// temporary is ready. Temporaries of the same target left by processes that no longer run
// (killed while writing) are removed. A file's content is either a text or a writer that streams
// it (a large file is never held in memory).

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::support {

// Streams a file's content into `out` (the temporary file, or the target itself when it is written
// in place); it may throw, and the temporary is then removed and the exception passed on.
using ContentWriter = std::function<void(std::ostream& out)>;

struct FileText {
  FileText(std::string file_name, std::string content) : file(std::move(file_name)), text(std::move(content)) {}
  FileText(std::string file_name, ContentWriter writer) : file(std::move(file_name)), write(std::move(writer)) {}
  std::string file;
  std::string text;
  ContentWriter write;  // when set, the content, called once; `text` is then unused
};


// Why a write failed, for the caller to word its own message.
struct WriteFailure {
  enum class Reason {
    NamedTwice,   // two entries name the same file
    CannotWrite,  // the temporary file could not be written
    IsDirectory,  // the target is a directory
    CannotRename  // the rename onto the target failed (detail: the system's message)
  };
  std::string file;
  Reason reason = Reason::CannotWrite;
  std::string detail;
};

// Writes every file or none. On failure the temporary files are removed, targets renamed before
// the failure keep their new text (a rename is the last step, so this needs a failing rename),
// and the failure is returned. An exception from a writer removes the temporaries and is rethrown.
[[nodiscard]] std::optional<WriteFailure> write_files_atomically(const std::vector<FileText>& files);

}  // namespace stepsim::support
