// The GEMM, elementwise and norm ops' CUDA paths beyond the parity cases of test_backend_ops.cpp:
// mixed-dtype operands, the FP8 linear's misaligned and e4m3 inputs, the binary ops' packed,
// per-row, per-column and misaligned kernels, strided operands, and the errors. bf16 under the
// FlashAttention-style rule (gpu_compare.h), f32 against a tight absolute tolerance.
#include "core/error.h"
#include "gpu_compare.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "support/test_util.h"

using namespace ltx2;
using test::gpu;
using test::round_bf16;
using test::to_gpu;

TEST_CASE("gpu: linear (cuBLASLt) with and without bias, bf16 and f32") {
  Tensor x = test::random_tensor({3, 41, 256}, 1), w = test::random_tensor({96, 256}, 2);
  Tensor b = test::random_tensor({96}, 3);
  Tensor ref = ops::linear(x, w, b);
  Tensor naive = round_bf16(ops::linear(round_bf16(x), round_bf16(w), round_bf16(b)));
  Tensor got = ops::linear(to_gpu(x, DType::BF16), to_gpu(w, DType::BF16), to_gpu(b, DType::F32));
  REQUIRE(got.dtype() == DType::BF16);
  REQUIRE(got.shape() == Shape{3, 41, 96});
  test::require_bf16_close("linear bf16 + bias", got, naive, ref);
  test::require_bf16_close("linear bf16", ops::linear(to_gpu(x, DType::BF16), to_gpu(w, DType::BF16)),
                           round_bf16(ops::linear(round_bf16(x), round_bf16(w))), ops::linear(x, w));
  test::require_f32_close("linear f32 + bias",
                          ops::linear(to_gpu(x, DType::F32), to_gpu(w, DType::F32), to_gpu(b, DType::F32)),
                          ref, 1e-4);
  REQUIRE_THROWS_AS(ops::linear(to_gpu(x, DType::BF16), to_gpu(w, DType::F32)), Error);
}

// The FP8 linear: the GPU quantizes x by the CPU's rule (same codes), then cuBLASLt's FP8 GEMM.
// f32 in and out: the CPU's float32 result up to accumulation order; bf16: the 2x rule against the
// CPU's bf16-input run; a misaligned x (offset view) and an F8_E4M3 x too.
TEST_CASE("gpu: linear_fp8 (cuBLASLt FP8 GEMM), bias and GELU epilogues, bf16 and f32, like the CPU") {
  const Tensor x = ops::mul(test::random_tensor({3, 37, 64}, 31), 4.f), w = test::random_tensor({48, 64}, 32);
  const Tensor b = round_bf16(test::random_tensor({48}, 33));  // the FP8 epilogue reads a bf16 bias
  const float weight_scale = 0.02f, input_scale = 0.05f;       // |x| / 0.05 reaches past 448: some clamp
  const Tensor w8 = ops::mul(w, 1.f / weight_scale).to(DType::F8E4M3);
  for (bool gelu : {false, true})
    for (bool with_bias : {true, false}) {
      INFO("gelu " << gelu << " bias " << with_bias);
      const ops::Fp8Linear cpu{w8, Tensor::scalar(weight_scale), Tensor::scalar(input_scale),
                               with_bias ? b : Tensor()};
      const ops::Fp8Linear dev{w8.to(gpu()), cpu.weight_scale.to(gpu()), cpu.input_scale.to(gpu()),
                               with_bias ? to_gpu(b, DType::BF16) : Tensor()};
      ops::Fp8Linear dev_f32 = dev;
      dev_f32.bias = with_bias ? to_gpu(b, DType::F32) : Tensor();
      const Tensor ref = ops::linear_fp8(x, cpu, gelu);
      const Tensor f32 = ops::linear_fp8(to_gpu(x, DType::F32), dev_f32, gelu);
      REQUIRE(f32.dtype() == DType::F32);
      // Hopper's FP8 MMA accumulates with fewer bits than float32 (measured on the H200: 1.9e-4 of
      // the largest output, 2^-12.3): a relative bound of 1e-3, far below a wrong code or scale.
      const double ref_max = test::max_error(ref, ops::mul(ref, 0.f));
      test::require_f32_close("linear_fp8 f32", f32, ref, 1e-3 * ref_max);
      const Tensor naive = ops::linear_fp8(round_bf16(x).to(DType::BF16), cpu, gelu).to(DType::F32);
      const Tensor got = ops::linear_fp8(to_gpu(x, DType::BF16), dev, gelu);
      REQUIRE(got.dtype() == DType::BF16);
      REQUIRE(got.shape() == Shape{3, 37, 48});
      test::require_bf16_close("linear_fp8 bf16", got, naive, ref);
      const Tensor flat = Tensor::empty({x.numel() + 1}, DType::BF16, gpu());
      Tensor shifted = flat.narrow(0, 1, x.numel()).view(x.shape());
      shifted.copy_(to_gpu(x, DType::BF16));
      test::require_bf16_close("linear_fp8 bf16 misaligned", ops::linear_fp8(shifted, dev, gelu), naive, ref);
      const Tensor codes = ops::mul(x, 10.f).to(DType::F8E4M3);  // within e4m3's range
      const Tensor from_codes = ops::linear_fp8(codes, cpu, gelu);
      test::require_f32_close("linear_fp8 e4m3 input", ops::linear_fp8(codes.to(gpu()), dev_f32, gelu),
                              from_codes, 1e-3 * test::max_error(from_codes, ops::mul(from_codes, 0.f)));
    }
  const ops::Fp8Linear odd{Tensor::zeros({40, 24}).to(DType::F8E4M3).to(gpu()),
                           Tensor::scalar(1).to(gpu()),
                           Tensor::scalar(1).to(gpu()),
                           {}};
  REQUIRE_THROWS_AS(ops::linear_fp8(Tensor::zeros({2, 24}).to(gpu()), odd), Error);
}

TEST_CASE("gpu: broadcasting binary ops, bf16, f32 and mixed") {
  Tensor a = test::random_tensor({2, 3, 1, 5}, 7), b = test::random_tensor({3, 4, 1}, 8);
  Tensor b_pos = ops::add(ops::unary(b, ops::UnaryOp::Abs), 0.5f);  // keeps Div away from zero
  for (int op = 0; op <= int(ops::BinaryOp::Min); ++op) {
    auto bop = static_cast<ops::BinaryOp>(op);
    Tensor rhs = bop == ops::BinaryOp::Div ? b_pos : b;
    Tensor ref = ops::binary(a, rhs, bop);
    Tensor naive = round_bf16(ops::binary(round_bf16(a), round_bf16(rhs), bop));
    Tensor got = ops::binary(to_gpu(a, DType::BF16), to_gpu(rhs, DType::BF16), bop);
    REQUIRE(got.dtype() == DType::BF16);
    test::require_bf16_close("binary " + std::to_string(op), got, naive, ref);
    test::require_f32_close("binary f32 " + std::to_string(op),
                            ops::binary(to_gpu(a, DType::F32), to_gpu(rhs, DType::F32), bop), ref, 1e-6);
    Tensor mixed = ops::binary(to_gpu(a, DType::BF16), to_gpu(rhs, DType::F32), bop);
    REQUIRE(mixed.dtype() == DType::F32);
    test::require_f32_close("binary mixed " + std::to_string(op), mixed, ops::binary(round_bf16(a), rhs, bop),
                            1e-6);
  }
  // A transposed (non-contiguous) operand.
  Tensor t = test::random_tensor({5, 6}, 9).transpose(0, 1);
  Tensor u = test::random_tensor({6, 5}, 10);
  test::require_f32_close("binary strided", ops::add(to_gpu(t, DType::F32), to_gpu(u, DType::F32)),
                          ops::add(t, u), 1e-6);
  REQUIRE_THROWS_AS(ops::add(to_gpu(a, DType::F32), to_gpu(test::random_tensor({3, 3}, 1), DType::F32)),
                    Error);
}

// Same-shape contiguous operands take the 16-byte-pack kernel, a per-row or per-column operand the
// 2-d kernel; a length that is not whole packs or an operand one element off alignment takes the
// general one. All give the CPU's values.
TEST_CASE("gpu: same-shape, per-row and per-column binary ops, packed and unpacked") {
  for (int64_t n : {4096, 4099}) {
    Tensor a = test::random_tensor({2, n}, 21),
           b = ops::add(ops::unary(test::random_tensor({2, n}, 22), ops::UnaryOp::Abs), 0.5f);
    for (int op = 0; op <= int(ops::BinaryOp::Min); ++op) {
      auto bop = static_cast<ops::BinaryOp>(op);
      const std::string name = "dense " + std::to_string(n) + " op " + std::to_string(op);
      Tensor ref = ops::binary(a, b, bop);
      test::require_f32_close(name, ops::binary(to_gpu(a, DType::F32), to_gpu(b, DType::F32), bop), ref,
                              1e-6);
      Tensor naive = round_bf16(ops::binary(round_bf16(a), round_bf16(b), bop));
      test::require_bf16_close(name + " bf16",
                               ops::binary(to_gpu(a, DType::BF16), to_gpu(b, DType::BF16), bop), naive, ref);
    }
  }
  // One value per row (a per-head gate): the row kernel when rows are whole packs, else the general one.
  for (int64_t inner : {128, 12}) {
    Tensor x = test::random_tensor({2, 5, 4, inner}, 25), g = test::random_tensor({2, 5, 4, 1}, 26);
    const std::string name = "per-row " + std::to_string(inner);
    test::require_f32_close(name, ops::mul(to_gpu(x, DType::F32), to_gpu(g, DType::F32)), ops::mul(x, g),
                            1e-6);
    test::require_bf16_close(name + " bf16", ops::mul(to_gpu(x, DType::BF16), to_gpu(g, DType::BF16)),
                             round_bf16(ops::mul(round_bf16(x), round_bf16(g))), ops::mul(x, g));
    Tensor strided_g = test::random_tensor({2, 5, 4, 2}, 27).narrow(3, 0, 1);  // row values 2 apart
    test::require_f32_close(name + " strided gate",
                            ops::sub(to_gpu(x, DType::F32), to_gpu(strided_g, DType::F32)),
                            ops::sub(x, strided_g), 1e-6);
  }
  // One row shared by every row (a per-channel modulation), and rows of a wider tensor.
  for (int64_t inner : {64, 12}) {
    Tensor x = test::random_tensor({3, 7, inner}, 28), c = test::random_tensor({inner}, 29);
    Tensor wide = test::random_tensor({3, 7, inner + 8}, 30).narrow(2, 0, inner);
    const std::string name = "per-column " + std::to_string(inner);
    test::require_f32_close(name, ops::add(to_gpu(x, DType::F32), to_gpu(c, DType::F32)), ops::add(x, c),
                            1e-6);
    test::require_bf16_close(name + " bf16", ops::add(to_gpu(x, DType::BF16), to_gpu(c, DType::BF16)),
                             round_bf16(ops::add(round_bf16(x), round_bf16(c))), ops::add(x, c));
    test::require_f32_close(name + " strided rows", ops::mul(to_gpu(x, DType::F32), to_gpu(wide, DType::F32)),
                            ops::mul(x, wide), 1e-6);
  }
  Tensor whole = to_gpu(test::random_tensor({4097}, 23), DType::BF16);
  Tensor off = whole.narrow(0, 1, 4096), other = to_gpu(test::random_tensor({4096}, 24), DType::BF16);
  Tensor ref = ops::add(off.to(Device::cpu()).to(DType::F32), other.to(Device::cpu()).to(DType::F32));
  test::require_bf16_close("misaligned", ops::add(off, other), round_bf16(ref), ref);
}

TEST_CASE("gpu: rms_norm and layer_norm with f32 and bf16 parameters") {
  Tensor x = ops::add(test::random_tensor({2, 9, 384}, 13), 0.3f);
  Tensor w = test::random_tensor({384}, 14), b = test::random_tensor({384}, 15);
  Tensor ref = ops::rms_norm(x, w, 1e-6f);
  Tensor naive = round_bf16(ops::rms_norm(round_bf16(x), round_bf16(w), 1e-6f));
  test::require_bf16_close("rms_norm", ops::rms_norm(to_gpu(x, DType::BF16), to_gpu(w, DType::BF16), 1e-6f),
                           naive, ref);
  test::require_bf16_close("rms_norm f32 weight",
                           ops::rms_norm(to_gpu(x, DType::BF16), to_gpu(w, DType::F32), 1e-6f),
                           round_bf16(ops::rms_norm(round_bf16(x), w, 1e-6f)), ref);
  test::require_f32_close("rms_norm f32 no weight", ops::rms_norm(to_gpu(x, DType::F32), Tensor(), 1e-6f),
                          ops::rms_norm(x, Tensor(), 1e-6f), 1e-5);
  // A width that is not whole 16-byte packs takes the element-wise kernel.
  Tensor odd = ops::add(test::random_tensor({3, 385}, 17), 0.3f), w_odd = test::random_tensor({385}, 18);
  test::require_bf16_close(
      "rms_norm odd width", ops::rms_norm(to_gpu(odd, DType::BF16), to_gpu(w_odd, DType::BF16), 1e-6f),
      round_bf16(ops::rms_norm(round_bf16(odd), round_bf16(w_odd), 1e-6f)), ops::rms_norm(odd, w_odd, 1e-6f));
  Tensor lref = ops::layer_norm(x, w, b, 1e-5f);
  Tensor lnaive = round_bf16(ops::layer_norm(round_bf16(x), round_bf16(w), round_bf16(b), 1e-5f));
  test::require_bf16_close(
      "layer_norm",
      ops::layer_norm(to_gpu(x, DType::BF16), to_gpu(w, DType::BF16), to_gpu(b, DType::BF16), 1e-5f), lnaive,
      lref);
  test::require_f32_close("layer_norm f32 no affine",
                          ops::layer_norm(to_gpu(x, DType::F32), Tensor(), Tensor(), 1e-5f),
                          ops::layer_norm(x, Tensor(), Tensor(), 1e-5f), 1e-5);
  REQUIRE_THROWS_AS(ops::rms_norm(to_gpu(x, DType::BF16), to_gpu(b.slice(0, 0, 100), DType::BF16), 1e-6f),
                    Error);
}
