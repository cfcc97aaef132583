// Latent tools: patchify round trips, positions with the causal first frame, audio positions.
#include "core/error.h"
#include "pipeline/latent_tools.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

TEST_CASE("latent tools: video and audio patchify invert, token order (f, h, w)") {
  const Tensor latent = test::random_tensor({2, 3, 2, 4, 6}, 11);
  const Tensor tokens = pipeline::patchify_video(latent, {1, 2, 2});
  REQUIRE(tokens.shape() == Shape{2, 12, 12});
  // token (f=1, h=0, w=2) = index (1*2 + 0)*3 + 2 = 8; feature (c=2, p2=1, p3=0) = 2*4 + 2 = 10.
  REQUIRE(tokens.item({1, 8, 10}) == latent.item({1, 2, 1, 1, 4}));
  REQUIRE(test::max_abs_diff(pipeline::unpatchify_video(tokens, {2, 4, 6}, {1, 2, 2}), latent) == 0.0f);
  const Tensor audio = test::random_tensor({1, 8, 5, 16}, 12);
  const Tensor at = pipeline::patchify_audio(audio);
  REQUIRE(at.item({0, 3, 2 * 16 + 7}) == audio.item({0, 2, 3, 7}));
  REQUIRE(test::max_abs_diff(pipeline::unpatchify_audio(at, 8, 16), audio) == 0.0f);
  REQUIRE_THROWS_WITH(pipeline::patchify_video(latent, {1, 3, 3}), Contains("not divisible"));
}

TEST_CASE("latent tools: positions follow the causal first frame and the audio hop") {
  const auto grid = pipeline::video_latent_grid(17, 64, 96);
  REQUIRE(grid == std::array<int64_t, 3>{3, 2, 3});
  const Tensor pos = pipeline::video_positions(1, grid, 24.0);
  REQUIRE(pos.shape() == Shape{1, 3, 18, 2});
  REQUIRE(pos.item({0, 0, 0, 0}) == 0.0f);
  REQUIRE(pos.item({0, 0, 0, 1}) == 1.0f / 24.0f);
  REQUIRE(pos.item({0, 0, 6, 0}) == 1.0f / 24.0f);  // latent frame 1 covers pixel frames [1, 9)
  REQUIRE(pos.item({0, 0, 6, 1}) == 9.0f / 24.0f);
  REQUIRE(pos.item({0, 2, 5, 0}) == 64.0f);  // x of token (0, 1, 2)
  REQUIRE(pipeline::video_keyframes_mask(1, grid).item({0, 5, 0}) == 1.0f);
  REQUIRE(pipeline::video_keyframes_mask(1, grid).item({0, 6, 0}) == 0.0f);
  REQUIRE(pipeline::audio_latent_frames(121, 24.0) == 126);
  const Tensor apos = pipeline::audio_positions(1, 3);
  REQUIRE(apos.item({0, 0, 0, 0}) == 0.0f);
  REQUIRE(apos.item({0, 0, 0, 1}) == 0.01f);
  REQUIRE(apos.item({0, 0, 2, 0}) == 0.05f);
  REQUIRE_THROWS_WITH(pipeline::video_latent_grid(18, 64, 96), Contains("1 + 8k"));
}
