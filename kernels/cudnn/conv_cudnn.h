// The cuDNN convolution engine (kernels/cudnn/conv_cudnn.cpp), built only when CMake finds cuDNN 9
// (LTX2_WITH_CUDNN). Plain C++: no cuDNN type leaks out of its file.
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace ltx2::cuda {

// A 3-D convolution's window: zeros before (`pre`) and after (`post`) each of (D, H, W), strides and
// dilations.
struct CudnnConvWindow {
  std::array<int64_t, 3> pre, post, stride, dilation;
};

// What cudnn_conv3d did: nothing (the caller runs another engine), the whole convolution, or the
// convolution without the bias (the caller adds it: no cuDNN engine fuses it for this shape).
enum class CudnnConv { NotRun, Done, BiasLeft };

// y = conv3d(x, w) + bias through cuDNN (cross-correlation, float accumulation) on the legacy
// default stream of x's device, without a host synchronisation once the shape's plan exists. x
// [B, Cin, D, H, W], w [Cout, Cin, kD, kH, kW] and y [B, Cout, Do, Ho, Wo] contiguous (y's
// extents those of the window), bias [Cout] or undefined, all bf16 on one GPU at 16-byte aligned
// addresses. Runs nothing for any other input or a shape for which cuDNN has no engine (that
// shape is remembered and logged once). `op` names the caller in the log.
CudnnConv cudnn_conv3d(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                       const CudnnConvWindow& window, const char* op);

// For tests: how many convolutions cuDNN has run in this process.
int64_t cudnn_conv_runs();

}  // namespace ltx2::cuda
