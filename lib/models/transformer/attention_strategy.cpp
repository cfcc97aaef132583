// The local attention strategy: split heads, ops::attention, merge heads.
#include "models/transformer/attention_strategy.h"

#include "core/error.h"
#include "ops/attention.h"

namespace ltx2::models::transformer {

const char* attention_site_name(AttentionSite site) {
  switch (site) {
    case AttentionSite::VideoSelf: return "video self-attention";
    case AttentionSite::VideoText: return "video text cross-attention";
    case AttentionSite::AudioSelf: return "audio self-attention";
    case AttentionSite::AudioText: return "audio text cross-attention";
    case AttentionSite::AudioToVideo: return "audio-to-video attention";
    case AttentionSite::VideoToAudio: return "video-to-audio attention";
  }
  return "attention";
}

Tensor LocalAttention::attend(AttentionSite site, const Tensor& q, const Tensor& k, const Tensor& v,
                              int64_t heads, const Tensor& mask) const {
  LTX2_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && heads > 0 && q.size(2) % heads == 0,
             "{}: q {} k {} v {} do not split into {} heads", attention_site_name(site), q.str(), k.str(),
             v.str(), heads);
  auto split = [heads](const Tensor& x) {
    return x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
  };
  const Tensor out = ops::attention(split(q), split(k), split(v), mask);  // [B, H, Tq, hd]
  return out.transpose(1, 2).contiguous().view({q.size(0), q.size(1), q.size(2)});
}

}  // namespace ltx2::models::transformer
