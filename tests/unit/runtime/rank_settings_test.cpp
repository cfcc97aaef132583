// The ranks' settings: their fields (flags and the setup's JSON from one list) and the setup's
// round trip.
#include "runtime/rank_settings.h"

#include "core/error.h"
#include "pipeline/request_fields.h"
#include "support/catch.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

void set_flag(runtime::RankSettings& s, PipelineKind kind, const std::string& flag,
              const std::vector<std::string>& words) {
  for (const fields::Field& f : runtime::rank_setting_fields(s, kind))
    for (const std::string& n : f.flags)
      if (n == flag) return f.set_words(words);
  FAIL("no setting has the flag " << flag);
}

}  // namespace

TEST_CASE("rank settings: flags set what the setup's JSON carries, and it reads back the same") {
  runtime::RankSetup setup;
  setup.paths.checkpoint = "c.safetensors";
  runtime::RankSettings& s = setup.settings;
  set_flag(s, PipelineKind::TwoStage, "--stage2-parallel", {"tdp"});
  set_flag(s, PipelineKind::TwoStage, "--tdp-tiles", {"2x3"});
  set_flag(s, PipelineKind::TwoStage, "--vae-tiles", {"ranks"});
  set_flag(s, PipelineKind::TwoStage, "--vae-overlap", {"2"});
  set_flag(s, PipelineKind::TwoStage, "--quantization", {"fp8-cast"});
  set_flag(s, PipelineKind::TwoStage, "--gpu-memory", {"80"});
  set_flag(s, PipelineKind::TwoStage, "--attention-precision", {"8bit"});
  s.plan_shapes = {pipeline::RequestShape{}};
  CHECK(s.stage2_parallel == runtime::Stage2Parallel::TiledData);
  CHECK((s.tdp_height_tiles == 2 && s.tdp_width_tiles == 3));
  CHECK(s.vae_rank_split);
  CHECK(s.quantization == Quantization::Fp8Cast);
  CHECK(s.attention_precision == ops::AttentionPrecision::EightBit);
  const json j = runtime::to_json(setup);
  CHECK(j.at("tdp_tiles") == "2x3");
  CHECK(j.at("vae_tiles") == "ranks");
  const runtime::RankSetup back = runtime::rank_setup_from_json(j);
  CHECK(runtime::to_json(back) == j);
  CHECK(back.settings.vae_overlap == 2);
  CHECK(back.settings.gpu_memory_gib == 80);
  CHECK(back.settings.plan_shapes.size() == 1);
  CHECK(back.settings.attention_precision == ops::AttentionPrecision::EightBit);
  set_flag(s, PipelineKind::TwoStage, "--vae-tiles", {"4x1"});
  CHECK_FALSE(s.vae_rank_split);
  CHECK((s.vae_height_tiles == 4 && s.vae_width_tiles == 1));
}

TEST_CASE(
    "rank settings: a bad value is refused naming the flag, and tdp flags are the two-stage pipeline's") {
  runtime::RankSettings s;
  const auto refuses = [&](const char* flag, const char* value, const std::string& message) {
    CHECK_THROWS_WITH(set_flag(s, PipelineKind::TwoStage, flag, {value}), Contains(message));
  };
  refuses("--stage2-parallel", "pp", "--stage2-parallel must be sp or tdp, got 'pp'");
  refuses("--tdp-tiles", "2", "--tdp-tiles must be HxW with H, W in 1..64, got '2'");
  refuses("--tdp-tiles", "0x2", "--tdp-tiles must be HxW");
  refuses("--vae-tiles", "2x", "--vae-tiles must be HxW with H, W in 1..64, or 'ranks', got '2x'");
  refuses("--vae-overlap", "-1", "--vae-overlap must be >= 0, got -1");
  refuses("--gpu-memory", "-2", "--gpu-memory must be >= 0 GiB");
  refuses("--quantization", "int8", "--quantization 'int8'");
  refuses("--attention-precision", "int8", "--attention-precision: unknown attention precision 'int8'");
  for (const fields::Field& f : runtime::rank_setting_fields(s, PipelineKind::Distilled))
    for (const std::string& n : f.flags) CHECK(n.rfind("--tdp", 0) != 0);
  json setup = runtime::to_json(runtime::RankSetup{});
  setup.erase("vae_overlap");
  CHECK_THROWS_WITH(runtime::rank_setup_from_json(setup),
                    "malformed rank setup: field 'vae_overlap' is missing");
}

TEST_CASE(
    "rank settings: a request whose stage-2 grid cannot take the TDP tiles is refused naming the flags") {
  runtime::RankSettings s;
  GenerationRequest r;
  r.height = 64;
  r.width = 128;  // a 2 x 4 stage-2 latent grid
  r.num_frames = 9;
  // Sequence parallel, or one rank: no tiles, nothing to check.
  REQUIRE_NOTHROW(runtime::check_tdp_tiling(s, 2, r));
  s.stage2_parallel = runtime::Stage2Parallel::TiledData;
  REQUIRE_NOTHROW(runtime::check_tdp_tiling(s, 1, r));
  // Two ranks: 1 x 2 tiles of 4 cells cannot overlap by the default 5.
  REQUIRE_THROWS_WITH(
      runtime::check_tdp_tiling(s, 2, r),
      Contains("--tdp-tiles 1x2 --tdp-overlap 5 on 2 ranks: 64x128 pixels make a stage-2 latent "
               "grid of 2x4, which cannot be cut so"));
  s.tdp_overlap = 1;
  REQUIRE_NOTHROW(runtime::check_tdp_tiling(s, 2, r));
  s.tdp_width_tiles = 5;  // more tiles than cells
  s.tdp_height_tiles = 1;
  REQUIRE_THROWS_WITH(runtime::check_tdp_tiling(s, 2, r), Contains("--tdp-tiles 1x5"));
  // The tiling the ranks run is the one checked: the asked counts, or the balanced split.
  const tiling::GridTiling asked = runtime::tdp_tiling(s, 2);
  CHECK(asked[1].value == 1);
  CHECK(asked[2].value == 5);
  s.tdp_height_tiles = s.tdp_width_tiles = 0;
  const tiling::GridTiling balanced = runtime::tdp_tiling(s, 8);
  CHECK(balanced[0].value == 1);
  CHECK(balanced[1].value == 2);
  CHECK(balanced[2].value == 4);
}
