#pragma once
// A gzip file streamed through zlib: what is written to a GzipOstream reaches the underlying
// stream compressed, a block at a time (the whole text is never held in memory). The header
// carries no time stamp or name, so equal input gives equal bytes.

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace stepsim::support {

class GzipOstream : public std::ostream {
 public:
  explicit GzipOstream(std::ostream& sink);
  ~GzipOstream() override;
  GzipOstream(const GzipOstream&) = delete;
  GzipOstream& operator=(const GzipOstream&) = delete;
  // Writes what is pending and the gzip trailer; throws std::runtime_error when zlib fails or
  // the underlying stream does. Nothing may be written after it.
  void finish();

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
};

// Whether a file name asks for gzip ("trace.json.gz").
[[nodiscard]] bool gzip_file_name(const std::string& file);

}  // namespace stepsim::support
