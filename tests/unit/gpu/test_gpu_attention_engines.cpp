// The attention engines of the CUDA backend: cuDNN's fused flash attention against the CPU op
// (docs/gpu.md bf16 rule) at head dims 64 and 128, self and cross shapes, the transformer's strided
// q/k/v; what it refuses (other head dims, grouped KV heads, f32, unaligned rows); the engine mode
// (forced engines, masks always on the wgmma kernel) and Auto's pick, made once per shape. Without
// cuDNN only the mode tests build.
#include "core/error.h"
#include "gpu_compare.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/reduce.h"
#include "support/test_util.h"
#ifdef LTX2_WITH_CUDNN
#include "kernels/cudnn/attention_cudnn.h"
#include "kernels/cudnn/attention_pick.h"
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

TEST_CASE("gpu: attention engine names parse, others are refused naming their source") {
  for (AttentionEngine e : {AttentionEngine::Auto, AttentionEngine::Wgmma, AttentionEngine::Cudnn})
    REQUIRE(ops::parse_attention_engine(ops::attention_engine_name(e), "test") == e);
  REQUIRE_THROWS_WITH(ops::parse_attention_engine("cudnn9", "LTX2_ATTENTION"),
                      Catch::Matchers::Contains("LTX2_ATTENTION"));
}

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
  for (AttentionEngine e : {AttentionEngine::Wgmma, AttentionEngine::Cudnn, AttentionEngine::Auto}) {
    EngineScope scope(e);
    const std::string name = ops::attention_engine_name(e);
    test::require_bf16_close(name, ops::attention(q.gpu, k.gpu, v.gpu), naive, ref);
    test::require_bf16_close(name + " masked", ops::attention(q.gpu, k.gpu, v.gpu, mask.to(test::gpu())),
                             masked_naive, masked_ref);
  }
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

TEST_CASE("gpu: the engine mode decides whether cuDNN runs") {
  Tensor q = input(1, 2, 70, 64, 700, false).gpu, q80 = input(1, 2, 70, 80, 701, false).gpu;
  Tensor out = Tensor::empty({1, 2, 70, 64}, DType::BF16, test::gpu());
  Tensor out80 = Tensor::empty({1, 2, 70, 80}, DType::BF16, test::gpu());
  int wgmma_runs = 0;
  auto run_wgmma = [&] { ++wgmma_runs; };
  {
    EngineScope scope(AttentionEngine::Wgmma);
    REQUIRE_FALSE(cuda::attention_by_cudnn(q, q, q, out, 0.125f, run_wgmma));
  }
  {
    EngineScope scope(AttentionEngine::Cudnn);
    REQUIRE(cuda::attention_by_cudnn(q, q, q, out, 0.125f, run_wgmma));
    REQUIRE_FALSE(cuda::attention_by_cudnn(q80, q80, q80, out80, 0.125f, run_wgmma));
  }
  REQUIRE(wgmma_runs == 0);  // forced modes never time
}

#endif
