// The flash attention kernel against the CPU op: head dims 64 and 128, key counts that are not a
// multiple of the tile, key masks (bool and additive), strided inputs, fully masked rows, f32
// inputs, the composed path of head dims below 64 (test_gpu_attention_dims.cpp has the other head
// dims from 64 to 256 and grouped KV heads). The naive bf16 reference rounds the scores, the probabilities
// and the output to bf16.
#include <limits>

#include "core/error.h"
#include "gpu_compare.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/reduce.h"
#include "support/test_util.h"

using namespace ltx2;
using test::additive;
using test::key_mask_bool;
using test::naive_bf16_attention;
using test::round_bf16;
using test::to_gpu;

namespace {

struct Case {
  Tensor q, k, v;
};

Case random_case(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, uint64_t seed) {
  // Queries scaled up so that the softmax is far from uniform.
  return {ops::mul(test::random_tensor({B, H, Tq, D}, seed), 3.f),
          test::random_tensor({B, H, Tk, D}, seed + 1), test::random_tensor({B, H, Tk, D}, seed + 2)};
}

}  // namespace

TEST_CASE("gpu: flash attention, head dims 64 and 128, no mask") {
  for (int64_t D : {64, 128}) {
    Case c = random_case(2, 3, 100, 300, D, 20 + D);
    float scale = 1.f / std::sqrt(float(D));
    Tensor ref = ops::attention(c.q, c.k, c.v);
    Tensor naive = naive_bf16_attention(c.q, c.k, c.v, Tensor(), scale);
    Tensor got = ops::attention(to_gpu(c.q, DType::BF16), to_gpu(c.k, DType::BF16), to_gpu(c.v, DType::BF16));
    REQUIRE(got.dtype() == DType::BF16);
    REQUIRE(got.shape() == Shape{2, 3, 100, D});
    test::require_bf16_close("attention D=" + std::to_string(D), got, naive, ref);
  }
}

TEST_CASE("gpu: flash attention with bool and additive key masks, explicit scale") {
  Case c = random_case(2, 2, 70, 131, 128, 40);
  Tensor mask = key_mask_bool(2, 131), add = additive(mask);
  Tensor ref = ops::attention(c.q, c.k, c.v, mask, 0.2f);
  Tensor naive = naive_bf16_attention(c.q, c.k, c.v, add, 0.2f);
  Tensor qg = to_gpu(c.q, DType::BF16), kg = to_gpu(c.k, DType::BF16), vg = to_gpu(c.v, DType::BF16);
  test::require_bf16_close("bool mask", ops::attention(qg, kg, vg, mask.to(test::gpu()), 0.2f), naive, ref);
  // A finite additive mask (a bias per key) through the float path.
  Tensor bias = ops::mul(test::random_tensor({2, 1, 1, 131}, 41), 2.f);
  test::require_bf16_close("float mask", ops::attention(qg, kg, vg, bias.to(test::gpu()), 0.2f),
                           naive_bf16_attention(c.q, c.k, c.v, bias, 0.2f),
                           ops::attention(c.q, c.k, c.v, bias, 0.2f));
}

TEST_CASE("gpu: flash attention reads strided q, k, v and f32 inputs") {
  // [B, T, H, D] tensors viewed as [B, H, T, D], as the models produce them.
  Tensor q = ops::mul(test::random_tensor({1, 90, 4, 64}, 50), 3.f).permute({0, 2, 1, 3});
  Tensor k = test::random_tensor({1, 77, 4, 64}, 51).permute({0, 2, 1, 3});
  Tensor v = test::random_tensor({1, 77, 4, 64}, 52).permute({0, 2, 1, 3});
  Tensor ref = ops::attention(q, k, v);
  Tensor naive = naive_bf16_attention(q, k, v, Tensor(), 0.125f);
  test::require_bf16_close(
      "strided", ops::attention(to_gpu(q, DType::BF16), to_gpu(k, DType::BF16), to_gpu(v, DType::BF16)),
      naive, ref);
  Tensor got32 = ops::attention(to_gpu(q, DType::F32), to_gpu(k, DType::F32), to_gpu(v, DType::F32));
  REQUIRE(got32.dtype() == DType::F32);
  test::require_bf16_close("f32 inputs", got32, naive, ref);
}

TEST_CASE("gpu: flash attention gives zeros for a row with every key masked") {
  Case c = random_case(1, 2, 16, 70, 64, 60);
  Tensor mask = Tensor::empty({1, 1, 16, 70}, DType::Bool);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 70; ++j) mask.data<uint8_t>()[i * 70 + j] = i != 5 && j % 2 == 0;
  Tensor got = test::to_host_f32(ops::attention(to_gpu(c.q, DType::BF16), to_gpu(c.k, DType::BF16),
                                                to_gpu(c.v, DType::BF16), mask.to(test::gpu())));
  Tensor ref = ops::attention(c.q, c.k, c.v, mask);
  REQUIRE(test::max_error(got.select(2, 5), ops::mul(ref.select(2, 5), 0.f)) == 0.0);
  REQUIRE(test::max_error(got, ref) < 2e-2);
}

TEST_CASE("gpu: head dims below 64 take the composed float32 path, float masks only") {
  Case c = random_case(2, 3, 21, 37, 16, 80);
  Tensor bias = ops::mul(test::random_tensor({2, 1, 1, 37}, 83), 4.f);
  Tensor ref = ops::attention(c.q, c.k, c.v, bias);
  Tensor naive = naive_bf16_attention(c.q, c.k, c.v, bias, 0.25f);
  Tensor got = ops::attention(to_gpu(c.q, DType::BF16), to_gpu(c.k, DType::BF16), to_gpu(c.v, DType::BF16),
                              bias.to(test::gpu()));
  REQUIRE(got.dtype() == DType::BF16);
  test::require_bf16_close("head dim 16, float mask", got, naive, ref);
  Tensor bool_mask = Tensor::full({1, 1, 8, 8}, 1.f).to(DType::Bool).to(test::gpu());
  REQUIRE_THROWS_AS(ops::attention(to_gpu(test::random_tensor({1, 1, 8, 48}, 1), DType::BF16),
                                   to_gpu(test::random_tensor({1, 1, 8, 48}, 2), DType::BF16),
                                   to_gpu(test::random_tensor({1, 1, 8, 48}, 3), DType::BF16), bool_mask),
                    Error);
}
