// The layer pieces Gemma 3 and Gemma 4 share (gemma_layers.h).
#include "models/text/gemma_layers.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/rope.h"

namespace ltx2 {

GemmaEmbedding::GemmaEmbedding(const GemmaConfig& config, const WeightView& w, DType dtype) {
  const int64_t D = config.hidden_size;
  if (w.synthesizing()) {
    table = w.load("embed_tokens.weight", {config.vocab_size, D});
  } else {
    LTX2_CHECK(w.shape_of("embed_tokens.weight") == Shape({config.vocab_size, D}),
               "{}: embed_tokens.weight is {}, the Gemma config says [{}, {}]", w.set().describe(),
               shape_str(w.shape_of("embed_tokens.weight")), config.vocab_size, D);
    table = w.set().raw(w.resolve("embed_tokens.weight"));
  }
  const bool bf16 = table.dtype() == DType::BF16 || dtype == DType::BF16;
  const float s = static_cast<float>(std::sqrt(static_cast<double>(D)));
  scale = bf16 ? bf16_to_f32(f32_to_bf16(s)) : s;
}

Tensor GemmaEmbedding::rows(const std::vector<int64_t>& ids, int64_t B, int64_t T, DType dtype,
                            Device device) const {
  const int64_t vocab = table.size(0);
  Tensor out = Tensor::empty({B, T, table.size(1)});
  for (int64_t i = 0; i < B * T; ++i) {
    LTX2_CHECK(ids[i] >= 0 && ids[i] < vocab, "gemma: token id {} is outside the vocabulary of {}", ids[i],
               vocab);
    out.select(0, i / T).select(0, i % T).copy_(table.select(0, ids[i]));
  }
  return ops::mul(out, scale).to(dtype).to(device);
}

ops::RopeTables gemma_rope_tables(int64_t first, int64_t tokens, int64_t head_dim, int64_t rotated,
                                  double base, double linear_factor, Device device) {
  int64_t half = head_dim / 2;
  std::vector<float> inv_freq(half, 0.f);
  for (int64_t i = 0; i < rotated; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    float p = static_cast<float>(
        std::pow(static_cast<double>(static_cast<float>(base)), static_cast<double>(exponent)));
    inv_freq[i] = 1.f / p;
    if (linear_factor != 1.0) inv_freq[i] /= static_cast<float>(linear_factor);
  }
  Tensor c = Tensor::empty({1, 1, tokens, half}), s = Tensor::empty({1, 1, tokens, half});
  float* cp = c.data<float>();
  float* sp = s.data<float>();
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      float angle = static_cast<float>(first + t) * inv_freq[i];
      cp[t * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sp[t * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return {c.to(device), s.to(device), ops::RopeLayout::Split};
}

Tensor gemma_rotate_heads(const Tensor& x, const ops::RopeTables& t, int64_t heads) {
  const Shape s = {1, heads, t.cos.size(2), t.cos.size(3)};
  return ops::apply_rope(x, {t.cos.expand(s), t.sin.expand(s), ops::RopeLayout::Split});
}

GemmaAttentionMask gemma_attention_mask(const std::vector<int64_t>& m, int64_t B, int64_t T, bool sliding,
                                        int64_t window, DType dtype, Device device) {
  Tensor additive = Tensor::empty({B, 1, T, T});
  std::vector<float> seen(B * T, 0.f);
  float* p = additive.data<float>();
  const float excluded = std::numeric_limits<float>::lowest();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t q = 0; q < T; ++q) {
      float* row = p + (b * T + q) * T;
      for (int64_t k = 0; k < T; ++k) {
        const bool visible = m[b * T + k] != 0 && k <= q && (!sliding || k > q - window);
        row[k] = visible ? 0.f : excluded;
        if (visible) seen[b * T + q] = 1.f;
      }
    }
  }
  return {additive.to(device), Tensor::from_vector(seen, {B, 1, T, 1}).to(dtype).to(device)};
}

}  // namespace ltx2
