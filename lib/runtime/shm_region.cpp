// POSIX shm create/open/map/unlink (see shm_region.h).
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
namespace {

void* map_fd(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  LTX2_CHECK(p != MAP_FAILED, "shared memory {}: mmap of {} bytes failed: {}", name, bytes,
             std::strerror(errno));
  return p;
}

}  // namespace

ShmRegion ShmRegion::create(const std::string& name, size_t bytes) {
  LTX2_CHECK(bytes > 0, "shared memory {}: size must be positive", name);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  LTX2_CHECK(fd >= 0, "shared memory {}: shm_open failed: {}", name, std::strerror(errno));
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    shm_unlink(name.c_str());
    LTX2_FAIL("shared memory {}: cannot reserve {} MiB in /dev/shm: {}", name, bytes >> 20,
              std::strerror(rc));
  }
  ShmRegion r;
  r.name_ = name;
  r.owner_ = true;
  r.size_ = bytes;
  try {
    r.data_ = map_fd(fd, bytes, name);
  } catch (...) {
    close(fd);
    shm_unlink(name.c_str());
    throw;
  }
  close(fd);
  return r;
}

ShmRegion ShmRegion::open(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  LTX2_CHECK(fd >= 0, "shared memory {}: cannot open: {}", name, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    LTX2_FAIL("shared memory {}: cannot read its size", name);
  }
  ShmRegion r;
  r.name_ = name;
  r.size_ = static_cast<size_t>(st.st_size);
  try {
    r.data_ = map_fd(fd, r.size_, name);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return r;
}

ShmRegion::~ShmRegion() {
  release();
}

ShmRegion::ShmRegion(ShmRegion&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      name_(std::move(o.name_)),
      owner_(std::exchange(o.owner_, false)) {}

ShmRegion& ShmRegion::operator=(ShmRegion&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    name_ = std::move(o.name_);
    owner_ = std::exchange(o.owner_, false);
  }
  return *this;
}

void ShmRegion::unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

void ShmRegion::release() {
  unlink();
  if (data_) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace ltx2::runtime
