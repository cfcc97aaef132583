// 1-D tile geometry shared by tiled data parallelism and the distributed VAE decoder
// (multigpu.md 4.1-4.3): splitting an axis into n overlapping intervals, the causal temporal
// variant, trapezoidal blend ramps, and the balanced 2-D factorisation of a rank count.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ltx2::parallel {

struct AxisTiling {
  int64_t num_tiles = 1;
  int64_t overlap = 0;
  bool is_tiled() const { return num_tiles > 1 || overlap > 0; }
};

struct AxisInterval {
  int64_t start = 0, stop = 0;  // [start, stop)
  int64_t left_ramp = 0, right_ramp = 0;
  int64_t length() const { return stop - start; }
};

// n intervals over [0, length) sharing exactly `overlap` cells between neighbours; the first
// (total mod n) intervals are one cell longer. n == 1 gives the whole axis without ramps.
std::vector<AxisInterval> split_by_count(int64_t length, const AxisTiling& tiling);
// As split_by_count, then every interval after the first starts one cell earlier with a left
// ramp one longer (causal video VAE: the extra latent frame only primes the decoder).
std::vector<AxisInterval> split_by_count_causal(int64_t length, const AxisTiling& tiling);
// The whole axis when untiled, else split_by_count (or its causal variant).
std::vector<AxisInterval> split_axis(int64_t length, const AxisTiling& tiling, bool causal);

// Per-cell weights: 1 inside, ramping up over the first `left` cells ((j+1)/(left+1), or j/left
// when left_starts_from_0) and down over the last `right` cells ((length-j)/(right+1)).
std::vector<float> trapezoidal_mask_1d(int64_t length, int64_t left, int64_t right,
                                       bool left_starts_from_0 = false);

// (s, n / s) with s the largest divisor of n not above sqrt(n).
std::pair<int64_t, int64_t> balanced_tile_split(int64_t n);

}  // namespace ltx2::parallel
