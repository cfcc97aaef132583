// Device synchronisation and event timing, for benchmarks and tests (no op synchronises itself).
// With the CUDA backend they use the device's stream (core/cuda/events.cpp); in a CPU-only build
// (core/device.cpp) they throw a clear "built without CUDA" error.
#pragma once

#include <functional>
#include <vector>

namespace ltx2 {

// Waits until all work queued on the device has finished.
void cuda_synchronize(int device);
// Runs fn `iterations` times on the device's stream, each run bracketed by events, and returns each
// run's device time in milliseconds (synchronises once at the end).
std::vector<float> cuda_time_each(int device, int iterations, const std::function<void()>& fn);

}  // namespace ltx2
