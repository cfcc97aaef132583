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

struct CudaMemoryStats {
  size_t allocated = 0;       // bytes handed out now
  size_t reserved = 0;        // bytes held from the driver (handed out + cached)
  size_t peak_allocated = 0;  // high-water mark of `allocated`
};
CudaMemoryStats cuda_memory_stats(int device);
// Restarts the high-water mark at what is allocated now (a benchmark's per-shape peak).
void cuda_reset_peak_memory(int device);
// Returns cached blocks to the driver.
void cuda_empty_cache();

}  // namespace ltx2
