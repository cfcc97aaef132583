// Small helpers the GPU benches share: the median of device timings and bytes in GiB.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ltx2::bench_stats {

inline double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double gib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

}  // namespace ltx2::bench_stats
