// LTX-2.5's DurationHead: the frame-count rule of the reference's DurationPredictor (values from its
// seconds_to_clamped_num_frames), the config and the checks. The head against the reference is the
// golden case duration_head.
#include "core/error.h"
#include "io/layout.h"
#include "models/duration/duration_head.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

TEST_CASE("duration head: seconds become the reference's frame counts: clamped, on the 8k+1 grid") {
  REQUIRE(duration_to_frames(2.268, 24) == 49);
  REQUIRE(duration_to_frames(0.2, 24) == 25);   // under 1 s: 24 frames, snapped up to the grid
  REQUIRE(duration_to_frames(100, 24) == 473);  // over 20 s: 480 frames, snapped down
  REQUIRE(duration_to_frames(1.0, 24) == 25);
  REQUIRE(duration_to_frames(0.5, 25, 0.1, 20) == 9);
  REQUIRE(duration_to_frames(0.42, 25, 0.1, 20) == 9);
  REQUIRE(duration_to_frames(3.0, 30, 2.9, 3.1) == 89);
  REQUIRE_THROWS_WITH(duration_to_frames(NAN, 24), Contains("cannot give a frame count"));
  REQUIRE_THROWS_WITH(duration_to_frames(1, 24, 0.01, 20), Contains("less than a frame"));
}

TEST_CASE("duration head: weights, config and inputs are checked") {
  auto set = WeightSet::open({test::golden_dir("duration_head") + "/weights.safetensors"});
  REQUIRE(has_duration_head(*set));
  const DurationHeadConfig c = duration_head_config(*set);
  REQUIRE((c.video_dim == 16 && c.audio_dim == 16 && c.pooler_hidden == 8 && c.num_queries == 2 &&
           c.num_heads == 2 && c.mlp_hidden == 8));
  for (const auto& s : summarize_components(*set))
    REQUIRE(component_name(s.component) == std::string("duration_head"));
  const DurationHead head(set);
  REQUIRE_THROWS_WITH(head.seconds(Tensor(), Tensor()), "duration head: needs video or audio tokens");
  REQUIRE_THROWS_WITH(head.seconds(Tensor::zeros({1, 4, 8}), Tensor()),
                      Contains("video tokens f32[1, 4, 8] cpu are not [B, T, 16]"));
  const Tensor s = head.seconds(Tensor::zeros({2, 3, 16}), Tensor::zeros({2, 5, 16}));
  REQUIRE(s.shape() == Shape{2});
  // A checkpoint without the head says so.
  REQUIRE_FALSE(
      has_duration_head(*WeightSet::open({test::golden_dir("transformer_25") + "/weights.safetensors"})));
}
