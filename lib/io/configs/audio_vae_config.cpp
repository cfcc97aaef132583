#include "io/configs/audio_vae_config.h"

#include <nlohmann/json.hpp>

#include "io/config_reader.h"

namespace ltx2 {

namespace {

using json = nlohmann::json;

// config[key] as an object, or an empty one when absent (the reference reads every level with
// .get(key, {})).
json object_or_empty(const ConfigReader& r, const std::string& key) {
  if (!r.has(key)) return json::object();
  if (!r.raw().at(key).is_object()) r.fail(key, "is not an object");
  return r.raw().at(key);
}

CausalityAxis read_causality(const ConfigReader& dd) {
  const json& raw = dd.raw();
  // An explicit null is the reference's CausalityAxis.NONE.
  if (raw.contains("causality_axis") && raw.at("causality_axis").is_null()) return CausalityAxis::None;
  std::string v = dd.choice("causality_axis", {"height", "width", "width-compatibility"}, "height");
  if (v == "width") return CausalityAxis::Width;
  if (v == "width-compatibility") return CausalityAxis::WidthCompatibility;
  return CausalityAxis::Height;
}

// The first positive value of `key` among the readers (Python's `a or b or c`), else 0.
int64_t first_positive(const std::vector<std::pair<const ConfigReader*, const char*>>& sources) {
  for (const auto& [reader, key] : sources) {
    int64_t v = reader->integer(key, 0);
    if (v > 0) return v;
  }
  return 0;
}

}  // namespace

AudioVaeDecoderConfig parse_audio_vae_decoder_config(const json& audio_vae) {
  ConfigReader root(audio_vae.is_null() ? json::object() : audio_vae, "audio_vae");
  ConfigReader model(object_or_empty(root, "model"), "audio_vae.model");
  ConfigReader params(object_or_empty(model, "params"), "audio_vae.model.params");
  ConfigReader dd(object_or_empty(params, "ddconfig"), "audio_vae.model.params.ddconfig");
  ConfigReader pre(object_or_empty(root, "preprocessing"), "audio_vae.preprocessing");
  ConfigReader stft(object_or_empty(pre, "stft"), "audio_vae.preprocessing.stft");
  ConfigReader mel(object_or_empty(pre, "mel"), "audio_vae.preprocessing.mel");
  ConfigReader vars(object_or_empty(root, "variables"), "audio_vae.variables");

  AudioVaeDecoderConfig c;
  c.ch = dd.integer("ch", c.ch);
  c.out_ch = dd.integer("out_ch", c.out_ch);
  c.ch_mult = dd.integers("ch_mult", c.ch_mult);
  c.num_res_blocks = dd.integer("num_res_blocks", c.num_res_blocks);
  c.z_channels = dd.integer("z_channels", c.z_channels);
  c.causality = read_causality(dd);
  c.sampling_rate = params.integer("sampling_rate", c.sampling_rate);
  c.mel_hop_length = stft.integer("hop_length", c.mel_hop_length);
  c.mel_bins = first_positive({{&dd, "mel_bins"}, {&mel, "n_mel_channels"}, {&vars, "mel_bins"}});

  if (c.ch < 1) dd.fail("ch", "must be positive");
  if (c.out_ch < 1) dd.fail("out_ch", "must be positive");
  if (c.z_channels < 1) dd.fail("z_channels", "must be positive");
  if (c.num_res_blocks < 0) dd.fail("num_res_blocks", "must not be negative");
  if (c.ch_mult.empty()) dd.fail("ch_mult", "is empty");
  for (int64_t m : c.ch_mult)
    if (m < 1) dd.fail("ch_mult", "has a non-positive multiplier");

  // The reference GroupNorm path is refused by its own causal ResnetBlock; pixel norm is what
  // every LTX-2 audio VAE uses.
  dd.choice("norm_type", {"pixel"}, "pixel");
  if (dd.boolean("mid_block_add_attention", true))
    dd.fail("mid_block_add_attention", "is true (or absent); attention blocks are not implemented");
  // Attention runs at level resolutions resolution / 2^(n-1) ... resolution that are listed.
  const int64_t resolution = dd.integer("resolution", 256);
  const std::vector<int64_t> attn =
      dd.has("attn_resolutions") ? dd.integers("attn_resolutions") : std::vector<int64_t>{8, 16, 32};
  const int64_t levels = static_cast<int64_t>(c.ch_mult.size());
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t res = (resolution >> (levels - 1)) << l;
    for (int64_t a : attn)
      if (a == res)
        dd.fail("attn_resolutions", "lists a level resolution; attention blocks are not implemented");
  }
  return c;
}

}  // namespace ltx2
