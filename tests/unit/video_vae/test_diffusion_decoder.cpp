// LTX-2.5's diffusion video decoder (CausalDiffusionVAE): its config's defaults and refusals, the
// decoder's weight checks and input checks, the tiled decode's refusals and its one-tile plan, and
// the tiled neighborhood attention against a brute-force window softmax. The decodes themselves
// (whole and tiled) and the recommended tilings are proven against the reference by the golden
// cases tests/data/golden/diffusion_video_decoder and diffusion_video_decoder_tiled.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "io/configs/diffusion_video_decoder_config.h"
#include "io/configs/video_vae_config.h"
#include "io/safetensors.h"
#include "models/video_vae/diffusion_decoder.h"
#include "models/video_vae/diffusion_tiling.h"
#include "models/video_vae/neighborhood_attention.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json golden_metadata() {
  auto set = WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"});
  return set->config();
}

// The golden config with config["vae"]["decoder"][key] = value.
json with_decoder(const std::string& key, const json& value) {
  json meta = golden_metadata();
  meta["vae"]["decoder"][key] = value;
  return meta;
}

// The golden weights, `drop` left out and `reshape` given a wrong shape, written to `path`.
void write_altered(const std::string& path, const std::string& drop, const std::string& reshape) {
  auto set = WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"});
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& n : set->names()) {
    if (n == drop) continue;
    tensors.push_back({n, n == reshape ? Tensor::zeros({3, 5}) : set->raw(n)});
  }
  write_safetensors(path, tensors, {{"config", set->metadata_value("config")}});
}

}  // namespace

TEST_CASE("diffusion video decoder config: the fixture's nested config, defaults, class selection") {
  const auto c = DiffusionVideoDecoderConfig::from_metadata(golden_metadata());
  REQUIRE((c.in_channels == 8 && c.head_dim == 16 && c.t_emb_dim == 32 && c.num_inference_steps == 2));
  REQUIRE(c.output == DiffusionVideoDecoderConfig::Output::X0);  // model_output_type at the vae level
  REQUIRE(c.stage_channels == std::vector<int64_t>{64, 32, 32, 32, 16});
  REQUIRE((c.stage5_kernel == Dims3{3, 5, 5} && c.rope_split == Dims3{4, 6, 6}));
  REQUIRE(c.min_latent_size() == Dims3{3, 1, 2});
  REQUIRE(c.trailing_pad_latent_frames() == 2);
  REQUIRE(c.timestep_scale_multiplier == 1000.0);

  // No decoder section: the flat vae dict and the class defaults (in_channels from latent_channels).
  const auto d = DiffusionVideoDecoderConfig::from_metadata(
      json{{"vae", {{"_class_name", "CausalDiffusionVAE"}, {"latent_channels", 64}}}});
  REQUIRE((d.in_channels == 64 && d.head_dim == 64 && d.t_emb_dim == 384 && d.num_inference_steps == 2));
  REQUIRE(d.output == DiffusionVideoDecoderConfig::Output::Velocity);
  REQUIRE((d.stage_channels.back() == 128 && d.rope_split == Dims3{16, 24, 24}));
  REQUIRE(d.min_latent_size() == Dims3{3, 7, 7});
  REQUIRE(default_rope_dim_split(24) == Dims3{4, 10, 10});

  REQUIRE(is_diffusion_video_vae(golden_metadata()));
  REQUIRE(!is_diffusion_video_vae(json{{"vae", {{"_class_name", "CausalVideoAutoencoder"}}}}));
  REQUIRE(!is_diffusion_video_vae(json{{"vae", json::object()}}));
  REQUIRE_THROWS_WITH(is_diffusion_video_vae(json{{"vae", {{"_class_name", "AutoencoderKL"}}}}),
                      Contains("'_class_name' is 'AutoencoderKL'"));
  // The conv decoder's config keeps refusing this class.
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(golden_metadata()), Contains("'_class_name'"));
}

TEST_CASE("diffusion video decoder config: unsupported values are refused naming the key") {
  auto fails = [](const json& meta, const std::string& what) {
    REQUIRE_THROWS_WITH(DiffusionVideoDecoderConfig::from_metadata(meta), Contains(what));
  };
  fails(json{{"vae", {{"_class_name", "CausalVideoAutoencoder"}}}},
        "'_class_name' is 'CausalVideoAutoencoder'");
  fails(with_decoder("stage_channels", {64, 32, 32, 16}), "'stage_channels' has 4 stages");
  fails(with_decoder("stage_depths", {1, 1, 1, 1}), "'stage_depths'");
  fails(with_decoder("stage_kernels", {{3, 3}, {3, 3, 3}}), "'stage_kernels' is [3,3]");
  fails(with_decoder("head_dim", 8), "'head_dim' is 8");
  fails(with_decoder("stage_channels", {64, 32, 32, 32, 24}), "'stage_channels' has 24");
  fails(with_decoder("upsamples", {{{1, 2, 2}, 2}, {{2, 1, 1}, 2}, {{2, 2, 2}, 1}, {{2, 2, 2}, 2}}),
        "'upsamples' [1] takes 32 channels to 32/2, but stage 2 has 32");
  fails(with_decoder("upsamples", {{{1, 2, 2}, 2}, {{1, 1, 1}, 1}, {{2, 2, 2}, 1}, {{2, 2, 2}, 2}}),
        "'upsamples' and patch_size scale latents by 4 x 32 x 32");
  fails(with_decoder("patch_size", 2), "'upsamples' and patch_size scale latents by 8 x 16 x 16");
  fails(with_decoder("resampler_kind", "conv"), "'resampler_kind' is 'conv'");
  fails(with_decoder("default_num_inference_steps", 0), "'default_num_inference_steps' must be positive");
  fails(with_decoder("stage5_channels", 20), "'stage5_channels' is 20");
  json eps = golden_metadata();
  eps["vae"]["model_output_type"] = "eps";
  fails(eps, "'model_output_type' is 'eps'");
}

TEST_CASE("diffusion video decoder: a missing or mis-shaped tensor is refused naming it") {
  test::ScratchDir dir("diffusion_vae_weights");
  write_altered(dir.file("missing.safetensors"), "vae.decoder.diff_blocks.1.attn.qkv.weight", "");
  REQUIRE_THROWS_WITH(
      video_vae::DiffusionVideoDecoder::from_weights(WeightSet::open({dir.file("missing.safetensors")})),
      Contains("diff_blocks.1.attn.qkv.weight"));
  write_altered(dir.file("shape.safetensors"), "", "vae.decoder.upsamples.2.proj.weight");
  REQUIRE_THROWS_WITH(
      video_vae::DiffusionVideoDecoder::from_weights(WeightSet::open({dir.file("shape.safetensors")})),
      Contains("'vae.decoder.upsamples.2.proj.weight' has shape"));
  write_altered(dir.file("stats.safetensors"), "vae.per_channel_statistics.std-of-means", "");
  REQUIRE_THROWS_WITH(
      video_vae::DiffusionVideoDecoder::from_weights(WeightSet::open({dir.file("stats.safetensors")})),
      Contains("std-of-means"));
}

TEST_CASE("diffusion video decoder: the noise shape and the batch are checked") {
  const auto decoder = video_vae::DiffusionVideoDecoder::from_weights(
      WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"}));
  // The latent padded to the size floor (3, 1, 2): 17 x 32 x 64 pixels of noise.
  REQUIRE(decoder.noise_shape({1, 8, 2, 1, 1}) == Shape{1, 3, 17, 32, 64});
  REQUIRE(decoder.noise_shape({1, 8, 4, 1, 3}) == Shape{1, 3, 25, 32, 96});
  const Tensor latent = test::random_tensor({1, 8, 2, 1, 1}, 3);
  REQUIRE_THROWS_WITH(decoder.decode(latent, Tensor::zeros({1, 3, 9, 32, 32})),
                      Contains("noise f32[1, 3, 9, 32, 32] cpu must be [1, 3, 17, 32, 64]"));
  REQUIRE_THROWS_WITH(decoder.decode(Tensor::zeros({2, 8, 2, 1, 1}), Tensor::zeros({2, 3, 17, 32, 64})),
                      Contains("must be [1, 8, F, H, W]"));
  REQUIRE_THROWS_WITH(decoder.decode(Tensor::zeros({1, 4, 2, 1, 1}), Tensor::zeros({1, 3, 17, 32, 64})),
                      Contains("must be [1, 8, F, H, W]"));
  // A single x0 step draws its noise at the diffusion stage's shape (frames at least its kernel's).
  DiffusionVideoDecoderConfig one = decoder.config();
  one.num_inference_steps = 1;
  auto set = WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"});
  const video_vae::DiffusionVideoDecoder one_step(one, WeightView(set, {"vae.decoder."}, "decoder"),
                                                  WeightView(set, {"vae.per_channel_statistics."}, "stats"));
  REQUIRE(one_step.timesteps() == std::vector<float>{1.f});
  REQUIRE(decoder.timesteps() == std::vector<float>{1.f, 0.5f});
  REQUIRE(one_step.noise_shape({1, 8, 3, 1, 2}) == Shape{1, 3, 17, 32, 64});
}

TEST_CASE(
    "diffusion video decoder: tile sizes are refused naming the axis, and untiled is one tile of ones") {
  const auto decoder = video_vae::DiffusionVideoDecoder::from_weights(
      WeightSet::open({test::golden_dir("diffusion_video_decoder") + "/weights.safetensors"}));
  const Shape latent = {1, 8, 3, 3, 3};  // 17 x 96 x 96 pixels; pixel scale 2 x 8 x 8
  using tiling::AxisTiling;
  const auto tiles = [](AxisTiling f, AxisTiling h, AxisTiling w) {
    return video_vae::TileSizeConfig{f, h, w};
  };
  // The halos need 8 frames and 32 pixels of overlap.
  REQUIRE(video_vae::diffusion_min_overlaps(decoder.config()) == std::pair<int64_t, int64_t>{8, 32});
  REQUIRE_THROWS_WITH(decoder.tile_plan(latent, tiles({}, AxisTiling::by_size(64, 16), {})),
                      Contains("height overlap 16 px is below the required 32 px"));
  REQUIRE_THROWS_WITH(decoder.tile_plan(latent, tiles(AxisTiling::by_size(15, 8), {}, {})),
                      Contains("frames tile 15 / overlap 8 frames must be multiples of 2"));
  REQUIRE_THROWS_WITH(decoder.tile_plan(latent, tiles({}, {}, AxisTiling::by_size(8, 32))),
                      Contains("width tile 8 / overlap 32 px must be multiples of 8 (the tile at least 16)"));
  REQUIRE_THROWS_WITH(decoder.tile_plan(latent, tiles({}, {}, AxisTiling::by_count(2, 1))),
                      Contains("width must be tiled by size"));

  const tiling::TilePlan whole = decoder.tile_plan(latent);
  REQUIRE(whole.tiles.size() == 1);
  REQUIRE(whole.out_extent == tiling::GridExtent{17, 96, 96});
  for (const auto& mask : whole.tiles[0].masks)
    REQUIRE(std::all_of(mask.begin(), mask.end(), [](float v) { return v == 1.f; }));
  // A tiled and a whole decode of one tile agree to the bit (the blend of one tile is its values).
  const Tensor x = test::random_tensor(latent, 61), noise = test::random_tensor({1, 3, 17, 96, 96}, 62);
  std::vector<Tensor> chunks;
  decoder.decode(x, {noise}, whole, [&](const Tensor& f) { chunks.push_back(f); });
  REQUIRE(test::max_abs_diff(ops::cat(chunks, 2), decoder.decode(x, noise)) == 0.f);
  REQUIRE_THROWS_WITH(decoder.decode(x, {noise, noise}, whole, [](const Tensor&) {}),
                      Contains("2 noise draws given, the decode takes 1"));
}

TEST_CASE("diffusion video decoder: no tile fits too little free memory, refused in one line") {
  DiffusionVideoDecoderConfig c;  // the full-size defaults
  c.head_dim = 64;
  REQUIRE_THROWS_WITH(video_vae::recommend_diffusion_tiling(c, 1024, 1536, 121, uint64_t{3} << 30, 0),
                      Contains("no decode tile of at least 16f x 192x192px") &&
                          Contains("3.00 GiB of free device memory for a 1024x1536x121 video"));
  const video_vae::TileSizeConfig t =
      video_vae::recommend_diffusion_tiling(c, 1024, 1536, 121, uint64_t{80} << 30, 0);
  REQUIRE(t.frames.value == 128);
  REQUIRE(t.height.value == 1024);
  REQUIRE(t.width.value == 1536);
}

TEST_CASE("neighborhood attention: tiled windows equal a brute-force window softmax") {
  // Large enough that the query tiles split (the budget is 2^22 scores per tile).
  const int64_t T = 5, H = 40, W = 36, heads = 2, D = 4;
  const Dims3 kernel = {3, 5, 7};
  const Tensor q = test::random_tensor({1, T, H, W, heads, D}, 11);
  const Tensor k = test::random_tensor({1, T, H, W, heads, D}, 12);
  const Tensor v = test::random_tensor({1, T, H, W, heads, D}, 13);
  const Tensor got = video_vae::neighborhood_attention(q, k, v, kernel);
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  const float* gp = got.data<float>();
  auto start = [](int64_t i, int64_t L, int64_t kk) {
    return std::min(std::max<int64_t>(i - kk / 2, 0), L - kk);
  };
  auto at = [&](int64_t t, int64_t h, int64_t w, int64_t n) {
    return (((t * H + h) * W + w) * heads + n) * D;
  };
  float worst = 0.f;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t n = 0; n < heads; ++n) {
          std::vector<float> s, o(D, 0.f);
          std::vector<int64_t> keys;
          for (int64_t a = start(t, T, 3); a < start(t, T, 3) + 3; ++a)
            for (int64_t b = start(h, H, 5); b < start(h, H, 5) + 5; ++b)
              for (int64_t c = start(w, W, 7); c < start(w, W, 7) + 7; ++c) {
                float dot = 0.f;
                for (int64_t d = 0; d < D; ++d) dot += qp[at(t, h, w, n) + d] * kp[at(a, b, c, n) + d];
                s.push_back(dot);
                keys.push_back(at(a, b, c, n));
              }
          const float mx = *std::max_element(s.begin(), s.end());
          float sum = 0.f;
          for (float& x : s) sum += (x = std::exp(x - mx));
          for (size_t j = 0; j < s.size(); ++j)
            for (int64_t d = 0; d < D; ++d) o[d] += s[j] / sum * vp[keys[j] + d];
          for (int64_t d = 0; d < D; ++d) worst = std::max(worst, std::abs(o[d] - gp[at(t, h, w, n) + d]));
        }
  REQUIRE(worst < 1e-5f);
  // A kernel longer than its axis is clamped to it (the reference's eager na3d).
  const Tensor small = test::random_tensor({1, 2, 3, 3, 1, 4}, 14);
  REQUIRE(test::max_abs_diff(video_vae::neighborhood_attention(small, small, small, {5, 3, 3}),
                             video_vae::neighborhood_attention(small, small, small, {2, 3, 3})) == 0.f);
}
