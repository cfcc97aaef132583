// The pieces Gemma 3 (gemma3.h) and Gemma 4 (gemma4.h) share: the token embedding, and what is
// formed on the host once per forward from the tokens alone and moved to the model's device:
// Hugging Face's RoPE tables, the rotation of every head by them, and the attention mask.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "io/configs/gemma_config.h"
#include "io/weights.h"
#include "ops/rope.h"

namespace ltx2 {

// The token embedding: the table [vocab, D] left in the file ("embed_tokens.weight"; loaded like any
// tensor while synthesizing, when there is no file), its rows gathered on the host, and Hugging
// Face's scale sqrt(D) cast to the embedding's dtype (the stored one, or bf16 when the model runs in
// it).
struct GemmaEmbedding {
  Tensor table;  // stored dtype
  float scale = 1.f;

  GemmaEmbedding() = default;
  GemmaEmbedding(const GemmaConfig& config, const WeightView& w, DType dtype);
  // The scaled rows of ids [B * T] (each checked against the vocabulary) as [B, T, D] in `dtype` on
  // `device`.
  Tensor rows(const std::vector<int64_t>& ids, int64_t B, int64_t T, DType dtype, Device device) const;
};

// HF's default / linear (and Gemma 4's proportional) RoPE for positions first..first+T-1:
// inv_freq[i] = 1 / base^(2i/hd) (float32) for the first `rotated` of the hd/2 pairs and 0 (angle 0:
// the pair stays as it is) for the rest, divided by the linear factor; angle = position * inv_freq[i].
// HF's rotate_half is the split layout with every head sharing the frequencies: tables
// [1, 1, T, hd/2], widened to the head count where applied.
ops::RopeTables gemma_rope_tables(int64_t first, int64_t tokens, int64_t head_dim, int64_t rotated,
                                  double base, double linear_factor, Device device);

// [B, T, heads * hd] rotated per head by the shared tables.
Tensor gemma_rotate_heads(const Tensor& x, const ops::RopeTables& t, int64_t heads);

// Key k is visible to query q iff it is a token (m[b, k] != 0), k <= q, and (sliding) k > q - window.
// `additive` [B, 1, T, T] float32: 0, or the lowest float (HF eager's finfo.min) rather than -inf,
// because the CUDA attention at head dims other than 64/128 adds float masks before a plain softmax,
// where a row with every key at -inf would turn to NaN and spread through P.V. `seen` [B, 1, T, 1]
// (model dtype) is 1 where the query row sees a key: a row that sees none (a left pad) is
// multiplied to zeros, as torch >= 2.5's SDPA yields; those rows are discarded downstream.
struct GemmaAttentionMask {
  Tensor additive, seen;
};
GemmaAttentionMask gemma_attention_mask(const std::vector<int64_t>& m, int64_t B, int64_t T, bool sliding,
                                        int64_t window, DType dtype, Device device);

}  // namespace ltx2
