// Tiled data parallelism: idle ranks, independence of the world size, conditioning weights.
#include "ops/elementwise.h"
#include "parallel/tdp.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::parallel;

namespace {

// Generated cells of a (F, H, W) grid with unit-cell positions, then `cond` extra tokens.
TokenSequence grid_sequence(const GridExtent& g, const std::vector<std::array<float, 6>>& cond,
                            uint64_t seed) {
  const int64_t n_gen = g[0] * g[1] * g[2], total = n_gen + static_cast<int64_t>(cond.size());
  std::vector<float> pos(static_cast<size_t>(3 * total * 2));
  auto set = [&](int axis, int64_t t, float start, float end) {
    pos[static_cast<size_t>((axis * total + t) * 2)] = start;
    pos[static_cast<size_t>((axis * total + t) * 2 + 1)] = end;
  };
  for (int64_t f = 0; f < g[0]; ++f)
    for (int64_t h = 0; h < g[1]; ++h)
      for (int64_t w = 0; w < g[2]; ++w) {
        const int64_t t = (f * g[1] + h) * g[2] + w;
        set(0, t, float(f), float(f + 1));
        set(1, t, float(h), float(h + 1));
        set(2, t, float(w), float(w + 1));
      }
  for (size_t c = 0; c < cond.size(); ++c)
    for (int a = 0; a < 3; ++a) set(a, n_gen + static_cast<int64_t>(c), cond[c][2 * a], cond[c][2 * a + 1]);
  TokenSequence s;
  s.latent = test::random_tensor({1, total, 4}, seed);
  s.timesteps = test::random_tensor({1, total, 1}, seed + 1);
  s.positions = Tensor::from_vector(pos, {1, 3, total, 2});
  return s;
}

std::pair<Tensor, Tensor> toy_model(const TokenSequence& tile, const Tensor& audio) {
  Tensor video = ops::add(ops::mul(tile.latent, 2.f), tile.timesteps);
  return {video, ops::add(audio, 1.f)};
}

Tensor summed_partials(const TdpTilePlan& plan, const TokenSequence& video, const Tensor& audio, int world,
                       Tensor* audio_sum) {
  Tensor sum = Tensor::zeros(video.latent.shape());
  *audio_sum = Tensor::zeros(audio.shape());
  const TileModel model = [&](const TokenSequence& t) { return toy_model(t, audio); };
  for (int r = 0; r < world; ++r) {
    TdpPartial p = tdp_rank_partial(plan, video, audio, r, world, model);
    sum = ops::add(sum, p.video);
    *audio_sum = ops::add(*audio_sum, p.audio);
  }
  return sum;
}

}  // namespace

TEST_CASE("tdp: fewer tiles than ranks leaves idle ranks contributing zeros, the sum is unchanged") {
  const GridExtent grid{1, 4, 6};
  TdpTilePlan plan(grid, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(2, 2)});
  REQUIRE(plan.tiles().size() == 2);
  TokenSequence video = grid_sequence(grid, {}, 1);
  Tensor audio = test::random_tensor({1, 3, 2}, 2);
  const TileModel model = [&](const TokenSequence& t) { return toy_model(t, audio); };
  TdpPartial idle = tdp_rank_partial(plan, video, audio, 3, 4, model);
  REQUIRE(test::max_abs_diff(idle.video, Tensor::zeros(video.latent.shape())) == 0.f);
  REQUIRE(test::max_abs_diff(idle.audio, Tensor::zeros(audio.shape())) == 0.f);

  Tensor audio1, audio4;
  Tensor one = summed_partials(plan, video, audio, 1, &audio1);
  Tensor four = summed_partials(plan, video, audio, 4, &audio4);
  REQUIRE(test::max_abs_diff(one, four) < 1e-6f);
  REQUIRE(test::max_abs_diff(audio1, audio4) < 1e-6f);
  // Masks are a partition of unity, so blending the per-token model equals running it untiled.
  REQUIRE(test::max_abs_diff(one, toy_model(video, audio).first) < 1e-5f);
  REQUIRE(test::max_abs_diff(audio1, ops::add(audio, 1.f)) < 1e-6f);
}

TEST_CASE(
    "tdp: conditioning tokens are kept by overlapping tiles with weights 1/n, reference tokens by all") {
  const GridExtent grid{1, 2, 8};
  TdpTilePlan plan(grid, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(2, 0)});
  // Token 0 covers only the left half, token 1 straddles both tiles, token 2 is a reference
  // (negative time), token 3 lies beyond the video in time.
  TokenSequence video = grid_sequence(
      grid, {{0, 1, 0, 2, 0, 2}, {0, 1, 0, 2, 3, 5}, {-1, 0, 0, 2, 0, 8}, {5, 6, 0, 2, 0, 8}}, 3);
  auto keep = plan.cond_keep(video.positions);
  REQUIRE(keep[0] == std::vector<uint8_t>{1, 1, 1, 0});
  REQUIRE(keep[1] == std::vector<uint8_t>{0, 1, 1, 0});
  TileTokens t1 = plan.tile_tokens(video, 1, true);
  REQUIRE(t1.num_generated == 8);
  REQUIRE(t1.keep.size() == 10);
  REQUIRE(t1.cond_weights == std::vector<float>{0.5f, 0.5f});
  // Normalised: the tile's generated cells start at 0 on every axis, and widths are kept.
  REQUIRE(t1.tokens.positions.item({0, 2, 0, 0}) == 0.f);
  REQUIRE(t1.tokens.positions.item({0, 2, 0, 1}) == 1.f);
  REQUIRE(t1.tokens.positions.item({0, 2, 8, 0}) == -1.f);  // token 1 starts one cell left of the tile

  Tensor audio = test::random_tensor({1, 2, 2}, 4), audio_sum;
  Tensor sum = summed_partials(plan, video, audio, 2, &audio_sum);
  Tensor untiled = toy_model(video, audio).first;
  const int64_t n_gen = 16;
  REQUIRE(test::max_abs_diff(sum.narrow(1, 0, n_gen + 3), untiled.narrow(1, 0, n_gen + 3)) < 1e-5f);
  REQUIRE(test::max_abs_diff(sum.narrow(1, n_gen + 3, 1), Tensor::zeros({1, 1, 4})) == 0.f);
}

TEST_CASE("tdp: index helpers copy and accumulate runs of indices") {
  Tensor x = Tensor::arange(10).reshape({1, 10, 1});
  Tensor y = take_indices(x, 1, {7, 8, 2, 3, 4, 0});
  REQUIRE(y.to_vector() == std::vector<float>{7, 8, 2, 3, 4, 0});
  Tensor acc = Tensor::zeros({1, 10, 1});
  add_at_indices(acc, 1, {7, 8, 2, 3, 4, 0}, y);
  add_at_indices(acc, 1, {7}, Tensor::full({1, 1, 1}, 1.f));
  REQUIRE(acc.to_vector() == std::vector<float>{0, 0, 2, 3, 4, 0, 0, 8, 8, 0});
}

TEST_CASE("tdp: fewer tiles than ranks run on groups of ranks whose count divides the tiles") {
  const auto any = [](int) { return true; };
  const auto none = [](int) { return false; };
  using E = TiledDataParallelExecutor;
  CHECK(E::groups_for(4, 4, any) == 4);  // a tile a rank: no groups
  CHECK(E::groups_for(6, 4, any) == 4);
  CHECK(E::groups_for(2, 4, any) == 2);  // 2 groups of 2, a tile each
  CHECK(E::groups_for(2, 8, any) == 2);  // 2 groups of 4
  CHECK(E::groups_for(4, 8, any) == 4);
  CHECK(E::groups_for(6, 8, [](int g) { return g == 2 || g == 4; }) == 2);  // 4 does not divide 6
  CHECK(E::groups_for(2, 4, none) == 4);  // no cut: ranks 2 and 3 have no tile
  CHECK(E::groups_for(3, 4, any) == 4);  // 3 tiles divide over no cut of 4 ranks
  CHECK(E::groups_for(1, 4, any) == 4);
}
