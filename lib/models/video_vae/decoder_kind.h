// Which video decoder a video VAE file set holds: the conv decoder (vae._class_name
// "CausalVideoAutoencoder" or none) or LTX-2.5's diffusion decoder ("CausalDiffusionVAE"), as the
// reference's is_diffusion_video_vae decides it (the config's class name), with the weights checked
// to agree: a set whose config names one decoder while its decoder tensors are the other's is refused
// in one line naming the file and the key, before any model loads (headers only).
#pragma once

#include "io/weights.h"

namespace ltx2::video_vae {

enum class VideoDecoderKind { Conv, Diffusion };

VideoDecoderKind video_decoder_kind(const WeightSet& set);

}  // namespace ltx2::video_vae
