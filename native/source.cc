#include "source.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"

namespace auris {

namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, int64_t size) : fd_(fd) { size_ = size; }
  ~FileSource() override { ::close(fd_); }

  size_t readAt(int64_t off, void* dst, size_t n) override {
    if (off < 0 || off >= size_ || n == 0) return 0;
    if (static_cast<uint64_t>(n) > static_cast<uint64_t>(size_ - off)) n = static_cast<size_t>(size_ - off);
    // Small reads (libsndfile asks for a few KB at a time) are served from a read-ahead block.
    if (n >= kBlock) return preadFully(off, dst, n);
    if (off < cacheOff_ || off + static_cast<int64_t>(n) > cacheOff_ + static_cast<int64_t>(cacheLen_)) {
      if (cache_.empty()) cache_.resize(kBlock);
      cacheOff_ = off;
      cacheLen_ = preadFully(off, cache_.data(), kBlock);
      if (off + static_cast<int64_t>(n) > cacheOff_ + static_cast<int64_t>(cacheLen_))
        n = static_cast<size_t>(cacheOff_ + static_cast<int64_t>(cacheLen_) - off);
    }
    std::memcpy(dst, cache_.data() + (off - cacheOff_), n);
    return n;
  }

 private:
  static constexpr size_t kBlock = 256 * 1024;

  size_t preadFully(int64_t off, void* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(off + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        fail(ErrorCode::IoError, std::string("read error: ") + std::strerror(errno));
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  int fd_;
  std::vector<uint8_t> cache_;
  int64_t cacheOff_ = 0;
  size_t cacheLen_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data) { size_ = static_cast<int64_t>(size); }
  size_t readAt(int64_t off, void* dst, size_t n) override {
    if (off < 0 || off >= size_ || n == 0) return 0;
    if (static_cast<uint64_t>(n) > static_cast<uint64_t>(size_ - off)) n = static_cast<size_t>(size_ - off);
    std::memcpy(dst, data_ + off, n);
    return n;
  }

 private:
  const uint8_t* data_;
};

}  // namespace

std::unique_ptr<ByteSource> openFileSource(const std::string& path) {
  if (path.empty()) fail(ErrorCode::InvalidArgument, "path must be a non-empty string");
  if (path.find('\0') != std::string::npos) fail(ErrorCode::InvalidArgument, "path contains a NUL character");
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    fail(ErrorCode::IoError, "cannot open '" + path + "': " + std::strerror(e));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(ErrorCode::IoError, "cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::IoError, "'" + path + "' is not a regular file");
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return std::make_unique<FileSource>(fd, static_cast<int64_t>(st.st_size));
}

std::unique_ptr<ByteSource> memorySource(const uint8_t* data, size_t size) {
  return std::make_unique<MemorySource>(data, size);
}

int64_t Cursor::seek(int64_t off, int whence) {
  int64_t base;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = pos_; break;
    case SEEK_END: base = src_->size(); break;
    default: return -1;
  }
  if ((off > 0 && base > INT64_MAX - off) || (off < 0 && base + off < 0)) return -1;
  int64_t target = base + off;
  pos_ = target;
  return pos_;
}

}  // namespace auris
