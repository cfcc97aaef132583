// Event timing on the default stream of a device (see events.h).
#include "core/cuda/events.h"

#include <cuda_runtime.h>

#include "core/cuda/check.h"

namespace ltx2 {

void cuda_synchronize(int device) {
  LTX2_CUDA_CHECK(cudaSetDevice(device));
  LTX2_CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<float> cuda_time_each(int device, int iterations, const std::function<void()>& fn) {
  LTX2_CUDA_CHECK(cudaSetDevice(device));
  std::vector<cudaEvent_t> events(static_cast<size_t>(iterations) + 1);
  for (auto& e : events) LTX2_CUDA_CHECK(cudaEventCreate(&e));
  LTX2_CUDA_CHECK(cudaEventRecord(events[0], 0));
  for (int i = 0; i < iterations; ++i) {
    fn();
    LTX2_CUDA_CHECK(cudaEventRecord(events[i + 1], 0));
  }
  LTX2_CUDA_CHECK(cudaEventSynchronize(events.back()));
  std::vector<float> ms(iterations);
  for (int i = 0; i < iterations; ++i)
    LTX2_CUDA_CHECK(cudaEventElapsedTime(&ms[i], events[i], events[i + 1]));
  for (auto& e : events) cudaEventDestroy(e);
  return ms;
}

}  // namespace ltx2
