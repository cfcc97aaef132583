// Video VAE / upsampler configs and weight loading: unsupported values refused naming the key,
// mis-shaped weights refused naming the tensor, and the Comfy split layout decoding like the
// monolith.
#include <nlohmann/json.hpp>

#include "io/configs/upsampler_config.h"
#include "io/configs/video_vae_config.h"
#include "io/safetensors.h"
#include "models/video_vae/decoder.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json vae_config(json vae) {
  return json{{"vae", std::move(vae)}};
}

// Every tensor of a weight set, renamed by `rename` (return "" to drop), with one replaced.
std::vector<std::pair<std::string, Tensor>> copy_tensors(const WeightSet& set,
                                                         std::string (*rename)(const std::string&)) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const std::string& n : set.names()) {
    const std::string to = rename(n);
    if (!to.empty()) out.push_back({to, set.raw(n)});
  }
  return out;
}

std::string same(const std::string& n) {
  return n;
}
std::string comfy(const std::string& n) {
  const std::string mono = "vae.";
  return n.rfind(mono, 0) == 0 ? n.substr(mono.size()) : n;
}

}  // namespace

TEST_CASE("video VAE config: defaults and the reference's padding reading rules") {
  json blocks = json::array(
      {json::array({"res_x", 2}), json::array({"compress_all", {{"residual", true}, {"multiplier", 2}}})});
  auto dec = VideoDecoderConfig::from_metadata(
      vae_config({{"decoder_blocks", blocks}, {"decoder_spatial_padding_mode", "zeros"}}));
  REQUIRE(dec.spatial_padding == SpatialPadding::Reflect);  // decoder_spatial_padding_mode is not read
  REQUIRE(dec.timestep_conditioning);                       // the configurator defaults to true
  REQUIRE(dec.blocks.size() == 2);
  REQUIRE((dec.blocks[0].num_layers == 2 && dec.blocks[1].residual && dec.blocks[1].multiplier == 2));
  REQUIRE(dec.feature_channels() == 256);
  REQUIRE(dec.scale_factors().time == 2);
  REQUIRE(dec.scale_factors().height == 8);
  auto enc = VideoEncoderConfig::from_metadata(vae_config({{"encoder_spatial_padding_mode", "reflect"}}));
  REQUIRE(enc.spatial_padding == SpatialPadding::Reflect);
  REQUIRE(enc.conv_out_channels() == 129);
}

TEST_CASE("video VAE config: unsupported values are refused naming the key") {
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(vae_config({{"_class_name", "CausalDiffusionVAE"}})),
                      Contains("'_class_name'"));
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(vae_config({{"spatial_padding_mode", "mirror"}})),
                      Contains("'spatial_padding_mode' is 'mirror'"));
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(vae_config({{"norm_layer", "group_norm"}})),
                      Contains("'norm_layer'"));
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(
                          vae_config({{"decoder_blocks", json::array({json::array({"attn_res_x", 1})})}})),
                      Contains("'decoder_blocks[0]' is block 'attn_res_x'"));
  REQUIRE_THROWS_WITH(
      VideoDecoderConfig::from_metadata(
          vae_config({{"decoder_blocks", json::array({json::array({"res_x", {{"inject_noise", true}}})})}})),
      Contains("'inject_noise'"));
  REQUIRE_THROWS_WITH(
      VideoDecoderConfig::from_metadata(
          vae_config({{"decoder_blocks", json::array({json::array({"compress_time", {{"factor", 2}}})})}})),
      Contains("'factor'"));
  REQUIRE_THROWS_WITH(VideoEncoderConfig::from_metadata(vae_config({{"latent_log_var", "constant"}})),
                      Contains("'latent_log_var'"));
  REQUIRE_THROWS_WITH(VideoDecoderConfig::from_metadata(json::object()), Contains("'vae' is missing"));
}

TEST_CASE("upsampler config: x2, rational scales, and refusals") {
  auto x2 = UpsamplerConfig::from_metadata({{"mid_channels", 1024}});
  REQUIRE((x2.scale_num == 2 && x2.scale_den == 1 && !x2.rational_resampler && x2.mid_channels == 1024));
  auto r = UpsamplerConfig::from_metadata({{"rational_resampler", true}, {"spatial_scale", 1.5}});
  REQUIRE((r.scale_num == 3 && r.scale_den == 2));
  REQUIRE_THROWS_WITH(UpsamplerConfig::from_metadata({{"rational_resampler", true}, {"spatial_scale", 3.0}}),
                      Contains("'spatial_scale'"));
  REQUIRE_THROWS_WITH(UpsamplerConfig::from_metadata({{"temporal_upsample", true}}),
                      Contains("'temporal_upsample'"));
  REQUIRE_THROWS_WITH(UpsamplerConfig::from_metadata({{"dims", 2}}), Contains("'dims'"));
}

TEST_CASE("video VAE decoder: a mis-shaped weight is refused naming it, Comfy keys decode alike") {
  auto golden = WeightSet::open({test::golden_dir("video_vae_decoder") + "/weights.safetensors"});
  const std::map<std::string, std::string> meta = {{"config", golden->metadata_value("config")}};
  test::ScratchDir dir("vae_weights");

  auto bad = copy_tensors(*golden, &same);
  for (auto& [name, t] : bad)
    if (name == "vae.decoder.up_blocks.2.res_blocks.0.conv1.conv.weight")
      t = Tensor::zeros({16, 16, 3, 3, 1});
  write_safetensors(dir.file("bad.safetensors"), bad, meta);
  REQUIRE_THROWS_WITH(video_vae::VideoDecoder::from_weights(WeightSet::open({dir.file("bad.safetensors")})),
                      Contains("'vae.decoder.up_blocks.2.res_blocks.0.conv1.conv.weight' has shape"));

  write_safetensors(dir.file("comfy.safetensors"), copy_tensors(*golden, &comfy), meta);
  auto mono = video_vae::VideoDecoder::from_weights(golden);
  auto split = video_vae::VideoDecoder::from_weights(WeightSet::open({dir.file("comfy.safetensors")}));
  Tensor latent = test::random_tensor({1, 4, 1, 2, 2}, 7);  // reflect padding needs 2 pixels
  REQUIRE(test::max_abs_diff(mono.decode(latent), split.decode(latent)) == 0.f);
}
