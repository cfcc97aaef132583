// 3-D convolution over NCDHW tensors (PyTorch Conv3d semantics: cross-correlation, zero padding).
// Conv2d and depthwise filters are expressed through it by the caller (a [Cout, Cin, 1, kH, kW]
// weight; channels folded into the batch).
#pragma once

#include <array>
#include <string>

#include "core/tensor.h"

namespace ltx2::ops {

struct Conv3dParams {
  std::array<int64_t, 3> stride{1, 1, 1};   // (D, H, W)
  std::array<int64_t, 3> padding{0, 0, 0};  // zeros on both sides of (D, H, W)
};

// x [B, Cin, D, H, W], w [Cout, Cin, kD, kH, kW], bias [Cout] or undefined
// -> [B, Cout, (D + 2pD - kD)/sD + 1, ...]. Float32 with float32 accumulation.
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv3dParams& params = {});

// The CUDA conv1d/conv2d/conv3d gather their im2col columns in chunks of output positions holding
// at most this many bytes (default 256 MiB; at least one 8-position chunk is always used). Tests
// lower it to exercise the chunking; set returns the previous value.
int64_t conv_column_budget();
int64_t set_conv_column_budget(int64_t bytes);

// The CUDA backend runs conv1d, conv2d and conv3d on one of two engines: the implicit GEMM
// (im2col gather + cuBLASLt, every case) or cuDNN's convolution (builds with cuDNN only; bf16
// input, weight and bias, groups 1, 16-byte aligned operands). Auto and Cudnn both take cuDNN
// wherever it can run and the implicit GEMM elsewhere; Gemm forces the implicit GEMM. The mode
// starts from the environment variable LTX2_CONV (auto|gemm|cudnn; default auto).
enum class ConvEngine { Auto, Gemm, Cudnn };

ConvEngine conv_engine();
void set_conv_engine(ConvEngine engine);
// "auto", "gemm" or "cudnn"; anything else throws naming `what` (e.g. the variable it came from).
ConvEngine parse_conv_engine(const std::string& name, const std::string& what);
const char* conv_engine_name(ConvEngine engine);
// Whether this build has the cuDNN engine.
bool cudnn_conv_built();

}  // namespace ltx2::ops
