// The video decoder a VAE set holds, by its config and checked against its tensors (see decoder_kind.h).
#include "models/video_vae/decoder_kind.h"

#include <string>

#include "core/error.h"
#include "io/configs/diffusion_video_decoder_config.h"
#include "io/layout.h"

namespace ltx2::video_vae {

namespace {

// Tensors only one of the decoders has (the first of its layers, as the files name them).
constexpr const char* kConvMarker = "conv_in.conv.weight";
constexpr const char* kDiffusionMarker = "conv_in_x_t.weight";

// The full name of decoder tensor `leaf` in `set` (under vae.decoder. or decoder.), or "".
std::string find_decoder_key(const WeightSet& set, const std::string& leaf) {
  for (const std::string& prefix : component_prefixes(Component::VideoDecoder))
    if (set.contains(prefix + leaf)) return prefix + leaf;
  return "";
}

}  // namespace

VideoDecoderKind video_decoder_kind(const WeightSet& set) {
  const bool diffusion = is_diffusion_video_vae(set.config());
  const std::string conv_key = find_decoder_key(set, kConvMarker);
  const std::string diffusion_key = find_decoder_key(set, kDiffusionMarker);
  // A set without decoder tensors at all is left to the decoder's own loader, which names the
  // missing tensor.
  if (diffusion && diffusion_key.empty() && !conv_key.empty())
    LTX2_FAIL(
        "{}: metadata config vae._class_name is 'CausalDiffusionVAE' (the diffusion video decoder) but "
        "key '{}' is the conv decoder's and there is no '{}'",
        set.file_of(conv_key).path(), conv_key,
        std::string(component_prefixes(Component::VideoDecoder)[0]) + kDiffusionMarker);
  if (!diffusion && conv_key.empty() && !diffusion_key.empty())
    LTX2_FAIL(
        "{}: metadata config vae._class_name is the conv VAE's (CausalVideoAutoencoder or unset) but key "
        "'{}' is the diffusion video decoder's (CausalDiffusionVAE) and there is no '{}'",
        set.file_of(diffusion_key).path(), diffusion_key,
        std::string(component_prefixes(Component::VideoDecoder)[0]) + kConvMarker);
  return diffusion ? VideoDecoderKind::Diffusion : VideoDecoderKind::Conv;
}

}  // namespace ltx2::video_vae
