// The per-token fields of a video modality that the parallel strategies slice, pad and gather
// (sequence parallel shards them, tiled data parallel selects tile tokens), the one rule that takes
// them out of a transformer Modality and puts them back, and index helpers over one token axis.
//
// Layouts: latent (B, T, D); timesteps (B, T, ...) ; positions (B, 3, T, 2) with [start, end) per
// axis (time, height, width); keyframes_mask (B, T, ...) optional; attention_mask optional, either
// a (B, T, T) mask in [0, 1] or the key-only (1, 1, T) padding mask.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "models/transformer/transformer.h"

namespace ltx2::parallel {

struct TokenSequence {
  Tensor latent;
  Tensor timesteps;
  Tensor positions;
  Tensor keyframes_mask;
  Tensor attention_mask;

  int64_t num_tokens() const { return latent.size(1); }
};

// The per-token fields of a video modality: timesteps only when per token ([B, T] or [B, T, 1]);
// per-sample ones ([B]) hold for every token and stay with the modality.
TokenSequence token_fields(const models::transformer::Modality& video);
// `base` with its per-token fields taken from `tokens` (timesteps where base's are per token, the
// attention mask where base has one: a mask that only padding made is the strategy's own).
models::transformer::Modality with_token_fields(models::transformer::Modality base,
                                                const TokenSequence& tokens);

// x's entries idx[0], idx[1], ... along dim, in that order (a copy; runs of consecutive indices
// are copied as one slice).
Tensor take_indices(const Tensor& x, int dim, const std::vector<int64_t>& idx);
// out[..., idx[i], ...] += values[..., i, ...] along dim (indices must be distinct).
void add_at_indices(Tensor& out, int dim, const std::vector<int64_t>& idx, const Tensor& values);

}  // namespace ltx2::parallel
