// ShmRegion: one POSIX shared-memory object mapped into this process (create or open by name).
//
// The creator owns the name: it unlinks it when asked (the fleet does so as soon as every worker
// has mapped it, so nothing is left in /dev/shm even if every process is later killed) and, at the
// latest, when the region is destroyed. Openers never unlink. The mapping outlives the name.
#pragma once

#include <cstddef>
#include <string>

namespace ltx2::runtime {

class ShmRegion {
 public:
  ShmRegion() = default;
  // Creates a new object (fails if the name exists), reserves `bytes` of memory for it (so a full
  // /dev/shm is an error here, not a SIGBUS later) and maps it zero-filled.
  static ShmRegion create(const std::string& name, size_t bytes);
  static ShmRegion open(const std::string& name);
  ~ShmRegion();
  ShmRegion(ShmRegion&& o) noexcept;
  ShmRegion& operator=(ShmRegion&& o) noexcept;
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // Removes the name (creator only; idempotent). The mapping stays valid.
  void unlink();

 private:
  void release();
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owner_ = false;
};

}  // namespace ltx2::runtime
