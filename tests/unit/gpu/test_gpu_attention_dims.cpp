// The flash attention kernel at the head dims beyond 64 and 128 (80, 96, 200, 256: tiles 128 and
// 256 columns wide, zero-padded past D) and with grouped KV heads, against the CPU op by the bf16
// rule (docs/gpu.md): no mask, bool and float masks with excluded rows, the Gemma 3 12B shape (16
// query heads on 8 KV heads, head dim 256, causal and sliding-window masks of the lowest float, left
// padding, B = 2, token-major strides), Tq != Tk, strided and unaligned inputs, f32 inputs; grouped
// KV heads equal to the repeated heads bit for bit; and that no [B, H, Tq, Tk] buffer is allocated.
#include <cmath>
#include <limits>
#include <vector>

#include "core/cuda/memory.h"
#include "core/error.h"
#include "gpu_compare.h"
#include "kernels/attention_pick.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "support/test_util.h"

using namespace ltx2;
using test::naive_bf16_attention;
using test::to_gpu;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Query and key/value tensors on the CPU (f32) and on the GPU (bf16). Token-major: [B, T, H, D]
// memory viewed as [B, H, T, D] on both sides (the models' head split; Tensor::to would make a
// contiguous copy of a view, so the GPU tensor is moved first and viewed after).
struct Inputs {
  Tensor q, k, v, qg, kg, vg;
};

Tensor make(const Shape& heads_first, uint64_t seed, float gain, bool token_major, Tensor& gpu) {
  const int64_t B = heads_first[0], H = heads_first[1], T = heads_first[2], D = heads_first[3];
  Tensor t = ops::mul(test::random_tensor(token_major ? Shape{B, T, H, D} : heads_first, seed), gain);
  gpu = to_gpu(t, DType::BF16);
  if (!token_major) return t;
  gpu = gpu.transpose(1, 2);
  return t.transpose(1, 2);
}

// Queries scaled up 3x so that the softmax is far from uniform.
Inputs inputs(int64_t B, int64_t H, int64_t Hkv, int64_t Tq, int64_t Tk, int64_t D, uint64_t seed,
              bool token_major = false) {
  Inputs in;
  in.q = make({B, H, Tq, D}, seed, 3.f, token_major, in.qg);
  in.k = make({B, Hkv, Tk, D}, seed + 1, 1.f, token_major, in.kg);
  in.v = make({B, Hkv, Tk, D}, seed + 2, 1.f, token_major, in.vg);
  return in;
}

// The naive bf16 computation with NaN (the softmax of a row with every key at -inf) set to zero,
// the CPU op's result for such a row.
Tensor naive(const Inputs& in, const Tensor& additive_mask, float scale) {
  const int64_t H = in.q.size(1);
  Tensor n = naive_bf16_attention(in.q, test::repeat_kv_heads(in.k, H), test::repeat_kv_heads(in.v, H),
                                  additive_mask, scale)
                 .contiguous();
  float* p = n.data<float>();
  for (int64_t i = 0; i < n.numel(); ++i)
    if (std::isnan(p[i])) p[i] = 0.f;
  return n;
}

// The GPU op against the CPU op by the bf16 rule; `mask` (CPU, any kind) goes to both, its additive
// form to the naive computation. Returns the GPU result.
Tensor check(const std::string& what, const Inputs& in, const Tensor& mask, const Tensor& additive_mask,
             float scale) {
  const Tensor ref = ops::attention(in.q, in.k, in.v, mask, scale);
  const Tensor got =
      ops::attention(in.qg, in.kg, in.vg, mask.defined() ? mask.to(test::gpu()) : Tensor(), scale);
  REQUIRE(got.dtype() == DType::BF16);
  REQUIRE(got.shape() == ref.shape());
  test::require_bf16_close(what, got, naive(in, additive_mask, scale), ref);
  return got;
}

Tensor additive(const Tensor& bool_mask) {
  Tensor m = Tensor::empty(bool_mask.shape());
  const Tensor b = bool_mask.contiguous();
  for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = b.data<uint8_t>()[i] ? 0.f : kNegInf;
  return m;
}

// A bool mask [B, H, Tq, Tk] keeping about 70% of the keys, a different pattern per head, with
// query row 0 of (batch B - 1, head 0) excluded entirely.
Tensor random_bool_mask(int64_t B, int64_t H, int64_t Tq, int64_t Tk, uint64_t seed) {
  const Tensor u = test::random_tensor({B, H, Tq, Tk}, seed);
  Tensor m = Tensor::empty({B, H, Tq, Tk}, DType::Bool);
  for (int64_t i = 0; i < m.numel(); ++i) m.data<uint8_t>()[i] = u.data<float>()[i] > -0.4f;
  for (int64_t j = 0; j < Tk; ++j) m.data<uint8_t>()[(B - 1) * H * Tq * Tk + j] = 0;
  return m;
}

// Gemma 3's additive mask [B, 1, T, T] as gemma3.cpp builds it: causal, the last `window` keys on
// sliding layers (0: every earlier key), keys before pad[b] hidden (left padding); hidden entries
// hold the lowest float. `seen` [B, 1, T, 1] is 1 for the query rows that see a key: the model
// multiplies the attention output by it, so the pad rows are zero on every backend.
struct GemmaMask {
  Tensor additive, seen;
};

GemmaMask gemma_mask(int64_t T, int64_t window, const std::vector<int64_t>& pad) {
  const int64_t B = static_cast<int64_t>(pad.size());
  GemmaMask m{Tensor::empty({B, 1, T, T}), Tensor::zeros({B, 1, T, 1})};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const bool visible = j >= pad[b] && j <= i && (window == 0 || j > i - window);
        m.additive.data<float>()[(b * T + i) * T + j] = visible ? 0.f : std::numeric_limits<float>::lowest();
        if (visible) m.seen.data<float>()[b * T + i] = 1.f;
      }
  return m;
}

// Sets the engine mode for one scope.
struct EngineScope {
  ops::AttentionEngine saved = ops::attention_engine();
  explicit EngineScope(ops::AttentionEngine engine) { ops::set_attention_engine(engine); }
  ~EngineScope() { ops::set_attention_engine(saved); }
};

}  // namespace

TEST_CASE("gpu: flash attention at head dims 80, 96, 200 and 256, no mask") {
  for (int64_t D : {80, 96, 200, 256}) {
    const Inputs in = inputs(2, 3, 3, 100, 300, D, 1000 + D);
    check("no mask, D=" + std::to_string(D), in, Tensor(), Tensor(), 1.f / std::sqrt(float(D)));
  }
}

TEST_CASE("gpu: flash attention at head dims 96 and 256 with bool and float masks, excluded rows zero") {
  for (int64_t D : {96, 256}) {
    const std::string at = ", D=" + std::to_string(D);
    const Inputs in = inputs(2, 3, 3, 90, 200, D, 1100 + D);
    const Tensor mask = random_bool_mask(2, 3, 90, 200, 1150 + D), add = additive(mask);
    // bool, and the same exclusions as a float mask of 0 / -inf (per head, per query row).
    const Tensor by_bool = check("bool mask" + at, in, mask, add, 0.07f);
    const Tensor by_float = check("float -inf mask" + at, in, add, add, 0.07f);
    for (const Tensor& got : {by_bool, by_float}) {
      const Tensor row = test::to_host_f32(got.select(0, 1).select(0, 0).select(0, 0));
      REQUIRE(test::max_error(row, Tensor::zeros({D})) == 0.0);
    }
    // A per-key bool mask broadcast from [B, 1, 1, Tk] (u8), and a finite per-key bias.
    Tensor keys = Tensor::empty({2, 1, 1, 200}, DType::U8);
    for (int64_t j = 0; j < 400; ++j) keys.data<uint8_t>()[j] = (j + j / 200) % 3 != 0;
    check("u8 key mask" + at, in, keys, additive(keys), 0.07f);
    const Tensor bias = ops::mul(test::random_tensor({2, 1, 1, 200}, 1160 + D), 2.f);
    check("float bias" + at, in, bias, bias, 0.07f);
  }
}

TEST_CASE("gpu: flash attention at the Gemma 3 12B shape, 16 heads on 8 KV heads, causal and sliding masks") {
  // B = 2 (the positive and negative prompt), the second left-padded; token-major q, k, v as
  // gemma3.cpp's head split leaves them; Gemma's scale query_pre_attn_scalar^-0.5 = 1/16.
  const int64_t T = 600;
  const Inputs in = inputs(2, 16, 8, T, T, 256, 1200, true);
  for (int64_t window : {int64_t(0), int64_t(256)}) {
    const GemmaMask m = gemma_mask(T, window, {0, 37});
    const float scale = 1.f / 16.f;
    const Tensor ref = ops::mul(ops::attention(in.q, in.k, in.v, m.additive, scale), m.seen);
    const Tensor got = ops::attention(in.qg, in.kg, in.vg, m.additive.to(test::gpu()), scale);
    REQUIRE(got.shape() == Shape{2, 16, T, 256});
    test::require_bf16_close(window ? "gemma sliding window 256" : "gemma causal",
                             ops::mul(got, m.seen.to(test::gpu()).to(DType::BF16)),
                             ops::mul(naive(in, m.additive, scale), m.seen), ref);
  }
}

TEST_CASE("gpu: flash attention at head dim 256, Tq != Tk and single rows") {
  struct Shape2 {
    int64_t Tq, Tk;
  };
  for (Shape2 s : {Shape2{70, 333}, Shape2{1, 1}, Shape2{1, 200}, Shape2{129, 64}, Shape2{300, 7}}) {
    const Inputs in = inputs(2, 2, 2, s.Tq, s.Tk, 256, 1300 + s.Tq + s.Tk);
    Tensor keys = Tensor::empty({2, 1, 1, s.Tk}, DType::Bool);
    for (int64_t j = 0; j < 2 * s.Tk; ++j) keys.data<uint8_t>()[j] = j % s.Tk == 0 || j % 4 != 1;
    const std::string what = "Tq " + std::to_string(s.Tq) + " Tk " + std::to_string(s.Tk);
    check(what, in, Tensor(), Tensor(), 0.0625f);
    check(what + ", key mask", in, keys, additive(keys), 0.0625f);
  }
}

TEST_CASE("gpu: flash attention at head dims 96 and 256 reads strided q, k, v, unaligned and f32 ones too") {
  for (int64_t D : {96, 256}) {
    const std::string at = ", D=" + std::to_string(D);
    check("token-major" + at, inputs(1, 4, 4, 90, 77, D, 1400 + D, true), Tensor(), Tensor(), 0.1f);
    // Views of the first D of D + 8 columns: rows D + 8 apart, read in place; and views 4 columns
    // in (8-byte aligned rows: the op copies them first).
    for (int64_t start : {int64_t(0), int64_t(4)}) {
      Inputs in;
      Tensor wide[3], wide_gpu[3];
      for (int i = 0; i < 3; ++i) {
        wide[i] = ops::mul(test::random_tensor({1, 4, 90, D + 8}, 1450 + D + i), i == 0 ? 3.f : 1.f);
        wide_gpu[i] = to_gpu(wide[i], DType::BF16);
      }
      in.q = wide[0].narrow(3, start, D);
      in.k = wide[1].narrow(3, start, D);
      in.v = wide[2].narrow(3, start, D);
      in.qg = wide_gpu[0].narrow(3, start, D);
      in.kg = wide_gpu[1].narrow(3, start, D);
      in.vg = wide_gpu[2].narrow(3, start, D);
      check("column view from " + std::to_string(start) + at, in, Tensor(), Tensor(), 0.1f);
    }
    // f32 inputs run the bf16 kernel (rounded first) and come back as f32.
    const Inputs in = inputs(2, 2, 2, 50, 130, D, 1500 + D);
    const Tensor got = ops::attention(to_gpu(in.q, DType::F32), to_gpu(in.k, DType::F32),
                                      to_gpu(in.v, DType::F32), Tensor(), 0.1f);
    REQUIRE(got.dtype() == DType::F32);
    test::require_bf16_close("f32 inputs" + at, got, naive(in, Tensor(), 0.1f),
                             ops::attention(in.q, in.k, in.v, Tensor(), 0.1f));
  }
}

TEST_CASE("gpu: grouped-query attention equals the repeated KV heads bit for bit") {
  // The wgmma kernel on both sides (cuDNN, which takes no grouped heads, could run the repeated
  // call at head dim 128 otherwise).
  EngineScope scope(ops::AttentionEngine::Wgmma);
  struct Group {
    int64_t H, Hkv, D;
  };
  for (Group g : {Group{6, 2, 256}, Group{6, 1, 256}, Group{4, 2, 128}, Group{4, 2, 64}, Group{6, 3, 80}}) {
    const std::string what =
        "H " + std::to_string(g.H) + " Hkv " + std::to_string(g.Hkv) + " D " + std::to_string(g.D);
    const Inputs in = inputs(2, g.H, g.Hkv, 75, 140, g.D, 1600 + g.H * g.Hkv + g.D, true);
    const Tensor mask = random_bool_mask(2, 1, 75, 140, 1650 + g.D);
    for (const Tensor& m : {Tensor(), mask}) {
      const Tensor got =
          check(what + (m.defined() ? ", mask" : ""), in, m, m.defined() ? additive(m) : Tensor(), 0.09f);
      const Tensor mg = m.defined() ? m.to(test::gpu()) : Tensor();
      const Tensor copied = ops::attention(in.qg, test::repeat_kv_heads(in.kg, g.H),
                                           test::repeat_kv_heads(in.vg, g.H), mg, 0.09f);
      REQUIRE(test::max_error(got, copied) == 0.0);
    }
  }
  // The composed path (head dim 16, Gemma's tiny test model) copies the heads itself.
  const Inputs tiny = inputs(2, 4, 2, 21, 37, 16, 1700);
  const Tensor bias = ops::mul(test::random_tensor({2, 1, 21, 37}, 1701), 4.f);
  check("composed path, H 4 Hkv 2 D 16", tiny, bias, bias, 0.25f);
  REQUIRE_THROWS_AS(ops::attention(tiny.qg, tiny.kg.narrow(1, 0, 1).contiguous(), tiny.vg), Error);
}

TEST_CASE("gpu: flash attention allocates no [B, H, Tq, Tk] buffer (head dim 256, 4096 tokens)") {
  // Gemma's heads at 4096 tokens with a causal float mask: the composed path's float32 scores alone
  // would be 16 x 4096 x 4096 x 4 bytes = 1 GiB; the kernel allocates the output (32 MiB) only.
  const int64_t T = 4096, H = 16, Hkv = 8, D = 256;
  const Inputs in = inputs(1, H, Hkv, T, T, D, 1800, true);
  const GemmaMask m = gemma_mask(T, 0, {0});
  const Tensor mask_gpu = m.additive.to(test::gpu());
  const int device = test::gpu().index;
  cuda_reset_peak_memory(device);
  const size_t before = cuda_memory_stats(device).allocated;
  const Tensor got = ops::attention(in.qg, in.kg, in.vg, mask_gpu, 1.f / 16.f);
  const size_t peak = cuda_memory_stats(device).peak_allocated;
  const size_t out_bytes = static_cast<size_t>(got.numel()) * 2;
  INFO("peak allocation during the call " << (peak - before) << " bytes, the output " << out_bytes);
  REQUIRE(peak - before <= out_bytes + (4u << 20));
  // The last 96 query rows (every key tile of the causal mask) against the CPU op.
  Inputs rows = in;
  rows.q = in.q.narrow(2, T - 96, 96);
  const Tensor mask_rows = m.additive.narrow(2, T - 96, 96);
  test::require_bf16_close("4096 tokens, last 96 rows", got.narrow(2, T - 96, 96),
                           naive(rows, mask_rows, 1.f / 16.f),
                           ops::attention(rows.q, rows.k, rows.v, mask_rows, 1.f / 16.f));
}

TEST_CASE("gpu: Auto never times cuDNN for head dim 256 or grouped KV heads") {
  EngineScope scope(ops::AttentionEngine::Auto);
  const int64_t timings = cuda::attention_engine_timings();
  const Inputs wide = inputs(1, 2, 2, 70, 90, 256, 1900), grouped = inputs(1, 4, 2, 70, 90, 128, 1901);
  check("auto, D 256", wide, Tensor(), Tensor(), 0.0625f);
  // Only the wgmma kernel takes head dim 256: nothing to time or pick.
  REQUIRE(cuda::attention_engine_timings() == timings);
  REQUIRE(cuda::picked_attention_engine(wide.qg, wide.kg, wide.vg) == ops::AttentionEngine::Auto);
  // Grouped KV heads at 128: the wgmma and fa3 kernels take them, cuDNN does not.
  check("auto, H 4 Hkv 2 D 128", grouped, Tensor(), Tensor(), 0.088f);
  const ops::AttentionEngine picked = cuda::picked_attention_engine(grouped.qg, grouped.kg, grouped.vg);
  REQUIRE((picked == ops::AttentionEngine::Wgmma || picked == ops::AttentionEngine::Fa3));
}
