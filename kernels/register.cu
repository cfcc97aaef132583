// Fills the CUDA op table (ops/cuda_ops.h). Each kernel file exposes its entry points in the
// ltx2::cuda namespace; this file is the one place that lists them.
#include "ops/adaln.h"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv3d.h"
#include "ops/conv_transpose1d.h"
#include "ops/cuda_ops.h"
#include "ops/linear.h"
#include "ops/rope.h"

namespace ltx2::cuda {
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias);              // gemm.cu
Tensor matmul(const Tensor& a, const Tensor& b);                                  // gemm.cu
Tensor binary(const Tensor& a, const Tensor& b, int op);                          // elementwise.cu
Tensor unary(const Tensor& x, int op, float alpha);                               // elementwise.cu
Tensor softmax(const Tensor& x);                                                  // softmax.cu
Tensor rms_norm(const Tensor& x, const Tensor& w, float eps);                     // norm.cu
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps);  // norm.cu
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 float scale);                                                         // attention.cu
Tensor reduce(const Tensor& x, int dim, bool keepdim, int op);                         // reduce.cu
Tensor apply_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, int layout);  // rope.cu
ops::RopeTables rope_tables(const Tensor& positions, const Tensor& grid,
                            const ops::RopeSpec& spec);                         // rope.cu
Tensor linear_gelu_tanh(const Tensor& x, const Tensor& w, const Tensor& bias);  // gemm.cu
Tensor linear_fp8(const Tensor& x, const ops::Fp8Linear& w, bool gelu_tanh);    // gemm_fp8.cu
Tensor rms_norm_modulate(const Tensor& x, const ops::AdaRow& shift, const ops::AdaRow& scale,
                         float eps);                                          // adaln.cu
Tensor add_gated(const Tensor& x, const Tensor& y, const ops::AdaRow& gate);  // adaln.cu
Tensor rms_norm_rope(const Tensor& x, const Tensor& w, float eps, const Tensor& cos, const Tensor& sin,
                     int layout);  // norm_rope.cu
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias,
              const ops::Conv1dOptions& opt);  // conv.cu
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias,
              const ops::Conv2dPadding& pad);  // conv.cu
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias,
              const ops::Conv3dParams& params);  // conv.cu
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ops::ConvTranspose1dOptions& opt);  // conv_transpose.cu
Tensor pixel_norm(const Tensor& x, float eps);                    // channel_norm.cu
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b,
                  float eps);                                                        // channel_norm.cu
Tensor edge_pad(const Tensor& x, int dim, int64_t before, int64_t after, int mode);  // pad.cu
Tensor upsample1d(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                  int64_t crop_right);  // resample.cu
Tensor lowpass_downsample1d(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                            int64_t pad_right);                                       // resample.cu
Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta);  // snake.cu
Tensor upsample_nearest2d(const Tensor& x, int64_t factor);                           // upsample_nearest.cu
Tensor decoded_to_rgb8(const Tensor& video);                                          // rgb8.cu
}  // namespace ltx2::cuda

namespace ltx2::ops {

void fill_cuda_ops(CudaOps& table) {
  table.linear = &cuda::linear;
  table.matmul = &cuda::matmul;
  table.binary = &cuda::binary;
  table.unary = &cuda::unary;
  table.softmax = &cuda::softmax;
  table.rms_norm = &cuda::rms_norm;
  table.layer_norm = &cuda::layer_norm;
  table.attention = &cuda::attention;
  table.reduce = &cuda::reduce;
  table.apply_rope = &cuda::apply_rope;
  table.rope_tables = &cuda::rope_tables;
  table.linear_gelu_tanh = &cuda::linear_gelu_tanh;
  table.linear_fp8 = &cuda::linear_fp8;
  table.rms_norm_modulate = &cuda::rms_norm_modulate;
  table.add_gated = &cuda::add_gated;
  table.rms_norm_rope = &cuda::rms_norm_rope;
  table.conv1d = &cuda::conv1d;
  table.conv2d = &cuda::conv2d;
  table.conv3d = &cuda::conv3d;
  table.conv_transpose1d = &cuda::conv_transpose1d;
  table.pixel_norm = &cuda::pixel_norm;
  table.group_norm = &cuda::group_norm;
  table.edge_pad = &cuda::edge_pad;
  table.upsample1d = &cuda::upsample1d;
  table.lowpass_downsample1d = &cuda::lowpass_downsample1d;
  table.snake_beta = &cuda::snake_beta;
  table.upsample_nearest2d = &cuda::upsample_nearest2d;
  table.decoded_to_rgb8 = &cuda::decoded_to_rgb8;
}

}  // namespace ltx2::ops
