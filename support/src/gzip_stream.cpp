#include "stepsim/support/gzip_stream.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include <zlib.h>

namespace stepsim::support {

class GzipOstream::Buffer : public std::streambuf {
 public:
  explicit Buffer(std::ostream& out) : out_(out) {
    // windowBits 15 + 16: a gzip wrapper with a zero time stamp and no name.
    if (deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("zlib: cannot start compression");
    setp(in_.data(), in_.data() + in_.size());
  }
  ~Buffer() override { deflateEnd(&z_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void finish() {
    if (finished_) return;
    deflate_pending(Z_FINISH);
    finished_ = true;
  }

 protected:
  int_type overflow(int_type ch) override {
    deflate_pending(Z_NO_FLUSH);
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return 0; }

 private:
  // Compresses the buffered input; with Z_FINISH also ends the stream.
  void deflate_pending(int flush) {
    if (finished_) throw std::runtime_error("zlib: write after the end of the compressed stream");
    z_.next_in = reinterpret_cast<Bytef*>(pbase());
    z_.avail_in = static_cast<uInt>(pptr() - pbase());
    int rc = Z_OK;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(out_buf_.data());
      z_.avail_out = static_cast<uInt>(out_buf_.size());
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) throw std::runtime_error("zlib: compression failed");
      out_.write(out_buf_.data(), static_cast<std::streamsize>(out_buf_.size() - z_.avail_out));
      if (!out_) throw std::runtime_error("cannot write the compressed output");
    } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    setp(in_.data(), in_.data() + in_.size());
  }

  std::ostream& out_;
  z_stream z_{};
  std::array<char, 1 << 16> in_{};
  std::array<char, 1 << 16> out_buf_{};
  bool finished_ = false;
};

GzipOstream::GzipOstream(std::ostream& sink) : std::ostream(nullptr), buffer_(std::make_unique<Buffer>(sink)) { rdbuf(buffer_.get()); }

GzipOstream::~GzipOstream() = default;

void GzipOstream::finish() {
  flush();
  buffer_->finish();
}

bool gzip_file_name(const std::string& file) { return file.size() > 3 && file.compare(file.size() - 3, 3, ".gz") == 0; }

}  // namespace stepsim::support
