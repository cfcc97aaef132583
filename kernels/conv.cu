// CUDA conv1d, conv2d and conv3d as implicit GEMMs through cuBLASLt (kernels/gemm.cuh). All three
// are one convolution over [B, C, D, H, W] (conv1d and conv2d with unit leading axes; zero padding
// before each axis, the padding after is implied by the output extent).
//
// For every batch item the output positions P = Do*Ho*Wo are cut into chunks of at most
// ops::conv_column_budget() bytes of columns (256 MiB by default), so the scratch stays bounded at
// any video size. A chunk of n positions is gathered into
// col[group][row][j] (row stride ldc = n rounded up to 8): rows 0..Kg-1 are the group's
// (channel, kd, kh, kw) taps in weight order (zero where the window reads padding), row Kg is 1
// when there is a bias, the rest up to Kp (Kg + bias rounded up to 8) are zero. The weights are
// used as [Cout, Kp]: the given [Cout, Kg] when it already has that shape and dtype, else a copy
// with the bias in column Kg. The bias therefore rides in the reduction (fp32, like the rest):
// cuBLASLt's bias epilogue runs along D's rows, which here are output positions, because the
// chunk is written straight into the NCDHW output as the column-major [n, Cout / groups] block
// with leading dimension P, one batched GEMM over the groups. Output dtype = input dtype.
//
// In builds with cuDNN, groups-1 convolutions of bf16 operands run cuDNN's convolution instead
// (kernels/cudnn/conv_cudnn.h) unless ops::conv_engine() is Gemm; conv1d and conv2d as conv3d
// with unit leading axes. Whatever cuDNN refuses falls back to the implicit GEMM.
#include <algorithm>
#include <climits>

#include "kernels/common.cuh"
#include "kernels/gemm.cuh"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv3d.h"
#ifdef LTX2_WITH_CUDNN
#include "kernels/cudnn/conv_cudnn.h"
#endif

namespace ltx2::cuda {

namespace {

constexpr int64_t kAlign = 8;  // rows of K and columns of a chunk: 16 bytes of bf16
constexpr int kThreads = 256;

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

// A convolution of one batch item, in the gather's terms (every extent fits an int; checked).
struct ConvGeometry {
  int in[3];      // D, H, W
  int kernel[3];  // kD, kH, kW
  int out[3];     // Do, Ho, Wo
  int stride[3];
  int pad[3];  // zeros before each axis
  int dilation[3];
  int group_channels;  // C_in / groups
  int taps;            // kD * kH * kW
  int group_rows;      // Kg = group_channels * taps
  int padded_rows;     // Kp
  int groups;
  bool bias;
};

template <typename T>
__global__ void gather_columns(T* col, const T* x, ConvGeometry g, int64_t p0, int n, int64_t ldc) {
  const int64_t plane = int64_t(g.in[1]) * g.in[2], frame = plane * g.in[0];
  const int out_plane = g.out[1] * g.out[2];
  for (int row = blockIdx.y; row < g.groups * g.padded_rows; row += gridDim.y) {
    T* dst = col + row * ldc;
    const int group = row / g.padded_rows, k = row % g.padded_rows;
    if (k >= g.group_rows) {
      const T fill = from_f<T>(k == g.group_rows && g.bias ? 1.f : 0.f);
      for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) dst[j] = fill;
      continue;
    }
    const int ci = group * g.group_channels + k / g.taps, tap = k % g.taps;
    const int kd = tap / (g.kernel[1] * g.kernel[2]), kh = (tap / g.kernel[2]) % g.kernel[1],
              kw = tap % g.kernel[2];
    const T* src = x + ci * frame;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
      const int p = static_cast<int>(p0 + j);
      const int od = p / out_plane, rest = p - od * out_plane;
      const int oh = rest / g.out[2], ow = rest - oh * g.out[2];
      const int id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
      const int ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
      const int iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
      const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
      dst[j] = inside ? src[id * plane + int64_t(ih) * g.in[2] + iw] : from_f<T>(0.f);
    }
  }
}

// out[co][k] = w[co][k] for k < Kg, bias[co] at Kg (when given), else 0; in the output's dtype.
template <typename T, typename TW, typename TB>
__global__ void pad_weights(T* out, const TW* w, const TB* bias, int64_t rows, int group_rows,
                            int padded_rows) {
  const int64_t n = rows * padded_rows;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t co = i / padded_rows;
    const int k = static_cast<int>(i % padded_rows);
    float v = 0.f;
    if (k < group_rows)
      v = to_f(w[co * group_rows + k]);
    else if (k == group_rows && bias)
      v = to_f(bias[co]);
    out[i] = from_f<T>(v);
  }
}

int checked_int(int64_t v, const char* what, const char* op) {
  LTX2_CHECK(v >= 0 && v <= INT_MAX, "{}: {} {} exceeds the CUDA path's 32-bit indexing", op, what, v);
  return static_cast<int>(v);
}

// The [Cout, Kp] weight matrix in x's dtype (see the file comment).
Tensor gemm_weights(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g) {
  const int64_t cout = w.size(0);
  if (!bias.defined() && g.padded_rows == g.group_rows && w.dtype() == x.dtype()) return w.contiguous();
  Tensor wc = w.contiguous(), bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = Tensor::empty({cout, g.padded_rows}, x.dtype(), x.device());
  dispatch_float(x.dtype(), "conv", [&](auto t) {
    using T = decltype(t);
    dispatch_float(w.dtype(), "conv weight", [&](auto tw) {
      using TW = decltype(tw);
      dispatch_float(bc.defined() ? bc.dtype() : DType::F32, "conv bias", [&](auto tb) {
        using TB = decltype(tb);
        pad_weights<T, TW, TB><<<grid_for(cout * g.padded_rows, kThreads), kThreads>>>(
            static_cast<T*>(out.data_ptr()), static_cast<const TW*>(wc.data_ptr()),
            bc.defined() ? static_cast<const TB*>(bc.data_ptr()) : nullptr, cout, g.group_rows,
            g.padded_rows);
        check_launch();
      });
    });
  });
  return out;
}

// x [B, C_in, D, H, W] (any view of that size), w [C_out, C_in / groups, taps...]; writes y
// [B, C_out, Do, Ho, Wo] (contiguous, x's dtype).
void implicit_gemm_conv(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvGeometry& g, int64_t batch, int64_t in_channels, const char* op) {
  const int64_t cout = w.size(0), out_per_group = cout / g.groups;
  const int64_t positions = int64_t(g.out[0]) * g.out[1] * g.out[2];
  checked_int(positions, "output positions", op);
  Tensor xc = x.contiguous();
  Tensor wk = gemm_weights(x, w, bias, g);
  const int64_t elt = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t rows = int64_t(g.groups) * g.padded_rows;
  const int64_t chunk =
      std::min(round_up(positions, kAlign),
               std::max(kAlign, ops::conv_column_budget() / (rows * elt) / kAlign * kAlign));
  Tensor col = Tensor::empty({rows * chunk}, x.dtype(), x.device());
  const int64_t in_item = in_channels * g.in[0] * int64_t(g.in[1]) * g.in[2], out_item = cout * positions;
  dispatch_float(x.dtype(), op, [&](auto t) {
    using T = decltype(t);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t p0 = 0; p0 < positions; p0 += chunk) {
        const int n = static_cast<int>(std::min(chunk, positions - p0));
        const int64_t ldc = round_up(n, kAlign);
        dim3 grid(std::min<unsigned>((n + kThreads - 1) / kThreads, 4096),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
        gather_columns<T><<<grid, kThreads>>>(static_cast<T*>(col.data_ptr()),
                                              static_cast<const T*>(xc.data_ptr()) + b * in_item, g, p0, n,
                                              ldc);
        check_launch();
        // y[b][co][p0 + j] = sum_k col[k][j] * w[co][k]: column-major D[n, Cout/groups], ld P.
        T* d = static_cast<T*>(y.data_ptr()) + b * out_item + p0;
        GemmParams p = same_dtype(x.dtype());
        p.m = n, p.n = out_per_group, p.k = g.padded_rows;
        p.A = col.data_ptr(), p.lda = ldc, p.stride_a = g.padded_rows * ldc;
        p.B = wk.data_ptr(), p.ldb = g.padded_rows, p.stride_b = out_per_group * g.padded_rows;
        p.D = d, p.ldd = positions, p.stride_d = out_per_group * positions;
        p.batch = g.groups;
        gemm(y, p);
      }
    }
  });
}

ConvGeometry make_geometry(const int64_t (&in)[3], const int64_t (&kernel)[3], const int64_t (&out)[3],
                           const int64_t (&stride)[3], const int64_t (&pad)[3], const int64_t (&dilation)[3],
                           int64_t in_channels, int64_t groups, bool bias, const char* op) {
  ConvGeometry g{};
  for (int i = 0; i < 3; ++i) {
    g.in[i] = checked_int(in[i], "input extent", op);
    g.kernel[i] = checked_int(kernel[i], "kernel extent", op);
    g.out[i] = checked_int(out[i], "output extent", op);
    g.stride[i] = checked_int(stride[i], "stride", op);
    g.pad[i] = checked_int(pad[i], "padding", op);
    g.dilation[i] = checked_int(dilation[i], "dilation", op);
  }
  g.groups = checked_int(groups, "groups", op);
  g.group_channels = checked_int(in_channels / groups, "input channels", op);
  g.taps = checked_int(kernel[0] * kernel[1] * kernel[2], "kernel taps", op);
  g.group_rows = checked_int(int64_t(g.group_channels) * g.taps, "reduction length", op);
  g.padded_rows =
      checked_int(round_up(int64_t(g.group_rows) + (bias ? 1 : 0), kAlign), "reduction length", op);
  g.bias = bias;
  return g;
}

void check_operands(const Tensor& x, const Tensor& w, const Tensor& bias, int64_t cout, const char* op) {
  LTX2_CHECK(w.device() == x.device() && (!bias.defined() || bias.device() == x.device()),
             "{}: input {}, weight {} and bias on different devices", op, x.str(), w.str());
  if (bias.defined())
    LTX2_CHECK(bias.numel() == cout, "{}: bias {} for {} output channels", op, bias.str(), cout);
}

#ifdef LTX2_WITH_CUDNN
// y[b][c][p] += bias[c] in place, over `plane` positions per channel.
template <typename T>
__global__ void add_channel_bias(T* y, const T* bias, int64_t n, int64_t channels, int64_t plane) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_f<T>(to_f(y[i]) + to_f(bias[(i / plane) % channels]));
}
#endif

// y = conv(x, w) + bias through cuDNN when the engine mode lets it and cuDNN can run it; whether it
// ran. The operands are seen as 5-D (the geometry's unit leading axes); `post` is the zeros after
// each axis.
bool conv_by_cudnn(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                   const ConvGeometry& g, const int64_t (&post)[3], const char* op) {
#ifdef LTX2_WITH_CUDNN
  if (ops::conv_engine() == ops::ConvEngine::Gemm || g.groups != 1) return false;
  // cuDNN takes bf16 only: no contiguous copies for anything else.
  if (x.dtype() != DType::BF16 || w.dtype() != DType::BF16 || (bias.defined() && bias.dtype() != DType::BF16))
    return false;
  auto five_d = [](const Tensor& t, const int(&extents)[3]) {
    return t.contiguous().view({t.size(0), t.size(1), extents[0], extents[1], extents[2]});
  };
  const Tensor y5 = five_d(y, g.out);
  CudnnConvWindow window{};
  for (int i = 0; i < 3; ++i) {
    window.pre[i] = g.pad[i];
    window.post[i] = post[i];
    window.stride[i] = g.stride[i];
    window.dilation[i] = g.dilation[i];
  }
  const Tensor b = bias.defined() ? bias.contiguous() : bias;
  const CudnnConv done = cudnn_conv3d(y5, five_d(x, g.in), five_d(w, g.kernel), b, window, op);
  if (done == CudnnConv::BiasLeft) {
    const int64_t n = y5.numel(), channels = y5.size(1), plane = n / (y5.size(0) * channels);
    dispatch_float(y5.dtype(), op, [&](auto t) {
      using T = decltype(t);
      add_channel_bias<T><<<grid_for(n, kThreads), kThreads>>>(
          static_cast<T*>(y5.data_ptr()), static_cast<const T*>(b.data_ptr()), n, channels, plane);
      check_launch();
    });
  }
  return done != CudnnConv::NotRun;
#else
  (void)y, (void)x, (void)w, (void)bias, (void)g, (void)post, (void)op;
  return false;
#endif
}

}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const ops::Conv3dParams& params) {
  LTX2_CHECK(x.dim() == 5 && w.dim() == 5 && x.size(1) == w.size(1),
             "conv3d: input {} does not match weight {}", x.str(), w.str());
  const int64_t cout = w.size(0);
  check_operands(x, w, bias, cout, "conv3d");
  int64_t in[3], kernel[3], out[3], stride[3], pad[3], dilation[3] = {1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    in[i] = x.size(2 + i), kernel[i] = w.size(2 + i), stride[i] = params.stride[i],
    pad[i] = params.padding[i];
    LTX2_CHECK(stride[i] >= 1 && pad[i] >= 0, "conv3d: stride {} / padding {} on axis {}", stride[i], pad[i],
               i);
    const int64_t span = in[i] + 2 * pad[i] - kernel[i];
    LTX2_CHECK(span >= 0, "conv3d: kernel {} larger than padded input {} on axis {}", w.str(), x.str(), i);
    out[i] = span / stride[i] + 1;
  }
  use_device(x);
  Tensor y = Tensor::empty({x.size(0), cout, out[0], out[1], out[2]}, x.dtype(), x.device());
  if (y.numel() == 0) return y;
  ConvGeometry g =
      make_geometry(in, kernel, out, stride, pad, dilation, x.size(1), 1, bias.defined(), "conv3d");
  // Padding on both sides: cuDNN's output extent rounds down like ours.
  if (conv_by_cudnn(y, x, w, bias, g, pad, "conv3d")) return y;
  implicit_gemm_conv(y, x, w, bias, g, x.size(0), x.size(1), "conv3d");
  return y;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ops::Conv2dPadding& padding) {
  LTX2_CHECK(padding.top >= 0 && padding.bottom >= 0 && padding.left >= 0 && padding.right >= 0,
             "conv2d: negative padding");
  LTX2_CHECK(x.dim() == 4 && w.dim() == 4 && w.size(1) == x.size(1),
             "conv2d: weight {} does not fit input {}", w.str(), x.str());
  const int64_t cout = w.size(0);
  check_operands(x, w, bias, cout, "conv2d");
  const int64_t Ho = x.size(2) + padding.top + padding.bottom - w.size(2) + 1;
  const int64_t Wo = x.size(3) + padding.left + padding.right - w.size(3) + 1;
  LTX2_CHECK(Ho > 0 && Wo > 0, "conv2d: input {} (padded) is smaller than the kernel {}", x.str(), w.str());
  const int64_t in[3] = {1, x.size(2), x.size(3)}, kernel[3] = {1, w.size(2), w.size(3)},
                out[3] = {1, Ho, Wo};
  const int64_t stride[3] = {1, 1, 1}, pad[3] = {0, padding.top, padding.left}, dilation[3] = {1, 1, 1};
  use_device(x);
  Tensor y = Tensor::empty({x.size(0), cout, Ho, Wo}, x.dtype(), x.device());
  if (y.numel() == 0) return y;
  ConvGeometry g =
      make_geometry(in, kernel, out, stride, pad, dilation, x.size(1), 1, bias.defined(), "conv2d");
  const int64_t post[3] = {0, padding.bottom, padding.right};
  if (conv_by_cudnn(y, x, w, bias, g, post, "conv2d")) return y;
  implicit_gemm_conv(y, x, w, bias, g, x.size(0), x.size(1), "conv2d");
  return y;
}

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const ops::Conv1dOptions& opt) {
  LTX2_CHECK(
      opt.stride >= 1 && opt.dilation >= 1 && opt.groups >= 1 && opt.pad_left >= 0 && opt.pad_right >= 0,
      "conv1d: bad options (stride {}, dilation {}, groups {}, padding {}/{})", opt.stride, opt.dilation,
      opt.groups, opt.pad_left, opt.pad_right);
  LTX2_CHECK(x.dim() == 3 && w.dim() == 3, "conv1d: input {} and weight {} must be 3-d", x.str(), w.str());
  const int64_t cin = x.size(1), cout = w.size(0);
  LTX2_CHECK(cin % opt.groups == 0 && cout % opt.groups == 0 && w.size(1) == cin / opt.groups,
             "conv1d: weight {} does not fit input {} with {} groups", w.str(), x.str(), opt.groups);
  check_operands(x, w, bias, cout, "conv1d");
  const int64_t length = ops::conv1d_output_length(x.size(2), w.size(2), opt);
  LTX2_CHECK(length > 0, "conv1d: input {} is shorter than the kernel {}", x.str(), w.str());
  const int64_t in[3] = {1, 1, x.size(2)}, kernel[3] = {1, 1, w.size(2)}, out[3] = {1, 1, length};
  const int64_t stride[3] = {1, 1, opt.stride}, pad[3] = {0, 0, opt.pad_left},
                dilation[3] = {1, 1, opt.dilation};
  use_device(x);
  Tensor y = Tensor::empty({x.size(0), cout, length}, x.dtype(), x.device());
  if (y.numel() == 0) return y;
  ConvGeometry g =
      make_geometry(in, kernel, out, stride, pad, dilation, cin, opt.groups, bias.defined(), "conv1d");
  const int64_t post[3] = {0, 0, opt.pad_right};
  if (conv_by_cudnn(y, x, w, bias, g, post, "conv1d")) return y;
  implicit_gemm_conv(y, x, w, bias, g, x.size(0), cin, "conv1d");
  return y;
}

}  // namespace ltx2::cuda
