// The attention engines of the CUDA backend against the CPU op (docs/gpu.md bf16 rule): the
// FlashAttention-3-style kernel at head dim 128 (self and cross shapes, tails of rows and keys, a
// K/V ring wrapped several times, grouped KV heads, the transformer's strided q/k/v, row maxima
// that grow over the key tiles and that do not) and what it refuses; cuDNN's fused flash attention at head
// dims 64 and 128 and what it refuses; the engine mode (forced engines, masks always on the wgmma kernel) and
// Auto's pick, made once per shape. Without cuDNN the cuDNN cases do not build.
#include <algorithm>

#include "core/error.h"
#include "gpu_compare.h"
#include "kernels/attention_fa3.h"
#include "kernels/attention_pick.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/reduce.h"
#include "support/test_util.h"
#ifdef LTX2_WITH_CUDNN
#include "kernels/cudnn/attention_cudnn.h"
#endif

using namespace ltx2;
using ops::AttentionEngine;
using test::naive_bf16_attention;
using test::round_bf16;
using test::to_gpu;

namespace {

// One attention input on the CPU (f32) and on the GPU (bf16). Model layout: [B, T, H, D] tensors
// viewed as [B, H, T, D] (the transformer's head split; the GPU copy keeps those strides, as
// Tensor::to makes contiguous copies), else plain [B, H, T, D].
struct Operand {
  Tensor cpu, gpu;
};

Operand input(int64_t B, int64_t H, int64_t T, int64_t D, uint64_t seed, bool model_layout,
              float gain = 1.f) {
  Tensor t = ops::mul(test::random_tensor(model_layout ? Shape{B, T, H, D} : Shape{B, H, T, D}, seed), gain);
  Tensor g = to_gpu(t, DType::BF16);
  if (!model_layout) return {t, g};
  return {t.transpose(1, 2), g.transpose(1, 2)};
}

// Sets the engine mode for one scope.
struct EngineScope {
  AttentionEngine saved = ops::attention_engine();
  explicit EngineScope(AttentionEngine engine) { ops::set_attention_engine(engine); }
  ~EngineScope() { ops::set_attention_engine(saved); }
};

}  // namespace

TEST_CASE("gpu: every engine mode gives the same attention, masks included") {
  const int64_t B = 2, H = 3, Tq = 130, Tk = 77, D = 128;
  Operand q = input(B, H, Tq, D, 300, true, 3.f), k = input(B, H, Tk, D, 301, true),
          v = input(B, H, Tk, D, 302, true);
  const float scale = 1.f / std::sqrt(float(D));
  Tensor ref = ops::attention(q.cpu, k.cpu, v.cpu),
         naive = naive_bf16_attention(q.cpu, k.cpu, v.cpu, Tensor(), scale);
  Tensor mask = Tensor::empty({B, 1, 1, Tk}, DType::Bool), add = Tensor::empty({B, 1, 1, Tk});
  for (int64_t i = 0; i < B * Tk; ++i) {
    mask.data<uint8_t>()[i] = i % 4 != 1;
    add.data<float>()[i] = i % 4 != 1 ? 0.f : -INFINITY;
  }
  Tensor masked_ref = ops::attention(q.cpu, k.cpu, v.cpu, mask);
  Tensor masked_naive = naive_bf16_attention(q.cpu, k.cpu, v.cpu, add, scale);
  for (AttentionEngine e :
       {AttentionEngine::Wgmma, AttentionEngine::Fa3, AttentionEngine::Cudnn, AttentionEngine::Auto}) {
    EngineScope scope(e);
    const std::string name = ops::attention_engine_name(e);
    test::require_bf16_close(name, ops::attention(q.gpu, k.gpu, v.gpu), naive, ref);
    test::require_bf16_close(name + " masked", ops::attention(q.gpu, k.gpu, v.gpu, mask.to(test::gpu())),
                             masked_naive, masked_ref);
  }
}

TEST_CASE("gpu: fa3 attention, self and cross, row and key tails, grouped KV heads, contiguous and strided") {
  struct Case {
    int64_t B, H, Hkv, Tq, Tk;
  };
  // 257 x 257: one row and one key past the tiles; 700 keys: the two-buffer K/V ring wraps twice
  // with a partial last tile; 1 x 1 and 128 x 128: the smallest call and whole tiles only; H 4
  // on Hkv 2: grouped-query attention.
  for (const Case& c : {Case{1, 4, 4, 257, 257}, Case{2, 2, 2, 190, 61}, Case{1, 2, 2, 300, 700},
                        Case{1, 3, 3, 1, 1}, Case{1, 2, 2, 128, 128}, Case{2, 4, 2, 150, 333}}) {
    for (bool model_layout : {false, true}) {
      const uint64_t seed = 800 + c.Tq + c.Tk + c.Hkv + model_layout;
      Operand q = input(c.B, c.H, c.Tq, 128, seed, model_layout, 3.f);
      Operand k = input(c.B, c.Hkv, c.Tk, 128, seed + 1, model_layout);
      Operand v = input(c.B, c.Hkv, c.Tk, 128, seed + 2, model_layout);
      REQUIRE(cuda::fa3_attention_takes(q.gpu, k.gpu, v.gpu));
      const Tensor k_rep = test::repeat_kv_heads(k.cpu, c.H), v_rep = test::repeat_kv_heads(v.cpu, c.H);
      for (float scale : {1.f / std::sqrt(128.f), 0.2f}) {
        const Tensor token_major = Tensor::empty({c.B, c.Tq, c.H, 128}, DType::BF16, test::gpu());
        const Tensor out = token_major.transpose(1, 2);
        const std::string what = fmt::format("B{} H{} Hkv{} Tq{} Tk{}{} scale {}", c.B, c.H, c.Hkv, c.Tq,
                                             c.Tk, model_layout ? " bthd" : "", scale);
        INFO(what);
        cuda::fa3_attention(q.gpu, k.gpu, v.gpu, out, scale);
        test::require_bf16_close(what, out, naive_bf16_attention(q.cpu, k_rep, v_rep, Tensor(), scale),
                                 ops::attention(q.cpu, k.cpu, v.cpu, Tensor(), scale));
      }
    }
  }
}

// The online softmax's rescaling of O: keys whose size ramps up along the sequence make the row
// max grow tile after tile (O rescaled at every step, by large factors); ramping down, the first
// tile holds the max and later tiles add probabilities far below 1.
TEST_CASE("gpu: fa3 attention with the row max growing over the key tiles, and shrinking") {
  const int64_t B = 1, H = 2, Tq = 200, Tk = 1000;
  for (float slope : {8.f, -0.9f}) {
    Operand q = input(B, H, Tq, 128, 900, false, 4.f);
    const Tensor ramp = ops::add(ops::mul(Tensor::arange(Tk), slope / float(Tk)), 1.f).reshape({1, 1, Tk, 1});
    const Tensor k_cpu = ops::mul(test::random_tensor({B, H, Tk, 128}, 901), ramp);
    const Tensor v_cpu = test::random_tensor({B, H, Tk, 128}, 902);
    const Tensor k = to_gpu(k_cpu, DType::BF16), v = to_gpu(v_cpu, DType::BF16);
    for (float scale : {1.f / std::sqrt(128.f), 0.4f}) {
      const std::string what = fmt::format("key ramp slope {} scale {}", slope, scale);
      INFO(what);
      const Tensor out = Tensor::empty({B, H, Tq, 128}, DType::BF16, test::gpu());
      cuda::fa3_attention(q.gpu, k, v, out, scale);
      test::require_bf16_close(what, out, naive_bf16_attention(q.cpu, k_cpu, v_cpu, Tensor(), scale),
                               ops::attention(q.cpu, k_cpu, v_cpu, Tensor(), scale));
    }
  }
}

TEST_CASE("gpu: fa3 attention refuses what its bulk copies cannot read") {
  Tensor q = input(1, 2, 40, 128, 900, false).gpu, k = input(1, 2, 50, 128, 901, false).gpu;
  REQUIRE(cuda::fa3_attention_takes(q, k, k));
  // Head dim 64; f32; rows not 16-byte aligned (a view starting 4 elements in); a broadcast
  // (zero-stride) head axis; no keys.
  Tensor q64 = input(1, 2, 40, 64, 902, false).gpu;
  REQUIRE_FALSE(cuda::fa3_attention_takes(q64, q64, q64));
  REQUIRE_FALSE(cuda::fa3_attention_takes(q.to(DType::F32), k, k));
  Tensor shifted = input(1, 2, 40, 132, 903, false).gpu.narrow(3, 4, 128);
  REQUIRE_FALSE(cuda::fa3_attention_takes(shifted, k, k));
  Tensor broadcast = k.narrow(1, 0, 1).expand({1, 2, 50, 128});
  REQUIRE_FALSE(cuda::fa3_attention_takes(q, broadcast, broadcast));
  REQUIRE_FALSE(cuda::fa3_attention_takes(q, k.narrow(2, 0, 0), k.narrow(2, 0, 0)));
  REQUIRE_THROWS_WITH(cuda::fa3_attention(q64, q64, q64, q64, 0.1f), Catch::Matchers::Contains("fa3"));
}

#ifdef LTX2_WITH_CUDNN

TEST_CASE("gpu: cuDNN attention, head dims 64 and 128, self and cross, contiguous and strided") {
  struct Case {
    int64_t B, H, Tq, Tk, D;
  };
  for (const Case& c : {Case{2, 3, 100, 300, 64}, Case{1, 4, 257, 257, 128}, Case{2, 2, 190, 61, 128},
                        Case{1, 2, 64, 1000, 64}}) {
    for (bool model_layout : {false, true}) {
      const uint64_t seed = 400 + c.Tq + c.Tk + c.D + model_layout;
      Operand q = input(c.B, c.H, c.Tq, c.D, seed, model_layout, 3.f);
      Operand k = input(c.B, c.H, c.Tk, c.D, seed + 1, model_layout);
      Operand v = input(c.B, c.H, c.Tk, c.D, seed + 2, model_layout);
      REQUIRE(q.gpu.is_contiguous() == !model_layout);
      for (float scale : {0.f, 0.2f}) {
        const float used = scale > 0.f ? scale : 1.f / std::sqrt(float(c.D));
        Tensor out = Tensor::empty({c.B, c.H, c.Tq, c.D}, DType::BF16, test::gpu());
        const std::string what = fmt::format("B{} H{} Tq{} Tk{} D{}{} scale {}", c.B, c.H, c.Tq, c.Tk, c.D,
                                             model_layout ? " bthd" : "", used);
        INFO(what);
        REQUIRE(cuda::cudnn_attention(q.gpu, k.gpu, v.gpu, out, used));
        test::require_bf16_close(what, out, naive_bf16_attention(q.cpu, k.cpu, v.cpu, Tensor(), used),
                                 ops::attention(q.cpu, k.cpu, v.cpu, Tensor(), scale));
      }
    }
  }
}

TEST_CASE("gpu: cuDNN attention refuses what its graph does not describe") {
  Tensor q = input(1, 2, 40, 128, 500, false).gpu, k = input(1, 2, 50, 128, 501, false).gpu;
  Tensor out = Tensor::empty({1, 2, 40, 128}, DType::BF16, test::gpu());
  REQUIRE(cuda::cudnn_attention(q, k, k, out, 0.1f));
  // Head dim 80; one KV head for two query heads; f32; rows not 16-byte aligned (a view starting 4
  // elements in).
  Tensor q80 = input(1, 2, 40, 80, 502, false).gpu;
  Tensor out80 = Tensor::empty({1, 2, 40, 80}, DType::BF16, test::gpu());
  REQUIRE_FALSE(cuda::cudnn_attention(q80, q80, q80, out80, 0.1f));
  REQUIRE_FALSE(cuda::cudnn_attention(q, k.narrow(1, 0, 1), k.narrow(1, 0, 1), out, 0.1f));
  REQUIRE_FALSE(cuda::cudnn_attention(q.to(DType::F32), k, k, out, 0.1f));
  Tensor shifted = input(1, 2, 40, 132, 503, false).gpu.narrow(3, 4, 128);
  REQUIRE_FALSE(cuda::cudnn_attention(shifted, k, k, out, 0.1f));
}

TEST_CASE("gpu: Auto times a new shape once, keeps its pick, and runs it") {
  EngineScope scope(AttentionEngine::Auto);
  Operand q = input(1, 2, 333, 64, 600, true, 3.f), k = input(1, 2, 190, 64, 601, true),
          v = input(1, 2, 190, 64, 602, true);
  REQUIRE(cuda::picked_attention_engine(q.gpu, k.gpu, v.gpu) == AttentionEngine::Auto);
  const int64_t timings = cuda::attention_engine_timings();
  Tensor ref = ops::attention(q.cpu, k.cpu, v.cpu),
         naive = naive_bf16_attention(q.cpu, k.cpu, v.cpu, Tensor(), 0.125f);
  test::require_bf16_close("first call", ops::attention(q.gpu, k.gpu, v.gpu), naive, ref);
  const AttentionEngine picked = cuda::picked_attention_engine(q.gpu, k.gpu, v.gpu);
  REQUIRE((picked == AttentionEngine::Wgmma || picked == AttentionEngine::Cudnn));
  REQUIRE(cuda::attention_engine_timings() == timings + 1);
  test::require_bf16_close("second call", ops::attention(q.gpu, k.gpu, v.gpu), naive, ref);
  REQUIRE(cuda::attention_engine_timings() == timings + 1);
  REQUIRE(cuda::picked_attention_engine(q.gpu, k.gpu, v.gpu) == picked);
  // Another layout of the same shape is a new pick.
  Tensor qc = q.gpu.contiguous();
  REQUIRE(cuda::picked_attention_engine(qc, k.gpu, v.gpu) == AttentionEngine::Auto);
  test::require_bf16_close("contiguous q", ops::attention(qc, k.gpu, v.gpu), naive, ref);
  REQUIRE(cuda::attention_engine_timings() == timings + 2);
}

#endif

TEST_CASE("gpu: the engine mode decides which engine runs, falling back to the wgmma kernel") {
  Tensor q = input(1, 2, 70, 128, 700, false).gpu;
  std::vector<int> runs(4, 0);
  bool cudnn_can = true;
  const auto count = [&](AttentionEngine e) { ++runs[static_cast<int>(e)]; };
  const std::vector<cuda::AttentionCandidate> engines{
      {AttentionEngine::Wgmma, [&] { return count(AttentionEngine::Wgmma), true; }},
      {AttentionEngine::Fa3, [&] { return count(AttentionEngine::Fa3), true; }},
      {AttentionEngine::Cudnn, [&] { return cudnn_can && (count(AttentionEngine::Cudnn), true); }}};
  const auto ran = [&](AttentionEngine mode) {
    EngineScope scope(mode);
    std::fill(runs.begin(), runs.end(), 0);
    return cuda::run_attention_engine(q, q, q, engines);
  };
  REQUIRE(ran(AttentionEngine::Wgmma) == AttentionEngine::Wgmma);
  REQUIRE(runs == std::vector<int>{0, 1, 0, 0});
  REQUIRE(ran(AttentionEngine::Fa3) == AttentionEngine::Fa3);
  REQUIRE(runs == std::vector<int>{0, 0, 1, 0});
  REQUIRE(ran(AttentionEngine::Cudnn) == AttentionEngine::Cudnn);
  REQUIRE(runs == std::vector<int>{0, 0, 0, 1});
  cudnn_can = false;  // cuDNN without an engine for the shape: the wgmma kernel runs it
  REQUIRE(ran(AttentionEngine::Cudnn) == AttentionEngine::Wgmma);
  REQUIRE(runs == std::vector<int>{0, 1, 0, 0});
  // A forced engine that is no candidate (a masked call offers only the wgmma kernel).
  {
    EngineScope scope(AttentionEngine::Fa3);
    REQUIRE(cuda::run_attention_engine(q, q, q, {engines.front()}) == AttentionEngine::Wgmma);
  }
  // The wgmma kernel must come first: it is the one that takes every call.
  REQUIRE_THROWS_WITH(cuda::run_attention_engine(q, q, q, {engines[1]}), Catch::Matchers::Contains("first"));
}
