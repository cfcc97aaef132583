// The Gemma 4 text decoder as LTX-2.5 encodes with it (Hugging Face's gemma4_unified: the language
// model of Gemma4UnifiedModel, the only part the encoder runs; its vision and audio embedders are
// never loaded): token ids and an attention mask in, every hidden state out (index 0 = scaled
// embeddings, l = output of decoder layer l, L = last layer after the final norm), as
// LTXGemmaTextEncoder.encode collects them.
//
// What differs from Gemma 3 (gemma3.h), after HF modeling_gemma4_unified: the norms multiply by w
// (not 1 + w), the values are RMS-normalised too (no weight), attention is unscaled (q and k are
// normalised); full-attention layers have their own head dim (global_head_dim), "proportional" RoPE
// that rotates only the first partial_rotary_factor of each head's pairs, and with attention_k_eq_v
// their own KV head count and values taken from the keys' projection (before the key norm); the last
// num_kv_shared_layers layers have no key/value projections and attend to the keys and values of the
// last earlier layer of their type (with use_double_wide_mlp, through MLPs twice as wide); each
// layer's output is multiplied by its stored `layer_scalar`; image / video / audio placeholder ids
// are embedded as the pad token. Masks (causal, key padding, sliding window) and positions
// (0..T-1 over the padded row) are Gemma 3's. Encoding only: the reference enhances prompts with
// another Gemma (no KV cache or LM head here).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/configs/gemma_config.h"
#include "io/weights.h"
#include "models/text/gemma_layers.h"

namespace ltx2 {

class Gemma4TextModel {
 public:
  // Loads the language-model tensors through `weights` (keys relative to the text model, e.g.
  // "layers.0.self_attn.q_proj.weight": Hugging Face's model.language_model.* and ComfyUI's flat
  // model.* both resolve through Gemma3TextModel::Source::view()), checking every shape against
  // `config` (a Gemma 4 one). Projections in `dtype` on `device`; norm weights float32; the
  // embedding table stays in the file (rows gathered on the host).
  Gemma4TextModel(const GemmaConfig& config, const WeightView& weights, DType dtype = DType::F32,
                  Device device = Device::cpu());
  // A Gemma root as Gemma3TextModel::locate reads it (a folder or a text-encoder file).
  static std::unique_ptr<Gemma4TextModel> open(const std::string& root, DType dtype = DType::F32,
                                               Device device = Device::cpu());

  const GemmaConfig& config() const { return config_; }

  // ids, mask: [B, T] int64 on any device (read on the host; mask 1 = token, 0 = pad). Returns
  // num_layers + 1 tensors [B, T, D] in the model's dtype on its device.
  std::vector<Tensor> forward(const Tensor& ids, const Tensor& mask) const;

 private:
  struct Layer {
    bool sliding = false;
    int64_t head_dim = 0, kv_heads = 0;
    int64_t kv_source = -1;  // a KV-sharing layer: the layer whose keys and values it attends to
    bool keeps_kv = false;   // a later layer shares its keys and values
    float scalar = 1.f;      // layer_scalar
    Tensor input_norm, post_attn_norm, pre_ff_norm, post_ff_norm;  // w, float32
    Tensor q_proj, k_proj, v_proj, o_proj, q_norm, k_norm;         // v_proj undefined: values = keys
    Tensor gate_proj, up_proj, down_proj;
  };
  GemmaConfig config_;
  DType dtype_;
  Device device_;
  GemmaEmbedding embedding_;
  Tensor final_norm_;
  std::vector<Layer> layers_;

  Tensor embed(const Tensor& ids) const;
};

}  // namespace ltx2
