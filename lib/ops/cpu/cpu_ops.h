// The CPU implementations of the ops (lib/ops/cpu/*.cpp): float32 kernels with OpenMP, each with
// the contract of the public op of the same name (ops/*.h), whose dispatcher (lib/ops/*.cpp) calls
// them for tensors on the host after the checks that every backend shares. A bf16 operand is
// computed on its float32 widening (bf16_widening.h). Ops that compose other ops (the fused AdaLN
// and qk-norm+RoPE ops, linear_gelu_tanh) have no entry here: their dispatcher composes them.
#pragma once

#include "core/tensor.h"
#include "ops/attention.h"
#include "ops/channel_norm.h"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv3d.h"
#include "ops/conv_transpose1d.h"
#include "ops/cpu/bf16_widening.h"
#include "ops/edge_pad.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/reduce.h"
#include "ops/resample1d.h"
#include "ops/rgb8.h"
#include "ops/rope.h"
#include "ops/snake.h"
#include "ops/stochastic_round.h"
#include "ops/upsample_nearest.h"

namespace ltx2::ops::cpu {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias);
Tensor linear_fp8(const Tensor& x, const Fp8Linear& w, bool gelu_tanh);
Tensor linear_fp8_rows(const Fp8Rows& x, const Fp8Linear& w, bool gelu_tanh);
Fp8Rows quantize_rows_f8e4m3(const Tensor& x);
Tensor fp8_cast_fuse_stochastic(const Tensor& weight, const Tensor& delta, uint64_t seed);
Tensor matmul(const Tensor& a, const Tensor& b);

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op);
Tensor unary(const Tensor& x, UnaryOp op, float alpha);

Tensor reduce(const Tensor& x, int dim, bool keepdim, ReduceOp op);
Tensor softmax(const Tensor& x);

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps);
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps);

// q, k, v as attention_kv_group accepted them.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, float scale);

// grid: rope_frequency_grid for the spec, which the dispatcher checked the positions against.
RopeTables rope_tables(const Tensor& positions, const Tensor& grid, const RopeSpec& spec);
Tensor apply_rope(const Tensor& x, const RopeTables& tables);

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& opt);
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dPadding& pad);
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv3dParams& params);
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTranspose1dOptions& opt);

Tensor pixel_norm(const Tensor& x, float eps);
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, float eps);

Tensor edge_pad(const Tensor& x, int dim, int64_t before, int64_t after, PadMode mode);

Tensor upsample1d(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                  int64_t crop_right);
Tensor lowpass_downsample1d(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                            int64_t pad_right);

Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta);
Tensor upsample_nearest2d(const Tensor& x, int64_t factor);
Tensor decoded_to_rgb8(const Tensor& video);

}  // namespace ltx2::ops::cpu
