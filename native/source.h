// Random-access byte sources for the decoders: a regular file (buffered pread) or a block of
// memory owned by the caller (a Node Buffer kept alive by the binding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace auris {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /** Size in bytes, fixed when the source was opened. */
  int64_t size() const { return size_; }
  /** Copies up to n bytes starting at off into dst; returns the count (0 at or past the end).
   *  Throws AudioError(IoError) when the operating system reports a read error. */
  virtual size_t readAt(int64_t off, void* dst, size_t n) = 0;

 protected:
  int64_t size_ = 0;
};

/** Opens a regular file read-only (never blocks on FIFOs/devices: they are refused). */
std::unique_ptr<ByteSource> openFileSource(const std::string& path);
/** Wraps caller-owned memory; the caller keeps it alive and unchanged while the source lives. */
std::unique_ptr<ByteSource> memorySource(const uint8_t* data, size_t size);

/** A sequential read position over a ByteSource (what libsndfile/libmpg123 callbacks need). */
class Cursor {
 public:
  explicit Cursor(ByteSource* src) : src_(src) {}
  size_t read(void* dst, size_t n) {
    size_t got = src_->readAt(pos_, dst, n);
    pos_ += static_cast<int64_t>(got);
    return got;
  }
  /** Like lseek: returns the new position, or -1 for a negative target/unknown whence. */
  int64_t seek(int64_t off, int whence);
  int64_t tell() const { return pos_; }
  int64_t size() const { return src_->size(); }

 private:
  ByteSource* src_;
  int64_t pos_ = 0;
};

}  // namespace auris
