// The diffusion transformer's weights, one typed struct per module, loaded by their checkpoint names
// (model.diffusion_model.* through WeightView) with every shape checked against the config, so a
// missing or mis-shaped tensor is refused naming it. Linear weights are [out, in].
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "io/configs/transformer_config.h"
#include "io/quantization.h"
#include "io/weights.h"

namespace ltx2::models::transformer {

struct LinearWeights {
  Tensor weight, bias;  // bias undefined for a bias-free linear
  // With fp8-scaled-mm, a linear the checkpoint stores in FP8 keeps its F8_E4M3 weight and these
  // float32 scalars; with fp8, every block linear is F8_E4M3 with a weight_scale per output channel
  // and no input_scale (per-token scales on the fly). ops::Fp8Linear; undefined otherwise.
  Tensor weight_scale, input_scale;
  bool fp8() const { return weight.defined() && weight.dtype() == DType::F8E4M3; }
};

// AdaLayerNormSingle: sinusoid(256) -> linear_1 -> SiLU -> linear_2 = embedding e (D);
// linear(SiLU(e)) = modulation (rows * D).
struct AdaLnWeights {
  LinearWeights linear_1, linear_2, linear;
};

struct AttentionWeights {
  LinearWeights to_q, to_k, to_v, to_out, to_gate_logits;  // gate only with gated attention
  Tensor q_norm, k_norm;                                   // RMSNorm weights over the inner width
};

struct FeedForwardWeights {
  LinearWeights proj_in, proj_out;  // net.0.proj, net.2
};

struct BlockWeights {
  Tensor video_table, audio_table;                // [C, Dv], [C, Da]
  Tensor a2v_video_table, a2v_audio_table;        // [5, Dv], [5, Da]
  Tensor video_prompt_table, audio_prompt_table;  // [2, D], only with cross-attention AdaLN
  AttentionWeights video_self, video_text, audio_self, audio_text, audio_to_video, video_to_audio;
  FeedForwardWeights video_ff, audio_ff;
};

// Per-stream top-level weights.
struct StreamWeights {
  LinearWeights patchify_proj, proj_out;
  LinearWeights caption_linear_1, caption_linear_2;  // 19B only
  AdaLnWeights adaln, prompt_adaln;                  // prompt AdaLN only when the config has it
  AdaLnWeights av_scale_shift, av_gate;
  Tensor output_table;  // [2, D] (shift, scale) of the output head
};

// The tensors the reference's fp8-cast holds in F8_E4M3 (checkpoint names without
// "model.diffusion_model."): the weight and bias of every block's to_q, to_k, to_v, to_out.0 and
// feed-forward linears ("...ff.net.0.proj", "...ff.net.2", audio's too); not the gate logits, the
// AdaLN, the projections in and out.
bool fp8_cast_covers(const std::string& name);
// t rounded to F8_E4M3 and back to its dtype (fp8-cast's rounding; t on any device).
Tensor round_to_f8e4m3(const Tensor& t);
// fp8-scaled-mm's per-tensor quantization of a weight held in a wider type, as the reference
// re-quantizes a LoRA-fused FP8 weight: s = 448 / max|w| in float32 (1 for an all-zero w),
// weight = e4m3(w x s), scale = 1 / s (an F32 scalar on w's device). A w that is not finite is
// refused naming `name`.
struct Fp8Weight {
  Tensor weight, scale;
};
Fp8Weight quantize_f8e4m3_per_tensor(const Tensor& w, const std::string& name);
// fp8's quantization of a weight [out, in] held in a wider type: each output channel (row) with its
// own scale, ops::quantize_rows_f8e4m3's rule (scale = max|row| / 448); scale is F32 [out] on w's
// device. A w that is not finite is refused naming `name`.
Fp8Weight quantize_f8e4m3_per_channel(const Tensor& w, const std::string& name);

struct TransformerWeights {
  StreamWeights video, audio;
  Tensor keyframes_embedding;  // [1, Dv], only with use_keyframes_abs_pos_embedding
  std::vector<BlockWeights> blocks;

  // Loads every tensor the config calls for; `dtype`/`device` as WeightView::load (a quantized
  // checkpoint's scales honoured); `quantization` as io/quantization.h (auto resolved here, the one
  // place: fp8 for an FP8 checkpoint on a Hopper `device`). fp8 holds every block linear
  // fp8_cast_covers names in F8_E4M3 per channel (quantize_f8e4m3_per_channel, or an FP8
  // checkpoint's bytes and scale); its biases stay in `dtype`. fp8-scaled-mm keeps every
  // linear stored as F8_E4M3 with a .weight_scale in FP8 (its .input_scale required), as the
  // reference swaps them to FP8Linear, and is refused for a checkpoint without one (its bf16 and
  // synthesized weights).
  static TransformerWeights load(const WeightView& view, const TransformerConfig& config,
                                 DType dtype = DType::F32, Device device = Device::cpu(),
                                 Quantization quantization = Quantization::None);

  // Every loaded tensor with its checkpoint name (without "model.diffusion_model."), e.g.
  // "transformer_blocks.0.attn1.to_q.weight", so LoRA fusion can replace them; pointers into this
  // object, valid while it lives unmoved.
  std::vector<std::pair<std::string, Tensor*>> named_tensors();
};

}  // namespace ltx2::models::transformer
