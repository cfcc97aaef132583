// Backend parity of every CUDA op: walks the op list (ops/op_list.h) and runs each op's cases, random
// inputs at a few shapes (odd sizes among them), on the CPU and on the GPU. bf16 is judged by the
// FlashAttention-style rule of gpu_compare.h against the CPU's float32 result, the naive bf16
// computation being the CPU op on the bf16-rounded inputs (a composed CPU op rounds after every
// step, bf16_widening.h) unless a case gives its own; f32 against a tight tolerance; ops that only
// move values or have an integer rule must give the CPU's values exactly. An op of the list without
// a case fails, so a new CUDA op cannot land untested here.
//
// Perf mode: LTX2_BACKEND_OPS_PERF=N (N > 0) also times every case's bf16 GPU run N times with
// device events and prints the median, e.g.
//   LTX2_BACKEND_OPS_PERF=20 build/tests/test_gpu "gpu: backend ops*"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda/events.h"
#include "gpu_compare.h"
#include "ops/adaln.h"
#include "ops/attention.h"
#include "ops/channel_norm.h"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv3d.h"
#include "ops/conv_transpose1d.h"
#include "ops/edge_pad.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/norm_rope.h"
#include "ops/op_list.h"
#include "ops/reduce.h"
#include "ops/resample1d.h"
#include "ops/rgb8.h"
#include "ops/rope.h"
#include "ops/shape.h"
#include "ops/snake.h"
#include "ops/stochastic_round.h"
#include "ops/upsample_nearest.h"
#include "support/test_util.h"

using namespace ltx2;
using test::additive;
using test::key_mask_bool;
using test::round_bf16;

namespace {

using Args = std::vector<Tensor>;
using Run = std::function<Tensor(const Args&)>;

// One input of a case: `follows` inputs take the run's dtype (bf16 or f32); the others (masks,
// 8-bit weights, float32 scales and positions) keep theirs and only move to the run's device.
struct Arg {
  Tensor value;
  bool follows = true;
};

struct Case {
  Case(std::string what_, std::vector<Arg> args_, Run run_, double atol_ = 1e-4, double f32_atol_ = 1e-5)
      : what(std::move(what_)),
        args(std::move(args_)),
        run(std::move(run_)),
        atol(atol_),
        f32_atol(f32_atol_) {}

  std::string what;
  std::vector<Arg> args;      // CPU float32 (or the dtype they keep); an undefined one stays undefined
  Run run;                    // the public op on the given arguments
  double atol = 1e-4;         // the bf16 rule's absolute term
  double f32_atol = 1e-5;     // GPU f32 against CPU f32; below 0: no f32 run
  bool f32_relative = false;  // f32_atol scales with the largest |reference| value (when above 1)
  bool exact = false;         // the GPU gives the CPU's values on the same inputs, bf16 and f32
  Run naive;                  // from the f32 arguments; default: the CPU op on bf16-rounded inputs
};

Args place(const std::vector<Arg>& args, Device device, DType dtype) {
  Args out;
  for (const Arg& a : args) {
    if (!a.value.defined()) {
      out.emplace_back();
      continue;
    }
    Tensor t = a.follows ? a.value.to(dtype) : a.value;
    out.push_back(device.is_cuda() ? t.to(device) : t);
  }
  return out;
}

Args values(const std::vector<Arg>& args) {
  return place(args, Device::cpu(), DType::F32);
}

double max_abs(const Tensor& t) {
  return test::max_error(t, ops::mul(test::to_host_f32(t), 0.f));
}

void check_case(const Case& c) {
  INFO(c.what);
  const Tensor ref = c.run(place(c.args, Device::cpu(), DType::F32));
  const Tensor got = c.run(place(c.args, test::gpu(), DType::BF16));
  REQUIRE(got.device().is_cuda());
  REQUIRE(got.shape() == ref.shape());
  if (c.exact) {
    REQUIRE(test::max_error(got, c.run(place(c.args, Device::cpu(), DType::BF16))) == 0.0);
    REQUIRE(test::max_error(c.run(place(c.args, test::gpu(), DType::F32)), ref) == 0.0);
    return;
  }
  const Tensor naive =
      c.naive ? c.naive(values(c.args)) : c.run(place(c.args, Device::cpu(), DType::BF16)).to(DType::F32);
  test::require_bf16_close(c.what + " bf16", got, naive, ref, c.atol);
  if (c.f32_atol < 0) return;
  const double tol = c.f32_relative ? c.f32_atol * std::max(1.0, max_abs(ref)) : c.f32_atol;
  test::require_f32_close(c.what + " f32", c.run(place(c.args, test::gpu(), DType::F32)), ref, tol);
}

// The median device time of the case's bf16 GPU run, in milliseconds.
float time_case(const Case& c, int runs) {
  const Args args = place(c.args, test::gpu(), DType::BF16);
  c.run(args);  // warm-up: first-use setup (cuBLASLt plans, kernel attributes) is not timed
  std::vector<float> ms = cuda_time_each(0, runs, [&] { c.run(args); });
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int perf_runs() {
  const char* env = std::getenv("LTX2_BACKEND_OPS_PERF");
  return env && *env ? std::max(0, std::atoi(env)) : 0;
}

// The rows' values, float(code) x its row's scale, on the rows' device (formed on the CPU).
Tensor dequantized(const ops::Fp8Rows& r) {
  const Tensor codes = r.codes.to(Device::cpu()).to(DType::F32);
  const int64_t K = codes.size(-1);
  return ops::mul(codes.view({-1, K}), r.scales.to(Device::cpu()).view({-1, 1}))
      .view(codes.shape())
      .to(r.codes.device());
}

Tensor rnd(const Shape& shape, uint64_t seed, float scale = 1.f, float shift = 0.f) {
  Tensor t = test::random_tensor(shape, seed);
  if (scale != 1.f) t = ops::mul(t, scale);
  return shift != 0.f ? ops::add(t, shift) : t;
}

// Interval positions [B, axes, T, 2] spread over [0, 40), so that the angles cover several turns.
Tensor interval_positions(int64_t B, int64_t axes, int64_t T, uint64_t seed) {
  const Tensor start = rnd({B, axes, T, 1}, seed, 20.f, 20.f);
  return ops::cat({start, ops::add(start, 1.f)}, 3);
}

ops::RopeSpec rope_spec(ops::RopeLayout layout, int64_t dim, int64_t heads, int64_t axes,
                        ops::RopeGridPrecision grid = ops::RopeGridPrecision::Float32) {
  ops::RopeSpec s;
  s.dim = dim;
  s.heads = heads;
  s.max_pos = std::vector<double>(static_cast<size_t>(axes), 20.0);
  s.layout = layout;
  s.grid = grid;
  return s;
}

constexpr int64_t kAdaRows = 6;

// The cases of every op of the list, by op name.
std::map<std::string, std::vector<Case>> all_cases() {
  std::map<std::string, std::vector<Case>> cases;
  auto add = [&](const std::string& op, Case c) {
    c.what = op + " " + c.what;
    cases[op].push_back(std::move(c));
  };

  // linear.h: odd row counts; the GEMMs' K = 256 sums set the f32 tolerance.
  for (bool bias : {true, false}) {
    const std::string b = bias ? " + bias" : "";
    add("linear", {"[3, 41, 256] x [96, 256]" + b,
                   {{rnd({3, 41, 256}, 1)}, {rnd({96, 256}, 2)}, {bias ? rnd({96}, 3) : Tensor()}},
                   [](const Args& a) { return ops::linear(a[0], a[1], a[2]); },
                   1e-4,
                   1e-4});
    add("linear_gelu_tanh",
        {"[2, 37, 256] x [80, 256]" + b,
         {{rnd({2, 37, 256}, 21, 0.3f)}, {rnd({80, 256}, 22)}, {bias ? rnd({80}, 23) : Tensor()}},
         [](const Args& a) { return ops::linear_gelu_tanh(a[0], a[1], a[2]); },
         1e-4,
         1e-4});
  }
  add("matmul", {"batched [2, 3, 33, 64] x [2, 3, 64, 40]",
                 {{rnd({2, 3, 33, 64}, 4)}, {rnd({2, 3, 64, 40}, 5)}},
                 [](const Args& a) { return ops::matmul(a[0], a[1]); },
                 1e-4,
                 1e-4});
  add("matmul", {"shared strided right operand",
                 {{rnd({2, 3, 33, 64}, 4)}, {rnd({40, 64}, 6)}},
                 [](const Args& a) { return ops::matmul(a[0], a[1].transpose(0, 1)); },
                 1e-4,
                 1e-4});
  {
    // x scaled so that |x| / input_scale reaches past 448 (some values clamp); the weight's codes
    // are within e4m3's range; the FP8 epilogue reads the bias in bf16. Hopper's FP8 MMA
    // accumulates with fewer bits than float32: f32 within 1e-3 of the largest output.
    const float weight_scale = 0.02f, input_scale = 0.05f;
    const Tensor w8 = ops::mul(rnd({48, 64}, 32), 1.f / weight_scale).to(DType::F8E4M3);
    for (bool gelu : {false, true})
      for (bool bias : {true, false}) {
        Case c{std::string("[3, 37, 64] x [48, 64]") + (gelu ? " gelu" : "") + (bias ? " + bias" : ""),
               {{rnd({3, 37, 64}, 31, 4.f)},
                {w8, false},
                {Tensor::scalar(weight_scale), false},
                {Tensor::scalar(input_scale), false},
                {bias ? round_bf16(rnd({48}, 33)) : Tensor()}},
               [gelu](const Args& a) {
                 return ops::linear_fp8(a[0], {a[1], a[2], a[3], a[4]}, gelu);
               },
               1e-4,
               1e-3};
        c.f32_relative = true;
        add("linear_fp8", std::move(c));
      }
  }

  {
    // Per-row FP8: rows of odd count and a width off whole packs for the quantizer; the linear with
    // a scale per output channel (cuBLASLt's outer-vector scales), its GELU and bias epilogues.
    struct Rows {
      const char* what;
      Tensor x;
    };
    for (const Rows& r :
         {Rows{"[3, 37, 72] rows, one of zeros", ops::mul(rnd({3, 37, 72}, 34, 5.f), rnd({3, 37, 1}, 35))},
          // Wider than a block's 1,024 threads hold in registers: the packs past them are read again.
          Rows{"[3, 40000] rows", rnd({3, 40000}, 40, 3.f)},
          Rows{"[5, 37] rows (1-element accesses)", rnd({5, 37}, 36, 2.f)}}) {
      Case c{r.what, {{r.x}}, [](const Args& a) { return dequantized(ops::quantize_rows_f8e4m3(a[0])); }};
      c.exact = true;
      add("quantize_rows_f8e4m3", std::move(c));
    }
    const ops::Fp8Rows w = ops::quantize_rows_f8e4m3(rnd({48, 64}, 37));
    for (bool gelu : {false, true})
      for (bool bias : {true, false}) {
        Case c{std::string("rows [3, 37, 64] x [48, 64] per channel") + (gelu ? " gelu" : "") +
                   (bias ? " + bias" : ""),
               {{rnd({3, 37, 64}, 38, 4.f)},
                {w.codes, false},
                {w.scales, false},
                {bias ? round_bf16(rnd({48}, 39)) : Tensor()}},
               [gelu](const Args& a) {
                 return ops::linear_fp8(ops::quantize_rows_f8e4m3(a[0]), {a[1], a[2], Tensor(), a[3]}, gelu);
               },
               1e-4,
               1e-3};
        c.f32_relative = true;
        add("linear_fp8_rows", std::move(c));
      }
  }

  // stochastic_round.h: the reference's fp8-cast fuse rule, the CPU loop and the kernel bit for bit
  // (the run's dtype reaches only the delta, which the op takes in bf16).
  add("fp8_cast_fuse_stochastic", [] {
    Case c{"[37, 129] weight and delta, seed 3",
           {{rnd({37, 129}, 41, 8.f).to(DType::F8E4M3), false}, {rnd({37, 129}, 42, 0.2f)}},
           [](const Args& a) {
             return ops::fp8_cast_fuse_stochastic(a[0], a[1].to(DType::BF16), 3).to(DType::F32);
           }};
    c.exact = true;
    return c;
  }());

  // elementwise.h: every binary op broadcast and same-shape (a length off whole 16-byte packs);
  // Div's right operand kept away from zero. Every unary op; log, sqrt, rsqrt and pow on positives.
  for (int op = 0; op <= int(ops::BinaryOp::Min); ++op) {
    const auto bop = static_cast<ops::BinaryOp>(op);
    const float shift = bop == ops::BinaryOp::Div ? 1.5f : 0.f;
    auto run = [bop](const Args& a) { return ops::binary(a[0], a[1], bop); };
    auto rhs = [&](const Shape& s, uint64_t seed) {
      const Tensor t = rnd(s, seed);
      return shift != 0.f ? ops::add(ops::unary(t, ops::UnaryOp::Abs), 0.5f) : t;
    };
    add("binary", {"op " + std::to_string(op) + " [2, 3, 1, 5] with [3, 4, 1]",
                   {{rnd({2, 3, 1, 5}, 7)}, {rhs({3, 4, 1}, 8)}},
                   run,
                   1e-4,
                   1e-6});
    add("binary", {"op " + std::to_string(op) + " [2, 4099] with [2, 4099]",
                   {{rnd({2, 4099}, 21)}, {rhs({2, 4099}, 22)}},
                   run,
                   1e-4,
                   1e-6});
    add("binary", {"op " + std::to_string(op) + " [2, 5, 4, 128] with per-row [2, 5, 4, 1]",
                   {{rnd({2, 5, 4, 128}, 25)}, {rhs({2, 5, 4, 1}, 26)}},
                   run,
                   1e-4,
                   1e-6});
  }
  for (int op = 0; op <= int(ops::UnaryOp::DivScalar); ++op) {
    const auto uop = static_cast<ops::UnaryOp>(op);
    const bool positive = uop == ops::UnaryOp::Log || uop == ops::UnaryOp::Sqrt ||
                          uop == ops::UnaryOp::Rsqrt || uop == ops::UnaryOp::PowScalar;
    const float alpha = uop == ops::UnaryOp::PowScalar ? 1.7f : 0.3f;
    const Tensor x = rnd({7, 129}, 11, 3.f);
    const Tensor in = positive ? ops::add(ops::unary(x, ops::UnaryOp::Abs), 0.1f) : x;
    Case c{"op " + std::to_string(op) + " [7, 129]",
           {{in}},
           [uop, alpha](const Args& a) { return ops::unary(a[0], uop, alpha); },
           1e-4,
           2e-6};
    c.f32_relative = true;  // exp and pow reach past 10
    add("unary", std::move(c));
  }

  // reduce.h: every reduction over the first, a middle and the last dim; softmax over short, long
  // and odd rows.
  for (int op = 0; op <= int(ops::ReduceOp::Min); ++op)
    for (int dim : {0, 1, -1})
      for (bool keepdim : {false, true}) {
        const auto rop = static_cast<ops::ReduceOp>(op);
        add("reduce", {"op " + std::to_string(op) + " [4, 67, 300] dim " + std::to_string(dim) +
                           (keepdim ? " keepdim" : ""),
                       {{rnd({4, 67, 300}, 16)}},
                       [=](const Args& a) { return ops::reduce(a[0], dim, keepdim, rop); },
                       1e-4,
                       2e-5});
      }
  for (int64_t L : {37, 1000, 4099}) {
    Case c{"[5, " + std::to_string(L) + "]",
           {{rnd({5, L}, 12 + L, 4.f)}},
           [](const Args& a) { return ops::softmax(a[0]); },
           1e-6,
           1e-6};
    // The CPU op takes float32 only: the naive bf16 run rounds its input and output.
    c.naive = [](const Args& a) { return round_bf16(ops::softmax(round_bf16(a[0]))); };
    add("softmax", std::move(c));
  }

  // norm.h: packed and odd widths, with and without affine parameters.
  for (int64_t C : {384, 385}) {
    const std::string s = "[2, 9, " + std::to_string(C) + "]";
    add("rms_norm", {s,
                     {{rnd({2, 9, C}, 13, 1.f, 0.3f)}, {rnd({C}, 14)}},
                     [](const Args& a) { return ops::rms_norm(a[0], a[1], 1e-6f); },
                     1e-4,
                     1e-5});
    add("rms_norm", {s + " no weight",
                     {{rnd({2, 9, C}, 13, 1.f, 0.3f)}},
                     [](const Args& a) { return ops::rms_norm(a[0], Tensor(), 1e-6f); },
                     1e-4,
                     1e-5});
    add("layer_norm", {s,
                       {{rnd({2, 9, C}, 13, 1.f, 0.3f)}, {rnd({C}, 14)}, {rnd({C}, 15)}},
                       [](const Args& a) { return ops::layer_norm(a[0], a[1], a[2], 1e-5f); },
                       1e-4,
                       1e-5});
    add("layer_norm", {s + " no affine",
                       {{rnd({2, 9, C}, 13, 1.f, 0.3f)}},
                       [](const Args& a) { return ops::layer_norm(a[0], Tensor(), Tensor(), 1e-5f); },
                       1e-4,
                       1e-5});
  }

  // attention.h: the fused kernel (head dims 64 and 128, odd token counts, bool and additive masks),
  // judged against the naive bf16 attention (every intermediate rounded); a head dim below 64 runs
  // the composed path. The kernel rounds f32 inputs to bf16, so f32 runs take the bf16 rule alone.
  for (int64_t D : {64, 128}) {
    Case c{"D " + std::to_string(D) + " [2, 3, 100 | 300]",
           {{rnd({2, 3, 100, D}, 20 + D, 3.f)}, {rnd({2, 3, 300, D}, 21 + D)}, {rnd({2, 3, 300, D}, 22 + D)}},
           [](const Args& a) { return ops::attention(a[0], a[1], a[2]); },
           1e-4,
           -1};
    c.naive = [D](const Args& a) {
      return test::naive_bf16_attention(a[0], a[1], a[2], Tensor(), 1.f / std::sqrt(float(D)));
    };
    add("attention", std::move(c));
  }
  {
    const Tensor mask = key_mask_bool(2, 131);
    Case c{"D 128 bool key mask, scale 0.2",
           {{rnd({2, 2, 70, 128}, 40, 3.f)},
            {rnd({2, 2, 131, 128}, 41)},
            {rnd({2, 2, 131, 128}, 42)},
            {mask, false}},
           [](const Args& a) { return ops::attention(a[0], a[1], a[2], a[3], 0.2f); },
           1e-4,
           -1};
    c.naive = [mask](const Args& a) {
      return test::naive_bf16_attention(a[0], a[1], a[2], additive(mask), 0.2f);
    };
    add("attention", std::move(c));
    const Tensor bias = rnd({2, 1, 1, 131}, 43, 2.f);
    Case f{"D 64 additive mask, scale 0.2",
           {{rnd({2, 2, 70, 64}, 44, 3.f)},
            {rnd({2, 2, 131, 64}, 45)},
            {rnd({2, 2, 131, 64}, 46)},
            {bias, false}},
           [](const Args& a) { return ops::attention(a[0], a[1], a[2], a[3], 0.2f); },
           1e-4,
           -1};
    f.naive = [bias](const Args& a) { return test::naive_bf16_attention(a[0], a[1], a[2], bias, 0.2f); };
    add("attention", std::move(f));
    const Tensor small_bias = rnd({2, 1, 1, 37}, 83, 4.f);
    Case s{"D 16 (composed) additive mask",
           {{rnd({2, 3, 21, 16}, 80, 3.f)},
            {rnd({2, 3, 37, 16}, 81)},
            {rnd({2, 3, 37, 16}, 82)},
            {small_bias, false}},
           [](const Args& a) { return ops::attention(a[0], a[1], a[2], a[3]); },
           1e-4,
           -1};
    s.naive = [small_bias](const Args& a) {
      return test::naive_bf16_attention(a[0], a[1], a[2], small_bias, 0.25f);
    };
    add("attention", std::move(s));
  }

  // rope.h: the tables from float32 positions (the same on both sides: within the atol of each
  // other), both layouts, both grids, padded tables; the rotation with per-sample and broadcast
  // tables, which follow the run's dtype.
  {
    using L = ops::RopeLayout;
    using G = ops::RopeGridPrecision;
    const Tensor intervals = ops::mul(interval_positions(2, 3, 41, 60), 40.f);
    struct Tables {
      L layout;
      G grid;
      int64_t dim, heads;
    };
    for (const Tables t : {Tables{L::Split, G::Float32, 96, 4}, Tables{L::Split, G::Float64, 112, 2},
                           Tables{L::Interleaved, G::Float32, 98, 1}}) {
      const ops::RopeSpec spec = rope_spec(t.layout, t.dim, t.heads, 3, t.grid);
      add("rope_tables", {"layout " + std::to_string(int(t.layout)) + " dim " + std::to_string(t.dim),
                          {{intervals, false}},
                          [spec](const Args& a) {
                            const ops::RopeTables r = ops::rope_tables(a[0], spec);
                            return ops::cat({r.cos.flatten(), r.sin.flatten()}, 0);
                          },
                          1e-6,
                          1e-6});
    }
    for (L layout : {L::Split, L::Interleaved})
      for (int64_t table_batch : {2, 1}) {
        const ops::RopeTables tables =
            ops::rope_tables(interval_positions(table_batch, 3, 37, 71), rope_spec(layout, 96, 4, 3));
        add("apply_rope", {"layout " + std::to_string(int(layout)) + " [2, 37, 96] tables batch " +
                               std::to_string(table_batch),
                           {{rnd({2, 37, 96}, 70)}, {tables.cos}, {tables.sin}},
                           [layout](const Args& a) {
                             return ops::apply_rope(a[0], {a[1], a[2], layout});
                           },
                           1e-4,
                           1e-6});
        // norm_rope.h: the same tables, a weight; packed and odd half-head widths.
        for (int64_t dim : {96, 36}) {  // half-head widths 12 and 9
          const int64_t heads = dim == 96 ? 4 : 2;
          const ops::RopeTables t =
              ops::rope_tables(interval_positions(table_batch, 2, 19, 72), rope_spec(layout, dim, heads, 2));
          add("rms_norm_rope", {"layout " + std::to_string(int(layout)) + " [2, 19, " + std::to_string(dim) +
                                    "] tables batch " + std::to_string(table_batch),
                                {{rnd({2, 19, dim}, 73, 3.f)}, {rnd({dim}, 74, 1.f, 1.f)}, {t.cos}, {t.sin}},
                                [layout](const Args& a) {
                                  return ops::rms_norm_rope(a[0], a[1], 1e-6f, {a[2], a[3], layout});
                                },
                                1e-4,
                                3e-5});
          add("rms_norm_rope_qk",
              {"layout " + std::to_string(int(layout)) + " [2, 19, " + std::to_string(dim) +
                   "] q and k, tables batch " + std::to_string(table_batch),
               {{rnd({2, 19, dim}, 75, 3.f)},
                {rnd({dim}, 76, 1.f, 1.f)},
                {rnd({2, 19, dim}, 77, 2.f)},
                {rnd({dim}, 78, 1.f, 1.f)},
                {t.cos},
                {t.sin}},
               [layout](const Args& a) {
                 const ops::NormedQk r =
                     ops::rms_norm_rope_qk(a[0], a[1], a[2], a[3], 1e-6f, {a[4], a[5], layout});
                 return ops::cat({r.q, r.k}, 0);
               },
               1e-4,
               3e-5});
        }
      }
  }

  // adaln.h: rows of a [B, T', rows * D] AdaLN output per token, per sample, or the table alone;
  // packed widths and one that is not.
  {
    struct Ada {
      int64_t B, T, T_emb, D;
      bool modulation;
    };
    uint64_t seed = 100;
    for (const Ada s : {Ada{2, 33, 33, 256, true}, Ada{2, 17, 1, 128, true}, Ada{2, 9, 1, 64, false},
                        Ada{2, 11, 11, 37, true}}) {
      seed += 10;
      const std::string what = "[" + std::to_string(s.B) + ", " + std::to_string(s.T) + ", " +
                               std::to_string(s.D) + "] rows " +
                               (s.modulation ? (s.T_emb == 1 ? "per sample" : "per token") : "of the table");
      const Tensor x = rnd({s.B, s.T, s.D}, seed, 3.f), y = rnd({s.B, s.T, s.D}, seed + 1);
      const Tensor table = rnd({kAdaRows, s.D}, seed + 2, 0.5f);
      const Tensor modulation = s.modulation ? rnd({s.B, s.T_emb, kAdaRows * s.D}, seed + 3, 0.5f) : Tensor();
      auto row = [](const Args& a, int64_t r) { return ops::ada_row(a[1], r, a[2], kAdaRows, r); };
      add("rms_norm_modulate",
          {what,
           {{x}, {table}, {modulation}},
           [row](const Args& a) { return ops::rms_norm_modulate(a[0], row(a, 3), row(a, 1), 1e-6f); },
           1e-4,
           1e-5});
      // The GPU quantizes the float32 values the CPU would round to the run's dtype first: its
      // naive computation is the float32 op on the bf16-rounded inputs. Reduction order can move a
      // value across an e4m3 rounding boundary, one step (1/14 of the row's largest) in f32.
      Case fp8{what,
               {{x}, {table}, {modulation}},
               [row](const Args& a) {
                 return dequantized(ops::rms_norm_modulate_fp8(a[0], row(a, 3), row(a, 1), 1e-6f));
               },
               1e-4,
               0.08};
      fp8.f32_relative = true;
      fp8.naive = [row](const Args& a) {
        const Args r{round_bf16(a[0]), round_bf16(a[1]), a[2].defined() ? round_bf16(a[2]) : Tensor()};
        return dequantized(ops::rms_norm_modulate_fp8(r[0], row(r, 3), row(r, 1), 1e-6f));
      };
      add("rms_norm_modulate_fp8", std::move(fp8));
      add("add_gated", {what,
                        {{x}, {table}, {modulation}, {y}},
                        [row](const Args& a) { return ops::add_gated(a[0], a[3], row(a, 5)); },
                        1e-4,
                        1e-6});
    }
  }

  // adaln.h: the rows of 3 distinct timesteps [1, U, rows * D] read through an int32 index [B, T].
  {
    const int64_t B = 2, T = 29, U = 3, D = 256;
    Tensor index = Tensor::empty({B, T}, DType::I32);
    for (int64_t i = 0; i < B * T; ++i) index.data<int32_t>()[i] = static_cast<int32_t>((i / 7) % U);
    const Tensor x = rnd({B, T, D}, 190, 3.f), y = rnd({B, T, D}, 191), table = rnd({kAdaRows, D}, 192, 0.5f);
    const Tensor modulation = rnd({1, U, kAdaRows * D}, 193, 0.5f);
    const Arg idx{index, false};  // stays int32
    auto row = [](const Args& a, int64_t r) { return ops::ada_row(a[1], r, a[2], kAdaRows, r, a[4]); };
    const std::string what = "[2, 29, 256] rows of 3 distinct timesteps by index";
    add("rms_norm_modulate",
        {what,
         {{x}, {table}, {modulation}, {y}, idx},
         [row](const Args& a) { return ops::rms_norm_modulate(a[0], row(a, 3), row(a, 1), 1e-6f); },
         1e-4,
         1e-5});
    Case fp8{what,
             {{x}, {table}, {modulation}, {y}, idx},
             [row](const Args& a) {
               return dequantized(ops::rms_norm_modulate_fp8(a[0], row(a, 3), row(a, 1), 1e-6f));
             },
             1e-4,
             0.08};
    fp8.f32_relative = true;
    fp8.naive = [row](const Args& a) {
      const Args r{round_bf16(a[0]), round_bf16(a[1]), round_bf16(a[2]), a[3], a[4]};
      return dequantized(ops::rms_norm_modulate_fp8(r[0], row(r, 3), row(r, 1), 1e-6f));
    };
    add("rms_norm_modulate_fp8", std::move(fp8));
    add("add_gated", {what,
                      {{x}, {table}, {modulation}, {y}, idx},
                      [row](const Args& a) { return ops::add_gated(a[0], a[3], row(a, 5)); },
                      1e-4,
                      1e-6});
  }

  // conv1d.h .. conv_transpose1d.h: strides, paddings (asymmetric ones), dilation, groups, bias.
  {
    struct Conv1 {
      const char* name;
      Shape x, w;
      bool bias;
      ops::Conv1dOptions opt;
    };
    uint64_t seed = 150;
    for (const Conv1& c :
         {Conv1{"same padding", {2, 8, 50}, {12, 8, 5}, true, {1, 2, 2, 1, 1}},
          Conv1{"strided, causal, one channel", {3, 1, 64}, {18, 1, 16}, false, {4, 12, 0, 1, 1}},
          Conv1{"stride 3 dilation 2", {2, 5, 40}, {7, 5, 4}, true, {3, 1, 2, 2, 1}},
          Conv1{"two groups", {2, 8, 30}, {6, 4, 3}, true, {1, 1, 1, 1, 2}}}) {
      const ops::Conv1dOptions opt = c.opt;
      add("conv1d", {c.name,
                     {{rnd(c.x, ++seed)}, {rnd(c.w, ++seed)}, {c.bias ? rnd({c.w[0]}, ++seed) : Tensor()}},
                     [opt](const Args& a) { return ops::conv1d(a[0], a[1], a[2], opt); },
                     1e-4,
                     1e-4});
    }
    struct Conv2 {
      const char* name;
      Shape x, w;
      ops::Conv2dPadding pad;
    };
    for (const Conv2& c : {Conv2{"symmetric padding", {2, 5, 9, 11}, {6, 5, 3, 3}, {1, 1, 1, 1}},
                           Conv2{"causal padding", {1, 4, 7, 16}, {3, 4, 3, 3}, {2, 0, 1, 1}},
                           Conv2{"no padding", {2, 3, 6, 5}, {4, 3, 2, 3}, {}}}) {
      const ops::Conv2dPadding pad = c.pad;
      add("conv2d", {c.name,
                     {{rnd(c.x, ++seed)}, {rnd(c.w, ++seed)}, {rnd({c.w[0]}, ++seed)}},
                     [pad](const Args& a) { return ops::conv2d(a[0], a[1], a[2], pad); },
                     1e-4,
                     1e-4});
    }
    struct Conv3 {
      const char* name;
      Shape x, w;
      bool bias;
      ops::Conv3dParams p;
    };
    for (const Conv3& c :
         {Conv3{"3x3x3 padded", {2, 5, 4, 7, 9}, {6, 5, 3, 3, 3}, true, {{1, 1, 1}, {1, 1, 1}}},
          Conv3{"1x1x1", {1, 8, 3, 5, 5}, {4, 8, 1, 1, 1}, false, {}},
          Conv3{"stride 2", {1, 3, 5, 9, 8}, {4, 3, 3, 3, 3}, true, {{2, 2, 2}, {1, 1, 1}}}}) {
      const ops::Conv3dParams p = c.p;
      add("conv3d", {c.name,
                     {{rnd(c.x, ++seed)}, {rnd(c.w, ++seed)}, {c.bias ? rnd({c.w[0]}, ++seed) : Tensor()}},
                     [p](const Args& a) { return ops::conv3d(a[0], a[1], a[2], p); },
                     1e-4,
                     1e-4});
    }
    struct ConvT {
      const char* name;
      Shape x, w;
      bool bias;
      ops::ConvTranspose1dOptions opt;
    };
    seed = 180;
    for (const ConvT& c : {ConvT{"stride 4 kernel 8", {2, 6, 13}, {6, 4, 8}, true, {4, 2, 1}},
                           ConvT{"stride 1", {1, 5, 9}, {5, 3, 3}, false, {1, 0, 1}},
                           ConvT{"stride 5 kernel 11", {1, 4, 7}, {4, 6, 11}, true, {5, 3, 1}},
                           ConvT{"two groups", {2, 6, 10}, {6, 3, 5}, true, {3, 1, 2}}}) {
      const ops::ConvTranspose1dOptions opt = c.opt;
      const Tensor x = rnd(c.x, ++seed), w = rnd(c.w, ++seed);
      const Tensor b = c.bias ? rnd({c.w[1] * c.opt.groups}, ++seed) : Tensor();
      add("conv_transpose1d", {c.name,
                               {{x}, {w}, {b}},
                               [opt](const Args& a) { return ops::conv_transpose1d(a[0], a[1], a[2], opt); },
                               1e-4,
                               1e-5});
    }
  }

  // channel_norm.h: PixelNorm over 5-d, 4-d and 2-d inputs; GroupNorm with and without affine
  // parameters, one channel a group and several.
  {
    uint64_t seed = 200;
    for (const Shape& s : {Shape{2, 16, 3, 5, 7}, Shape{1, 8, 6, 5}, Shape{3, 10}})
      add("pixel_norm", {shape_str(s),
                         {{rnd(s, ++seed, 1.f, 0.2f)}},
                         [](const Args& a) { return ops::pixel_norm(a[0], 1e-8f); },
                         1e-4,
                         1e-5});
    struct Group {
      Shape x;
      int64_t groups;
      bool affine;
    };
    seed = 210;
    for (const Group& g : {Group{{2, 32, 3, 5, 7}, 8, true}, Group{{2, 32, 3, 5, 7}, 32, false},
                           Group{{1, 6, 4, 9}, 3, true}}) {
      const int64_t groups = g.groups;
      const Tensor x = rnd(g.x, ++seed, 1.f, 0.3f);
      const Tensor w = g.affine ? rnd({g.x[1]}, ++seed) : Tensor(),
                   b = g.affine ? rnd({g.x[1]}, ++seed) : Tensor();
      add("group_norm", {shape_str(g.x) + " groups " + std::to_string(groups),
                         {{x}, {w}, {b}},
                         [groups](const Args& a) { return ops::group_norm(a[0], groups, a[1], a[2], 1e-6f); },
                         1e-4,
                         1e-5});
    }
  }

  // edge_pad.h: every mode along the first, a middle and the last dim, pads on one side and both.
  {
    const Tensor x = rnd({2, 3, 5, 6, 4}, 240);
    for (ops::PadMode mode :
         {ops::PadMode::Zeros, ops::PadMode::Reflect, ops::PadMode::Replicate, ops::PadMode::Circular})
      for (int dim : {0, 2, -1})
        for (auto [before, after] : {std::pair<int64_t, int64_t>{2, 0}, {1, 1}, {0, 3}}) {
          const int64_t L = x.size(dim);
          // Reflect pads less than the length, circular at most the length (both ops refuse more).
          if (mode == ops::PadMode::Reflect && (before >= L || after >= L)) continue;
          if (mode == ops::PadMode::Circular && (before > L || after > L)) continue;
          Case c{std::string(ops::pad_mode_name(mode)) + " dim " + std::to_string(dim) + " " +
                     std::to_string(before) + "/" + std::to_string(after),
                 {{x}},
                 [=](const Args& a) { return ops::edge_pad(a[0], dim, before, after, mode); }};
          c.exact = true;
          add("edge_pad", std::move(c));
        }
  }

  // resample1d.h: as the vocoders call them (BigVGAN's anti-aliased activation, the bandwidth
  // extension's sinc resampler), and uncropped / unpadded.
  {
    const Tensor x = rnd({2, 3, 37}, 250);
    const Tensor h12 = rnd({12}, 251, 0.3f), h25 = rnd({25}, 252, 0.2f), h7 = rnd({7}, 253, 0.4f);
    auto up = [&](const std::string& what, const Tensor& h, int64_t ratio, int64_t pad, int64_t cl,
                  int64_t cr) {
      add("upsample1d", {what,
                         {{x}, {h}},
                         [=](const Args& a) { return ops::upsample1d(a[0], a[1], ratio, pad, cl, cr); },
                         1e-4,
                         1e-5});
    };
    up("anti-aliased", h12, 2, 5, 15, 15);
    up("sinc", h25, 3, 4, 24, 22);
    up("uncropped", h25, 3, 0, 0, 0);
    auto down = [&](const std::string& what, const Tensor& h, int64_t stride, int64_t pl, int64_t pr) {
      add("lowpass_downsample1d",
          {what,
           {{x}, {h}},
           [=](const Args& a) { return ops::lowpass_downsample1d(a[0], a[1], stride, pl, pr); },
           1e-4,
           1e-5});
    };
    down("anti-aliased", h12, 2, 5, 6);
    down("stride 3", h7, 3, 2, 2);
    down("unpadded", h7, 1, 0, 0);
  }

  // snake.h, upsample_nearest.h, rgb8.h.
  add("snake_beta", {"[2, 6, 40]",
                     {{rnd({2, 6, 40}, 260, 3.f)}, {rnd({6}, 261, 0.5f)}, {rnd({6}, 262, 0.5f)}},
                     [](const Args& a) { return ops::snake_beta(a[0], a[1], a[2]); },
                     1e-4,
                     1e-5});
  for (int64_t factor : {1, 2, 3}) {
    Case c{"[2, 3, 5, 7] x" + std::to_string(factor), {{rnd({2, 3, 5, 7}, 270)}}, [factor](const Args& a) {
             return ops::upsample_nearest2d(a[0], factor);
           }};
    c.exact = true;
    add("upsample_nearest2d", std::move(c));
  }
  {
    // Values beyond [-1, 1] (the clamp) at an odd frame width.
    Case c{"[3, 5, 17, 33]", {{rnd({3, 5, 17, 33}, 280, 1.3f)}}, [](const Args& a) {
             return ops::decoded_to_rgb8(a[0]);
           }};
    c.exact = true;
    add("decoded_to_rgb8", std::move(c));
  }
  return cases;
}

}  // namespace

TEST_CASE("gpu: backend ops: every op of the op list has a case and every case names a listed op") {
  const auto cases = all_cases();
  std::vector<std::string> missing;
  for (const char* op : ops::kCudaOpNames)
    if (!cases.count(op)) missing.push_back(op);
  for (const std::string& op : missing) FAIL_CHECK("op '" << op << "' of ops/op_list.h has no case");
  CHECK(missing.empty());
  for (const auto& [op, list] : cases) {
    INFO("cases under '" << op << "'");
    CHECK(std::find(std::begin(ops::kCudaOpNames), std::end(ops::kCudaOpNames), op) !=
          std::end(ops::kCudaOpNames));
  }
}

TEST_CASE("gpu: backend ops: every listed op on the GPU matches the CPU op") {
  const auto cases = all_cases();
  const int runs = perf_runs();
  for (const char* op : ops::kCudaOpNames) {
    const auto found = cases.find(op);
    if (found == cases.end()) {
      FAIL_CHECK("op '" << op << "' of ops/op_list.h has no case");
      continue;
    }
    DYNAMIC_SECTION(op) {
      for (const Case& c : found->second) {
        check_case(c);
        if (runs > 0)
          std::printf("perf %-60s %10.4f ms (median of %d)\n", c.what.c_str(), time_case(c, runs), runs);
      }
    }
  }
}
