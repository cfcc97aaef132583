// Caching device allocator: cudaMalloc is slow and synchronising, so freed blocks are kept per
// device in size-keyed free lists and handed out again. Sizes are rounded (512 B below 1 MiB,
// 2 MiB above) so that blocks are reusable across slightly different shapes. All work runs on one
// stream per device, so a freed block can be reused at once in stream order.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/cuda/check.h"
#include "core/cuda/memory.h"

namespace ltx2 {

namespace {

struct DevicePool {
  std::multimap<size_t, void*> free_blocks;       // size -> block
  std::unordered_map<void*, size_t> block_sizes;  // every block we got from the driver
  CudaMemoryStats stats;
};

std::mutex g_mutex;
std::map<int, DevicePool> g_pools;

size_t round_size(size_t bytes) {
  const size_t small = 512, large = 2u << 20;
  if (bytes < (1u << 20)) return (bytes + small - 1) / small * small;
  return (bytes + large - 1) / large * large;
}

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    LTX2_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) LTX2_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(prev_); }

 private:
  int prev_ = 0;
};

// Frees every cached block (the caller holds g_mutex and has the device current).
void release_cache(DevicePool& pool) {
  for (auto& [s, p] : pool.free_blocks) {
    cudaFree(p);
    pool.block_sizes.erase(p);
    pool.stats.reserved -= s;
  }
  pool.free_blocks.clear();
}

}  // namespace

void* cuda_alloc(size_t bytes, int device) {
  size_t size = round_size(bytes ? bytes : 1);
  std::lock_guard<std::mutex> lock(g_mutex);
  DevicePool& pool = g_pools[device];
  // Best fit, but never hand a block more than twice the request (it would strand memory).
  auto it = pool.free_blocks.lower_bound(size);
  void* ptr = nullptr;
  if (it != pool.free_blocks.end() && it->first <= 2 * size) {
    ptr = it->second;
    size = it->first;
    pool.free_blocks.erase(it);
  } else {
    DeviceGuard guard(device);
    const auto over_limit = [&] {
      return pool.stats.limit > 0 && pool.stats.reserved + size > pool.stats.limit;
    };
    cudaError_t err = over_limit() ? cudaErrorMemoryAllocation : cudaMalloc(&ptr, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear, release the cache and try once more
      release_cache(pool);
      err = over_limit() ? cudaErrorMemoryAllocation : cudaMalloc(&ptr, size);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      LTX2_FAIL("out of GPU memory on cuda:{} allocating {} MiB ({} MiB in use{})", device, bytes >> 20,
                pool.stats.allocated >> 20,
                pool.stats.limit > 0 ? fmt::format(", limit {} MiB", pool.stats.limit >> 20) : "");
    }
    pool.block_sizes[ptr] = size;
    pool.stats.reserved += size;
    pool.stats.peak_reserved = std::max(pool.stats.peak_reserved, pool.stats.reserved);
  }
  pool.stats.allocated += size;
  pool.stats.peak_allocated = std::max(pool.stats.peak_allocated, pool.stats.allocated);
  return ptr;
}

void cuda_free(void* ptr, int device) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  DevicePool& pool = g_pools[device];
  auto it = pool.block_sizes.find(ptr);
  if (it == pool.block_sizes.end()) return;
  pool.stats.allocated -= it->second;
  pool.free_blocks.emplace(it->second, ptr);
}

CudaMemoryStats cuda_memory_stats(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_pools[device].stats;
}

void cuda_reset_peak_memory(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DevicePool& pool = g_pools[device];
  pool.stats.peak_allocated = pool.stats.allocated;
  pool.stats.peak_reserved = pool.stats.reserved;
}

void cuda_empty_cache() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& [device, pool] : g_pools) {
    DeviceGuard guard(device);
    release_cache(pool);
  }
}

void cuda_set_memory_limit(int device, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_pools[device].stats.limit = bytes;
}

CudaDeviceMemory cuda_device_memory(int device) {
  DeviceGuard guard(device);
  CudaDeviceMemory m;
  LTX2_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

int cuda_compute_capability(int device) {
  int major = 0, minor = 0;
  LTX2_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  LTX2_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

void cuda_memset_zero(void* ptr, size_t bytes, int device) {
  DeviceGuard guard(device);
  LTX2_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, 0));
}

void cuda_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  int device = dst_device.is_cuda() ? dst_device.index : src_device.index;
  DeviceGuard guard(device);
  if (dst_device.is_cpu()) {
    LTX2_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  } else if (src_device.is_cpu()) {
    LTX2_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  } else {
    LTX2_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
  }
}

const char* cublas_status_string(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR: return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "unknown status";
  }
}

}  // namespace ltx2
