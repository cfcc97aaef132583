// The CUDA ops of the video VAE, latent upsampler, audio VAE and vocoders against their CPU ops on
// random inputs, beyond the parity cases of test_backend_ops.cpp: convolutions (every stride,
// padding, dilation and group option, the chunked im2col path, conv2d and conv1d under both engine
// modes; test_gpu_conv_engines.cpp has cuDNN's own cases), GroupNorm with float32 parameters and
// many slices, border padding in every mode and dimension, nearest upsampling and depth-to-space,
// and the decoded video's 8-bit RGB frames at their edge values. bf16 under the FlashAttention-style
// rule of gpu_compare.h (the naive bf16 computation: inputs rounded to bf16, the CPU op, the output
// rounded), f32 against a tight absolute tolerance; pure data movement and the 8-bit frames must
// match exactly.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu_compare.h"
#include "ops/channel_norm.h"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv3d.h"
#include "ops/edge_pad.h"
#include "ops/elementwise.h"
#include "ops/pixel_shuffle.h"
#include "ops/rgb8.h"
#include "ops/upsample_nearest.h"
#include "support/test_util.h"

using namespace ltx2;
using test::round_bf16;
using test::to_gpu;

namespace {

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// Each input moved/rounded the same way; undefined inputs (no bias) stay undefined.
std::vector<Tensor> map_inputs(const std::vector<Tensor>& in, const std::function<Tensor(const Tensor&)>& f) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) out.push_back(t.defined() ? f(t) : Tensor());
  return out;
}

// The op on the GPU in bf16 (all inputs bf16) and in f32, against the CPU op.
void compare(const std::string& what, const std::vector<Tensor>& inputs, const Op& op, double f32_atol) {
  const Tensor ref = op(inputs);
  const Tensor naive = round_bf16(op(map_inputs(inputs, [](const Tensor& t) { return round_bf16(t); })));
  const Tensor got = op(map_inputs(inputs, [](const Tensor& t) { return to_gpu(t, DType::BF16); }));
  REQUIRE(got.device().is_cuda());
  REQUIRE(got.dtype() == DType::BF16);
  REQUIRE(got.shape() == ref.shape());
  test::require_bf16_close(what + " bf16", got, naive, ref);
  const Tensor got32 = op(map_inputs(inputs, [](const Tensor& t) { return to_gpu(t, DType::F32); }));
  REQUIRE(got32.dtype() == DType::F32);
  test::require_f32_close(what + " f32", got32, ref, f32_atol);
}

// Data movement: the GPU result equals the CPU result exactly, in bf16 (of the rounded input) and f32.
void compare_exact(const std::string& what, const Tensor& x, const std::function<Tensor(const Tensor&)>& op) {
  INFO(what);
  const Tensor ref = op(x);
  const Tensor got = op(to_gpu(x, DType::BF16));
  REQUIRE(got.dtype() == DType::BF16);
  REQUIRE(test::max_error(got, op(round_bf16(x))) == 0.0);
  REQUIRE(test::max_error(op(to_gpu(x, DType::F32)), ref) == 0.0);
}

// Lowers the CUDA convolutions' column budget for one scope, so that they run in many chunks.
struct SmallColumnBudget {
  int64_t previous;
  explicit SmallColumnBudget(int64_t bytes) : previous(ops::set_conv_column_budget(bytes)) {}
  ~SmallColumnBudget() { ops::set_conv_column_budget(previous); }
};

// Sets the convolution engine mode for one scope.
struct ConvEngineScope {
  ops::ConvEngine saved = ops::conv_engine();
  explicit ConvEngineScope(ops::ConvEngine engine) { ops::set_conv_engine(engine); }
  ~ConvEngineScope() { ops::set_conv_engine(saved); }
};

constexpr ops::ConvEngine kConvEngines[] = {ops::ConvEngine::Gemm, ops::ConvEngine::Auto};

Tensor conv3d_op(const std::vector<Tensor>& in, ops::Conv3dParams p) {
  return ops::conv3d(in[0], in[1], in[2], p);
}

}  // namespace

TEST_CASE("gpu: conv3d (implicit GEMM) over strides, paddings, kernels and bias") {
  struct Case {
    const char* name;
    Shape x, w;
    bool bias;
    std::array<int64_t, 3> stride, padding;
  };
  const Case cases[] = {
      {"3x3x3 causal-style", {2, 5, 4, 6, 7}, {7, 5, 3, 3, 3}, true, {1, 1, 1}, {0, 1, 1}},
      {"3x3x3 stride 2", {1, 6, 5, 8, 9}, {4, 6, 3, 3, 3}, false, {2, 2, 2}, {1, 1, 1}},
      {"non-cubic kernel", {2, 3, 5, 7, 6}, {5, 3, 2, 3, 1}, true, {1, 2, 2}, {1, 0, 2}},
      {"1x1x1 with bias", {1, 16, 3, 4, 5}, {9, 16, 1, 1, 1}, true, {1, 1, 1}, {0, 0, 0}},
      {"1x1x1 no bias (weights used in place)",
       {1, 16, 3, 4, 5},
       {9, 16, 1, 1, 1},
       false,
       {1, 1, 1},
       {0, 0, 0}},
      {"depthwise blur", {6, 1, 3, 10, 12}, {1, 1, 1, 5, 5}, false, {1, 2, 2}, {0, 2, 2}},
  };
  ConvEngineScope gemm(ops::ConvEngine::Gemm);
  uint64_t seed = 100;
  for (const Case& c : cases) {
    const Tensor x = test::random_tensor(c.x, ++seed), w = test::random_tensor(c.w, ++seed);
    const Tensor b = c.bias ? test::random_tensor({c.w[0]}, ++seed) : Tensor();
    ops::Conv3dParams p;
    p.stride = c.stride;
    p.padding = c.padding;
    compare(
        std::string("conv3d ") + c.name, {x, w, b}, [&](const auto& in) { return conv3d_op(in, p); }, 1e-4);
  }
}

TEST_CASE("gpu: conv3d in many chunks of output positions") {
  const Tensor x = test::random_tensor({2, 5, 4, 6, 7}, 120), w = test::random_tensor({7, 5, 3, 3, 3}, 121);
  const Tensor b = test::random_tensor({7}, 122);
  ops::Conv3dParams p;
  p.padding = {0, 1, 1};
  ConvEngineScope gemm(ops::ConvEngine::Gemm);
  // K = 5 * 27 + 1 -> 136 rows: 2 KiB of f32 columns is 3 positions, rounded up to one chunk of 8.
  for (int64_t budget : {int64_t{2048}, int64_t{136 * 4 * 40}}) {
    SmallColumnBudget small(budget);
    compare(
        "conv3d chunked, budget " + std::to_string(budget), {x, w, b},
        [&](const auto& in) { return conv3d_op(in, p); }, 1e-4);
  }
}

TEST_CASE("gpu: conv3d with a bf16 input and f32 weight and bias, and shape errors") {
  const Tensor x = test::random_tensor({1, 4, 3, 5, 5}, 130), w = test::random_tensor({6, 4, 3, 3, 3}, 131);
  const Tensor b = test::random_tensor({6}, 132);
  ops::Conv3dParams p;
  p.padding = {1, 1, 1};
  const Tensor got = ops::conv3d(to_gpu(x, DType::BF16), to_gpu(w, DType::F32), to_gpu(b, DType::F32), p);
  REQUIRE(got.dtype() == DType::BF16);
  test::require_bf16_close("conv3d mixed", got,
                           round_bf16(ops::conv3d(round_bf16(x), round_bf16(w), round_bf16(b), p)),
                           ops::conv3d(x, w, b, p));
  REQUIRE_THROWS_AS(ops::conv3d(to_gpu(x, DType::F32),
                                to_gpu(test::random_tensor({6, 3, 3, 3, 3}, 1), DType::F32), Tensor(), p),
                    Error);
}

TEST_CASE("gpu: conv2d with symmetric, causal and no padding, chunked") {
  const Tensor x = test::random_tensor({2, 4, 9, 11}, 140), w = test::random_tensor({6, 4, 3, 3}, 141);
  const Tensor b = test::random_tensor({6}, 142);
  const ops::Conv2dPadding pads[] = {{1, 1, 1, 1}, {2, 0, 1, 1}, {0, 0, 0, 0}, {0, 2, 2, 0}};
  for (const auto engine : kConvEngines) {
    ConvEngineScope scope(engine);
    for (const auto& pad : pads) {
      const std::string name = std::string(ops::conv_engine_name(engine)) + " conv2d pad " +
                               std::to_string(pad.top) + "/" + std::to_string(pad.bottom) + "/" +
                               std::to_string(pad.left) + "/" + std::to_string(pad.right);
      compare(
          name, {x, w, b}, [&](const auto& in) { return ops::conv2d(in[0], in[1], in[2], pad); }, 1e-4);
      compare(
          name + " no bias", {x, w, Tensor()},
          [&](const auto& in) { return ops::conv2d(in[0], in[1], in[2], pad); }, 1e-4);
    }
  }
  ConvEngineScope gemm(ops::ConvEngine::Gemm);
  SmallColumnBudget small(1024);
  compare(
      "conv2d chunked", {x, w, b}, [&](const auto& in) { return ops::conv2d(in[0], in[1], in[2], pads[1]); },
      1e-4);
}

TEST_CASE("gpu: conv1d over stride, padding, dilation and groups") {
  struct Case {
    const char* name;
    Shape x, w;
    bool bias;
    ops::Conv1dOptions opt;
  };
  const Case cases[] = {
      {"same padding", {2, 8, 50}, {12, 8, 5}, true, {1, 2, 2, 1, 1}},
      {"dilation 3", {2, 8, 50}, {8, 8, 3}, true, {1, 3, 3, 3, 1}},
      {"hifigan asymmetric", {1, 6, 31}, {6, 6, 4}, true, {1, 1, 2, 1, 1}},
      {"stft: strided, causal, one channel", {3, 1, 64}, {18, 1, 16}, false, {4, 12, 0, 1, 1}},
      {"stride 3 dilation 2", {2, 5, 40}, {7, 5, 4}, true, {3, 1, 2, 2, 1}},
      {"two groups", {2, 8, 30}, {6, 4, 3}, true, {1, 1, 1, 1, 2}},
      {"depthwise", {1, 8, 20}, {8, 1, 3}, false, {1, 1, 1, 1, 8}},
  };
  for (const auto engine : kConvEngines) {
    ConvEngineScope scope(engine);
    uint64_t seed = 150;
    for (const Case& c : cases) {
      const Tensor x = test::random_tensor(c.x, ++seed), w = test::random_tensor(c.w, ++seed);
      const Tensor b = c.bias ? test::random_tensor({c.w[0]}, ++seed) : Tensor();
      const ops::Conv1dOptions opt = c.opt;
      compare(
          std::string(ops::conv_engine_name(engine)) + " conv1d " + c.name, {x, w, b},
          [&](const auto& in) { return ops::conv1d(in[0], in[1], in[2], opt); }, 1e-4);
    }
  }
  ConvEngineScope gemm(ops::ConvEngine::Gemm);
  // Groups and several chunks together: every chunk is one GEMM batched over the groups.
  const Tensor x = test::random_tensor({2, 8, 70}, 170), w = test::random_tensor({6, 4, 3}, 171);
  const Tensor b = test::random_tensor({6}, 172);
  SmallColumnBudget small(512);
  compare(
      "conv1d groups chunked", {x, w, b},
      [&](const auto& in) {
        return ops::conv1d(in[0], in[1], in[2], {1, 1, 1, 1, 2});
      },
      1e-4);
}

TEST_CASE("gpu: group_norm with and without affine parameters, one and many slices") {
  struct Case {
    Shape x;
    int64_t groups;
    bool affine;
  };
  const Case cases[] = {{{2, 32, 3, 5, 7}, 8, true},
                        {{2, 32, 3, 5, 7}, 32, false},
                        {{1, 6, 4, 9}, 3, true},
                        {{1, 8, 40, 32, 32}, 2, true}};  // last: 163840 values a group, several slices
  uint64_t seed = 210;
  for (const Case& c : cases) {
    const Tensor x = ops::add(test::random_tensor(c.x, ++seed), 0.3f);
    const Tensor w = c.affine ? test::random_tensor({c.x[1]}, ++seed) : Tensor();
    const Tensor b = c.affine ? test::random_tensor({c.x[1]}, ++seed) : Tensor();
    const int64_t groups = c.groups;
    compare(
        "group_norm " + shape_str(c.x) + " groups " + std::to_string(groups), {x, w, b},
        [&](const auto& in) { return ops::group_norm(in[0], groups, in[1], in[2], 1e-6f); }, 1e-5);
  }
  // bf16 activations with f32 parameters (the upsampler's weights may stay f32).
  const Tensor x = test::random_tensor({2, 8, 5, 6}, 230), w = test::random_tensor({8}, 231);
  const Tensor b = test::random_tensor({8}, 232);
  const Tensor got =
      ops::group_norm(to_gpu(x, DType::BF16), 4, to_gpu(w, DType::F32), to_gpu(b, DType::F32), 1e-6f);
  test::require_bf16_close("group_norm f32 parameters", got,
                           round_bf16(ops::group_norm(round_bf16(x), 4, w, b, 1e-6f)),
                           ops::group_norm(x, 4, w, b, 1e-6f));
  REQUIRE_THROWS_AS(ops::group_norm(to_gpu(x, DType::F32), 3, Tensor(), Tensor(), 1e-6f), Error);
}

TEST_CASE("gpu: edge_pad in every mode along every dimension") {
  const Tensor x = test::random_tensor({2, 3, 5, 6, 4}, 240);
  const ops::PadMode modes[] = {ops::PadMode::Zeros, ops::PadMode::Reflect, ops::PadMode::Replicate,
                                ops::PadMode::Circular};
  const std::pair<int64_t, int64_t> pads[] = {{2, 0}, {1, 1}, {3, 2}, {0, 3}};
  for (ops::PadMode mode : modes) {
    for (int dim : {0, 2, 3, -1}) {
      for (auto [before, after] : pads) {
        const int64_t L = x.size(dim);
        if (mode == ops::PadMode::Reflect && (before >= L || after >= L)) continue;
        if (mode == ops::PadMode::Circular && (before > L || after > L)) continue;
        compare_exact(std::string("edge_pad ") + ops::pad_mode_name(mode) + " dim " + std::to_string(dim) +
                          " " + std::to_string(before) + "/" + std::to_string(after),
                      x, [&](const Tensor& t) { return ops::edge_pad(t, dim, before, after, mode); });
      }
    }
  }
  REQUIRE_THROWS_AS(ops::edge_pad(to_gpu(x, DType::F32), 0, 2, 0, ops::PadMode::Reflect), Error);
}

TEST_CASE("gpu: upsample_nearest2d, depth_to_space and space_to_depth move values exactly") {
  const Tensor x = test::random_tensor({2, 3, 5, 7}, 270);
  for (int64_t factor : {1, 2, 3})
    compare_exact("upsample_nearest2d x" + std::to_string(factor), x,
                  [&](const Tensor& t) { return ops::upsample_nearest2d(t, factor); });
  const Tensor v = test::random_tensor({2, 16, 3, 4, 5}, 271);
  for (std::array<int64_t, 3> f : {std::array<int64_t, 3>{1, 2, 2}, std::array<int64_t, 3>{2, 2, 2}}) {
    compare_exact("depth_to_space", v, [&](const Tensor& t) { return ops::depth_to_space(t, f); });
    const Tensor s = ops::depth_to_space(v, f);
    compare_exact("space_to_depth", s, [&](const Tensor& t) { return ops::space_to_depth(t, f); });
  }
}

TEST_CASE("gpu: decoded_to_rgb8 gives the CPU op's bytes for f32 and bf16 input, edge values included") {
  // Random values beyond [-1, 1], plus the clamp and truncation edges and non-finite values.
  Tensor x = ops::mul(test::random_tensor({3, 5, 17, 33}, 280), 1.3f);
  const std::vector<float> edges = {-1.f,           1.f,  0.f, -1.5f,    1.5f,
                                    1.f - 0x1p-22f, 0.5f, NAN, INFINITY, -INFINITY};
  float* p = x.data<float>();
  for (size_t i = 0; i < edges.size(); ++i) p[i * 97] = edges[i];
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dtype));
    const Tensor host = x.to(dtype);
    const Tensor got = ops::decoded_to_rgb8(to_gpu(x, dtype));
    REQUIRE(got.device().is_cuda());
    REQUIRE(got.dtype() == DType::U8);
    const Tensor want = ops::decoded_to_rgb8(host);
    REQUIRE(got.shape() == want.shape());
    REQUIRE(test::max_error(got, want) == 0.0);
  }
  // A sample of a batched output (a strided view) and an empty video.
  const Tensor batch = test::random_tensor({2, 3, 2, 4, 6}, 281);
  REQUIRE(test::max_error(ops::decoded_to_rgb8(to_gpu(batch, DType::BF16).select(0, 1)),
                          ops::decoded_to_rgb8(batch.to(DType::BF16).select(0, 1))) == 0.0);
  REQUIRE(ops::decoded_to_rgb8(Tensor::zeros({3, 0, 4, 4}, DType::BF16, test::gpu())).numel() == 0);
}
