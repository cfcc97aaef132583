// Loading of the transformer's weights by checkpoint name, with shapes derived from the config.
#include "models/transformer/weights.h"

#include <string>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/fp8_quantize.h"
#include "ops/linear.h"
#include "ops/reduce.h"

namespace ltx2::models::transformer {

namespace {

// Whether the checkpoint stores the linear `key` in F8_E4M3 with a .weight_scale, as the published
// FP8 files store their block linears.
bool stored_in_fp8(const WeightView& view, const std::string& key) {
  return !view.synthesizing() && view.has(key + ".weight_scale") &&
         view.stored_dtype(key + ".weight") == DType::F8E4M3;
}

class Loader {
 public:
  Loader(const WeightView& view, DType dtype, Device device, Quantization quantization)
      : view_(view), dtype_(dtype), device_(device), quantization_(quantization) {}

  Tensor tensor(const std::string& key, const Shape& shape) const {
    return view_.load(key, shape, dtype_, device_);
  }
  Tensor tensor(const std::string& key, const Shape& shape, DType dtype) const {
    return view_.load(key, shape, dtype, device_);
  }

  LinearWeights linear(const std::string& key, int64_t out, int64_t in, bool bias = true) const {
    LinearWeights l;
    if (quantization_ == Quantization::Fp8 && fp8_cast_covers(key + ".weight")) {
      const Fp8Weight q = per_channel(key, out, in);
      l.weight = q.weight;
      l.weight_scale = q.scale;
    } else if (quantization_ == Quantization::Fp8ScaledMm && stored_in_fp8(view_, key)) {
      l.weight = view_.load_stored(key + ".weight", {out, in}, device_);
      l.weight_scale = tensor(key + ".weight_scale", {}, DType::F32);
      LTX2_CHECK(view_.has(key + ".input_scale"),
                 "quantization fp8-scaled-mm: '{}' has a weight scale but no '{}.input_scale' (the static "
                 "activation scale it needs; fp8-cast does not)",
                 view_.resolve(key + ".weight"), key);
      l.input_scale = tensor(key + ".input_scale", {}, DType::F32);
    } else {
      l.weight = tensor_or_cast(key + ".weight", {out, in});
    }
    if (bias) l.bias = tensor_or_cast(key + ".bias", {out});
    return l;
  }

  // fp8's weight: an FP8 checkpoint's bytes with its per-tensor scale given to every channel (the
  // same values), else the weight's value quantized at load with a scale per output channel.
  Fp8Weight per_channel(const std::string& key, int64_t out, int64_t in) const {
    const std::string name = key + ".weight";
    if (stored_in_fp8(view_, key)) {
      const Tensor scale = tensor(key + ".weight_scale", {}, DType::F32);
      return {view_.load_stored(name, {out, in}, device_), scale.view({1}).expand({out}).contiguous()};
    }
    return quantize_f8e4m3_per_channel(view_.load(name, {out, in}, DType::F32, device_),
                                       view_.synthesizing() ? name : view_.resolve(name));
  }

  Tensor tensor_or_cast(const std::string& key, const Shape& shape) const {
    if (quantization_ != Quantization::Fp8Cast || !fp8_cast_covers(key)) return tensor(key, shape);
    // The value (scale honoured) to bf16, then to F8_E4M3, as the reference rounds it at load; held
    // in the compute dtype, where every F8_E4M3 value is exact, so the forward is the reference's
    // upcast-and-multiply.
    return round_to_f8e4m3(view_.load(key, shape, DType::BF16, device_)).to(dtype_);
  }

  AdaLnWeights adaln(const std::string& key, int64_t dim, int64_t rows) const {
    AdaLnWeights a;
    a.linear_1 = linear(key + ".emb.timestep_embedder.linear_1", dim, 256);
    a.linear_2 = linear(key + ".emb.timestep_embedder.linear_2", dim, dim);
    a.linear = linear(key + ".linear", rows * dim, dim);
    return a;
  }

  // q_dim: query input width (the gate logits read it too), kv_dim: key/value input width,
  // inner: heads * head dim, out_dim: output width.
  AttentionWeights attention(const std::string& key, int64_t q_dim, int64_t kv_dim, int64_t inner,
                             int64_t out_dim, int64_t heads, bool gated) const {
    AttentionWeights a;
    a.to_q = linear(key + ".to_q", inner, q_dim);
    a.to_k = linear(key + ".to_k", inner, kv_dim);
    a.to_v = linear(key + ".to_v", inner, kv_dim);
    a.to_out = linear(key + ".to_out.0", out_dim, inner);
    a.q_norm = tensor(key + ".q_norm.weight", {inner});
    a.k_norm = tensor(key + ".k_norm.weight", {inner});
    if (gated) a.to_gate_logits = linear(key + ".to_gate_logits", heads, q_dim);
    return a;
  }

  FeedForwardWeights feed_forward(const std::string& key, int64_t dim, bool bias) const {
    return {linear(key + ".net.0.proj", 4 * dim, dim, bias), linear(key + ".net.2", dim, 4 * dim, bias)};
  }

 private:
  const WeightView& view_;
  DType dtype_;
  Device device_;
  Quantization quantization_;
};

StreamWeights load_stream(const Loader& ld, const TransformerConfig& c, bool audio) {
  const std::string p = audio ? "audio_" : "";
  const int64_t D = audio ? c.audio_dim() : c.video_dim();
  StreamWeights s;
  s.patchify_proj = ld.linear(p + "patchify_proj", D, audio ? c.audio_in_channels : c.video_in_channels);
  s.proj_out = ld.linear(p + "proj_out", audio ? c.audio_out_channels : c.video_out_channels, D);
  if (c.caption_projection) {
    s.caption_linear_1 = ld.linear(p + "caption_projection.linear_1", D, c.caption_channels);
    s.caption_linear_2 = ld.linear(p + "caption_projection.linear_2", D, D);
  }
  s.adaln = ld.adaln(p + "adaln_single", D, c.adaln_rows());
  if (c.has_prompt_adaln()) s.prompt_adaln = ld.adaln(p + "prompt_adaln_single", D, 2);
  s.av_scale_shift =
      ld.adaln(audio ? "av_ca_audio_scale_shift_adaln_single" : "av_ca_video_scale_shift_adaln_single", D, 4);
  s.av_gate = ld.adaln(audio ? "av_ca_v2a_gate_adaln_single" : "av_ca_a2v_gate_adaln_single", D, 1);
  s.output_table = ld.tensor(p + "scale_shift_table", {2, D});
  return s;
}

BlockWeights load_block(const Loader& ld, const TransformerConfig& c, int64_t i) {
  const std::string p = "transformer_blocks." + std::to_string(i) + ".";
  const int64_t Dv = c.video_dim(), Da = c.audio_dim(), Hv = c.video_heads, Ha = c.audio_heads;
  const bool g = c.gated_attention;
  BlockWeights b;
  b.video_table = ld.tensor(p + "scale_shift_table", {c.adaln_rows(), Dv});
  b.audio_table = ld.tensor(p + "audio_scale_shift_table", {c.adaln_rows(), Da});
  b.a2v_video_table = ld.tensor(p + "scale_shift_table_a2v_ca_video", {5, Dv});
  b.a2v_audio_table = ld.tensor(p + "scale_shift_table_a2v_ca_audio", {5, Da});
  if (c.cross_attention_adaln) {
    b.video_prompt_table = ld.tensor(p + "prompt_scale_shift_table", {2, Dv});
    b.audio_prompt_table = ld.tensor(p + "audio_prompt_scale_shift_table", {2, Da});
  }
  b.video_self = ld.attention(p + "attn1", Dv, Dv, Dv, Dv, Hv, g);
  b.video_text = ld.attention(p + "attn2", Dv, c.video_context_dim, Dv, Dv, Hv, g);
  b.audio_self = ld.attention(p + "audio_attn1", Da, Da, Da, Da, Ha, g);
  b.audio_text = ld.attention(p + "audio_attn2", Da, c.audio_context_dim, Da, Da, Ha, g);
  b.audio_to_video = ld.attention(p + "audio_to_video_attn", Dv, Da, Da, Dv, Ha, g);
  b.video_to_audio = ld.attention(p + "video_to_audio_attn", Da, Dv, Da, Da, Ha, g);
  b.video_ff = ld.feed_forward(p + "ff", Dv, c.video_ff_bias);
  b.audio_ff = ld.feed_forward(p + "audio_ff", Da, c.audio_ff_bias);
  return b;
}

using Named = std::vector<std::pair<std::string, Tensor*>>;

void name_tensor(Named& out, const std::string& key, Tensor& t) {
  if (t.defined()) out.emplace_back(key, &t);
}

void name_linear(Named& out, const std::string& key, LinearWeights& l) {
  name_tensor(out, key + ".weight", l.weight);
  name_tensor(out, key + ".bias", l.bias);
  name_tensor(out, key + ".weight_scale", l.weight_scale);
  name_tensor(out, key + ".input_scale", l.input_scale);
}

void name_adaln(Named& out, const std::string& key, AdaLnWeights& a) {
  name_linear(out, key + ".emb.timestep_embedder.linear_1", a.linear_1);
  name_linear(out, key + ".emb.timestep_embedder.linear_2", a.linear_2);
  name_linear(out, key + ".linear", a.linear);
}

void name_attention(Named& out, const std::string& key, AttentionWeights& a) {
  name_linear(out, key + ".to_q", a.to_q);
  name_linear(out, key + ".to_k", a.to_k);
  name_linear(out, key + ".to_v", a.to_v);
  name_linear(out, key + ".to_out.0", a.to_out);
  name_tensor(out, key + ".q_norm.weight", a.q_norm);
  name_tensor(out, key + ".k_norm.weight", a.k_norm);
  name_linear(out, key + ".to_gate_logits", a.to_gate_logits);
}

void name_stream(Named& out, bool audio, StreamWeights& s) {
  const std::string p = audio ? "audio_" : "";
  name_linear(out, p + "patchify_proj", s.patchify_proj);
  name_linear(out, p + "proj_out", s.proj_out);
  name_linear(out, p + "caption_projection.linear_1", s.caption_linear_1);
  name_linear(out, p + "caption_projection.linear_2", s.caption_linear_2);
  name_adaln(out, p + "adaln_single", s.adaln);
  name_adaln(out, p + "prompt_adaln_single", s.prompt_adaln);
  name_adaln(out, audio ? "av_ca_audio_scale_shift_adaln_single" : "av_ca_video_scale_shift_adaln_single",
             s.av_scale_shift);
  name_adaln(out, audio ? "av_ca_v2a_gate_adaln_single" : "av_ca_a2v_gate_adaln_single", s.av_gate);
  name_tensor(out, p + "scale_shift_table", s.output_table);
}

void name_block(Named& out, int64_t i, BlockWeights& b) {
  const std::string p = "transformer_blocks." + std::to_string(i) + ".";
  name_tensor(out, p + "scale_shift_table", b.video_table);
  name_tensor(out, p + "audio_scale_shift_table", b.audio_table);
  name_tensor(out, p + "scale_shift_table_a2v_ca_video", b.a2v_video_table);
  name_tensor(out, p + "scale_shift_table_a2v_ca_audio", b.a2v_audio_table);
  name_tensor(out, p + "prompt_scale_shift_table", b.video_prompt_table);
  name_tensor(out, p + "audio_prompt_scale_shift_table", b.audio_prompt_table);
  name_attention(out, p + "attn1", b.video_self);
  name_attention(out, p + "attn2", b.video_text);
  name_attention(out, p + "audio_attn1", b.audio_self);
  name_attention(out, p + "audio_attn2", b.audio_text);
  name_attention(out, p + "audio_to_video_attn", b.audio_to_video);
  name_attention(out, p + "video_to_audio_attn", b.video_to_audio);
  name_linear(out, p + "ff.net.0.proj", b.video_ff.proj_in);
  name_linear(out, p + "ff.net.2", b.video_ff.proj_out);
  name_linear(out, p + "audio_ff.net.0.proj", b.audio_ff.proj_in);
  name_linear(out, p + "audio_ff.net.2", b.audio_ff.proj_out);
}

}  // namespace

bool fp8_cast_covers(const std::string& name) {
  if (!name.starts_with("transformer_blocks.")) return false;
  for (const char* linear : {".to_q", ".to_k", ".to_v", ".to_out.0", "ff.net.0.proj", "ff.net.2"})
    for (const char* part : {".weight", ".bias"})
      if (name.ends_with(std::string(linear) + part)) return true;
  return false;
}

Tensor round_to_f8e4m3(const Tensor& t) {
  return t.to(DType::F8E4M3).to(t.dtype());
}

namespace {
void check_finite(const Tensor& w32, const std::string& name) {
  // A NaN or an infinity times 0 is NaN and a finite value 0, so this sum is 0 exactly when every
  // value is finite (a max alone would pass over a NaN).
  const float non_finite =
      ops::reduce(ops::mul(w32, 0.f).view({-1}), 0, false, ops::ReduceOp::Sum).to(Device::cpu()).item();
  LTX2_CHECK(non_finite == 0, "FP8 quantization: the weight '{}' is not finite", name);
}
}  // namespace

Fp8Weight quantize_f8e4m3_per_channel(const Tensor& w, const std::string& name) {
  const Tensor w32 = w.to(DType::F32);
  check_finite(w32, name);
  ops::Fp8Rows rows = ops::quantize_rows_f8e4m3(w32);
  return {std::move(rows.codes), std::move(rows.scales)};
}

Fp8Weight quantize_f8e4m3_per_tensor(const Tensor& w, const std::string& name) {
  const Tensor w32 = w.to(DType::F32);
  check_finite(w32, name);
  const Tensor abs = ops::unary(w32, ops::UnaryOp::Abs);
  const float amax = ops::reduce(abs.view({-1}), 0, false, ops::ReduceOp::Max).to(Device::cpu()).item();
  // |w x s| <= 448 up to one rounding, which e4m3 rounds to 448, so no clamp is needed. An all-zero
  // w keeps s = 1 (the reference would divide by zero).
  const float s = amax > 0 ? ops::kF8E4M3Max / amax : 1.f;
  return {ops::mul(w32, s).to(DType::F8E4M3), Tensor::scalar(1.f / s).to(w.device())};
}

std::vector<std::pair<std::string, Tensor*>> TransformerWeights::named_tensors() {
  Named out;
  name_stream(out, false, video);
  name_stream(out, true, audio);
  name_tensor(out, "keyframes_abs_pos_embedding", keyframes_embedding);
  for (size_t i = 0; i < blocks.size(); ++i) name_block(out, static_cast<int64_t>(i), blocks[i]);
  return out;
}

TransformerWeights TransformerWeights::load(const WeightView& view, const TransformerConfig& config,
                                            DType dtype, Device device, Quantization quantization) {
  // An FP8 checkpoint: its first block's q linear stored in FP8 (the published files store every
  // block linear so).
  quantization =
      resolve_quantization(quantization, stored_in_fp8(view, "transformer_blocks.0.attn1.to_q"), device);
  const Loader ld(view, dtype, device, quantization);
  TransformerWeights w;
  w.video = load_stream(ld, config, false);
  w.audio = load_stream(ld, config, true);
  if (config.keyframe_embedding)
    w.keyframes_embedding = ld.tensor("keyframes_abs_pos_embedding", {1, config.video_dim()});
  for (int64_t i = 0; i < config.num_layers; ++i) w.blocks.push_back(load_block(ld, config, i));
  if (quantization == Quantization::Fp8ScaledMm) {
    bool any = false;
    for (const auto& [name, t] : w.named_tensors()) any = any || name.ends_with(".weight_scale");
    LTX2_CHECK(any,
               "quantization fp8-scaled-mm needs a checkpoint stored in FP8 (F8_E4M3 weights with "
               ".weight_scale), and {} has none: use --quantization fp8-cast for a bf16 checkpoint",
               view.synthesizing() ? std::string("the synthesized model") : view.set().describe());
  }
  return w;
}

}  // namespace ltx2::models::transformer
