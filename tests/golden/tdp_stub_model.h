// The stub transformer of the tdp_* fixtures (case.json "stub_model"): per token
//   video_out = latent * 0.5 + 0.25 * timesteps + 0.01 * sum over axes of positions[b, axis, t, 0]
//   audio_out = audio_latent * 0.5 + mean(tile video latent over tokens and channels)
// so a tile's output depends on its tokens, timesteps and (normalised) positions.
#pragma once

#include <utility>

#include "parallel/token_sequence.h"

namespace ltx2::golden {

std::pair<Tensor, Tensor> tdp_stub_model(const parallel::TokenSequence& tile_video,
                                         const Tensor& audio_latent);

}  // namespace ltx2::golden
