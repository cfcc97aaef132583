// Prompt encoding for the pipelines (the reference's PromptEncoder): prompts -> Gemma tokens ->
// one Gemma batch -> per prompt, the embeddings processor -> video and audio contexts.
//
// The Gemma root supplies tokenizer.model (or tokenizer.json), config.json and the weights; the LTX
// checkpoint supplies the text projection and connectors (and says which Gemma it was trained with:
// a Gemma whose width / depth / version does not match is refused before any compute). The config's
// model_type picks the model: gemma3 (Gemma3TextModel), or gemma4_unified (Gemma4TextModel, LTX-2.5:
// the same hidden states into the same feature extractor, its tokenizer adding <bos> only where the
// prompt does not start with one; encoding only, so --enhance-prompt is refused with it, as the
// reference refuses it without a separate enhancer Gemma).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/weights.h"
#include "models/text/embeddings_processor.h"
#include "models/text/gemma3.h"
#include "models/text/gemma4.h"
#include "models/text/prompt_enhancer.h"
#include "models/text/tokenizer.h"

namespace ltx2 {

struct EncodedPrompt {
  TokenizedPrompt tokens;
  Tensor video_context;  // [1, T, video inner], right-padded order, the encoder's dtype and device
  Tensor audio_context;  // [1, T, audio inner]
  Tensor context_mask;   // [1, T] int64, all ones (host)
};

// The reference's Gemma version rule: a checkpoint naming its Gemma (metadata
// gemma_source_checkpoint with a gemma_version) needs that version; a 2.4+ checkpoint without one
// needs a Gemma config without gemma_version (else refused); older checkpoints need model_type gemma3.
void check_gemma_version(const WeightSet& ltx, const GemmaConfig& gemma, const std::string& gemma_source);

class PromptEncoder {
 public:
  // Gemma and the embeddings processor run in `dtype` on `device` (the tokens stay on the host).
  PromptEncoder(const std::string& gemma_source, std::shared_ptr<const WeightSet> ltx_checkpoint,
                int64_t max_length = kGemmaTokenizerMaxLength, DType dtype = DType::F32,
                Device device = Device::cpu());

  // All prompts go through Gemma as one batch (positive and negative together), then each is
  // processed on its own; results in the order given.
  std::vector<EncodedPrompt> encode(const std::vector<std::string>& prompts) const;
  // The same, with --enhance-prompt: the first prompt is rewritten by Gemma first
  // (prompt_enhancer.h), and the rewrite is what gets encoded (and logged). With an image in the
  // settings, Gemma's vision tower is loaded from the Gemma source for that rewrite and dropped after
  // it (refused, naming the source, when it has none).
  std::vector<EncodedPrompt> encode(std::vector<std::string> prompts,
                                    const std::optional<EnhanceSettings>& enhance_first) const;

  const GemmaTokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::unique_ptr<GemmaTokenizer> tokenizer_;
  std::unique_ptr<Gemma3TextModel> gemma_;   // model_type gemma3
  std::unique_ptr<Gemma4TextModel> gemma4_;  // model_type gemma4_unified
  std::string gemma_source_;
  std::unique_ptr<EmbeddingsProcessor> processor_;
  DType dtype_;
  Device device_;
};

}  // namespace ltx2
