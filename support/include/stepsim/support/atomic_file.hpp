#pragma once
// Writing files all or none: every file is first written to a temporary file next to it
// ("<file>.tmp<pid>"), and only when all of them are written are they renamed onto their
// targets, so a reader never sees a partial file.

#include <optional>
#include <string>
#include <vector>

namespace stepsim::support {

struct FileText {
  std::string file;
  std::string text;
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
// and the failure is returned.
[[nodiscard]] std::optional<WriteFailure> write_files_atomically(const std::vector<FileText>& files);

}  // namespace stepsim::support
