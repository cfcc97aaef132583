// The op table of the CUDA backend (the ggml idea): one function pointer per op that has a GPU
// implementation. kernels/register.cu fills it; an op whose entry is still null fails with a clear
// message when called on a GPU tensor, so adding a CPU op never breaks the CUDA build. The CPU
// implementations are direct calls (ops/cpu/*.cpp); every public op dispatches on its first
// tensor's device through LTX2_DISPATCH_CUDA.
#pragma once

#include "core/error.h"
#include "core/op_profile.h"
#include "core/tensor.h"

namespace ltx2::ops {

struct Conv1dOptions;
struct Conv3dParams;
struct ConvTranspose1dOptions;
struct Conv2dPadding;
struct AdaRow;
struct RopeSpec;
struct RopeTables;
struct Fp8Linear;

struct CudaOps {
  Tensor (*linear)(const Tensor& x, const Tensor& w, const Tensor& bias) = nullptr;
  Tensor (*matmul)(const Tensor& a, const Tensor& b) = nullptr;
  Tensor (*binary)(const Tensor& a, const Tensor& b, int op) = nullptr;
  Tensor (*unary)(const Tensor& x, int op, float alpha) = nullptr;
  Tensor (*softmax)(const Tensor& x) = nullptr;
  Tensor (*rms_norm)(const Tensor& x, const Tensor& w, float eps) = nullptr;
  Tensor (*layer_norm)(const Tensor& x, const Tensor& w, const Tensor& b, float eps) = nullptr;
  Tensor (*attention)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                      float scale) = nullptr;
  Tensor (*reduce)(const Tensor& x, int dim, bool keepdim, int op) = nullptr;
  Tensor (*conv3d)(const Tensor& x, const Tensor& w, const Tensor& bias,
                   const Conv3dParams& params) = nullptr;
  Tensor (*edge_pad)(const Tensor& x, int dim, int64_t before, int64_t after, int mode) = nullptr;
  Tensor (*pixel_norm)(const Tensor& x, float eps) = nullptr;
  Tensor (*group_norm)(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b,
                       float eps) = nullptr;
  Tensor (*conv1d)(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& opt) = nullptr;
  Tensor (*conv_transpose1d)(const Tensor& x, const Tensor& w, const Tensor& bias,
                             const ConvTranspose1dOptions& opt) = nullptr;
  Tensor (*conv2d)(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dPadding& pad) = nullptr;
  Tensor (*upsample1d)(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                       int64_t crop_right) = nullptr;
  Tensor (*lowpass_downsample1d)(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                                 int64_t pad_right) = nullptr;
  Tensor (*snake_beta)(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta) = nullptr;
  Tensor (*upsample_nearest2d)(const Tensor& x, int64_t factor) = nullptr;
  Tensor (*apply_rope)(const Tensor& x, const Tensor& cos, const Tensor& sin, int layout) = nullptr;
  // grid: the float32 frequency grid on the host (rope_frequency_grid).
  RopeTables (*rope_tables)(const Tensor& positions, const Tensor& grid, const RopeSpec& spec) = nullptr;
  Tensor (*linear_gelu_tanh)(const Tensor& x, const Tensor& w, const Tensor& bias) = nullptr;
  Tensor (*linear_fp8)(const Tensor& x, const Fp8Linear& w, bool gelu_tanh) = nullptr;
  Tensor (*rms_norm_modulate)(const Tensor& x, const AdaRow& shift, const AdaRow& scale, float eps) = nullptr;
  Tensor (*add_gated)(const Tensor& x, const Tensor& y, const AdaRow& gate) = nullptr;
  Tensor (*rms_norm_rope)(const Tensor& x, const Tensor& w, float eps, const Tensor& cos, const Tensor& sin,
                          int layout) = nullptr;
  Tensor (*decoded_to_rgb8)(const Tensor& video) = nullptr;
};

// The filled table; throws when this build has no CUDA backend.
const CudaOps& cuda_ops();

}  // namespace ltx2::ops

// In a public op: if `dev` is a GPU, call the table entry `name` with the remaining arguments
// (timed by a recording OpProfile under the entry's name).
#define LTX2_DISPATCH_CUDA(dev, name, ...)                                     \
  do {                                                                         \
    if ((dev).is_cuda()) {                                                     \
      auto fn_ = ::ltx2::ops::cuda_ops().name;                                 \
      LTX2_CHECK(fn_ != nullptr, "op '{}' has no CUDA implementation", #name); \
      ::ltx2::OpScope op_scope_(#name);                                        \
      return fn_(__VA_ARGS__);                                                 \
    }                                                                          \
  } while (0)
