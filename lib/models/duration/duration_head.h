// LTX-2.5's DurationHead: the natural length of the shot a prompt describes, predicted from the
// text connectors' outputs (the reference's ltx_core/duration_head), and the reference's
// DurationPredictor rule turning it into a frame count.
//
// The head projects the video and/or audio connector tokens to a shared width, adds a learned
// modality embedding to each, pools them with `num_queries` learned queries through one multi-head
// cross-attention (PyTorch's nn.MultiheadAttention: packed in_proj [3E, E], then out_proj; every
// token attendable: the connectors leave no padding), and an MLP (gelu tanh) gives log-seconds,
// exponentiated. Weights: "duration_head.*" in a 2.5 checkpoint or its own file; widths from the
// metadata config (transformer.cross_attention_dim / audio_cross_attention_dim, and a
// "duration_head" section with pooler_hidden_dim, num_queries, num_pooler_heads, mlp_hidden; the
// reference's defaults 4096, 2048, 256, 1, 4, 256).
//
// The pipelines ask it when `--num-frames` is left unset (pipeline_models.h, resolve_num_frames), as
// the reference's AutoDuration() default does.
#pragma once

#include <memory>

#include "core/tensor.h"
#include "io/weights.h"

namespace ltx2 {

struct DurationHeadConfig {
  int64_t video_dim = 4096, audio_dim = 2048;
  int64_t pooler_hidden = 256, num_queries = 1, num_heads = 4, mlp_hidden = 256;
};

// The config from a weight set's metadata "config" (the reference's defaults where absent).
DurationHeadConfig duration_head_config(const WeightSet& set);

// true when the set holds a DurationHead (any "duration_head." tensor).
bool has_duration_head(const WeightSet& set);

class DurationHead {
 public:
  // Loads "duration_head.*" from `set`, checking every shape; float32 on the CPU.
  explicit DurationHead(const std::shared_ptr<const WeightSet>& set);

  // Seconds [B] (float32) from video tokens [B, Tv, video_dim] and/or audio tokens
  // [B, Ta, audio_dim] (an undefined tensor leaves that modality out; one must be given).
  Tensor seconds(const Tensor& video_tokens, const Tensor& audio_tokens) const;

  const DurationHeadConfig& config() const { return config_; }

 private:
  DurationHeadConfig config_;
  Tensor video_proj_w_, video_proj_b_, video_emb_, audio_proj_w_, audio_proj_b_, audio_emb_;
  Tensor queries_, in_proj_w_, in_proj_b_, out_proj_w_, out_proj_b_;
  Tensor mlp_hidden_w_, mlp_hidden_b_, mlp_out_w_, mlp_out_b_;
};

// The reference's DurationPredictor rule: round(seconds x fps) frames clamped to
// [round(min_seconds x fps), round(max_seconds x fps)], then down to the 8k + 1 grid, or up to the
// next grid point when that falls below the minimum.
int64_t duration_to_frames(double seconds, double frame_rate, double min_seconds = 1.0,
                           double max_seconds = 20.0);

}  // namespace ltx2
