// The 8-bit attention (kernels/attention_sage8.h) against the CPU op in float32: relative L2 error
// and cosine over self and cross shapes, tails of rows and keys, grouped KV heads, the
// transformer's strided layout, keys with large shared channel offsets (what the smoothing is
// for); and the precision setting: 8-bit runs exactly the calls it takes (unmasked, head dim 128),
// everything else is what bf16 precision gives, bit for bit.
#include "core/similarity.h"
#include "gpu_compare.h"
#include "kernels/attention_sage8.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "support/test_util.h"

using namespace ltx2;
using ops::AttentionPrecision;

namespace {

// [B, H, T, D] on the CPU (f32) and the GPU (bf16); model layout: [B, T, H, D] memory viewed so.
struct Operand {
  Tensor cpu, gpu;
};

Operand input(int64_t B, int64_t H, int64_t T, int64_t D, uint64_t seed, bool model_layout, float gain = 1.f,
              float channel_offset = 0.f) {
  Tensor t = ops::mul(test::random_tensor(model_layout ? Shape{B, T, H, D} : Shape{B, H, T, D}, seed), gain);
  if (channel_offset != 0.f) {  // channel d shifted by offset * (d % 7 - 3), the same for every token
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] += channel_offset * float(i % D % 7 - 3);
  }
  t = test::round_bf16(t);  // both sides see the same values
  Tensor g = test::to_gpu(t, DType::BF16);
  if (!model_layout) return {t, g};
  return {t.transpose(1, 2), g.transpose(1, 2)};
}

struct PrecisionScope {
  AttentionPrecision saved = ops::attention_precision();
  explicit PrecisionScope(AttentionPrecision p) { ops::set_attention_precision(p); }
  ~PrecisionScope() { ops::set_attention_precision(saved); }
};

}  // namespace

TEST_CASE("gpu: 8-bit attention against float32, self and cross, tails, grouped KV heads, strided") {
  struct Case {
    int64_t B, H, Hkv, Tq, Tk;
    float key_offset;
  };
  // 257 x 257: a row and a key past the tiles; 700 keys: the ring wraps with a partial last tile;
  // 1 x 1; H 4 on Hkv 2; keys with channel offsets 8x their spread (smoothing takes them out).
  for (const Case& c :
       {Case{1, 4, 4, 257, 257, 0.f}, Case{2, 2, 2, 190, 61, 0.f}, Case{1, 2, 2, 300, 700, 0.f},
        Case{1, 3, 3, 1, 1, 0.f}, Case{2, 4, 2, 150, 333, 0.f}, Case{1, 2, 2, 512, 1024, 8.f}}) {
    for (bool model_layout : {false, true}) {
      const uint64_t seed = 1100 + c.Tq + c.Tk + c.Hkv + model_layout;
      Operand q = input(c.B, c.H, c.Tq, 128, seed, model_layout, 3.f);
      Operand k = input(c.B, c.Hkv, c.Tk, 128, seed + 1, model_layout, 1.f, c.key_offset);
      Operand v = input(c.B, c.Hkv, c.Tk, 128, seed + 2, model_layout);
      REQUIRE(cuda::sage8_attention_takes(q.gpu, k.gpu, v.gpu));
      const float scale = 1.f / std::sqrt(128.f);
      const Tensor token_major = Tensor::empty({c.B, c.Tq, c.H, 128}, DType::BF16, test::gpu());
      const Tensor out = token_major.transpose(1, 2);
      cuda::sage8_attention(q.gpu, k.gpu, v.gpu, out, scale);
      const Tensor ref = ops::attention(q.cpu, k.cpu, v.cpu, Tensor(), scale);
      const Similarity sim = similarity(out, ref);
      const Similarity bf16 = similarity(test::round_bf16(ref), ref);
      std::printf(
          "8-bit attention B%lld H%lld Hkv%lld Tq%lld Tk%lld%s offset %.0f: rel_l2 %.4f cosine %.6f\n",
          (long long)c.B, (long long)c.H, (long long)c.Hkv, (long long)c.Tq, (long long)c.Tk,
          model_layout ? " bthd" : "", c.key_offset, sim.rel_l2, sim.cosine);
      INFO("Tq " << c.Tq << " Tk " << c.Tk << " offset " << c.key_offset << ": rel_l2 " << sim.rel_l2
                 << " cosine " << sim.cosine);
      REQUIRE(bf16.rel_l2 < 0.01);
      CHECK(sim.rel_l2 <= 0.05);
      CHECK(sim.cosine >= 0.998);
    }
  }
}

// Keys scaled by a ramp: with slope 8 a row's max grows at nearly every key tile (each tile rescales
// O); with -0.9 it is set by the first tiles and the later ones skip the rescale.
TEST_CASE("gpu: 8-bit attention with the row max growing over the key tiles, and shrinking") {
  const int64_t B = 1, H = 2, Tq = 200, Tk = 1000;
  for (float slope : {8.f, -0.9f}) {
    Operand q = input(B, H, Tq, 128, 1300, false, 4.f);
    const Tensor ramp = ops::add(ops::mul(Tensor::arange(Tk), slope / float(Tk)), 1.f).reshape({1, 1, Tk, 1});
    const Tensor k_cpu = test::round_bf16(ops::mul(test::random_tensor({B, H, Tk, 128}, 1301), ramp));
    Operand v = input(B, H, Tk, 128, 1302, false);
    const float scale = 1.f / std::sqrt(128.f);
    const Tensor out = Tensor::empty({B, H, Tq, 128}, DType::BF16, test::gpu());
    cuda::sage8_attention(q.gpu, test::to_gpu(k_cpu, DType::BF16), v.gpu, out, scale);
    const Similarity sim = similarity(out, ops::attention(q.cpu, k_cpu, v.cpu, Tensor(), scale));
    std::printf("8-bit attention, key ramp slope %.1f: rel_l2 %.4f cosine %.6f\n", slope, sim.rel_l2,
                sim.cosine);
    INFO("slope " << slope << ": rel_l2 " << sim.rel_l2 << " cosine " << sim.cosine);
    CHECK(sim.rel_l2 <= 0.05);
    CHECK(sim.cosine >= 0.998);
  }
}

TEST_CASE("gpu: 8-bit precision runs the calls the 8-bit kernel takes, and only those") {
  Operand q = input(1, 2, 200, 128, 1200, true, 3.f), k = input(1, 2, 300, 128, 1201, true),
          v = input(1, 2, 300, 128, 1202, true);
  Operand q64 = input(1, 2, 200, 64, 1203, true), k64 = input(1, 2, 300, 64, 1204, true);
  Tensor mask = Tensor::empty({1, 1, 1, 300}, DType::Bool);
  for (int64_t j = 0; j < 300; ++j) mask.data<uint8_t>()[j] = j % 5 != 0;
  const Tensor mask_gpu = mask.to(test::gpu());
  Tensor bf16, bf16_masked, bf16_d64;
  {
    PrecisionScope scope(AttentionPrecision::Bf16);
    bf16 = ops::attention(q.gpu, k.gpu, v.gpu).to(Device::cpu());
    bf16_masked = ops::attention(q.gpu, k.gpu, v.gpu, mask_gpu).to(Device::cpu());
    bf16_d64 = ops::attention(q64.gpu, k64.gpu, k64.gpu).to(Device::cpu());
  }
  PrecisionScope scope(AttentionPrecision::EightBit);
  const Tensor direct = Tensor::empty({1, 200, 2, 128}, DType::BF16, test::gpu()).transpose(1, 2);
  cuda::sage8_attention(q.gpu, k.gpu, v.gpu, direct, 1.f / std::sqrt(128.f));
  const Tensor eight = ops::attention(q.gpu, k.gpu, v.gpu).to(Device::cpu());
  REQUIRE(test::max_error(eight, direct.to(Device::cpu())) == 0.0);
  REQUIRE(test::max_error(eight, bf16) > 0.0);  // it did change the arithmetic
  REQUIRE(test::max_error(ops::attention(q.gpu, k.gpu, v.gpu, mask_gpu).to(Device::cpu()), bf16_masked) ==
          0.0);
  REQUIRE(test::max_error(ops::attention(q64.gpu, k64.gpu, k64.gpu).to(Device::cpu()), bf16_d64) == 0.0);
}
