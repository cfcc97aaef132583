// PromptEncoder (see prompt_encoder.h).
#include "models/text/prompt_encoder.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "models/text/gemma3_image.h"
#include "models/text/gemma3_vision.h"

namespace ltx2 {

namespace {

// "2.4.0" -> {2, 4, 0}; missing parts are 0.
std::vector<int> parse_version(const std::string& v) {
  std::vector<int> parts;
  int value = 0;
  bool digits = false;
  for (char ch : v) {
    if (ch >= '0' && ch <= '9') {
      value = value * 10 + (ch - '0');
      digits = true;
    } else if (ch == '.') {
      parts.push_back(value);
      value = 0;
      digits = false;
    } else {
      break;
    }
  }
  if (digits) parts.push_back(value);
  parts.resize(3, 0);
  return parts;
}

std::string source_gemma_version(const std::string& metadata) {
  nlohmann::json j = nlohmann::json::parse(metadata, nullptr, false);
  if (j.is_object() && j.contains("gemma_version") && j["gemma_version"].is_string())
    return j["gemma_version"].get<std::string>();
  return metadata;  // a bare version string
}

// The text with control characters (a generated NUL, say) written as \xNN, for a log line.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text)
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", static_cast<unsigned char>(c))
                                                              : std::string(1, c);
  return out;
}

}  // namespace

void check_gemma_version(const WeightSet& ltx, const GemmaConfig& gemma, const std::string& gemma_source) {
  std::string source = ltx.metadata_value("gemma_source_checkpoint");
  if (!source.empty()) {
    std::string want = source_gemma_version(source);
    LTX2_CHECK(gemma.gemma_version == want,
               "{}: Gemma config has gemma_version '{}', but {} was trained with Gemma version '{}'",
               gemma_source, gemma.gemma_version, ltx.describe(), want);
    return;
  }
  std::string model_version = ltx.metadata_value("model_version");
  if (!model_version.empty() && parse_version(model_version) >= std::vector<int>{2, 4, 0}) {
    LTX2_CHECK(
        gemma.gemma_version.empty(),
        "{}: {} (model_version {}) does not say which Gemma it needs, and this Gemma has gemma_version "
        "'{}'",
        gemma_source, ltx.describe(), model_version, gemma.gemma_version);
    log_warn("{} (model_version {}) names no Gemma version; assuming {} matches", ltx.describe(),
             model_version, gemma_source);
    return;
  }
  LTX2_CHECK(gemma.model_type.empty() || gemma.model_type == "gemma3",
             "{}: Gemma model_type '{}' but {} needs gemma3", gemma_source, gemma.model_type, ltx.describe());
}

PromptEncoder::PromptEncoder(const std::string& gemma_source, std::shared_ptr<const WeightSet> ltx_checkpoint,
                             int64_t max_length, DType dtype, Device device)
    : dtype_(dtype), device_(device) {
  tokenizer_ = std::make_unique<GemmaTokenizer>(gemma_source, max_length);
  processor_ = std::make_unique<EmbeddingsProcessor>(ltx_checkpoint, dtype, device);
  Gemma3TextModel::Source gemma = Gemma3TextModel::locate(gemma_source);
  processor_->feature_extractor().check_gemma(gemma.config, gemma_source);
  check_gemma_version(*ltx_checkpoint, gemma.config, gemma_source);
  LTX2_CHECK(tokenizer_->bos_id() == gemma.config.bos_token_id,
             "{}: the tokenizer's <bos> is {} but the Gemma config says bos_token_id {}", gemma_source,
             tokenizer_->bos_id(), gemma.config.bos_token_id);
  gemma_source_ = gemma_source;
  if (gemma.config.gemma4) {
    tokenizer_->set_tokenizer_adds_bos(false);
    gemma4_ = std::make_unique<Gemma4TextModel>(gemma.config, gemma.view(), dtype, device);
  } else {
    gemma_ = std::make_unique<Gemma3TextModel>(gemma.config, gemma.view(), dtype, device);
  }
}

std::vector<EncodedPrompt> PromptEncoder::encode(std::vector<std::string> prompts,
                                                 const std::optional<EnhanceSettings>& enhance_first) const {
  if (enhance_first && !prompts.empty()) {
    LTX2_CHECK(gemma_,
               "--enhance-prompt: {} is a gemma4_unified Gemma, which only encodes (the reference enhances "
               "with a separate instruct Gemma, its --prompt-enhancer-gemma-root); not supported",
               gemma_source_);
    const auto begin = std::chrono::steady_clock::now();
    EnhancedPrompt e;
    if (enhance_first->image.defined()) {
      // The reference's enhance_i2v: the image resized to a long side of 896, the processor's pixels,
      // the vision tower (loaded for this rewrite only).
      const auto vision = Gemma3VisionTower::open(gemma_source_, dtype_, device_);
      const Tensor pixels = gemma3_pixel_values(resize_long_side_like_reference(enhance_first->image),
                                                read_gemma_image_processing(gemma_source_, vision->config()));
      e = enhance_prompt_with_image(*gemma_, *vision, *tokenizer_, prompts[0], pixels, *enhance_first);
    } else {
      e = enhance_prompt(*gemma_, *tokenizer_, prompts[0], *enhance_first);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    log_info("enhanced prompt ({} new tokens in {:.1f} s): {}", e.generated_ids.size(), seconds,
             printable(e.text));
    prompts[0] = e.text;
  }
  return encode(prompts);
}

std::vector<EncodedPrompt> PromptEncoder::encode(const std::vector<std::string>& prompts) const {
  LTX2_CHECK(!prompts.empty(), "prompt encoder: no prompts given");
  auto [ids, mask] = tokenizer_->encode_batch(prompts);
  std::vector<Tensor> states = gemma4_ ? gemma4_->forward(ids, mask) : gemma_->forward(ids, mask);
  std::vector<EncodedPrompt> out;
  for (int64_t i = 0; i < static_cast<int64_t>(prompts.size()); ++i) {
    std::vector<Tensor> row;
    for (const Tensor& s : states) row.push_back(s.narrow(0, i, 1));
    Tensor row_mask = mask.narrow(0, i, 1).contiguous();
    TextContext ctx = processor_->process(row, row_mask);
    EncodedPrompt e;
    e.tokens.ids = ids.select(0, i).contiguous().to_vector_i64();
    e.tokens.mask = row_mask.to_vector_i64();
    e.video_context = ctx.video;
    e.audio_context = ctx.audio;
    e.context_mask = ctx.mask;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace ltx2
