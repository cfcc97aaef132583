// One transformer block over both streams, and the per-stream state the blocks read
// (the reference's TransformerArgs).
#pragma once

#include "io/configs/transformer_config.h"
#include "models/transformer/attention_strategy.h"
#include "models/transformer/perturbations.h"
#include "models/transformer/weights.h"
#include "ops/rope.h"

namespace ltx2::models::transformer {

struct StreamState {
  bool present = false;  // the stream was given with T > 0
  bool runs = false;     // present and enabled: its own updates run
  int64_t heads = 0;
  Tensor x;                    // [B, T, D] hidden state
  Tensor context;              // [B, S, D]
  Tensor context_mask;         // additive [B, 1, 1, S] or undefined
  Tensor self_mask;            // additive [B, 1, T, T] or undefined
  Tensor modulation;           // [B, T', C*D], or [1, U, C*D] read through ada_index
  Tensor ada_index;            // int32 [B, T] or undefined: token (b, t) reads modulation row index[b, t]
  Tensor embedded_timestep;    // [B, T', D]
  Tensor prompt_modulation;    // [B, 1, 2D] or undefined
  ops::RopeTables rope;        // self-attention tables
  ops::RopeTables cross_rope;  // A<->V tables (both streams present)
  Tensor cross_modulation;     // [B, T', 4D], or [1, U, 4D] read through ada_index
  Tensor cross_gate;           // [B, 1, D]
};

void run_block(const BlockWeights& w, const TransformerConfig& config, int64_t index,
               const BatchedPerturbations& perturbations, const AttentionStrategy& strategy,
               StreamState& video, StreamState& audio);

}  // namespace ltx2::models::transformer
