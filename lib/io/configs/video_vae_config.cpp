// Parsing of the video VAE config (metadata config["vae"]) with the reference configurator's defaults.
#include "io/configs/video_vae_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/config_reader.h"
#include "io/configs/diffusion_video_decoder_config.h"

namespace ltx2 {

using json = nlohmann::json;

namespace {

const std::vector<std::string> kPaddingNames = {"zeros", "reflect", "replicate", "circular"};

SpatialPadding padding_from_name(const std::string& name) {
  if (name == "reflect") return SpatialPadding::Reflect;
  if (name == "replicate") return SpatialPadding::Replicate;
  if (name == "circular") return SpatialPadding::Circular;
  return SpatialPadding::Zeros;
}

LatentLogVar log_var_from_name(const std::string& name) {
  if (name == "per_channel") return LatentLogVar::PerChannel;
  if (name == "constant") return LatentLogVar::Constant;
  return LatentLogVar::Uniform;
}

struct BlockName {
  const char* name;
  VideoBlockKind kind;
};
const BlockName kDecoderBlocks[] = {{"res_x", VideoBlockKind::ResX},
                                    {"compress_time", VideoBlockKind::CompressTime},
                                    {"compress_space", VideoBlockKind::CompressSpace},
                                    {"compress_all", VideoBlockKind::CompressAll}};
const BlockName kEncoderBlocks[] = {{"res_x", VideoBlockKind::ResX},
                                    {"compress_time_res", VideoBlockKind::CompressTimeRes},
                                    {"compress_space_res", VideoBlockKind::CompressSpaceRes},
                                    {"compress_all_res", VideoBlockKind::CompressAllRes}};

// Refuses keys of a block's parameter object that the reference would not read.
void require_known_keys(const ConfigReader& r, const std::vector<std::string>& known) {
  for (const auto& [key, value] : r.raw().items()) {
    bool ok = false;
    for (const auto& k : known) ok = ok || key == k;
    if (!ok) r.fail(key, "is not a parameter this block reads");
  }
}

template <size_t N>
std::vector<VideoVaeBlock> parse_blocks(const ConfigReader& vae, const std::string& key,
                                        const BlockName (&names)[N], bool encoder) {
  std::vector<VideoVaeBlock> blocks;
  if (!vae.has(key)) return blocks;
  const json& list = vae.raw().at(key);
  if (!list.is_array()) vae.fail(key, "is not a list of [name, params] pairs");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = key + "[" + std::to_string(i) + "]";
    const json& entry = list[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string())
      vae.fail(where, "is " + entry.dump() + ", expected [name, params]");
    const std::string name = entry[0].get<std::string>();
    VideoVaeBlock b;
    bool found = false;
    for (const auto& n : names)
      if (name == n.name) b.kind = n.kind, found = true;
    if (!found) {
      std::string list_str;
      for (const auto& n : names) list_str += (list_str.empty() ? "" : ", ") + std::string(n.name);
      vae.fail(where, "is block '" + name + "'; supported: " + list_str);
    }
    const json& params = entry[1];
    if (b.kind == VideoBlockKind::ResX) {
      if (params.is_number_integer()) {
        b.num_layers = params.get<int64_t>();
      } else {
        if (!params.is_object()) vae.fail(where, "has parameters " + params.dump());
        ConfigReader p(params, "vae." + where + " (" + name + ")");
        require_known_keys(p, {"num_layers", "inject_noise"});
        b.num_layers = p.integer("num_layers", 1);
        if (p.boolean("inject_noise", false))
          p.fail("inject_noise", "is true; noise injection is not supported");
      }
      if (b.num_layers < 1) vae.fail(where, "has num_layers " + std::to_string(b.num_layers));
    } else {
      if (!params.is_object()) vae.fail(where, "has parameters " + params.dump() + ", expected an object");
      ConfigReader p(params, "vae." + where + " (" + name + ")");
      require_known_keys(p, {"multiplier", "residual"});
      b.multiplier = p.integer("multiplier", encoder ? 2 : 1);
      // The reference reads "residual" only for the decoder's compress_all.
      if (!encoder && b.kind == VideoBlockKind::CompressAll) b.residual = p.boolean("residual", false);
      const auto s = b.stride();
      const int64_t P = s[0] * s[1] * s[2];
      if (b.multiplier < 1 || P % b.multiplier != 0)
        p.fail("multiplier", "is " + std::to_string(b.multiplier) + "; it must divide the stride volume " +
                                 std::to_string(P));
    }
    blocks.push_back(b);
  }
  return blocks;
}

ConfigReader vae_reader(const json& metadata_config) {
  ConfigReader meta(metadata_config, "checkpoint metadata");
  ConfigReader vae = meta.child("vae");
  const std::string cls = vae.string("_class_name", "CausalVideoAutoencoder");
  if (cls != "CausalVideoAutoencoder")
    vae.fail("_class_name", "is '" + cls + "'; only the conv VAE (CausalVideoAutoencoder) is supported");
  vae.require_equal("dims", 3);
  vae.choice("norm_layer", {"pixel_norm"}, "pixel_norm");
  return vae;
}

// LTX-2.5's CausalDiffusionVAE keeps its conv encoder's fields under vae.encoder, named as the
// Encoder class names them ("blocks", "out_channels" = the latent width); the reference's
// _prepare_video_encoder_kwargs falls back to the vae level for dims / latent_channels.
VideoEncoderConfig nested_encoder_config(const ConfigReader& vae) {
  const ConfigReader e = vae.child("encoder");
  if (e.has("dims"))
    e.require_equal("dims", 3);
  else
    vae.require_equal("dims", 3);
  e.choice("norm_layer", {"pixel_norm"}, "pixel_norm");
  VideoEncoderConfig c;
  c.in_channels = e.integer("in_channels", 3);
  c.latent_channels = e.has("out_channels") ? e.integer("out_channels") : vae.integer("latent_channels", 128);
  c.patch_size = e.integer("patch_size", 4);
  c.blocks = parse_blocks(e, e.has("blocks") ? "blocks" : "encoder_blocks", kEncoderBlocks, true);
  c.latent_log_var =
      log_var_from_name(e.choice("latent_log_var", {"uniform", "per_channel", "constant"}, "uniform"));
  const std::string pad = e.has("spatial_padding_mode")
                              ? e.choice("spatial_padding_mode", kPaddingNames, "zeros")
                              : vae.choice("encoder_spatial_padding_mode", kPaddingNames, "zeros");
  c.spatial_padding = padding_from_name(pad);
  if (c.in_channels < 1) e.fail("in_channels", "must be positive");
  if (c.latent_channels < 1) e.fail("out_channels", "must be positive");
  if (c.patch_size < 1) e.fail("patch_size", "must be positive");
  return c;
}

}  // namespace

const char* spatial_padding_name(SpatialPadding p) {
  return kPaddingNames[static_cast<int>(p)].c_str();
}

std::array<int64_t, 3> VideoVaeBlock::stride() const {
  switch (kind) {
    case VideoBlockKind::CompressTime:
    case VideoBlockKind::CompressTimeRes: return {2, 1, 1};
    case VideoBlockKind::CompressSpace:
    case VideoBlockKind::CompressSpaceRes: return {1, 2, 2};
    case VideoBlockKind::CompressAll:
    case VideoBlockKind::CompressAllRes: return {2, 2, 2};
    case VideoBlockKind::ResX: break;
  }
  return {1, 1, 1};
}

VideoScaleFactors video_scale_factors(const std::vector<VideoVaeBlock>& blocks, int64_t patch_size) {
  VideoScaleFactors f{1, patch_size, patch_size};
  for (const auto& b : blocks) {
    const auto s = b.stride();
    f.time *= s[0];
    f.height *= s[1];
    f.width *= s[2];
  }
  return f;
}

VideoDecoderConfig VideoDecoderConfig::from_metadata(const json& metadata_config) {
  ConfigReader vae = vae_reader(metadata_config);
  VideoDecoderConfig c;
  c.latent_channels = vae.integer("latent_channels", 128);
  c.out_channels = vae.integer("out_channels", 3);
  c.patch_size = vae.integer("patch_size", 4);
  c.base_channels = vae.integer("decoder_base_channels", 128);
  c.blocks = parse_blocks(vae, "decoder_blocks", kDecoderBlocks, false);
  c.causal = vae.boolean("causal_decoder", false);
  c.timestep_conditioning = vae.boolean("timestep_conditioning", true);
  // Only "spatial_padding_mode" is read for the decoder (not "decoder_spatial_padding_mode").
  c.spatial_padding = padding_from_name(vae.choice("spatial_padding_mode", kPaddingNames, "reflect"));
  for (const char* key : {"latent_channels", "out_channels", "patch_size", "decoder_base_channels"})
    if (vae.integer(key, 1) < 1) vae.fail(key, "must be positive");
  return c;
}

int64_t VideoDecoderConfig::feature_channels() const {
  int64_t f = base_channels;
  for (const auto& b : blocks)
    if (b.kind != VideoBlockKind::ResX) f *= b.multiplier;
  return f;
}

VideoEncoderConfig VideoEncoderConfig::from_metadata(const json& metadata_config) {
  if (is_diffusion_video_vae(metadata_config)) {
    const ConfigReader vae = ConfigReader(metadata_config, "checkpoint metadata").child("vae");
    if (!vae.has("encoder"))
      vae.fail("encoder", "is missing (CausalDiffusionVAE keeps its encoder's config there)");
    return nested_encoder_config(vae);
  }
  ConfigReader vae = vae_reader(metadata_config);
  VideoEncoderConfig c;
  c.in_channels = vae.integer("in_channels", 3);
  c.latent_channels = vae.integer("latent_channels", 128);
  c.patch_size = vae.integer("patch_size", 4);
  c.blocks = parse_blocks(vae, "encoder_blocks", kEncoderBlocks, true);
  c.latent_log_var = log_var_from_name(vae.choice("latent_log_var", {"uniform", "per_channel"}, "uniform"));
  const std::string pad_key =
      vae.has("spatial_padding_mode") ? "spatial_padding_mode" : "encoder_spatial_padding_mode";
  c.spatial_padding = padding_from_name(vae.choice(pad_key, kPaddingNames, "zeros"));
  for (const char* key : {"in_channels", "latent_channels", "patch_size"})
    if (vae.integer(key, 1) < 1) vae.fail(key, "must be positive");
  return c;
}

int64_t VideoEncoderConfig::conv_out_channels() const {
  return latent_log_var == LatentLogVar::PerChannel ? 2 * latent_channels : latent_channels + 1;
}

}  // namespace ltx2
