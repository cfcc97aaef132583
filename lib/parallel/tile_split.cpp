// Interval splitting and blend ramps for tiled computation.
#include "parallel/tile_split.h"

#include <algorithm>

#include "core/error.h"

namespace ltx2::parallel {

std::vector<AxisInterval> split_by_count(int64_t length, const AxisTiling& tiling) {
  const int64_t n = tiling.num_tiles, o = tiling.overlap;
  LTX2_CHECK(n >= 1 && o >= 0, "split_by_count: need num_tiles >= 1 and overlap >= 0, got {} and {}", n, o);
  LTX2_CHECK(n <= length, "split_by_count: {} tiles do not fit an axis of {} cells", n, length);
  if (n == 1) return {{0, length, 0, 0}};
  const int64_t total = length + o * (n - 1);
  const int64_t size = total / n, rem = total % n;
  LTX2_CHECK(size > o, "split_by_count: tiles of {} cells cannot overlap by {} ({} tiles over {} cells)",
             size, o, n, length);
  std::vector<AxisInterval> out;
  for (int64_t i = 0; i < n; ++i) {
    AxisInterval t;
    t.start = i * (size - o) + std::min(i, rem);
    t.stop = t.start + size + (i < rem ? 1 : 0);
    t.left_ramp = i > 0 ? o : 0;
    t.right_ramp = i < n - 1 ? o : 0;
    out.push_back(t);
  }
  return out;
}

std::vector<AxisInterval> split_by_count_causal(int64_t length, const AxisTiling& tiling) {
  std::vector<AxisInterval> out = split_by_count(length, tiling);
  for (size_t i = 1; i < out.size(); ++i) {
    out[i].start -= 1;
    out[i].left_ramp += 1;
  }
  return out;
}

std::vector<AxisInterval> split_axis(int64_t length, const AxisTiling& tiling, bool causal) {
  if (!tiling.is_tiled()) return {{0, length, 0, 0}};
  return causal ? split_by_count_causal(length, tiling) : split_by_count(length, tiling);
}

std::vector<float> trapezoidal_mask_1d(int64_t length, int64_t left, int64_t right, bool left_starts_from_0) {
  left = std::clamp<int64_t>(left, 0, length);
  right = std::clamp<int64_t>(right, 0, length);
  std::vector<float> m(static_cast<size_t>(length), 1.f);
  for (int64_t j = 0; j < left; ++j)
    m[j] *= left_starts_from_0 ? static_cast<float>(j) / static_cast<float>(left)
                               : static_cast<float>(j + 1) / static_cast<float>(left + 1);
  for (int64_t j = length - right; j < length; ++j)
    m[j] *= static_cast<float>(length - j) / static_cast<float>(right + 1);
  for (float& v : m) v = std::clamp(v, 0.f, 1.f);
  return m;
}

std::pair<int64_t, int64_t> balanced_tile_split(int64_t n) {
  LTX2_CHECK(n >= 1, "balanced_tile_split: need n >= 1, got {}", n);
  int64_t s = 1;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) s = d;
  return {s, n / s};
}

}  // namespace ltx2::parallel
