// See bench_transformer_model.h.
#include "bench_transformer_model.h"

#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/weights.h"
#include "model_sets/random_model.h"

namespace ltx2::bench_model {

namespace tr = models::transformer;

namespace {

// Interval positions [1, axes, T, 2] of a (frames, height, width) grid (frames in seconds at 24 fps
// with 8 frames a latent, pixels at 32 a latent cell); audio: 1 axis of 1/25 s steps.
Tensor video_positions(const Shape3& s, Device device) {
  const int64_t T = s.tokens();
  Tensor p = Tensor::empty({1, 3, T, 2});
  float* d = p.data<float>();
  for (int64_t t = 0; t < T; ++t) {
    const int64_t f = t / (s.height * s.width), y = (t / s.width) % s.height, x = t % s.width;
    const float start[3] = {f * 8 / 24.f, y * 32.f, x * 32.f}, step[3] = {8 / 24.f, 32.f, 32.f};
    for (int a = 0; a < 3; ++a) {
      d[(a * T + t) * 2] = start[a];
      d[(a * T + t) * 2 + 1] = start[a] + step[a];
    }
  }
  return p.to(device);
}

Tensor audio_positions(int64_t T, Device device) {
  Tensor p = Tensor::empty({1, 1, T, 2});
  for (int64_t t = 0; t < T; ++t) {
    p.data<float>()[2 * t] = t / 25.f;
    p.data<float>()[2 * t + 1] = (t + 1) / 25.f;
  }
  return p.to(device);
}

tr::Modality modality(const Tensor& latent, const Tensor& positions, const Tensor& context, Device device) {
  tr::Modality m;
  const int64_t T = latent.size(1);
  m.latent = latent;
  m.sigma = Tensor::full({1}, 0.6f).to(device);
  m.timesteps = Tensor::full({1, T, 1}, 0.6f).to(device);
  m.positions = positions;
  m.context = context;
  return m;
}

// Holds the linear in F8_E4M3 with its per-tensor scale (see shared_block_weights).
void quantize_linear(tr::LinearWeights& l, const Tensor& input_scale) {
  const tr::Fp8Weight q = tr::quantize_f8e4m3_per_tensor(l.weight, "bench linear");
  l.weight = q.weight;
  l.weight_scale = q.scale;
  l.input_scale = input_scale;
}

void quantize_block(tr::BlockWeights& b, Device device) {
  const Tensor input_scale = Tensor::scalar(kFp8InputScale).to(device);
  for (tr::AttentionWeights* a :
       {&b.video_self, &b.video_text, &b.audio_self, &b.audio_text, &b.audio_to_video, &b.video_to_audio})
    for (tr::LinearWeights* l : {&a->to_q, &a->to_k, &a->to_v, &a->to_out}) quantize_linear(*l, input_scale);
  for (tr::FeedForwardWeights* ff : {&b.video_ff, &b.audio_ff})
    for (tr::LinearWeights* l : {&ff->proj_in, &ff->proj_out}) quantize_linear(*l, input_scale);
}

}  // namespace

// The released configs as `ltx2 make-random` writes them: 19B has the caption projection in the
// transformer; 2.3 (22B) gated attention and the cross-attention AdaLN with its prompt AdaLN.
TransformerConfig model_config(const std::string& model) {
  LTX2_CHECK(model == "19b" || model == "22b", "ltx2 bench: --model must be 19b or 22b, got '{}'", model);
  return TransformerConfig::parse(model_sets::full_size_checkpoint_config(model).at("transformer"));
}

Shape3 shape_named(const std::string& name) {
  if (name == "stage1") return {name, 16, 16, 24};
  if (name == "full") return {name, 16, 32, 48};
  LTX2_FAIL("ltx2 bench: --shape must be stage1 or full, got '{}'", name);
}

double reference_ms(const std::string& model, const std::string& shape) {
  if (model == "19b") return shape == "stage1" ? 433 : 2206;
  return shape == "stage1" ? 489 : 2386;
}

Tensor random_bf16(const Shape& shape, uint64_t seed, float scale, Device device) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data<float>();
  const int64_t n = t.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (static_cast<uint64_t>(i) + seed * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    z ^= z >> 29;
    p[i] = scale * (static_cast<float>(z >> 40) * (2.f / 16777216.f) - 1.f);
  }
  return t.to(DType::BF16).to(device);
}

tr::TransformerWeights shared_block_weights(const TransformerConfig& config, Device device,
                                            Quantization quantization) {
  LTX2_CHECK(quantization != Quantization::Fp8Cast,
             "ltx2 bench: --quantization must be none, fp8 or fp8-scaled-mm, got '{}'",
             quantization_name(quantization));
  TransformerConfig one_block = config;
  one_block.num_layers = 1;
  const WeightView view(std::make_shared<WeightSynthesizer>(7), "model.diffusion_model.", "transformer");
  // fp8 quantizes the synthesized bf16 weights at load, as it does a bf16 checkpoint's.
  tr::TransformerWeights weights =
      tr::TransformerWeights::load(view, one_block, DType::BF16, device,
                                   quantization == Quantization::Fp8 ? quantization : Quantization::None);
  if (quantization == Quantization::Fp8ScaledMm) quantize_block(weights.blocks[0], device);
  while (static_cast<int64_t>(weights.blocks.size()) < config.num_layers)
    weights.blocks.push_back(weights.blocks[0]);
  return weights;
}

Inputs random_inputs(const TransformerConfig& config, const Shape3& shape, Device device) {
  const int64_t ctx_v = config.caption_projection ? kCaptionChannels : config.video_context_dim;
  const int64_t ctx_a = config.caption_projection ? kCaptionChannels : config.audio_context_dim;
  return {
      modality(random_bf16({1, shape.tokens(), config.video_in_channels}, 1, 1.f, device),
               video_positions(shape, device), random_bf16({1, kTextTokens, ctx_v}, 2, 1.f, device), device),
      modality(random_bf16({1, kAudioTokens, config.audio_in_channels}, 3, 1.f, device),
               audio_positions(kAudioTokens, device), random_bf16({1, kTextTokens, ctx_a}, 4, 1.f, device),
               device)};
}

}  // namespace ltx2::bench_model
