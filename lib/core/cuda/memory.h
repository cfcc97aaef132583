// Device memory hooks used by core/tensor.cpp. With the CUDA backend they go to the caching
// allocator and the copy engine (core/cuda/*.cpp, *.cu); in a CPU-only build (core/device.cpp)
// each one throws a clear "built without CUDA" error.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace ltx2 {

class Tensor;

void* cuda_alloc(size_t bytes, int device);
void cuda_free(void* ptr, int device);
void cuda_memset_zero(void* ptr, size_t bytes, int device);
// Copies bytes between any two places, at least one of them on a GPU; ordered on the current
// stream of the device involved, and complete on return when the destination is the host.
void cuda_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
// dst.copy_(src) for two GPU tensors of the same shape: any strides, any dtype conversion.
void cuda_copy_strided(const Tensor& dst, const Tensor& src);
// The same with every value multiplied by `scale` in float32 before it is stored (to dequantize).
void cuda_copy_scaled(const Tensor& dst, const Tensor& src, float scale);

struct CudaMemoryStats {
  size_t allocated = 0;       // bytes handed out now
  size_t reserved = 0;        // bytes held from the driver (handed out + cached)
  size_t peak_allocated = 0;  // high-water mark of `allocated`
  size_t peak_reserved = 0;   // high-water mark of `reserved`
  size_t limit = 0;           // cap on `reserved` (0: none; see cuda_set_memory_limit)
};
CudaMemoryStats cuda_memory_stats(int device);
// Restarts the high-water marks at what is allocated / reserved now (a phase's or shape's peak).
void cuda_reset_peak_memory(int device);
// Returns cached blocks to the driver.
void cuda_empty_cache();
// Caps the bytes the allocator holds from the driver on `device` (0 lifts the cap): an allocation
// that would exceed it fails as an out-of-memory would (after the cache is returned). This is how a
// smaller GPU is stood in for (`--gpu-memory`); the CUDA context and libraries' own workspaces are
// outside it.
void cuda_set_memory_limit(int device, size_t bytes);

// The device's memory as the driver reports it (cudaMemGetInfo).
struct CudaDeviceMemory {
  size_t total = 0, free = 0;
};
CudaDeviceMemory cuda_device_memory(int device);
// The device's compute capability as major * 10 + minor (90 for Hopper).
int cuda_compute_capability(int device);

// Reads `bytes` at `offset` of the open file `fd` into device memory `dst` on `device` through
// pinned staging buffers: chunks are read with pread (several threads for a large range) and each
// chunk's host-to-device copy is queued on the device's stream as soon as it is read, so the file
// reads and the PCIe transfers overlap and nothing page-faults through a mapping. Returns once every
// chunk is read and queued; the copies complete in stream order (work queued after sees the data).
// Throws naming `what` (the tensor) on a short read.
void cuda_upload_from_file(int fd, uint64_t offset, size_t bytes, void* dst, int device, const char* what);

}  // namespace ltx2
