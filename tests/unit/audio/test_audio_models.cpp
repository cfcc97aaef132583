// Audio VAE decoder and vocoder construction: configs refuse what is not implemented naming the
// key, weights are checked by name and shape, and the BWE resampler's filter has its known taps.
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/configs/audio_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "io/safetensors.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/vocoder/bandwidth_extension.h"
#include "models/vocoder/vocoder.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

// A golden case's weights rewritten with `key` replaced by `replacement` (dropped when undefined).
std::shared_ptr<const WeightSet> tampered(const std::string& golden_case, const std::string& key,
                                          const Tensor& replacement, const test::ScratchDir& dir) {
  auto set = WeightSet::open({test::golden_dir(golden_case) + "/weights.safetensors"});
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : set->names()) {
    if (name != key) tensors.emplace_back(name, set->raw(name).to(DType::F32));
  }
  if (replacement.defined()) tensors.emplace_back(key, replacement);
  const std::string path = dir.file("weights.safetensors");
  write_safetensors(path, tensors, {{"config", set->config().dump()}});
  return WeightSet::open({path});
}

json golden_config(const std::string& golden_case) {
  return WeightSet::open({test::golden_dir(golden_case) + "/weights.safetensors"})->config();
}

}  // namespace

TEST_CASE("audio VAE config: the golden config parses and unsupported values are refused by key") {
  json cfg = golden_config("audio_vae_decoder").at("audio_vae");
  AudioVaeDecoderConfig c = parse_audio_vae_decoder_config(cfg);
  REQUIRE(c.ch == 8);
  REQUIRE(c.z_channels == 2);
  REQUIRE(c.mel_bins == 16);
  REQUIRE(c.ch_mult == std::vector<int64_t>{1, 2, 4});
  REQUIRE(c.causality == CausalityAxis::Height);

  json attn = cfg;
  attn["model"]["params"]["ddconfig"].erase("mid_block_add_attention");
  REQUIRE_THROWS_WITH(parse_audio_vae_decoder_config(attn), Contains("'mid_block_add_attention'"));
  json group = cfg;
  group["model"]["params"]["ddconfig"]["norm_type"] = "group";
  REQUIRE_THROWS_WITH(parse_audio_vae_decoder_config(group), Contains("'norm_type' is 'group'"));
  json levels = cfg;
  levels["model"]["params"]["ddconfig"]["attn_resolutions"] = {64};
  REQUIRE_THROWS_WITH(parse_audio_vae_decoder_config(levels), Contains("'attn_resolutions'"));
  json axis = cfg;
  axis["model"]["params"]["ddconfig"]["causality_axis"] = "depth";
  REQUIRE_THROWS_WITH(parse_audio_vae_decoder_config(axis), Contains("'causality_axis' is 'depth'"));
}

TEST_CASE("vocoder config: flat is LTX-2.0, nested with bwe is LTX-2.3, unsupported values are refused") {
  json flat = golden_config("vocoder").at("vocoder");
  VocoderConfig c = parse_vocoder_config(flat);
  REQUIRE_FALSE(c.bwe.has_value());
  REQUIRE(c.generator.resblock == VocoderResBlock::HifiGan1);
  REQUIRE(c.generator.hop() == 240);
  REQUIRE(c.output_sampling_rate() == 24000);

  json nested = golden_config("vocoder_bwe").at("vocoder");
  VocoderConfig b = parse_vocoder_config(nested);
  REQUIRE(b.bwe.has_value());
  REQUIRE(b.generator.resblock == VocoderResBlock::Amp1);
  REQUIRE(b.generator.output_sampling_rate == 16000);
  REQUIRE_FALSE(b.bwe->generator.apply_final_activation);
  REQUIRE(b.output_sampling_rate() == 48000);

  json resblock2 = flat;
  resblock2["resblock"] = "2";
  REQUIRE_THROWS_WITH(parse_vocoder_config(resblock2), Contains("'resblock' is '2'"));
  json mono = flat;
  mono.erase("stereo");
  REQUIRE_THROWS_WITH(parse_vocoder_config(mono), Contains("'stereo'"));
  json snake = nested;
  snake["bwe"]["activation"] = "snake";
  REQUIRE_THROWS_WITH(parse_vocoder_config(snake), Contains("vocoder.bwe config: 'activation' is 'snake'"));
  json dilations = flat;
  dilations["resblock_dilation_sizes"] = {{1, 3}, {1, 3}, {1, 3}};
  REQUIRE_THROWS_WITH(parse_vocoder_config(dilations), Contains("'resblock_dilation_sizes'"));
  json rates = nested;
  rates["bwe"]["hop_length"] = 40;
  REQUIRE_THROWS_WITH(parse_vocoder_config(rates), Contains("'upsample_rates'"));
}

TEST_CASE("audio VAE decoder: a mis-shaped or missing weight is refused naming it") {
  AudioVaeDecoderConfig c =
      parse_audio_vae_decoder_config(golden_config("audio_vae_decoder").at("audio_vae"));
  test::ScratchDir dir("audio_vae_weights");
  const std::string key = "audio_vae.decoder.up.1.block.0.nin_shortcut.conv.weight";
  auto bad = tampered("audio_vae_decoder", key, Tensor::zeros({16, 32, 3, 3}), dir);
  REQUIRE_THROWS_WITH(audio_vae::AudioDecoder::load(c, bad), Contains("'" + key + "' has shape"));
  test::ScratchDir dir2("audio_vae_missing");
  auto missing =
      tampered("audio_vae_decoder", "audio_vae.per_channel_statistics.std-of-means", Tensor(), dir2);
  REQUIRE_THROWS_WITH(audio_vae::AudioDecoder::load(c, missing),
                      Contains("audio_vae.per_channel_statistics.std-of-means"));
}

TEST_CASE("vocoder: a mis-shaped or missing weight is refused naming it") {
  VocoderConfig flat = parse_vocoder_config(golden_config("vocoder").at("vocoder"));
  test::ScratchDir dir("vocoder_weights");
  auto bad = tampered("vocoder", "vocoder.ups.2.weight", Tensor::zeros({16, 8, 7}), dir);
  REQUIRE_THROWS_WITH(vocoder::Vocoder::load(flat, bad), Contains("'vocoder.ups.2.weight' has shape"));

  VocoderConfig nested = parse_vocoder_config(golden_config("vocoder_bwe").at("vocoder"));
  test::ScratchDir dir2("vocoder_bwe_weights");
  const std::string key = "vocoder.vocoder.resblocks.4.acts2.1.act.beta";
  auto missing = tampered("vocoder_bwe", key, Tensor(), dir2);
  REQUIRE_THROWS_WITH(vocoder::Vocoder::load(nested, missing), Contains(key));
  test::ScratchDir dir3("vocoder_bwe_mel");
  auto mel = tampered("vocoder_bwe", "vocoder.mel_stft.mel_basis", Tensor::zeros({64, 64}), dir3);
  REQUIRE_THROWS_WITH(vocoder::Vocoder::load(nested, mel),
                      Contains("'vocoder.mel_stft.mel_basis' has shape"));
}

TEST_CASE("vocoder: the x3 Hann-sinc resampler has 43 symmetric taps peaking at rolloff / ratio") {
  vocoder::HannSincResampler r(3);
  REQUIRE(r.width == 7);
  REQUIRE(r.filter.numel() == 43);
  REQUIRE(std::fabs(r.filter.item({21}) - 0.99 / 3) < 1e-6);
  for (int64_t n = 0; n < 43; ++n) REQUIRE(std::fabs(r.filter.item({n}) - r.filter.item({42 - n})) < 1e-6);
  // Samples on the input grid other than the centre are zeros of the sinc only without rolloff;
  // the outermost taps sit at |t| = 7 * 0.99 > 6 where the window is cos²(π/2) = 0.
  REQUIRE(std::fabs(r.filter.item({0})) < 1e-6);
  Tensor x = test::random_tensor({1, 2, 10}, 5);
  REQUIRE(r.forward(x).shape() == Shape{1, 2, 30});
}
