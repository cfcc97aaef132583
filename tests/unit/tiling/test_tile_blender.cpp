// The tile blender: whole tiles or runs of frames give the same bits, frames leave as soon as every
// tile over them added them, and tiles out of their order are refused.
#include <cstdint>

#include "core/error.h"
#include "support/catch.h"
#include "tiling/tile_blender.h"

using namespace ltx2;
using namespace ltx2::tiling;

namespace {

// Two temporal groups overlapping by two frames, two row tiles overlapping by two rows.
TilePlan overlapping_plan(RampValues ramps) {
  GridMapping mapping;
  mapping.ramps = ramps;
  return plan_tiles({6, 8, 5},
                    {AxisTiling::by_count(2, 2), AxisTiling::by_count(2, 2), AxisTiling::by_count(1, 0)},
                    mapping);
}

Tensor tile_values(const Tile& t, int64_t channels, uint32_t seed) {
  const int64_t n = channels * t.out[0].length() * t.out[1].length() * t.out[2].length();
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 1;
  for (float& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return Tensor::from_vector(v, {1, channels, t.out[0].length(), t.out[1].length(), t.out[2].length()});
}

// The chunks' values frame by frame (a chunk is [B, C, n, H, W]: its frames are not contiguous).
std::vector<float> frames_of(const std::vector<Tensor>& chunks) {
  std::vector<float> out;
  for (const Tensor& c : chunks)
    for (int64_t f = 0; f < c.size(2); ++f) {
      const std::vector<float> v = c.slice(2, f, f + 1).contiguous().to_vector();
      out.insert(out.end(), v.begin(), v.end());
    }
  return out;
}

}  // namespace

TEST_CASE("tile blender: frame by frame equals whole tiles bit for bit, each frame out once final") {
  for (RampValues ramps : {RampValues::Fractions, RampValues::Linspace}) {
    const TilePlan plan = overlapping_plan(ramps);
    REQUIRE(plan.tiles.size() == 4);
    std::vector<Tensor> values;
    for (size_t i = 0; i < plan.tiles.size(); ++i)
      values.push_back(tile_values(plan.tiles[i], 3, static_cast<uint32_t>(i)));

    TileBlender whole(plan, 1, 3);
    std::vector<Tensor> whole_chunks;
    for (size_t i = 0; i < plan.tiles.size(); ++i) {
      for (Tensor& c : whole.add(i, values[i])) whole_chunks.push_back(c);
      // A temporal group's frames before the next group's leave when its last tile is added.
      if (i == 1) CHECK(static_cast<int64_t>(whole_chunks.size()) == plan.tiles[2].out[0].start);
    }
    REQUIRE(whole.done());
    REQUIRE(static_cast<int64_t>(whole_chunks.size()) == plan.out_extent[0]);

    // Frame-major: every tile over a frame adds it (in plan order) before any adds the next.
    TileBlender by_frame(plan, 1, 3);
    std::vector<Tensor> frame_chunks;
    for (int64_t f = 0; f < plan.out_extent[0]; ++f) {
      for (size_t i = 0; i < plan.tiles.size(); ++i) {
        const Range& frames = plan.tiles[i].out[0];
        if (f < frames.start || f >= frames.stop) continue;
        const int64_t local = f - frames.start;
        for (Tensor& c : by_frame.add(i, values[i].slice(2, local, local + 1), local))
          frame_chunks.push_back(c);
      }
      // Frame f is final: it left, and nothing after it.
      REQUIRE(static_cast<int64_t>(frame_chunks.size()) == f + 1);
    }
    REQUIRE(by_frame.done());
    for (const Tensor& c : frame_chunks) REQUIRE(c.shape() == Shape{1, 3, 1, 8, 5});
    CHECK(frames_of(frame_chunks) == frames_of(whole_chunks));
  }
}

TEST_CASE("tile blender: a tile's frames in order, within the tile, of its shape") {
  const TilePlan plan = overlapping_plan(RampValues::Fractions);
  TileBlender blender(plan, 1, 3);
  const Tensor v = tile_values(plan.tiles[0], 3, 0);
  CHECK_THROWS_AS(blender.add(0, v.slice(2, 1, 2), 1), Error);  // frame 1 before frame 0
  CHECK(blender.add(0, v.slice(2, 0, 2), 0).empty());           // frame 0 waits for tile 1
  CHECK(blender.frames_added(0) == 2);
  CHECK_THROWS_AS(blender.add(0, v, 0), Error);  // again
  CHECK_THROWS_AS(blender.add(0, v.slice(2, 2, 4).slice(1, 0, 2), 2), Error);
  CHECK_THROWS_AS(blender.add(9, v, 0), Error);
  CHECK_FALSE(blender.done());
}
