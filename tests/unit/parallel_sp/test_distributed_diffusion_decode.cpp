// The distributed decode of LTX-2.5's diffusion video decoder on forked CPU ranks: each rank decodes
// its tiles of the decoder's own plan and hands over their values; blended in plan order by the
// driver's blender (the plan carried as the fleet's "video_plan" JSON), they give the single-process
// tiled decode's video bit for bit, on 2 and 3 ranks. A plan of one tile is decoded by rank 0 alone,
// as 8-bit frames. The tiling budget is the least free memory over the ranks, on every rank.
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "forked_ranks.h"
#include "models/video_vae/diffusion_decoder.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "parallel/distributed_decode.h"
#include "runtime/decode_stream.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "tiling/tile_blender.h"

using namespace ltx2;

namespace {

// The golden decoder (tests/data/golden/diffusion_video_decoder) on a seeded 17 x 96 x 96 video's
// latent and noise (the CPU decode matches the reference's tiled one in diffusion_video_decoder_tiled).
struct Inputs {
  video_vae::DiffusionVideoDecoder decoder;
  Tensor latent, noise;
};

Inputs inputs() {
  const auto set = WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"});
  return {video_vae::DiffusionVideoDecoder::from_weights(set), test::random_tensor({1, 8, 3, 3, 3}, 51),
          test::random_tensor({1, 3, 17, 96, 96}, 52)};
}

// Tiles of 16/8 frames, 64/32 x 64/32 pixels: 2 x 2 x 2 over the case's 17 x 96 x 96 video.
video_vae::TileSizeConfig eight_tiles() {
  return {tiling::AxisTiling::by_size(16, 8), tiling::AxisTiling::by_size(64, 32),
          tiling::AxisTiling::by_size(64, 32)};
}

Tensor text_tensor(const std::string& s) {
  Tensor t = Tensor::empty({static_cast<int64_t>(s.size())}, DType::U8);
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}
std::string text_of(const Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()));
}

// What a rank's decode hands over: the plan (rank 0, as the fleet's JSON) and its tiles' values. It
// runs in the forked ranks, which never touch Catch: what should not happen throws.
class RecordingSink final : public parallel::DecodedTileSink {
 public:
  test::RankTensors out;
  void whole_video(int64_t frames, int64_t height, int64_t width) override {
    out["whole"] = Tensor::from_vector_i64({frames, height, width}, {3});
  }
  void pipeline_plan(const video_vae::DecodeTilePlan&) override { LTX2_FAIL("the conv decoder's plan"); }
  void diffusion_plan(const tiling::TilePlan& plan, const std::array<tiling::Range, 3>& content) override {
    nlohmann::json box = nlohmann::json::array();
    for (const tiling::Range& r : content) box.push_back({r.start, r.stop});
    out["plan"] = text_tensor(runtime::tile_plan_json(plan).dump());
    out["content"] = text_tensor(box.dump());
  }
  void reference_plan(const tiling::GridExtent&, const std::array<int64_t, 3>&,
                      const tiling::GridTiling&) override {
    LTX2_FAIL("the reference's plan");
  }
  void tile_frames(int64_t tile, int64_t, int64_t first, const Tensor& pixels) override {
    const std::string name = "tile" + std::to_string(tile);
    out[name] = out.count(name) ? ops::cat({out[name], pixels}, 0) : pixels.clone();
    LTX2_CHECK(first + pixels.size(0) == out[name].size(0), "tile {}: frames from {} out of order", tile,
               first);
  }
};

// A rank may wait in a collective while a peer decodes its tiles; on a loaded machine (a GPU host
// running the whole suite at once) that took longer than the default 20 s, so the bound is wider.
std::vector<test::RankResult> run_decode(int world, const video_vae::TileSizeConfig& tiles) {
  return test::run_forked_ranks(
      world,
      [&](comm::Communicator& c) {
        const Inputs in = inputs();
        const tiling::TilePlan plan = in.decoder.tile_plan(in.latent.shape(), tiles);
        parallel::DistributedDecode decode(c, {});
        RecordingSink sink;
        decode.set_sink(&sink);
        decode.decode_diffusion(in.decoder, in.latent, {in.noise}, plan,
                                [](const Tensor&) { LTX2_FAIL("on_chunk"); });
        return sink.out;
      },
      std::chrono::seconds(120));
}

}  // namespace

TEST_CASE(
    "distributed diffusion decode: the ranks' tiles blended in plan order are the single-process tiled "
    "decode, on 2 and 3 ranks") {
  const Inputs in = inputs();
  const tiling::TilePlan plan = in.decoder.tile_plan(in.latent.shape(), eight_tiles());
  REQUIRE(plan.tiles.size() == 8);
  std::vector<Tensor> chunks;
  in.decoder.decode(in.latent, {in.noise}, plan, [&](const Tensor& f) { chunks.push_back(f); });
  const Tensor expected = ops::cat(chunks, 2);

  for (const int world : {2, 3}) {
    const std::vector<test::RankResult> ranks = run_decode(world, eight_tiles());
    std::map<int64_t, Tensor> tiles;  // tile -> [F_t, H_t, W_t, 3]
    for (int r = 0; r < world; ++r) {
      REQUIRE(ranks[r].error.empty());
      CHECK(ranks[r].tensors.count("whole") == 0);
      CHECK(ranks[r].tensors.count("plan") == (r == 0 ? 1u : 0u));
      for (const int64_t i : tiling::tiles_for_rank(8, r, world)) {
        REQUIRE(ranks[r].tensors.count("tile" + std::to_string(i)) == 1);
        tiles[i] = ranks[r].tensors.at("tile" + std::to_string(i));
      }
    }
    REQUIRE(tiles.size() == 8);

    // The driver's side: the plan from its JSON, the tiles blended in plan order, the content cut.
    const tiling::TilePlan carried =
        runtime::tile_plan_from_json(nlohmann::json::parse(text_of(ranks[0].tensors.at("plan"))));
    REQUIRE(carried.tiles.size() == plan.tiles.size());
    CHECK(carried.masks_complementary == plan.masks_complementary);
    for (size_t i = 0; i < plan.tiles.size(); ++i)
      for (int a = 0; a < 3; ++a) {
        CHECK(carried.tiles[i].out[a].start == plan.tiles[i].out[a].start);
        CHECK(carried.tiles[i].out[a].stop == plan.tiles[i].out[a].stop);
        CHECK(carried.tiles[i].masks[a] == plan.tiles[i].masks[a]);
      }
    const nlohmann::json content = nlohmann::json::parse(text_of(ranks[0].tensors.at("content")));
    tiling::TileBlender blender(carried, 1, 3);
    std::vector<Tensor> frames;
    int64_t index = 0;
    for (size_t i = 0; i < carried.tiles.size(); ++i)
      for (const Tensor& f :
           blender.add(i, tiles.at(static_cast<int64_t>(i)).permute({3, 0, 1, 2}).unsqueeze(0).contiguous()))
        if (index++ < content[0][1].get<int64_t>())
          frames.push_back(
              f.narrow(3, content[1][0], content[1][1].get<int64_t>() - content[1][0].get<int64_t>())
                  .narrow(4, content[2][0], content[2][1].get<int64_t>() - content[2][0].get<int64_t>()));
    const Tensor got = ops::cat(frames, 2);
    REQUIRE(got.shape() == expected.shape());
    CHECK(test::max_abs_diff(got, expected) == 0.0);
  }
}

TEST_CASE("distributed diffusion decode: a one-tile plan is decoded by rank 0 alone, as 8-bit frames") {
  const Inputs in = inputs();
  const Tensor whole = in.decoder.decode(in.latent, in.noise);
  const std::vector<test::RankResult> ranks = run_decode(2, {});
  REQUIRE(ranks[0].error.empty());
  REQUIRE(ranks[1].error.empty());
  CHECK(ranks[1].tensors.empty());
  CHECK(ranks[0].tensors.at("whole").to_vector_i64() == std::vector<int64_t>{17, 96, 96});
  const Tensor frames = ranks[0].tensors.at("tile0");
  REQUIRE(frames.dtype() == DType::U8);
  CHECK(test::max_abs_diff(frames.to(DType::F32), ops::decoded_to_rgb8(whole.select(0, 0)).to(DType::F32)) ==
        0.0);
}

TEST_CASE("distributed diffusion decode: the tiling budget is the least free memory over the ranks") {
  const std::vector<test::RankResult> ranks = test::run_forked_ranks(3, [](comm::Communicator& c) {
    parallel::DistributedDecode decode(c, {});
    const uint64_t mine = (uint64_t{40} << 30) - static_cast<uint64_t>(c.rank() == 1) * (uint64_t{25} << 30);
    return test::RankTensors{
        {"budget", Tensor::from_vector_i64({static_cast<int64_t>(decode.tiling_budget(mine))}, {1})}};
  });
  for (const test::RankResult& r : ranks) {
    REQUIRE(r.error.empty());
    CHECK(r.tensors.at("budget").to_vector_i64() == std::vector<int64_t>{int64_t{15} << 30});
  }
}
