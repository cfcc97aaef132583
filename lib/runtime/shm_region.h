// ShmRegion: one shared-memory object mapped into this process.
//
// The object is a memfd: it never has a name in /dev/shm, so nothing can be left there whatever
// happens, even if every process is SIGKILLed; its size is sealed once reserved, so no process
// holding it can shrink it under another's mapping. Other processes get it through an inherited
// descriptor: the launcher passes it to each worker as descriptor kWorkerRegionFd. The memory
// lives until the last mapping and descriptor are gone. Mappings are populated up front
// (MAP_POPULATE): page faults then cost once at start, not on the streaming path.
#pragma once

#include <cstddef>
#include <string>

namespace ltx2::runtime {

// The descriptor number a worker finds its fleet region on.
constexpr int kWorkerRegionFd = 3;

class ShmRegion {
 public:
  ShmRegion() = default;
  // Creates an anonymous object labelled `name` (as /proc/<pid>/fd shows it), reserves `bytes`
  // for it (so a lack of memory is an error here, not a SIGBUS later), seals its size and maps it
  // zero-filled. Keeps a close-on-exec descriptor for handing to workers.
  static ShmRegion create(const std::string& name, size_t bytes);
  // Maps the object behind an inherited descriptor (and closes the descriptor).
  static ShmRegion adopt(int fd);
  ~ShmRegion();
  ShmRegion(ShmRegion&& o) noexcept;
  ShmRegion& operator=(ShmRegion&& o) noexcept;
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // The creator's descriptor (-1 for an adopted region).
  int fd() const { return fd_; }

 private:
  void release();
  void* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace ltx2::runtime
