// Shared-memory create/adopt/map (see shm_region.h).
#include "runtime/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace ltx2::runtime {

ShmRegion ShmRegion::create(const std::string& name, size_t bytes) {
  LTX2_CHECK(bytes > 0, "shared memory {}: size must be positive", name);
  const std::string label = name.empty() || name[0] != '/' ? name : name.substr(1);
  const int fd = memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  LTX2_CHECK(fd >= 0, "shared memory {}: memfd_create failed: {}", name, std::strerror(errno));
  ShmRegion r;
  r.fd_ = fd;  // from here on the destructor closes it
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  LTX2_CHECK(rc == 0, "shared memory {}: cannot reserve {} MiB: {}", name, bytes >> 20, std::strerror(rc));
  // Sealed at its size: a process holding the descriptor (a worker, a bug) cannot shrink it under
  // another's mapping, which would make that process's next access a SIGBUS.
  LTX2_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0,
             "shared memory {}: cannot seal its size: {}", name, std::strerror(errno));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  LTX2_CHECK(p != MAP_FAILED, "shared memory {}: mmap of {} bytes failed: {}", name, bytes,
             std::strerror(errno));
  r.data_ = p;
  r.size_ = bytes;
  return r;
}

ShmRegion ShmRegion::adopt(int fd) {
  struct stat st {};
  const bool sized = fstat(fd, &st) == 0 && st.st_size > 0;
  void* p = sized ? mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, fd, 0)
                  : MAP_FAILED;
  const int err = errno;
  close(fd);
  LTX2_CHECK(sized, "shared memory on descriptor {}: not a shared-memory object", fd);
  LTX2_CHECK(p != MAP_FAILED, "shared memory on descriptor {}: mmap failed: {}", fd, std::strerror(err));
  ShmRegion r;
  r.data_ = p;
  r.size_ = static_cast<size_t>(st.st_size);
  return r;
}

ShmRegion::~ShmRegion() {
  release();
}

ShmRegion::ShmRegion(ShmRegion&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      fd_(std::exchange(o.fd_, -1)) {}

ShmRegion& ShmRegion::operator=(ShmRegion&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void ShmRegion::release() {
  if (data_) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

}  // namespace ltx2::runtime
