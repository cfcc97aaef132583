// One block (reference: transformer.py BasicAVTransformerBlock): self-attention, text
// cross-attention, A<->V cross-attention (both directions reading the state before either is
// added), feed-forward; AdaLN rows shift, scale, gate (A<->V tables: scale, shift).
#include "models/transformer/block.h"

#include "models/transformer/modules.h"
#include "ops/elementwise.h"

namespace ltx2::models::transformer {

namespace {

SelfAttentionPerturbation self_perturbation(const BatchedPerturbations& p, PerturbationType type,
                                            int64_t block, const Tensor& like) {
  SelfAttentionPerturbation out;
  if (!p.any(type, block)) return out;
  out.all = p.all(type, block);
  if (!out.all) out.keep = p.keep(type, block).to(like.device()).reshape({-1, 1, 1});
  return out;
}

// Self-attention then text cross-attention of one stream.
void attend_self_and_text(const AttentionWeights& self_w, const AttentionWeights& text_w, const Tensor& table,
                          const Tensor& prompt_table, const TransformerConfig& c, AttentionSite self_site,
                          AttentionSite text_site, const SelfAttentionPerturbation& perturbation,
                          const AttentionStrategy& strategy, StreamState& s) {
  const float eps = static_cast<float>(c.norm_eps);
  const int64_t rows = c.adaln_rows();
  {
    const Tensor shift = ada_row(table, s.modulation, rows, 0), scale = ada_row(table, s.modulation, rows, 1);
    const Tensor gate = ada_row(table, s.modulation, rows, 2);
    const Tensor h = modulate(rms(s.x, eps), shift, scale);
    AttentionCall call{self_site, s.heads, eps, &s.rope, &s.rope, s.self_mask, perturbation};
    s.x = ops::add(s.x, ops::mul(attention_module(self_w, h, h, call, strategy), gate));
  }
  const Tensor normed = rms(s.x, eps);
  AttentionCall call{text_site, s.heads, eps, nullptr, nullptr, s.context_mask, {}};
  if (!c.cross_attention_adaln) {
    s.x = ops::add(s.x, attention_module(text_w, normed, s.context, call, strategy));
    return;
  }
  const Tensor shift_q = ada_row(table, s.modulation, rows, 6),
               scale_q = ada_row(table, s.modulation, rows, 7);
  const Tensor gate = ada_row(table, s.modulation, rows, 8);
  Tensor kv_shift = prompt_table.select(0, 0), kv_scale = prompt_table.select(0, 1);
  if (s.prompt_modulation.defined()) {
    kv_shift = ada_row(prompt_table, s.prompt_modulation, 2, 0);
    kv_scale = ada_row(prompt_table, s.prompt_modulation, 2, 1);
  }
  const Tensor context = modulate(s.context, kv_shift, kv_scale);
  const Tensor out = attention_module(text_w, modulate(normed, shift_q, scale_q), context, call, strategy);
  s.x = ops::add(s.x, ops::mul(out, gate));
}

// Multiplies by the per-sample keep values when some samples skip this cross-attention.
Tensor keep_samples(const Tensor& out, const BatchedPerturbations& p, PerturbationType type, int64_t block) {
  if (!p.any(type, block)) return out;
  return ops::mul(out, p.keep(type, block).to(out.device()).reshape({-1, 1, 1}));
}

}  // namespace

void run_block(const BlockWeights& w, const TransformerConfig& c, int64_t index,
               const BatchedPerturbations& p, const AttentionStrategy& strategy, StreamState& video,
               StreamState& audio) {
  const float eps = static_cast<float>(c.norm_eps);
  if (video.runs)
    attend_self_and_text(w.video_self, w.video_text, w.video_table, w.video_prompt_table, c,
                         AttentionSite::VideoSelf, AttentionSite::VideoText,
                         self_perturbation(p, PerturbationType::SkipVideoSelfAttn, index, video.x), strategy,
                         video);
  if (audio.runs)
    attend_self_and_text(w.audio_self, w.audio_text, w.audio_table, w.audio_prompt_table, c,
                         AttentionSite::AudioSelf, AttentionSite::AudioText,
                         self_perturbation(p, PerturbationType::SkipAudioSelfAttn, index, audio.x), strategy,
                         audio);

  const bool a2v = video.runs && audio.present && !p.all(PerturbationType::SkipA2VCrossAttn, index);
  const bool v2a = audio.runs && video.present && !p.all(PerturbationType::SkipV2ACrossAttn, index);
  if (a2v || v2a) {
    const Tensor v_normed = rms(video.x, eps), a_normed = rms(audio.x, eps);
    const Tensor &tv = w.a2v_video_table, &ta = w.a2v_audio_table;
    Tensor v_update, a_update;
    if (a2v) {
      const Tensor q_in = modulate(v_normed, ada_row(tv, video.cross_modulation, 4, 1),
                                   ada_row(tv, video.cross_modulation, 4, 0));
      const Tensor kv_in = modulate(a_normed, ada_row(ta, audio.cross_modulation, 4, 1),
                                    ada_row(ta, audio.cross_modulation, 4, 0));
      const Tensor gate = ops::add(tv.select(0, 4), video.cross_gate);
      AttentionCall call{AttentionSite::AudioToVideo, audio.heads, eps, &video.cross_rope,
                         &audio.cross_rope,           {},          {}};
      v_update = ops::mul(attention_module(w.audio_to_video, q_in, kv_in, call, strategy), gate);
      v_update = keep_samples(v_update, p, PerturbationType::SkipA2VCrossAttn, index);
    }
    if (v2a) {
      const Tensor q_in = modulate(a_normed, ada_row(ta, audio.cross_modulation, 4, 3),
                                   ada_row(ta, audio.cross_modulation, 4, 2));
      const Tensor kv_in = modulate(v_normed, ada_row(tv, video.cross_modulation, 4, 3),
                                    ada_row(tv, video.cross_modulation, 4, 2));
      const Tensor gate = ops::add(ta.select(0, 4), audio.cross_gate);
      AttentionCall call{AttentionSite::VideoToAudio, audio.heads, eps, &audio.cross_rope,
                         &video.cross_rope,           {},          {}};
      a_update = ops::mul(attention_module(w.video_to_audio, q_in, kv_in, call, strategy), gate);
      a_update = keep_samples(a_update, p, PerturbationType::SkipV2ACrossAttn, index);
    }
    if (a2v) video.x = ops::add(video.x, v_update);
    if (v2a) audio.x = ops::add(audio.x, a_update);
  }

  const int64_t rows = c.adaln_rows();
  auto ff = [&](const FeedForwardWeights& fw, const Tensor& table, StreamState& s) {
    const Tensor shift = ada_row(table, s.modulation, rows, 3), scale = ada_row(table, s.modulation, rows, 4);
    const Tensor gate = ada_row(table, s.modulation, rows, 5);
    s.x = ops::add(s.x, ops::mul(feed_forward(fw, modulate(rms(s.x, eps), shift, scale)), gate));
  };
  if (video.runs) ff(w.video_ff, w.video_table, video);
  if (audio.runs) ff(w.audio_ff, w.audio_table, audio);
}

}  // namespace ltx2::models::transformer
