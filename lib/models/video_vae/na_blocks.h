// The neighborhood-attention transformer blocks of the diffusion video decoder (reference:
// transformer/blocks.py, attention.py, swiglu.py, layers.py, chunked/*), channels-last
// [B, T, H, W, C] throughout, weights under the checkpoint's names:
// - NaAttention: <p>attn.qkv.{weight,bias} (fused [3C, C], split into q, k, v at load),
//   q_norm / k_norm (RMSNorm over a head, eps 1e-6), proj; q scaled by head_dim^-0.5, q and k
//   rotated by axial RoPE, neighborhood attention with the stage's kernel;
// - NaBlock (stages 1-4): x + proj(NA(norm1 x)), then x + SwiGLU(norm2 x);
// - DiffusionNaBlock (the diffusion stage, the reference's default "chunked" pathway): x + the
//   block's context_proj of the upsampled stage-4 context, x + attention of the AdaLN-modulated
//   norm1(x) (scale/shift rows 0/1 of the shared modulation + scale_shift_table) computed in W
//   chunks (4 chunks, halos of kW/2 columns taken from the neighbours, edge-replicated at the
//   volume's W borders, RoPE at the chunk's global W positions), then x + SwiGLU of the modulated
//   norm2(x) (rows 3/4). Static gate_msa / gate_mlp / gate_ctx tensors, when the checkpoint has
//   them, are folded into attn.proj, mlp.w_down and context_proj at load (W <- g W, b <- g b in
//   float32, rounded to the stored dtype), as the reference's loader does;
// - PixelShuffleUpsample: Linear to P*C/r channels, then depth-to-space by the stride (channel
//   order c, t, h, w), the first frame dropped when time doubles.
#pragma once

#include <string>

#include "core/tensor.h"
#include "io/configs/diffusion_video_decoder_config.h"
#include "io/weights.h"
#include "models/video_vae/neighborhood_attention.h"

namespace ltx2::video_vae {

inline constexpr float kNaNormEps = 1e-6f;

// Loads <key> [shape], multiplied row-wise by <gate> [shape[0]] when the view has that gate (the
// product in float32, rounded to the stored dtype), placed as the view is.
Tensor load_gated(const WeightView& w, const std::string& key, const Shape& shape, const std::string& gate);

struct SwiGlu {
  Tensor w_gate, w_up, w_down;  // no biases
  SwiGlu() = default;
  SwiGlu(const WeightView& w, int64_t dim, const std::string& down_gate = "");
  Tensor forward(const Tensor& y) const;  // w_down(silu(w_gate y) * w_up y)
};

class NaAttention {
 public:
  NaAttention() = default;
  NaAttention(const WeightView& w, int64_t dim, int64_t head_dim, const Dims3& kernel,
              const Dims3& rope_split, const std::string& proj_gate = "");
  // proj(NA(q, k, v)) of y [B, T, H, W, C] (already normed), RoPE at `pos`.
  Tensor forward(const Tensor& y, const AxisPositions& pos) const;
  const Dims3& kernel() const { return kernel_; }

 private:
  Tensor wq_, bq_, wk_, bk_, wv_, bv_, q_norm_, k_norm_, proj_w_, proj_b_;
  int64_t dim_ = 0, head_dim_ = 0;
  Dims3 kernel_{}, rope_split_{};
};

class NaBlock {
 public:
  NaBlock(const WeightView& w, int64_t dim, int64_t head_dim, const Dims3& kernel, const Dims3& rope_split);
  Tensor forward(const Tensor& x) const;

 private:
  Tensor norm1_, norm2_;
  NaAttention attn_;
  SwiGlu mlp_;
};

class DiffusionNaBlock {
 public:
  // The reference's fixed W split of the chunked pathway.
  static constexpr int64_t kWChunks = 4;
  DiffusionNaBlock(const WeightView& w, int64_t dim, int64_t context_channels, int64_t head_dim,
                   const Dims3& kernel, const Dims3& rope_split);
  // x [B, T, H, W, dim]; context [B, T, H, W, context_channels] (the upsampled stage-4 features);
  // modulation [B, 7, dim] (the shared AdaLN's chunks). B must be 1.
  Tensor forward(const Tensor& x, const Tensor& context, const Tensor& modulation) const;

 private:
  Tensor context_w_, context_b_, scale_shift_table_, norm1_, norm2_;
  NaAttention attn_;
  SwiGlu mlp_;
  int64_t dim_;
  Tensor attention_residual(const Tensor& x, const Tensor& scale, const Tensor& shift) const;
};

class PixelShuffleUpsample {
 public:
  PixelShuffleUpsample() = default;
  PixelShuffleUpsample(const WeightView& w, int64_t in_channels, const Dims3& stride, int64_t reduction);
  Tensor forward(const Tensor& x, bool drop_leading_frame = true) const;
  int64_t out_channels() const { return out_channels_; }
  const Dims3& stride() const { return stride_; }

 private:
  Tensor w_, b_;
  Dims3 stride_{};
  int64_t out_channels_ = 0;
};

}  // namespace ltx2::video_vae
