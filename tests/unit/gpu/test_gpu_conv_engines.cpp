// The convolution engines of the CUDA backend: the engine mode (names, the switch), and in builds
// with cuDNN its convolution against the CPU op (docs/gpu.md bf16 rule) over strides, paddings
// (symmetric, the causal asymmetric ones of conv2d/conv1d), kernels 1 and 3, dilation, bias and
// no bias, the VAE's channel counts; f32 and what cuDNN refuses (groups, misaligned or mixed-dtype
// operands) run the implicit GEMM, still right. Without cuDNN only the mode tests build.
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu_compare.h"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv3d.h"
#include "support/test_util.h"
#ifdef LTX2_WITH_CUDNN
#include "kernels/cudnn/conv_cudnn.h"
#endif

using namespace ltx2;
using ops::ConvEngine;
using test::round_bf16;
using test::to_gpu;

namespace {

// Sets the engine mode for one scope.
struct EngineScope {
  ConvEngine saved = ops::conv_engine();
  explicit EngineScope(ConvEngine engine) { ops::set_conv_engine(engine); }
  ~EngineScope() { ops::set_conv_engine(saved); }
};

// x, w and bias (undefined for none) on the CPU in f32.
struct Operands {
  Tensor x, w, b;
};

Operands operands(const Shape& x, const Shape& w, bool bias, uint64_t seed) {
  return {test::random_tensor(x, seed), test::random_tensor(w, seed + 1),
          bias ? test::random_tensor({w[0]}, seed + 2) : Tensor()};
}

// The tensor on the GPU in `dtype`, and rounded to bf16 on the CPU; undefined stays undefined.
Tensor on_gpu(const Tensor& t, DType dtype) {
  return t.defined() ? to_gpu(t, dtype) : Tensor();
}
Tensor rounded(const Tensor& t) {
  return t.defined() ? round_bf16(t) : Tensor();
}

using Conv = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

// The convolution in bf16 on the GPU against the CPU op (the bf16 rule), and in f32 (tight).
void compare(const std::string& what, const Operands& o, const Conv& conv) {
  const Tensor ref = conv(o.x, o.w, o.b);
  const Tensor naive = round_bf16(conv(round_bf16(o.x), round_bf16(o.w), rounded(o.b)));
  const Tensor got = conv(on_gpu(o.x, DType::BF16), on_gpu(o.w, DType::BF16), on_gpu(o.b, DType::BF16));
  REQUIRE(got.dtype() == DType::BF16);
  REQUIRE(got.shape() == ref.shape());
  test::require_bf16_close(what + " bf16", got, naive, ref);
  const Tensor got32 = conv(on_gpu(o.x, DType::F32), on_gpu(o.w, DType::F32), on_gpu(o.b, DType::F32));
  test::require_f32_close(what + " f32", got32, ref, 1e-4);
}

Conv conv3d_with(std::array<int64_t, 3> stride, std::array<int64_t, 3> padding) {
  ops::Conv3dParams p;
  p.stride = stride;
  p.padding = padding;
  return [p](const Tensor& x, const Tensor& w, const Tensor& b) { return ops::conv3d(x, w, b, p); };
}

}  // namespace

TEST_CASE("gpu: conv engine names parse, others are refused naming their source") {
  for (ConvEngine e : {ConvEngine::Auto, ConvEngine::Gemm, ConvEngine::Cudnn})
    REQUIRE(ops::parse_conv_engine(ops::conv_engine_name(e), "test") == e);
  REQUIRE_THROWS_WITH(ops::parse_conv_engine("cublas", "LTX2_CONV"), Catch::Matchers::Contains("LTX2_CONV"));
  EngineScope scope(ConvEngine::Gemm);
  REQUIRE(ops::conv_engine() == ConvEngine::Gemm);
#ifdef LTX2_WITH_CUDNN
  REQUIRE(ops::cudnn_conv_built());
#else
  REQUIRE_FALSE(ops::cudnn_conv_built());
#endif
}

TEST_CASE("gpu: every conv engine mode gives the same conv3d") {
  const Operands o = operands({1, 16, 4, 6, 7}, {24, 16, 3, 3, 3}, true, 400);
  for (ConvEngine e : {ConvEngine::Gemm, ConvEngine::Cudnn, ConvEngine::Auto}) {
    EngineScope scope(e);
    compare(std::string("conv3d mode ") + ops::conv_engine_name(e), o, conv3d_with({1, 1, 1}, {1, 1, 1}));
  }
}

#ifdef LTX2_WITH_CUDNN

namespace {

// Runs `fn` and returns how many convolutions cuDNN ran meanwhile.
int64_t cudnn_runs_in(const std::function<void()>& fn) {
  const int64_t before = cuda::cudnn_conv_runs();
  fn();
  return cuda::cudnn_conv_runs() - before;
}

// compare() with cuDNN forced: the bf16 run goes through cuDNN (one run), the f32 run does not.
void compare_on_cudnn(const std::string& what, const Operands& o, const Conv& conv) {
  EngineScope scope(ConvEngine::Cudnn);
  INFO(what);
  const Tensor xb = on_gpu(o.x, DType::BF16), wb = on_gpu(o.w, DType::BF16), bb = on_gpu(o.b, DType::BF16);
  REQUIRE(cudnn_runs_in([&] { conv(xb, wb, bb); }) == 1);
  const Tensor xf = on_gpu(o.x, DType::F32), wf = on_gpu(o.w, DType::F32), bf = on_gpu(o.b, DType::F32);
  REQUIRE(cudnn_runs_in([&] { conv(xf, wf, bf); }) == 0);
  compare(what, o, conv);
}

}  // namespace

TEST_CASE("gpu: cuDNN conv3d over strides, paddings, kernels 1 and 3, bias") {
  struct Case {
    const char* name;
    Shape x, w;
    bool bias;
    std::array<int64_t, 3> stride, padding;
  };
  const Case cases[] = {
      {"3x3x3 VAE-style (time padded by the caller)",
       {1, 16, 6, 8, 10},
       {16, 16, 3, 3, 3},
       true,
       {1, 1, 1},
       {0, 1, 1}},
      {"3x3x3 no bias", {2, 8, 4, 6, 7}, {24, 8, 3, 3, 3}, false, {1, 1, 1}, {1, 1, 1}},
      {"3x3x3 stride 2", {1, 16, 5, 8, 9}, {8, 16, 3, 3, 3}, true, {2, 2, 2}, {1, 1, 1}},
      {"stride 2 rounding down, no padding", {1, 8, 6, 8, 8}, {8, 8, 3, 3, 3}, false, {2, 2, 2}, {0, 0, 0}},
      {"non-cubic kernel", {2, 8, 5, 7, 6}, {16, 8, 2, 3, 1}, true, {1, 2, 2}, {1, 0, 2}},
      {"1x1x1 with bias", {1, 32, 3, 4, 5}, {16, 32, 1, 1, 1}, true, {1, 1, 1}, {0, 0, 0}},
      {"1x1x1 no bias", {2, 16, 3, 4, 5}, {8, 16, 1, 1, 1}, false, {1, 1, 1}, {0, 0, 0}},
  };
  uint64_t seed = 500;
  for (const Case& c : cases) {
    compare_on_cudnn(std::string("cuDNN conv3d ") + c.name, operands(c.x, c.w, c.bias, seed += 3),
                     conv3d_with(c.stride, c.padding));
  }
}

TEST_CASE("gpu: cuDNN conv2d and conv1d with asymmetric (causal) paddings, stride and dilation") {
  const Operands o2 = operands({2, 8, 9, 11}, {16, 8, 3, 3}, true, 600);
  for (const ops::Conv2dPadding pad :
       {ops::Conv2dPadding{2, 0, 1, 1}, ops::Conv2dPadding{0, 2, 2, 0}, ops::Conv2dPadding{1, 1, 1, 1}}) {
    compare_on_cudnn(
        "cuDNN conv2d pad " + std::to_string(pad.top) + "/" + std::to_string(pad.bottom) + "/" +
            std::to_string(pad.left) + "/" + std::to_string(pad.right),
        o2, [pad](const Tensor& x, const Tensor& w, const Tensor& b) { return ops::conv2d(x, w, b, pad); });
  }
  // Conv1dOptions: stride, left and right padding, dilation, groups.
  const Operands o1 = operands({2, 8, 50}, {16, 8, 4}, true, 610);
  for (const ops::Conv1dOptions opt : {ops::Conv1dOptions{1, 2, 1, 1, 1}, ops::Conv1dOptions{1, 3, 0, 1, 1},
                                       ops::Conv1dOptions{3, 1, 2, 2, 1}}) {
    compare_on_cudnn(
        "cuDNN conv1d stride " + std::to_string(opt.stride) + " pad " + std::to_string(opt.pad_left) + "/" +
            std::to_string(opt.pad_right) + " dilation " + std::to_string(opt.dilation),
        o1, [opt](const Tensor& x, const Tensor& w, const Tensor& b) { return ops::conv1d(x, w, b, opt); });
  }
}

TEST_CASE("gpu: the conv engine switch decides whether cuDNN runs") {
  const Operands o = operands({1, 16, 3, 5, 6}, {16, 16, 3, 3, 3}, true, 700);
  const Tensor x = to_gpu(o.x, DType::BF16), w = to_gpu(o.w, DType::BF16), b = to_gpu(o.b, DType::BF16);
  const Conv conv = conv3d_with({1, 1, 1}, {1, 1, 1});
  const Tensor ref = conv(o.x, o.w, o.b);
  const Tensor naive = round_bf16(conv(round_bf16(o.x), round_bf16(o.w), round_bf16(o.b)));
  for (auto [engine, runs] :
       {std::pair{ConvEngine::Gemm, 0}, std::pair{ConvEngine::Cudnn, 1}, std::pair{ConvEngine::Auto, 1}}) {
    EngineScope scope(engine);
    Tensor got;
    REQUIRE(cudnn_runs_in([&] { got = conv(x, w, b); }) == runs);
    test::require_bf16_close(std::string("switch ") + ops::conv_engine_name(engine), got, naive, ref);
  }
}

TEST_CASE(
    "gpu: convolutions cuDNN does not take (groups, misaligned or mixed-dtype operands) fall back, still "
    "right") {
  EngineScope scope(ConvEngine::Cudnn);
  // Two groups (conv1d).
  const Operands g = operands({2, 8, 30}, {16, 4, 3}, true, 800);
  const ops::Conv1dOptions grouped{1, 1, 1, 1, 2};
  const auto conv1d = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return ops::conv1d(x, w, b, grouped);
  };
  REQUIRE(cudnn_runs_in([&] {
            conv1d(to_gpu(g.x, DType::BF16), to_gpu(g.w, DType::BF16), to_gpu(g.b, DType::BF16));
          }) == 0);
  compare("grouped conv1d", g, conv1d);

  // An input 2 bytes past a 16-byte boundary: a contiguous view one element into a larger buffer.
  const Operands o = operands({1, 8, 3, 4, 5}, {8, 8, 3, 3, 3}, true, 810);
  const Conv conv = conv3d_with({1, 1, 1}, {1, 1, 1});
  Tensor buffer = to_gpu(o.x.reshape({-1}), DType::BF16);
  Tensor padded = Tensor::empty({buffer.numel() + 1}, DType::BF16, test::gpu());
  padded.narrow(0, 1, buffer.numel()).copy_(buffer);
  const Tensor shifted = padded.narrow(0, 1, buffer.numel()).view(o.x.shape());
  REQUIRE(shifted.is_contiguous());
  const Tensor w = to_gpu(o.w, DType::BF16), b = to_gpu(o.b, DType::BF16);
  Tensor got;
  REQUIRE(cudnn_runs_in([&] { got = conv(shifted, w, b); }) == 0);
  const Tensor ref = conv(o.x, o.w, o.b);
  test::require_bf16_close("misaligned conv3d", got,
                           round_bf16(conv(round_bf16(o.x), round_bf16(o.w), round_bf16(o.b))), ref);

  // bf16 input with f32 weight and bias.
  Tensor mixed;
  REQUIRE(cudnn_runs_in([&] {
            mixed = conv(to_gpu(o.x, DType::BF16), to_gpu(o.w, DType::F32), to_gpu(o.b, DType::F32));
          }) == 0);
  test::require_bf16_close("mixed-dtype conv3d", mixed,
                           round_bf16(conv(round_bf16(o.x), round_bf16(o.w), round_bf16(o.b))), ref);
}

#endif  // LTX2_WITH_CUDNN
