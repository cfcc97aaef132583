// The ops of the CUDA backend, listed once. Every entry is X(name, return type, (parameter list)),
// the signature of the kernel entry point ltx2::cuda::name (kernels/<file>.cu). From this list
// follow the members of the op table (ops/cuda_ops.h), the declarations and the filling of the
// table in kernels/register.cu, and the names the backend-parity test must have a case for
// (tests/unit/gpu/test_backend_ops.cpp): adding an op here is the one declaration a new kernel needs.
// The parameters are the public op's after its shared checks, with enums passed as int and
// composite arguments (RoPE tables) passed as their tensors, so that kernels/ see no op logic.
// Types are spelled ops::X so that the list reads the same inside ltx2::ops and ltx2::cuda.
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

struct Conv1dOptions;
struct Conv2dPadding;
struct Conv3dParams;
struct ConvTranspose1dOptions;
struct AdaRow;
struct RopeSpec;
struct RopeTables;
struct Fp8Linear;
struct Fp8Rows;
struct NormedQk;

}  // namespace ltx2::ops

// clang-format off
#define LTX2_CUDA_OPS(X)                                                                              \
  /* linear.h */                                                                                      \
  X(linear, Tensor, (const Tensor& x, const Tensor& w, const Tensor& bias))                           \
  X(linear_gelu_tanh, Tensor, (const Tensor& x, const Tensor& w, const Tensor& bias))                 \
  X(linear_fp8, Tensor, (const Tensor& x, const ops::Fp8Linear& w, bool gelu_tanh))                   \
  X(linear_fp8_rows, Tensor, (const ops::Fp8Rows& x, const ops::Fp8Linear& w, bool gelu_tanh))        \
  X(quantize_rows_f8e4m3, ops::Fp8Rows, (const Tensor& x))                                            \
  /* stochastic_round.h */                                                                            \
  X(fp8_cast_fuse_stochastic, Tensor, (const Tensor& weight, const Tensor& delta, int64_t seed))      \
  X(matmul, Tensor, (const Tensor& a, const Tensor& b))                                               \
  /* elementwise.h */                                                                                 \
  X(binary, Tensor, (const Tensor& a, const Tensor& b, int op))                                       \
  X(unary, Tensor, (const Tensor& x, int op, float alpha))                                            \
  /* reduce.h */                                                                                      \
  X(reduce, Tensor, (const Tensor& x, int dim, bool keepdim, int op))                                 \
  X(softmax, Tensor, (const Tensor& x))                                                               \
  /* norm.h */                                                                                        \
  X(rms_norm, Tensor, (const Tensor& x, const Tensor& w, float eps))                                  \
  X(layer_norm, Tensor, (const Tensor& x, const Tensor& w, const Tensor& b, float eps))               \
  /* attention.h: the fused kernel's head dims only (attention_kernel_takes) */                       \
  X(attention, Tensor, (const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,        \
                        float scale))                                                                 \
  /* rope.h; grid: the float32 frequency grid on the host (rope_frequency_grid) */                    \
  X(rope_tables, ops::RopeTables, (const Tensor& positions, const Tensor& grid,                       \
                                   const ops::RopeSpec& spec))                                        \
  X(apply_rope, Tensor, (const Tensor& x, const Tensor& cos, const Tensor& sin, int layout))          \
  /* norm_rope.h */                                                                                   \
  X(rms_norm_rope, Tensor, (const Tensor& x, const Tensor& w, float eps, const Tensor& cos,           \
                            const Tensor& sin, int layout))                                           \
  X(rms_norm_rope_qk, ops::NormedQk, (const Tensor& q, const Tensor& wq, const Tensor& k,             \
                                      const Tensor& wk, float eps, const Tensor& cos,                 \
                                      const Tensor& sin, int layout))                                 \
  /* adaln.h */                                                                                       \
  X(rms_norm_modulate, Tensor, (const Tensor& x, const ops::AdaRow& shift, const ops::AdaRow& scale,  \
                                float eps))                                                           \
  X(rms_norm_modulate_fp8, ops::Fp8Rows, (const Tensor& x, const ops::AdaRow& shift,                  \
                                          const ops::AdaRow& scale, float eps))                       \
  X(add_gated, Tensor, (const Tensor& x, const Tensor& y, const ops::AdaRow& gate))                   \
  /* conv1d.h, conv2d.h, conv3d.h, conv_transpose1d.h */                                              \
  X(conv1d, Tensor, (const Tensor& x, const Tensor& w, const Tensor& bias,                            \
                     const ops::Conv1dOptions& opt))                                                  \
  X(conv2d, Tensor, (const Tensor& x, const Tensor& w, const Tensor& bias,                            \
                     const ops::Conv2dPadding& pad))                                                  \
  X(conv3d, Tensor, (const Tensor& x, const Tensor& w, const Tensor& bias,                            \
                     const ops::Conv3dParams& params))                                                \
  X(conv_transpose1d, Tensor, (const Tensor& x, const Tensor& w, const Tensor& bias,                  \
                               const ops::ConvTranspose1dOptions& opt))                               \
  /* channel_norm.h */                                                                                \
  X(pixel_norm, Tensor, (const Tensor& x, float eps))                                                 \
  X(group_norm, Tensor, (const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b,           \
                         float eps))                                                                  \
  /* edge_pad.h */                                                                                    \
  X(edge_pad, Tensor, (const Tensor& x, int dim, int64_t before, int64_t after, int mode))            \
  /* resample1d.h */                                                                                  \
  X(upsample1d, Tensor, (const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad,           \
                         int64_t crop_left, int64_t crop_right))                                      \
  X(lowpass_downsample1d, Tensor, (const Tensor& x, const Tensor& filter, int64_t stride,             \
                                   int64_t pad_left, int64_t pad_right))                              \
  /* snake.h */                                                                                       \
  X(snake_beta, Tensor, (const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta))           \
  /* upsample_nearest.h */                                                                            \
  X(upsample_nearest2d, Tensor, (const Tensor& x, int64_t factor))                                    \
  /* rgb8.h */                                                                                        \
  X(decoded_to_rgb8, Tensor, (const Tensor& video))
// clang-format on

namespace ltx2::ops {

#define LTX2_CUDA_OP_NAME(name, ret, params) #name,
// The names of the listed ops, in list order.
inline constexpr const char* kCudaOpNames[] = {LTX2_CUDA_OPS(LTX2_CUDA_OP_NAME)};
#undef LTX2_CUDA_OP_NAME

}  // namespace ltx2::ops
