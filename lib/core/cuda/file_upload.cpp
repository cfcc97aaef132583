// File bytes straight into device memory through pinned staging buffers (memory.h,
// cuda_upload_from_file).
//
// Why not the mapping: a tensor copied to the GPU out of an mmap'd checkpoint goes through pageable
// memory (the driver stages it again) and page-faults 4 KiB at a time, which held a 64 GB model set
// to ~5 GB/s. Here the file is read with pread into page-locked buffers and each buffer's copy is
// queued asynchronously, so the reads (several threads for a large tensor) and the PCIe transfers
// overlap.
//
// Staging: per device a ring of kSlots pinned buffers of kChunkBytes, each with an event recorded
// after its copy. A chunk takes the next slot (round-robin under the ring's mutex), waits for the
// slot's previous copy to finish, reads into it, queues its copy on the legacy default stream (the
// stream every op runs on, so later work sees the data) and records the slot's event. The buffers
// live until the process ends (page-locking is slow to set up; 128 MiB per device). Chunks are small
// so that one 32-128 MiB weight keeps every reading thread busy.
#include <cuda_runtime.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cuda/check.h"
#include "core/cuda/memory.h"
#include "core/error.h"

namespace ltx2 {

namespace {

constexpr size_t kChunkBytes = 4u << 20;
constexpr int kSlots = 32;
constexpr int kMaxThreads = 16;

struct Slot {
  void* host = nullptr;
  cudaEvent_t copied = nullptr;
  std::mutex in_use;  // held while a chunk reads into the buffer and queues its copy
};

class StagingRing {
 public:
  explicit StagingRing(int device) : device_(device) {
    LTX2_CUDA_CHECK(cudaSetDevice(device));
    for (Slot& s : slots_) {
      LTX2_CUDA_CHECK(cudaHostAlloc(&s.host, kChunkBytes, cudaHostAllocPortable));
      LTX2_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    }
  }
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // Reads [offset, offset + bytes) of fd (bytes <= kChunkBytes) into dst through the next slot.
  void upload_chunk(int fd, uint64_t offset, size_t bytes, char* dst, const char* what) {
    Slot& slot = next_slot();
    std::lock_guard<std::mutex> hold(slot.in_use);
    LTX2_CUDA_CHECK(cudaSetDevice(device_));
    LTX2_CUDA_CHECK(cudaEventSynchronize(slot.copied));  // its previous copy has left the buffer
    char* host = static_cast<char*>(slot.host);
    size_t done = 0;
    while (done < bytes) {
      const ssize_t n = ::pread(fd, host + done, bytes - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      LTX2_CHECK(n > 0, "{}: reading {} bytes at offset {} failed: {}", what, bytes - done, offset + done,
                 n < 0 ? std::strerror(errno) : "end of file");
      done += static_cast<size_t>(n);
    }
    LTX2_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, 0));
    LTX2_CUDA_CHECK(cudaEventRecord(slot.copied, 0));
  }

 private:
  Slot& next_slot() {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& s = slots_[static_cast<size_t>(next_)];
    next_ = (next_ + 1) % kSlots;
    return s;
  }

  int device_;
  std::mutex mutex_;
  int next_ = 0;
  Slot slots_[kSlots];
};

StagingRing& ring_for(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<StagingRing>> rings;
  std::lock_guard<std::mutex> lock(mutex);
  auto& r = rings[device];
  if (!r) r = std::make_unique<StagingRing>(device);
  return *r;
}

}  // namespace

void cuda_upload_from_file(int fd, uint64_t offset, size_t bytes, void* dst, int device, const char* what) {
  if (bytes == 0) return;
  StagingRing& ring = ring_for(device);
  char* out = static_cast<char*>(dst);
  const auto chunks = static_cast<int64_t>((bytes + kChunkBytes - 1) / kChunkBytes);
  const int threads = static_cast<int>(std::min<int64_t>({chunks, kMaxThreads, omp_get_max_threads()}));
  // The first error of any thread is rethrown here (an exception may not leave an OpenMP region).
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunkBytes, n = std::min(kChunkBytes, bytes - begin);
    try {
      ring.upload_chunk(fd, offset + begin, n, out + begin, what);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace ltx2
