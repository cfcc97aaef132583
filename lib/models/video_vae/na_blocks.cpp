// Neighborhood-attention blocks of the diffusion video decoder: loading (fused qkv split, gate
// folds) and their forward passes.
#include "models/video_vae/na_blocks.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"

namespace ltx2::video_vae {

namespace {

int64_t mlp_hidden(int64_t dim) {
  return (dim * 4 + 15) / 16 * 16;  // (int(dim * mlp_ratio) + 15) // 16 * 16, mlp_ratio 4
}

// Row i of the shared modulation plus row i of a block's table, as [B, 1, 1, 1, C].
Tensor ada_row(const Tensor& modulation, const Tensor& table, int64_t i) {
  const int64_t B = modulation.size(0), C = modulation.size(2);
  return ops::add(modulation.select(1, i), table.select(0, i)).contiguous().view({B, 1, 1, 1, C});
}

Tensor modulate_channels_last(const Tensor& y, const Tensor& scale, const Tensor& shift) {
  return ops::add(ops::mul(y, ops::add(scale, 1.f)), shift);
}

}  // namespace

Tensor load_gated(const WeightView& w, const std::string& key, const Shape& shape, const std::string& gate) {
  if (gate.empty() || w.synthesizing() || !w.has(gate)) return w.load(key, shape);
  const Tensor g = w.load(gate, {shape[0]}, DType::F32);
  Shape gs(shape.size(), 1);
  gs[0] = shape[0];
  Tensor folded = ops::mul(w.load(key, shape, DType::F32), g.view(gs));
  const DType stored = w.stored_dtype(key);
  if (stored != DType::F32 && dtype_is_floating(stored) && !dtype_is_float8(stored))
    folded = folded.to(stored);
  return folded.to(w.dtype()).to(w.device());
}

SwiGlu::SwiGlu(const WeightView& w, int64_t dim, const std::string& down_gate) {
  const int64_t hidden = mlp_hidden(dim);
  w_gate = w.load("mlp.w_gate.weight", {hidden, dim});
  w_up = w.load("mlp.w_up.weight", {hidden, dim});
  w_down = load_gated(w, "mlp.w_down.weight", {dim, hidden}, down_gate);
}

Tensor SwiGlu::forward(const Tensor& y) const {
  return ops::linear(ops::mul(ops::silu(ops::linear(y, w_gate)), ops::linear(y, w_up)), w_down);
}

NaAttention::NaAttention(const WeightView& w, int64_t dim, int64_t head_dim, const Dims3& kernel,
                         const Dims3& rope_split, const std::string& proj_gate)
    : dim_(dim), head_dim_(head_dim), kernel_(kernel), rope_split_(rope_split) {
  const Tensor qkv_w = w.load("attn.qkv.weight", {3 * dim, dim});
  const Tensor qkv_b = w.load("attn.qkv.bias", {3 * dim});
  wq_ = qkv_w.slice(0, 0, dim).contiguous();
  wk_ = qkv_w.slice(0, dim, 2 * dim).contiguous();
  wv_ = qkv_w.slice(0, 2 * dim, 3 * dim).contiguous();
  bq_ = qkv_b.slice(0, 0, dim).contiguous();
  bk_ = qkv_b.slice(0, dim, 2 * dim).contiguous();
  bv_ = qkv_b.slice(0, 2 * dim, 3 * dim).contiguous();
  q_norm_ = w.load("attn.q_norm.weight", {head_dim});
  k_norm_ = w.load("attn.k_norm.weight", {head_dim});
  proj_w_ = load_gated(w, "attn.proj.weight", {dim, dim}, proj_gate);
  proj_b_ = load_gated(w, "attn.proj.bias", {dim}, proj_gate);
}

Tensor NaAttention::forward(const Tensor& y, const AxisPositions& pos) const {
  const int64_t B = y.size(0), T = y.size(1), H = y.size(2), W = y.size(3);
  const Shape heads = {B, T, H, W, dim_ / head_dim_, head_dim_};
  const float scale = static_cast<float>(std::pow(static_cast<double>(head_dim_), -0.5));
  Tensor q = ops::mul(ops::rms_norm(ops::linear(y, wq_, bq_).reshape(heads), q_norm_, kNaNormEps), scale);
  Tensor k = ops::rms_norm(ops::linear(y, wk_, bk_).reshape(heads), k_norm_, kNaNormEps);
  const Tensor v = ops::linear(y, wv_, bv_).reshape(heads);
  q = axial_rope(q, rope_split_, pos);
  k = axial_rope(k, rope_split_, pos);
  const Tensor o = neighborhood_attention(q, k, v, kernel_);
  return ops::linear(o.reshape({B, T, H, W, dim_}), proj_w_, proj_b_);
}

NaBlock::NaBlock(const WeightView& w, int64_t dim, int64_t head_dim, const Dims3& kernel,
                 const Dims3& rope_split)
    : norm1_(w.load("norm1.weight", {dim})),
      norm2_(w.load("norm2.weight", {dim})),
      attn_(w, dim, head_dim, kernel, rope_split),
      mlp_(w, dim) {}

Tensor NaBlock::forward(const Tensor& x) const {
  const AxisPositions pos = axis_positions(x.size(1), x.size(2), x.size(3));
  Tensor h = ops::add(x, attn_.forward(ops::rms_norm(x, norm1_, kNaNormEps), pos));
  return ops::add(h, mlp_.forward(ops::rms_norm(h, norm2_, kNaNormEps)));
}

DiffusionNaBlock::DiffusionNaBlock(const WeightView& w, int64_t dim, int64_t context_channels,
                                   int64_t head_dim, const Dims3& kernel, const Dims3& rope_split)
    : context_w_(load_gated(w, "context_proj.weight", {dim, context_channels}, "gate_ctx")),
      context_b_(load_gated(w, "context_proj.bias", {dim}, "gate_ctx")),
      scale_shift_table_(w.load("scale_shift_table", {7, dim})),
      norm1_(w.load("norm1.weight", {dim})),
      norm2_(w.load("norm2.weight", {dim})),
      attn_(w, dim, head_dim, kernel, rope_split, "gate_msa"),
      mlp_(w, dim, "gate_mlp"),
      dim_(dim) {}

Tensor DiffusionNaBlock::attention_residual(const Tensor& x, const Tensor& scale, const Tensor& shift) const {
  // The reference's _run_w_chunked_residual: every chunk reads the block's input x.
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), W = x.size(3), C = x.size(4);
  const int64_t halo = attn_.kernel()[2] / 2, chunk_w = (W + kWChunks - 1) / kWChunks,
                extent = chunk_w + 2 * halo;
  Tensor result = x.clone();
  Tensor left_halo;
  for (int64_t i = 0; i < kWChunks; ++i) {
    const int64_t core_start = i * chunk_w, core_end = std::min(W, (i + 1) * chunk_w);
    const int64_t core_len = core_end - core_start;
    if (core_len <= 0) break;  // this and later chunks add nothing
    Tensor buf = Tensor::zeros({B, T, H, extent, C}, x.dtype(), x.device());
    if (i > 0 && left_halo.defined() && left_halo.size(3) > 0)
      buf.slice(3, halo - left_halo.size(3), halo).copy_(left_halo);
    buf.slice(3, halo, halo + core_len).copy_(x.slice(3, core_start, core_end));
    int64_t right_filled = 0;
    if (i + 1 < kWChunks) {
      right_filled = std::min(W, core_end + halo) - core_end;
      if (right_filled > 0)
        buf.slice(3, halo + core_len, halo + core_len + right_filled)
            .copy_(x.slice(3, core_end, core_end + right_filled));
    }
    // The volume's W borders: missing halo columns repeat the edge column.
    if (i == 0 && halo > 0)
      buf.slice(3, 0, halo).copy_(buf.slice(3, halo, halo + 1).expand({B, T, H, halo, C}));
    const int64_t filled = halo + core_len + right_filled;
    if (extent > filled)
      buf.slice(3, filled, extent)
          .copy_(buf.slice(3, halo + core_len - 1, halo + core_len).expand({B, T, H, extent - filled, C}));
    if (i + 1 < kWChunks) {
      const int64_t take = std::min(halo, core_len);
      left_halo = x.slice(3, core_end - take, core_end);
    }
    AxisPositions pos = axis_positions(T, H, 0);
    for (int64_t j = 0; j < extent; ++j) pos.w.push_back(static_cast<float>(j + core_start - halo));
    const Tensor y = modulate_channels_last(ops::rms_norm(buf, norm1_, kNaNormEps), scale, shift);
    const Tensor o = attn_.forward(y, pos).slice(3, halo, halo + core_len);
    Tensor dst = result.slice(3, core_start, core_end);
    dst.copy_(ops::add(dst, o));
  }
  return result;
}

Tensor DiffusionNaBlock::forward(const Tensor& x, const Tensor& context, const Tensor& modulation) const {
  LTX2_CHECK(
      x.dim() == 5 && x.size(0) == 1 && x.size(4) == dim_,
      "diffusion NA block: x {} must be [1, T, H, W, {}] (the reference's chunked pathway takes batch 1)",
      x.str(), dim_);
  LTX2_CHECK(modulation.dim() == 3 && modulation.size(1) == 7 && modulation.size(2) == dim_,
             "diffusion NA block: modulation {} must be [B, 7, {}]", modulation.str(), dim_);
  const Tensor scale_msa = ada_row(modulation, scale_shift_table_, 0);
  const Tensor shift_msa = ada_row(modulation, scale_shift_table_, 1);
  const Tensor scale_mlp = ada_row(modulation, scale_shift_table_, 3);
  const Tensor shift_mlp = ada_row(modulation, scale_shift_table_, 4);
  Tensor h = ops::add(x, ops::linear(context, context_w_, context_b_));
  h = attention_residual(h, scale_msa, shift_msa);
  const Tensor y = modulate_channels_last(ops::rms_norm(h, norm2_, kNaNormEps), scale_mlp, shift_mlp);
  return ops::add(h, mlp_.forward(y));
}

PixelShuffleUpsample::PixelShuffleUpsample(const WeightView& w, int64_t in_channels, const Dims3& stride,
                                           int64_t reduction)
    : stride_(stride) {
  const int64_t P = stride[0] * stride[1] * stride[2];
  const int64_t proj_out = P * in_channels / reduction;
  out_channels_ = proj_out / P;
  w_ = w.load("proj.weight", {proj_out, in_channels});
  b_ = w.load("proj.bias", {proj_out});
}

Tensor PixelShuffleUpsample::forward(const Tensor& x, bool drop_leading_frame) const {
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), W = x.size(3);
  const auto [p1, p2, p3] = stride_;
  // "b t h w (c p1 p2 p3) -> b (t p1) (h p2) (w p3) c"
  Tensor y = ops::linear(x, w_, b_)
                 .reshape({B, T, H, W, out_channels_, p1, p2, p3})
                 .permute({0, 1, 5, 2, 6, 3, 7, 4})
                 .contiguous()
                 .view({B, T * p1, H * p2, W * p3, out_channels_});
  if (p1 == 2 && drop_leading_frame) y = y.slice(1, 1, T * p1).contiguous();
  return y;
}

}  // namespace ltx2::video_vae
