// A tile's blend weights along one axis: ones with a rising ramp over its first `left` cells and a
// falling one over its last `right` cells, so that where neighbouring tiles overlap their weights
// sum to one. The reference computes the ramp values in two ways, and each caller reproduces its
// own: torch.linspace in the single-process tiled decode (tiling.py), exact fractions in the
// multi-GPU wrappers (multigpu.md 4.3). They agree to a float rounding.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace ltx2::tiling {

enum class RampValues {
  Linspace,   // linspace(0, 1, left + 2)[1:-1] (or linspace(0, 1, left + 1)[:-1] from zero) and
              // linspace(1, 0, right + 2)[1:-1], as torch computes them in float32
  Fractions,  // (j + 1) / (left + 1) (or j / left from zero) and (n - j) / (right + 1)
};

// n weights; the left ramp starts at exactly 0 when left_starts_from_zero (the causal time axis,
// whose first frame only primes the decoder). Clamped to [0, 1].
std::vector<float> trapezoid_mask(int64_t n, int64_t left, int64_t right, bool left_starts_from_zero,
                                  RampValues values);

// Row-major outer product m[0][i] * m[1][j] * m[2][k]: a 3-D tile's weights.
std::vector<float> outer_product_mask(const std::array<std::vector<float>, 3>& masks);

}  // namespace ltx2::tiling
