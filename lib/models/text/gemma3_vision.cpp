// Gemma 3's vision tower and multimodal projector (see gemma3_vision.h). Shapes and formulas from
// Hugging Face's SiglipVisionTransformer and Gemma3MultiModalProjector (transformers 5.14).
#include "models/text/gemma3_vision.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/config_reader.h"
#include "models/text/gemma3.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/reduce.h"

namespace ltx2 {

namespace {

// The tensor names of the released Gemma 3 checkpoints (google/gemma-3-*-it: "vision_tower.…"), and
// transformers 5's own save layout ("model.vision_tower.…").
const std::vector<std::string> kVisionPrefixes = {"vision_tower.vision_model.",
                                                  "model.vision_tower.vision_model."};
const std::vector<std::string> kProjectorPrefixes = {"multi_modal_projector.",
                                                     "model.multi_modal_projector."};

}  // namespace

int64_t GemmaVisionConfig::tokens_per_side() const {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(mm_tokens_per_image))));
}

GemmaVisionConfig parse_gemma_vision_config(const nlohmann::json& j, const std::string& origin) {
  LTX2_CHECK(j.is_object() && j.contains("vision_config") && j.at("vision_config").is_object(),
             "{}: the Gemma config has no vision_config (a text-only Gemma): it cannot be shown an image",
             origin);
  GemmaVisionConfig c;
  const ConfigReader top(j, origin + " (gemma config)");
  const ConfigReader v = top.child("vision_config");
  v.choice("model_type", {"siglip_vision_model"}, "siglip_vision_model");
  c.hidden_size = v.integer("hidden_size", c.hidden_size);
  c.intermediate_size = v.integer("intermediate_size", c.intermediate_size);
  c.num_layers = v.integer("num_hidden_layers", c.num_layers);
  c.num_heads = v.integer("num_attention_heads", c.num_heads);
  c.num_channels = v.integer("num_channels", c.num_channels);
  c.image_size = v.integer("image_size", c.image_size);
  c.patch_size = v.integer("patch_size", c.patch_size);
  c.layer_norm_eps = v.number("layer_norm_eps", c.layer_norm_eps);
  v.choice("hidden_act", {"gelu_pytorch_tanh"}, "gelu_pytorch_tanh");
  // Gemma3 takes the encoder's last hidden state; a pooling head would be unused weights, and HF
  // builds one only when asked.
  LTX2_CHECK(!v.boolean("vision_use_head", false),
             "{}: vision_config.vision_use_head is true; Gemma 3's vision tower has no pooling head", origin);
  c.mm_tokens_per_image = top.integer("mm_tokens_per_image", c.mm_tokens_per_image);
  c.image_token_id = top.integer("image_token_index", c.image_token_id);
  c.boi_token_id = top.integer("boi_token_index", c.boi_token_id);
  c.eoi_token_id = top.integer("eoi_token_index", c.eoi_token_id);
  if (top.has("text_config")) c.text_hidden_size = top.child("text_config").integer("hidden_size", 2304);

  LTX2_CHECK(c.num_channels == 3, "{}: vision_config.num_channels is {}; images are RGB (3)", origin,
             c.num_channels);
  LTX2_CHECK(c.hidden_size > 0 && c.num_heads > 0 && c.hidden_size % c.num_heads == 0,
             "{}: vision_config hidden_size {} is not a multiple of num_attention_heads {}", origin,
             c.hidden_size, c.num_heads);
  LTX2_CHECK(c.patch_size > 0 && c.image_size > 0 && c.image_size % c.patch_size == 0,
             "{}: vision_config image_size {} is not a multiple of patch_size {}", origin, c.image_size,
             c.patch_size);
  const int64_t side = c.tokens_per_side();
  LTX2_CHECK(
      c.mm_tokens_per_image > 0 && side * side == c.mm_tokens_per_image && c.patches_per_side() % side == 0,
      "{}: mm_tokens_per_image {} is not a square whose side divides the {} x {} patch grid", origin,
      c.mm_tokens_per_image, c.patches_per_side(), c.patches_per_side());
  return c;
}

bool Gemma3VisionTower::held_by(const WeightSet& set) {
  auto has_any = [&](const std::vector<std::string>& prefixes, const std::string& key) {
    for (const std::string& p : prefixes)
      if (set.contains(p + key)) return true;
    return false;
  };
  return has_any(kVisionPrefixes, "embeddings.patch_embedding.weight") &&
         has_any(kProjectorPrefixes, "mm_input_projection_weight");
}

Gemma3VisionTower::Gemma3VisionTower(const GemmaVisionConfig& config, const WeightView& vision,
                                     const WeightView& projector, DType dtype, Device device)
    : config_(config), dtype_(dtype), device_(device) {
  const int64_t D = config.hidden_size, I = config.intermediate_size, p = config.patch_size;
  const int64_t patches = config.patches_per_side() * config.patches_per_side();
  const int64_t Dt = config.text_hidden_size;
  LTX2_CHECK(Dt > 0, "gemma vision tower: the config gives no text hidden_size for the projector");
  auto f32 = [&](const WeightView& w, const std::string& key, const Shape& shape) {
    return w.load(key, shape).to(device);
  };
  // The convolution with stride = kernel = patch size is a linear map of each patch's pixels, flattened
  // in the kernel's (channel, row, column) order.
  patch_w = vision.load("embeddings.patch_embedding.weight", {D, 3, p, p})
                .view({D, 3 * p * p})
                .to(dtype)
                .to(device);
  patch_b = vision.load("embeddings.patch_embedding.bias", {D}, dtype, device);
  position = vision.load("embeddings.position_embedding.weight", {patches, D}, dtype, device);
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const WeightView l = vision.sub("encoder.layers." + std::to_string(i) + ".");
    Layer L;
    L.ln1_w = f32(l, "layer_norm1.weight", {D});
    L.ln1_b = f32(l, "layer_norm1.bias", {D});
    L.ln2_w = f32(l, "layer_norm2.weight", {D});
    L.ln2_b = f32(l, "layer_norm2.bias", {D});
    L.q_w = l.load("self_attn.q_proj.weight", {D, D}, dtype, device);
    L.q_b = l.load("self_attn.q_proj.bias", {D}, dtype, device);
    L.k_w = l.load("self_attn.k_proj.weight", {D, D}, dtype, device);
    L.k_b = l.load("self_attn.k_proj.bias", {D}, dtype, device);
    L.v_w = l.load("self_attn.v_proj.weight", {D, D}, dtype, device);
    L.v_b = l.load("self_attn.v_proj.bias", {D}, dtype, device);
    L.o_w = l.load("self_attn.out_proj.weight", {D, D}, dtype, device);
    L.o_b = l.load("self_attn.out_proj.bias", {D}, dtype, device);
    L.fc1_w = l.load("mlp.fc1.weight", {I, D}, dtype, device);
    L.fc1_b = l.load("mlp.fc1.bias", {I}, dtype, device);
    L.fc2_w = l.load("mlp.fc2.weight", {D, I}, dtype, device);
    L.fc2_b = l.load("mlp.fc2.bias", {D}, dtype, device);
    layers_.push_back(std::move(L));
  }
  post_ln_w = f32(vision, "post_layernorm.weight", {D});
  post_ln_b = f32(vision, "post_layernorm.bias", {D});
  // Gemma3RMSNorm: float32 normalisation times (1 + w).
  soft_norm = ops::add(projector.load("mm_soft_emb_norm.weight", {D}), 1.f).to(device);
  projection =
      projector.load("mm_input_projection_weight", {D, Dt}).transpose(0, 1).contiguous().to(dtype).to(device);
}

std::unique_ptr<Gemma3VisionTower> Gemma3VisionTower::open(const std::string& root, DType dtype,
                                                           Device device) {
  const Gemma3TextModel::Source src = Gemma3TextModel::locate(root);
  const GemmaVisionConfig config = parse_gemma_vision_config(*src.raw_config, root);
  LTX2_CHECK(
      held_by(*src.weights),
      "{}: holds no Gemma 3 vision tower (vision_tower.vision_model.* and multi_modal_projector.* tensors), "
      "which --enhance-prompt with --image needs to show Gemma the image",
      root);
  return std::make_unique<Gemma3VisionTower>(
      config, WeightView(src.weights, kVisionPrefixes, "gemma vision tower"),
      WeightView(src.weights, kProjectorPrefixes, "gemma vision projector"), dtype, device);
}

Tensor Gemma3VisionTower::encode(const Tensor& pixel_values) const {
  const int64_t S = config_.image_size, p = config_.patch_size, n = config_.patches_per_side();
  const int64_t D = config_.hidden_size, H = config_.num_heads, hd = config_.head_dim();
  LTX2_CHECK(pixel_values.dim() == 4 && pixel_values.size(1) == 3 && pixel_values.size(2) == S &&
                 pixel_values.size(3) == S,
             "gemma vision tower: pixel values {} must be [B, 3, {}, {}]", pixel_values.str(), S, S);
  const int64_t B = pixel_values.size(0), T = n * n;
  const float eps = static_cast<float>(config_.layer_norm_eps);
  // [B, 3, n*p, n*p] -> patches [B, n*n, 3*p*p] in the row-major patch order the convolution's output
  // flattens to (flatten(2).transpose(1, 2)), each patch's pixels in the kernel's order.
  Tensor x = pixel_values.to(dtype_).to(device_).contiguous();
  x = x.view({B, 3, n, p, n, p}).permute({0, 2, 4, 1, 3, 5}).reshape({B, T, 3 * p * p});
  Tensor h = ops::add(ops::linear(x, patch_w, patch_b), position.unsqueeze(0));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  for (const Layer& L : layers_) {
    const Tensor a = ops::layer_norm(h, L.ln1_w, L.ln1_b, eps);
    auto heads = [&](const Tensor& w, const Tensor& b) {
      return ops::linear(a, w, b).view({B, T, H, hd}).permute({0, 2, 1, 3});
    };
    const Tensor o = ops::attention(heads(L.q_w, L.q_b), heads(L.k_w, L.k_b), heads(L.v_w, L.v_b), {}, scale);
    h = ops::add(h, ops::linear(o.permute({0, 2, 1, 3}).reshape({B, T, D}), L.o_w, L.o_b));
    const Tensor m = ops::layer_norm(h, L.ln2_w, L.ln2_b, eps);
    h = ops::add(h, ops::linear(ops::gelu_tanh(ops::linear(m, L.fc1_w, L.fc1_b)), L.fc2_w, L.fc2_b));
  }
  return ops::layer_norm(h, post_ln_w, post_ln_b, eps);
}

Tensor Gemma3VisionTower::project(const Tensor& vision_out) const {
  const int64_t n = config_.patches_per_side(), s = config_.tokens_per_side(), k = config_.pool_kernel();
  const int64_t D = config_.hidden_size;
  LTX2_CHECK(vision_out.dim() == 3 && vision_out.size(1) == n * n && vision_out.size(2) == D,
             "gemma vision projector: input {} must be [B, {}, {}]", vision_out.str(), n * n, D);
  const int64_t B = vision_out.size(0);
  // AvgPool2d(k, stride k) over the n x n patch grid: each output token (row r, column c) is the mean
  // of its k x k patches; tokens in row-major order.
  Tensor grid = vision_out.to(device_).contiguous().view({B, s, k, s, k, D});
  Tensor pooled = ops::mean(grid.permute({0, 1, 3, 5, 2, 4}).reshape({B, s * s, D, k * k}), 3);
  const Tensor normed = ops::rms_norm(pooled, soft_norm, static_cast<float>(config_.layer_norm_eps));
  return ops::linear(normed, projection);
}

}  // namespace ltx2
