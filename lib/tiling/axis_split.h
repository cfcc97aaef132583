// How one axis of a grid is cut into overlapping tiles: the one tiling rule of the single-process
// tiled decode (tiling.py's split_by_size: tiles of a given size), tiled data parallelism and the
// distributed decode (the multi-GPU wrappers' split_by_count: a given number of tiles), and the
// causal variant of the video VAE's time axis. Lengths, sizes and overlaps are in cells of the
// axis being split (latent cells for every caller today).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ltx2::tiling {

struct AxisTiling {
  enum class By { Untiled, Size, Count };
  By by = By::Untiled;
  int64_t value = 0;     // cells per tile (Size) or number of tiles (Count)
  int64_t overlap = 0;   // cells neighbouring tiles share
  int64_t min_tile = 0;  // Size: the shortest tile (0: any)

  // size 0 = untiled (a tile-size config's way of leaving an axis whole).
  static AxisTiling by_size(int64_t size, int64_t overlap, int64_t min_tile = 0);
  static AxisTiling by_count(int64_t tiles, int64_t overlap);
  bool is_tiled() const { return by != By::Untiled; }
};

// Cells [start, stop) of a tile, with its blend ramps (cells at each end shared with a neighbour).
struct Interval {
  int64_t start = 0, stop = 0;
  int64_t left_ramp = 0, right_ramp = 0;
  int64_t length() const { return stop - start; }
  bool operator==(const Interval&) const = default;
};

// By size (tiling.py): one interval when length <= size (or < min_tile); else n = (length + size -
// 2 overlap - 1) / (size - overlap) tiles at stride size - overlap, the last one running to the end
// and, when shorter than min_tile, grown leftward to it (its left ramp and its neighbour's right
// ramp then cover the new overlap).
// By count (multigpu.md 4.1): n tiles sharing exactly `overlap` cells between neighbours, the first
// (total mod n) one cell longer. Untiled, or one tile: the whole axis without ramps.
// causal: every interval after the first starts one cell earlier with a left ramp one longer (the
// causal video VAE: the extra latent frame only primes the decoder).
std::vector<Interval> split_axis(int64_t length, const AxisTiling& tiling, bool causal = false);

// (s, n / s) with s the largest divisor of n not above sqrt(n): the reference's tile counts for
// n ranks (height the smaller factor, width the larger).
std::pair<int64_t, int64_t> balanced_tile_split(int64_t n);

}  // namespace ltx2::tiling
