// Gemma 3's image path, as Hugging Face's Gemma3ForConditionalGeneration runs it for prompt
// enhancement with an image (the reference's enhance_i2v): the SigLIP vision tower
// (vision_tower.vision_model.*: a patch-embedding convolution with stride = patch size plus learned
// position embeddings, pre-norm encoder layers of biased multi-head attention without a mask and a
// gelu(tanh) MLP, the post layer norm) and the multimodal projector (multi_modal_projector.*: the
// patch grid average-pooled to mm_tokens_per_image tokens, Gemma's RMSNorm (1 + w), then the
// projection [vision width, text width] applied as x · W), which gives the rows that replace the
// image tokens' embeddings in the language model.
//
// Runs on the ops layer: float32 on the CPU, or the model's dtype (bf16) on its device, the
// reference's rounding points (the layer norms and the RMSNorm in float32, every op's result in the
// model's dtype). The image processing in front of it is gemma3_image.h.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/weights.h"

namespace ltx2 {

// The config's "vision_config" (SiglipVisionConfig, its defaults for the keys left out) and the
// top-level keys that tie images to the text (Gemma3Config's defaults likewise).
struct GemmaVisionConfig {
  int64_t hidden_size = 768;
  int64_t intermediate_size = 3072;
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t num_channels = 3;
  int64_t image_size = 224;
  int64_t patch_size = 16;
  double layer_norm_eps = 1e-6;  // the encoder's layer norms and the projector's RMSNorm
  int64_t mm_tokens_per_image = 256;
  int64_t image_token_id = 262144;  // "image_token_index"
  int64_t boi_token_id = 255999;    // "boi_token_index", <start_of_image>
  int64_t eoi_token_id = 256000;    // "eoi_token_index", <end_of_image>
  int64_t text_hidden_size = 0;     // the projector's output width (text_config.hidden_size)

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t tokens_per_side() const;  // sqrt(mm_tokens_per_image)
  int64_t pool_kernel() const { return patches_per_side() / tokens_per_side(); }
};

// Reads a Gemma 3 config.json's vision part; `origin` names the config in messages. Throws when it
// has no "vision_config" (a text-only Gemma), when the vision encoder is not one we run (another
// activation, a pooling head), or when the shapes do not tile (image_size a multiple of patch_size,
// mm_tokens_per_image a square whose side divides the patch grid).
GemmaVisionConfig parse_gemma_vision_config(const nlohmann::json& config, const std::string& origin);

class Gemma3VisionTower {
 public:
  // `vision`: keys relative to the vision model ("embeddings.patch_embedding.weight", ...);
  // `projector`: relative to the projector ("mm_input_projection_weight", ...). Every shape is
  // checked against `config`. Linear weights are held in `dtype` on `device`, norms in float32.
  Gemma3VisionTower(const GemmaVisionConfig& config, const WeightView& vision, const WeightView& projector,
                    DType dtype = DType::F32, Device device = Device::cpu());

  // The vision tower of a Gemma root (a folder or a text-encoder file, as Gemma3TextModel::locate
  // takes it). Throws one line naming the root when it has no vision_config or no vision tower
  // tensors (a text-only Gemma, or a packed encoder file stripped of them).
  static std::unique_ptr<Gemma3VisionTower> open(const std::string& root, DType dtype = DType::F32,
                                                 Device device = Device::cpu());
  // Whether `set` holds a vision tower's and projector's tensors (Hugging Face's or the released
  // checkpoints' names); reads headers only.
  static bool held_by(const WeightSet& set);

  const GemmaVisionConfig& config() const { return config_; }

  // pixel_values [B, 3, image_size, image_size] (any dtype, any device) -> the vision model's last
  // hidden state [B, patches, vision width] in the model's dtype on its device.
  Tensor encode(const Tensor& pixel_values) const;
  // The projector: [B, patches, vision width] -> [B, mm_tokens_per_image, text width].
  Tensor project(const Tensor& vision_out) const;
  Tensor image_features(const Tensor& pixel_values) const { return project(encode(pixel_values)); }

 private:
  struct Layer {
    Tensor ln1_w, ln1_b, ln2_w, ln2_b;  // float32
    Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
    Tensor fc1_w, fc1_b, fc2_w, fc2_b;
  };
  GemmaVisionConfig config_;
  DType dtype_;
  Device device_;
  Tensor patch_w, patch_b;  // [D, 3 * p * p] (the convolution's kernel flattened), [D]
  Tensor position;          // [patches, D]
  std::vector<Layer> layers_;
  Tensor post_ln_w, post_ln_b;  // float32
  Tensor soft_norm;             // 1 + w, float32
  Tensor projection;            // [text width, vision width]: the stored [vision, text] transposed
};

}  // namespace ltx2
