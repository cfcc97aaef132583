// Parsing of the diffusion video decoder's config (metadata config["vae"]["decoder"]).
#include "io/configs/diffusion_video_decoder_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/config_reader.h"

namespace ltx2 {

using json = nlohmann::json;

namespace {

constexpr const char* kConvClass = "CausalVideoAutoencoder";
constexpr const char* kDiffusionClass = "CausalDiffusionVAE";
// The reference maps latents to pixels by these fixed factors (SpatioTemporalScaleFactors.default()).
constexpr Dims3 kPixelsPerLatent = {8, 32, 32};

Dims3 dims3(const ConfigReader& r, const std::string& key, const json& v) {
  if (!v.is_array() || v.size() != 3) r.fail(key, "is " + v.dump() + ", expected [t, h, w]");
  Dims3 d{};
  for (size_t a = 0; a < 3; ++a) {
    if (!v[a].is_number_integer() || v[a].get<int64_t>() < 1)
      r.fail(key, "is " + v.dump() + ", expected three positive integers");
    d[a] = v[a].get<int64_t>();
  }
  return d;
}

}  // namespace

bool is_diffusion_video_vae(const json& metadata_config) {
  ConfigReader meta(metadata_config, "checkpoint metadata");
  if (!meta.has("vae")) return false;
  ConfigReader vae = meta.child("vae");
  const std::string cls = vae.string("_class_name", kConvClass);
  if (cls == kConvClass) return false;
  if (cls == kDiffusionClass) return true;
  vae.fail("_class_name", "is '" + cls + "'; supported: " + kConvClass + ", " + kDiffusionClass);
}

Dims3 default_rope_dim_split(int64_t head_dim) {
  if (head_dim < 8 || head_dim % 8 != 0) return {0, 0, 0};
  int64_t t = (head_dim / 4) / 2 * 2, hw = (head_dim - t) / 2;
  if (hw % 2 != 0) {
    t -= 2;
    hw = (head_dim - t) / 2;
  }
  if (t <= 0 || hw <= 0 || hw % 2 != 0) return {0, 0, 0};
  return {t, hw, hw};
}

DiffusionVideoDecoderConfig DiffusionVideoDecoderConfig::from_metadata(const json& metadata_config) {
  ConfigReader meta(metadata_config, "checkpoint metadata");
  ConfigReader vae = meta.child("vae");
  const std::string cls = vae.string("_class_name", kConvClass);
  if (cls != kDiffusionClass)
    vae.fail("_class_name", "is '" + cls + "'; the diffusion video decoder needs " + kDiffusionClass);
  const ConfigReader d = vae.has("decoder") ? vae.child("decoder") : vae;

  DiffusionVideoDecoderConfig c;
  c.in_channels = d.has("in_channels") ? d.integer("in_channels") : vae.integer("latent_channels", 128);
  c.out_channels = d.integer("out_channels", 3);
  c.patch_size = d.integer("patch_size", 4);
  c.head_dim = d.has("head_dim") ? d.integer("head_dim") : d.integer("na_head_dim", 64);
  c.t_emb_dim = d.integer("t_emb_dim", 384);
  c.num_inference_steps = d.integer("default_num_inference_steps", 2);
  c.timestep_scale_multiplier = d.number("timestep_scale_multiplier", 1.0);
  // A sibling of "decoder" at the vae level, as the reference reads it.
  c.output = vae.choice("model_output_type", {"v", "x0"}, "v") == "x0" ? Output::X0 : Output::Velocity;
  // The reference always builds linear pixel-shuffle resamplers (it does not read this key).
  d.choice("resampler_kind", {"linear"}, "linear");
  for (const char* key :
       {"out_channels", "patch_size", "head_dim", "t_emb_dim", "default_num_inference_steps"})
    if (d.has(key) && d.integer(key) < 1) d.fail(key, "must be positive");
  if (c.in_channels < 1) d.fail("in_channels", "must be positive");

  if (d.has("stage_channels")) c.stage_channels = d.integers("stage_channels");
  if (d.has("stage_depths")) c.stage_depths = d.integers("stage_depths");
  if (d.has("stage_kernels")) {
    const json& list = d.raw().at("stage_kernels");
    if (!list.is_array()) d.fail("stage_kernels", "is not a list of [t, h, w]");
    c.stage_kernels.clear();
    for (const json& k : list) c.stage_kernels.push_back(dims3(d, "stage_kernels", k));
  }
  if (d.has("upsamples")) {
    const json& list = d.raw().at("upsamples");
    if (!list.is_array()) d.fail("upsamples", "is not a list of [[t, h, w], reduction]");
    c.upsamples.clear();
    for (const json& u : list) {
      if (!u.is_array() || u.size() != 2 || !u[1].is_number_integer() || u[1].get<int64_t>() < 1)
        d.fail("upsamples", "has " + u.dump() + ", expected [[t, h, w], reduction]");
      c.upsamples.push_back({dims3(d, "upsamples", u[0]), u[1].get<int64_t>()});
    }
  }
  if (d.has("stage5_kernel")) c.stage5_kernel = dims3(d, "stage5_kernel", d.raw().at("stage5_kernel"));
  if (d.has("stage5_channels")) c.stage5_channels = d.integer("stage5_channels");

  // The decoder runs stages 1-3 on the whole volume, stage 4, then the diffusion stage.
  const size_t n = c.stage_channels.size();
  if (n != 5)
    d.fail("stage_channels",
           "has " + std::to_string(n) + " stages; the decoder runs exactly 5 (4 + the diffusion stage)");
  if (c.stage_depths.size() != n)
    d.fail("stage_depths", "must have one depth per stage (" + std::to_string(n) + ")");
  if (c.stage_kernels.size() != n)
    d.fail("stage_kernels", "must have one kernel per stage (" + std::to_string(n) + ")");
  if (c.upsamples.size() != n - 1) d.fail("upsamples", "must have one upsample per deterministic stage (4)");
  c.rope_split = default_rope_dim_split(c.head_dim);
  if (c.rope_split[0] == 0)
    d.fail("head_dim", "is " + std::to_string(c.head_dim) + "; the RoPE split needs a multiple of 8 from 16");
  for (size_t i = 0; i < n; ++i) {
    if (c.stage_channels[i] < 1 || c.stage_channels[i] % c.head_dim != 0)
      d.fail("stage_channels", "has " + std::to_string(c.stage_channels[i]) +
                                   ", not a multiple of head_dim " + std::to_string(c.head_dim));
    if (c.stage_depths[i] < 0) d.fail("stage_depths", "has a negative depth");
  }
  Dims3 scale = {1, c.patch_size, c.patch_size};
  for (size_t i = 0; i + 1 < n; ++i) {
    const Upsample& u = c.upsamples[i];
    const int64_t in = c.stage_channels[i];
    if (in % u.reduction != 0 || in / u.reduction != c.stage_channels[i + 1])
      d.fail("upsamples", "[" + std::to_string(i) + "] takes " + std::to_string(in) + " channels to " +
                              std::to_string(in) + "/" + std::to_string(u.reduction) + ", but stage " +
                              std::to_string(i + 1) + " has " + std::to_string(c.stage_channels[i + 1]));
    for (int a = 0; a < 3; ++a) scale[a] *= u.stride[a];
  }
  if (scale != kPixelsPerLatent)
    d.fail("upsamples", "and patch_size scale latents by " + std::to_string(scale[0]) + " x " +
                            std::to_string(scale[1]) + " x " + std::to_string(scale[2]) +
                            "; the reference decodes at 8 x 32 x 32");
  if (c.stage5_channels != 0 && (c.stage5_channels < 1 || c.stage5_channels % c.head_dim != 0))
    d.fail("stage5_channels", "is " + std::to_string(c.stage5_channels) + ", not a multiple of head_dim");
  return c;
}

Dims3 DiffusionVideoDecoderConfig::min_latent_size() const {
  // all_stages_min_tile_size: ceil(kernel / cumulative stride) over stages 1-4 and the diffusion stage.
  Dims3 mins{1, 1, 1}, cum{1, 1, 1};
  for (size_t s = 0; s < upsamples.size(); ++s) {
    for (int a = 0; a < 3; ++a) mins[a] = std::max(mins[a], (stage_kernels[s][a] + cum[a] - 1) / cum[a]);
    for (int a = 0; a < 3; ++a) cum[a] *= upsamples[s].stride[a];
  }
  for (int a = 0; a < 3; ++a) mins[a] = std::max(mins[a], (stage5_kernel[a] + cum[a] - 1) / cum[a]);
  return mins;
}

Dims3 DiffusionVideoDecoderConfig::stage4_cells(const Dims3& latent_cells) const {
  Dims3 cells = latent_cells;
  for (size_t u = 0; u < 3; ++u)
    for (int a = 0; a < 3; ++a)
      cells[a] = cells[a] * upsamples[u].stride[a] - (a == 0 && upsamples[u].stride[0] == 2 ? 1 : 0);
  return cells;
}

}  // namespace ltx2
