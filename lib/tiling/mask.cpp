// Trapezoid blend masks in the reference's two float formulations.
#include "tiling/mask.h"

#include <algorithm>

namespace ltx2::tiling {

namespace {

// torch.linspace(start, end, steps) in float32 (steps >= 2): the step is applied from the nearer
// end, as torch does, so both endpoints are exact.
std::vector<float> linspace(float start, float end, int64_t steps) {
  std::vector<float> v(static_cast<size_t>(steps));
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    v[i] = i < half ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - 1 - i);
  return v;
}

void apply_linspace_ramps(std::vector<float>& m, int64_t left, int64_t right, bool starts_from_zero) {
  const auto n = static_cast<int64_t>(m.size());
  if (left > 0) {
    const std::vector<float> ramp = linspace(0.f, 1.f, starts_from_zero ? left + 1 : left + 2);
    const int64_t first = starts_from_zero ? 0 : 1;
    for (int64_t i = 0; i < std::min(left, n); ++i) m[i] *= ramp[first + i];
  }
  if (right > 0) {
    const std::vector<float> ramp = linspace(1.f, 0.f, right + 2);
    for (int64_t i = 0; i < right; ++i)
      if (n - right + i >= 0) m[n - right + i] *= ramp[1 + i];
  }
}

void apply_fraction_ramps(std::vector<float>& m, int64_t left, int64_t right, bool starts_from_zero) {
  const auto n = static_cast<int64_t>(m.size());
  left = std::clamp<int64_t>(left, 0, n);
  right = std::clamp<int64_t>(right, 0, n);
  for (int64_t j = 0; j < left; ++j)
    m[j] *= starts_from_zero ? static_cast<float>(j) / static_cast<float>(left)
                             : static_cast<float>(j + 1) / static_cast<float>(left + 1);
  for (int64_t j = n - right; j < n; ++j) m[j] *= static_cast<float>(n - j) / static_cast<float>(right + 1);
}

}  // namespace

std::vector<float> trapezoid_mask(int64_t n, int64_t left, int64_t right, bool left_starts_from_zero,
                                  RampValues values) {
  std::vector<float> m(static_cast<size_t>(n), 1.f);
  if (values == RampValues::Linspace)
    apply_linspace_ramps(m, left, right, left_starts_from_zero);
  else
    apply_fraction_ramps(m, left, right, left_starts_from_zero);
  for (float& v : m) v = std::clamp(v, 0.f, 1.f);
  return m;
}

std::vector<float> outer_product_mask(const std::array<std::vector<float>, 3>& masks) {
  std::vector<float> out;
  out.reserve(masks[0].size() * masks[1].size() * masks[2].size());
  for (float f : masks[0])
    for (float h : masks[1])
      for (float w : masks[2]) out.push_back(f * h * w);
  return out;
}

}  // namespace ltx2::tiling
