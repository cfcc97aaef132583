// How the transformer's attentions are computed: the one seam through which parallelism enters.
// The model hands every attention's projected, normalised and rotated q/k/v to its strategy, named
// by the site it comes from, so a sequence-parallel strategy can replace the attentions that mix
// video tokens (video self-attention, video->audio) and leave the others local.
#pragma once

#include "core/tensor.h"

namespace ltx2::models::transformer {

enum class AttentionSite {
  VideoSelf,     // attn1: video queries, video keys
  VideoText,     // attn2: video queries, text keys
  AudioSelf,     // audio_attn1
  AudioText,     // audio_attn2
  AudioToVideo,  // video queries, audio keys
  VideoToAudio,  // audio queries, video keys
};

const char* attention_site_name(AttentionSite site);

class AttentionStrategy {
 public:
  virtual ~AttentionStrategy() = default;
  // q [B, Tq, H*hd], k and v [B, Tk, H*hd] (heads are contiguous hd-wide chunks); mask undefined or
  // an additive bias broadcastable to [B, H, Tq, Tk]. Returns softmax(q kᵀ / sqrt(hd) + mask) v as
  // [B, Tq, H*hd].
  virtual Tensor attend(AttentionSite site, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                        const Tensor& mask) const = 0;
};

// Every attention computed in this process through ops::attention.
class LocalAttention : public AttentionStrategy {
 public:
  Tensor attend(AttentionSite site, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                const Tensor& mask) const override;
};

}  // namespace ltx2::models::transformer
