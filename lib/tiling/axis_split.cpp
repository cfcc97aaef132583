// The axis splits by size and by count, and their causal variant.
#include "tiling/axis_split.h"

#include <algorithm>

#include "core/error.h"

namespace ltx2::tiling {

namespace {

std::vector<Interval> split_by_size(int64_t length, int64_t size, int64_t overlap, int64_t min_tile) {
  LTX2_CHECK(size > overlap && overlap >= 0 && length > 0, "tile split: size {} overlap {} length {}", size,
             overlap, length);
  if (length <= size || length < min_tile) return {{0, length, 0, 0}};
  const int64_t stride = size - overlap;
  const int64_t n = (length + size - 2 * overlap - 1) / stride;
  std::vector<Interval> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back({i * stride, i == n - 1 ? length : std::min(length, i * stride + size),
                   i == 0 ? 0 : overlap, i == n - 1 ? 0 : overlap});
  Interval& last = out.back();
  if (out.size() > 1 && last.length() < min_tile) {
    last.start = last.stop - min_tile;
    last.left_ramp = out[out.size() - 2].right_ramp = out[out.size() - 2].stop - last.start;
  }
  return out;
}

std::vector<Interval> split_by_count(int64_t length, int64_t n, int64_t o) {
  LTX2_CHECK(n >= 1 && o >= 0, "split_by_count: need num_tiles >= 1 and overlap >= 0, got {} and {}", n, o);
  LTX2_CHECK(n <= length, "split_by_count: {} tiles do not fit an axis of {} cells", n, length);
  if (n == 1) return {{0, length, 0, 0}};
  const int64_t total = length + o * (n - 1);
  const int64_t size = total / n, rem = total % n;
  LTX2_CHECK(size > o, "split_by_count: tiles of {} cells cannot overlap by {} ({} tiles over {} cells)",
             size, o, n, length);
  std::vector<Interval> out;
  for (int64_t i = 0; i < n; ++i) {
    Interval t;
    t.start = i * (size - o) + std::min(i, rem);
    t.stop = t.start + size + (i < rem ? 1 : 0);
    t.left_ramp = i > 0 ? o : 0;
    t.right_ramp = i < n - 1 ? o : 0;
    out.push_back(t);
  }
  return out;
}

}  // namespace

AxisTiling AxisTiling::by_size(int64_t size, int64_t overlap, int64_t min_tile) {
  if (size == 0) return {};
  return {By::Size, size, overlap, min_tile};
}

AxisTiling AxisTiling::by_count(int64_t tiles, int64_t overlap) {
  return {By::Count, tiles, overlap};
}

std::vector<Interval> split_axis(int64_t length, const AxisTiling& tiling, bool causal) {
  std::vector<Interval> out;
  switch (tiling.by) {
    case AxisTiling::By::Untiled: return {{0, length, 0, 0}};
    case AxisTiling::By::Size:
      out = split_by_size(length, tiling.value, tiling.overlap, tiling.min_tile);
      break;
    case AxisTiling::By::Count: out = split_by_count(length, tiling.value, tiling.overlap); break;
  }
  if (causal)
    for (size_t i = 1; i < out.size(); ++i) {
      out[i].start -= 1;
      out[i].left_ramp += 1;
    }
  return out;
}

std::pair<int64_t, int64_t> balanced_tile_split(int64_t n) {
  LTX2_CHECK(n >= 1, "balanced_tile_split: need n >= 1, got {}", n);
  int64_t s = 1;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) s = d;
  return {s, n / s};
}

}  // namespace ltx2::tiling
