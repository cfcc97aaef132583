// Building blocks of the diffusion transformer (reference: attention.py, adaln.py,
// timestep_embedding.py, feed_forward.py).
#include "models/transformer/modules.h"

#include <cmath>
#include <map>
#include <mutex>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/norm_rope.h"
#include "ops/shape.h"

namespace ltx2::models::transformer {

namespace {
constexpr int64_t kSinusoidHalf = 128;

// q_norm / k_norm and, when the call gives tables, RoPE in one fused pass.
Tensor qk_norm(const Tensor& t, const Tensor& weight, float eps, const ops::RopeTables* rope) {
  return rope ? ops::rms_norm_rope(t, weight, eps, *rope) : ops::rms_norm(t, weight, eps);
}

// Both norms; one pass over q and k when they share the tables (self-attention), so that the tables
// are read once.
ops::NormedQk qk_norms(const Tensor& q, const Tensor& k, const AttentionWeights& w,
                       const AttentionCall& call) {
  const bool shared = call.q_rope != nullptr && call.q_rope == call.k_rope && q.shape() == k.shape() &&
                      w.q_norm.defined() == w.k_norm.defined() &&
                      (!w.q_norm.defined() || w.q_norm.dtype() == w.k_norm.dtype());
  if (shared) return ops::rms_norm_rope_qk(q, w.q_norm, k, w.k_norm, call.eps, *call.q_rope);
  return {qk_norm(q, w.q_norm, call.eps, call.q_rope), qk_norm(k, w.k_norm, call.eps, call.k_rope)};
}
}  // namespace

const Tensor& LinearInput::tensor() const {
  LTX2_CHECK(x_.defined(), "a linear wants the tensor of an input made only as FP8 rows");
  return x_;
}

const ops::Fp8Rows& LinearInput::rows() const {
  if (!rows_) rows_ = ops::quantize_rows_f8e4m3(tensor());
  return *rows_;
}

bool reads_rows(const LinearWeights& w) {
  return w.fp8() && !w.input_scale.defined();
}

namespace {
ops::Fp8Linear fp8_linear(const LinearWeights& w) {
  return {w.weight, w.weight_scale, w.input_scale, w.bias};
}
}  // namespace

// The input takes the weight's dtype, as the reference's bf16 model casts the float32 sinusoid and
// float32-promoted activations before its linears (a no-op for the float32 model).
// An FP8 linear answers in its input's dtype: fp8-scaled-mm quantizes x itself, fp8 reads its rows.
Tensor apply_linear(const LinearInput& x, const LinearWeights& w) {
  if (reads_rows(w)) return ops::linear_fp8(x.rows(), fp8_linear(w));
  if (w.fp8()) return ops::linear_fp8(x.tensor(), fp8_linear(w));
  return ops::linear(x.tensor().to(w.weight.dtype()), w.weight, w.bias);
}

Tensor apply_linear_gelu_tanh(const LinearInput& x, const LinearWeights& w) {
  if (reads_rows(w)) return ops::linear_fp8(x.rows(), fp8_linear(w), true);
  if (w.fp8()) return ops::linear_fp8(x.tensor(), fp8_linear(w), true);
  return ops::linear_gelu_tanh(x.tensor().to(w.weight.dtype()), w.weight, w.bias);
}

LinearInput normalized_input(const Tensor& x, const ops::AdaRow& shift, const ops::AdaRow& scale, float eps,
                             bool rows_only) {
  if (rows_only) return LinearInput(ops::rms_norm_modulate_fp8(x, shift, scale, eps));
  return LinearInput(ops::rms_norm_modulate(x, shift, scale, eps));
}

// The 128 sinusoid frequencies exp(-ln(10000) * j / 128), formed in float32 as the reference:
// (j * -ln(10000)) / 128, then exp. torch's float32 exp rounds j = 13 and j = 44 one ulp above the
// C library's correctly rounded result; the fixtures pin every one of the 128 values (each column
// is checked at several timesteps) and these two are the only differences, so they are adopted.
Tensor sinusoid_frequencies() {
  constexpr int64_t kRoundedUpByTorch[] = {13, 44};
  Tensor exponent = ops::mul(Tensor::arange(kSinusoidHalf), static_cast<float>(-std::log(10000.0)));
  exponent = ops::div(exponent, Tensor::scalar(static_cast<float>(kSinusoidHalf)));
  Tensor freqs = ops::exp(exponent);
  float* f = freqs.data<float>();
  for (int64_t j : kRoundedUpByTorch) f[j] = std::nextafter(f[j], 1.0f);
  return freqs;
}

// The frequencies on `device`, uploaded once per device: an upload in every forward would make the
// host wait for the device.
Tensor sinusoid_frequencies_on(Device device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, Tensor> placed;
  static const Tensor cpu_freqs = sinusoid_frequencies();
  if (device.is_cpu()) return cpu_freqs;
  std::lock_guard<std::mutex> lock(mutex);
  Tensor& t = placed[{static_cast<int>(device.type), device.index}];
  if (!t.defined()) t = cpu_freqs.to(device);
  return t;
}

Tensor timestep_sinusoid(const Tensor& t) {
  const Tensor freqs = sinusoid_frequencies_on(t.device());
  const Tensor angles = ops::mul(t.reshape({t.numel(), 1}), freqs.view({1, kSinusoidHalf}));
  return ops::cat({ops::unary(angles, ops::UnaryOp::Cos), ops::unary(angles, ops::UnaryOp::Sin)}, 1);
}

AdaLnOutput adaln_single(const AdaLnWeights& w, const Tensor& t, Tensor* sinusoid) {
  const Tensor emb_in = timestep_sinusoid(t);
  if (sinusoid) *sinusoid = emb_in;
  AdaLnOutput out;
  out.embedding = apply_linear(ops::silu(apply_linear(emb_in, w.linear_1)), w.linear_2);
  out.modulation = apply_linear(ops::silu(out.embedding), w.linear);
  return out;
}

ops::AdaRow ada_row(const Tensor& table, const Tensor& modulation, const Tensor& index, int64_t rows,
                    int64_t row) {
  return ops::ada_row(table, row, modulation, rows, row, index);
}

Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale) {
  return ops::add(ops::mul(x, ops::add(scale, 1.0f)), shift);
}

Tensor feed_forward(const FeedForwardWeights& w, const LinearInput& x) {
  return apply_linear(apply_linear_gelu_tanh(x, w.proj_in), w.proj_out);
}

bool query_reads_rows_only(const AttentionWeights& w) {
  return reads_rows(w.to_q) && !w.to_gate_logits.weight.defined();
}

bool context_reads_rows_only(const AttentionWeights& w) {
  return reads_rows(w.to_k) && reads_rows(w.to_v);
}

Tensor attention_module(const AttentionWeights& w, const LinearInput& x, const LinearInput& context,
                        const AttentionCall& call, const AttentionStrategy& strategy) {
  const Tensor v = apply_linear(context, w.to_v);
  Tensor out;
  if (call.perturbation.all) {
    out = v;
  } else {
    const Tensor q = apply_linear(x, w.to_q);
    const ops::NormedQk qk = qk_norms(q, apply_linear(context, w.to_k), w, call);
    out = strategy.attend(call.site, qk.q, qk.k, v, call.heads, call.mask);
    if (call.perturbation.keep.defined()) {
      const Tensor& p = call.perturbation.keep;
      out = ops::add(ops::mul(out, p), ops::mul(v, ops::add(ops::mul(p, -1.0f), 1.0f)));
    }
  }
  if (w.to_gate_logits.weight.defined()) {
    const int64_t B = out.size(0), T = out.size(1), inner = out.size(2);
    const Tensor gate = ops::mul(ops::sigmoid(apply_linear(x, w.to_gate_logits)), 2.0f);  // [B, T, H]
    out =
        ops::mul(out.reshape({B, T, call.heads, inner / call.heads}), gate.unsqueeze(3)).view({B, T, inner});
  }
  return apply_linear(out, w.to_out);
}

}  // namespace ltx2::models::transformer
