// One block (reference: transformer.py BasicAVTransformerBlock): self-attention, text
// cross-attention, A<->V cross-attention (both directions reading the state before either is
// added), feed-forward; AdaLN rows shift, scale, gate (A<->V tables: scale, shift). Under
// --quantization fp8 a normalized input read only by per-row FP8 linears is made as FP8 rows by the
// norm's own kernel (normalized_input).
#include "models/transformer/block.h"

#include "models/transformer/modules.h"
#include "ops/adaln.h"
#include "ops/elementwise.h"
#include "ops/norm.h"

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
    const LinearInput h = normalized_input(s.x, ada_row(table, s.modulation, s.ada_index, rows, 0),
                                           ada_row(table, s.modulation, s.ada_index, rows, 1), eps,
                                           query_reads_rows_only(self_w) && context_reads_rows_only(self_w));
    AttentionCall call{self_site, s.heads, eps, &s.rope, &s.rope, s.self_mask, perturbation};
    s.x = ops::add_gated(s.x, attention_module(self_w, h, h, call, strategy),
                         ada_row(table, s.modulation, s.ada_index, rows, 2));
  }
  AttentionCall call{text_site, s.heads, eps, nullptr, nullptr, s.context_mask, {}};
  if (!c.cross_attention_adaln) {
    s.x =
        ops::add(s.x, attention_module(text_w, ops::rms_norm(s.x, Tensor(), eps), s.context, call, strategy));
    return;
  }
  // The prompt AdaLN's rows are per sample (or the table alone): the context is modulated unfused.
  const ops::AdaRow kv_shift = ops::ada_row(prompt_table, 0, s.prompt_modulation, 2, 0);
  const ops::AdaRow kv_scale = ops::ada_row(prompt_table, 1, s.prompt_modulation, 2, 1);
  const Tensor context = modulate(s.context, ops::ada_value(kv_shift), ops::ada_value(kv_scale));
  const LinearInput q_in = normalized_input(s.x, ada_row(table, s.modulation, s.ada_index, rows, 6),
                                            ada_row(table, s.modulation, s.ada_index, rows, 7), eps,
                                            query_reads_rows_only(text_w));
  s.x = ops::add_gated(s.x, attention_module(text_w, q_in, context, call, strategy),
                       ada_row(table, s.modulation, s.ada_index, rows, 8));
}

// Multiplies by the per-sample keep values (0 or 1, so exact in any dtype and in any order with the
// gate) when some samples skip this cross-attention.
Tensor keep_samples(const Tensor& out, const BatchedPerturbations& p, PerturbationType type, int64_t block) {
  if (!p.any(type, block)) return out;
  return ops::mul(out, p.keep(type, block).to(out.device()).to(out.dtype()).reshape({-1, 1, 1}));
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
    const Tensor &tv = w.a2v_video_table, &ta = w.a2v_audio_table;
    const Tensor &mv = video.cross_modulation, &ma = audio.cross_modulation;
    Tensor v_update, a_update;
    if (a2v) {
      const AttentionWeights& aw = w.audio_to_video;
      const LinearInput q_in =
          normalized_input(video.x, ada_row(tv, mv, video.ada_index, 4, 1),
                           ada_row(tv, mv, video.ada_index, 4, 0), eps, query_reads_rows_only(aw));
      const LinearInput kv_in =
          normalized_input(audio.x, ada_row(ta, ma, audio.ada_index, 4, 1),
                           ada_row(ta, ma, audio.ada_index, 4, 0), eps, context_reads_rows_only(aw));
      AttentionCall call{AttentionSite::AudioToVideo, audio.heads, eps, &video.cross_rope,
                         &audio.cross_rope,           {},          {}};
      v_update = keep_samples(attention_module(w.audio_to_video, q_in, kv_in, call, strategy), p,
                              PerturbationType::SkipA2VCrossAttn, index);
    }
    if (v2a) {
      const AttentionWeights& aw = w.video_to_audio;
      const LinearInput q_in =
          normalized_input(audio.x, ada_row(ta, ma, audio.ada_index, 4, 3),
                           ada_row(ta, ma, audio.ada_index, 4, 2), eps, query_reads_rows_only(aw));
      const LinearInput kv_in =
          normalized_input(video.x, ada_row(tv, mv, video.ada_index, 4, 3),
                           ada_row(tv, mv, video.ada_index, 4, 2), eps, context_reads_rows_only(aw));
      AttentionCall call{AttentionSite::VideoToAudio, audio.heads, eps, &audio.cross_rope,
                         &video.cross_rope,           {},          {}};
      a_update = keep_samples(attention_module(w.video_to_audio, q_in, kv_in, call, strategy), p,
                              PerturbationType::SkipV2ACrossAttn, index);
    }
    // Both updates read the state before either is added.
    if (a2v) video.x = ops::add_gated(video.x, v_update, ops::ada_row(tv, 4, video.cross_gate, 1, 0));
    if (v2a) audio.x = ops::add_gated(audio.x, a_update, ops::ada_row(ta, 4, audio.cross_gate, 1, 0));
  }

  const int64_t rows = c.adaln_rows();
  auto ff = [&](const FeedForwardWeights& fw, const Tensor& table, StreamState& s) {
    const LinearInput h =
        normalized_input(s.x, ada_row(table, s.modulation, s.ada_index, rows, 3),
                         ada_row(table, s.modulation, s.ada_index, rows, 4), eps, reads_rows(fw.proj_in));
    s.x = ops::add_gated(s.x, feed_forward(fw, h), ada_row(table, s.modulation, s.ada_index, rows, 5));
  };
  if (video.runs) ff(w.video_ff, w.video_table, video);
  if (audio.runs) ff(w.audio_ff, w.audio_table, audio);
}

}  // namespace ltx2::models::transformer
