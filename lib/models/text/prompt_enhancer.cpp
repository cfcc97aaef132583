// Prompt enhancement (see prompt_enhancer.h).
#include "models/text/prompt_enhancer.h"

#include <locale.h>

#include <algorithm>
#include <clocale>
#include <cwctype>

#include "core/error.h"
#include "models/text/gemma3.h"
#include "models/text/gemma3_vision.h"
#include "models/text/tokenizer.h"
#include "models/text/utf8.h"
#include "ops/elementwise.h"

namespace ltx2 {

const std::string& default_enhance_system_prompt() {
  static const std::string text =
      "You write prompts for a model that generates a short video with its sound from text. Rewrite the "
      "user's idea as one paragraph of plain, present-tense prose, about 150 to 200 words, that the model "
      "can follow shot by shot. Keep everything the user asked for and invent nothing that contradicts it. "
      "Describe, in this order: the main subject and what it looks like; what it does, as a sequence of "
      "concrete actions over the clip; the setting and the time of day; the light, colours and mood; how "
      "the camera frames and moves; and the sounds: ambience, effects, music, and any speech quoted "
      "exactly with who says it and how. Use specific nouns and verbs instead of adjectives piled up. "
      "Do not use lists, headings, markdown, camera jargon in brackets, or words like \"video\" and "
      "\"scene\" about the prompt itself. Answer with the paragraph only.";
  return text;
}

const std::string& default_enhance_image_system_prompt() {
  static const std::string text =
      "You write prompts for a model that turns a still image into a short video with its sound. You are "
      "shown the image that will be the video's first frame and the user's idea for what happens next. "
      "Rewrite the idea as one paragraph of plain, present-tense prose, about 150 to 200 words, that starts "
      "from what the image shows: keep its subject, setting, framing, light and colours as they are, and "
      "describe nothing the image contradicts. Then describe, in order, what moves and how over the clip, "
      "how the camera moves if it does, and the sounds: ambience, effects, music, and any speech quoted "
      "exactly with who says it and how. Keep everything the user asked for. Use specific nouns and verbs "
      "instead of adjectives piled up. Do not use lists, headings, markdown, or words like \"image\", "
      "\"video\" and \"scene\" about the prompt itself. Answer with the paragraph only.";
  return text;
}

std::string gemma3_chat(const std::string& system, const std::string& user) {
  return "<bos><start_of_turn>user\n" + system + "\n\n" + strip_unicode_whitespace(user) +
         "<end_of_turn>\n<start_of_turn>model\n";
}

std::string gemma3_chat_with_image(const std::string& system, const std::string& user) {
  return "<bos><start_of_turn>user\n" + system + "\n\n<start_of_image>" + strip_unicode_whitespace(user) +
         "<end_of_turn>\n<start_of_turn>model\n";
}

std::string expand_gemma3_image_tokens(const std::string& chat, int64_t tokens_per_image) {
  const std::string boi = "<start_of_image>";
  std::string block = "\n\n" + boi;
  for (int64_t i = 0; i < tokens_per_image; ++i) block += "<image_soft_token>";
  block += "<end_of_image>\n\n";
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = chat.find(boi, at)) != std::string::npos; at = hit + boi.size())
    out += chat.substr(at, hit - at) + block;
  return out + chat.substr(at);
}

namespace {

bool is_letter(char32_t cp) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (cp < 0x80 || !utf8) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return iswalpha_l(static_cast<wint_t>(cp), utf8) != 0;
}

}  // namespace

std::string clean_enhanced_prompt(const std::string& text) {
  // The reference's _UNICODE_REPLACEMENTS.
  static const std::vector<std::pair<std::string, std::string>> plain = {
      {"\u2018", "'"}, {"\u2019", "'"}, {"\u201c", "\""}, {"\u201d", "\""}, {"\u2014", "-"},
      {"\u2013", "-"}, {"\u00a0", " "}, {"\u2032", "'"},  {"\u2212", "-"}};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    utf8::code_point_at(text, i, &len);
    const std::string ch = text.substr(i, len);
    auto it = std::find_if(plain.begin(), plain.end(), [&](const auto& p) { return p.first == ch; });
    out += it == plain.end() ? ch : it->second;
    i += len;
  }
  for (size_t i = 0; i < out.size();) {
    size_t len = 1;
    if (is_letter(utf8::code_point_at(out, i, &len))) return out.substr(i);
    i += len;
  }
  return out;
}

namespace {

// The processor's own <bos>, then the chat's tokens.
std::vector<int64_t> chat_ids(const GemmaTokenizer& tokenizer, const std::string& chat) {
  std::vector<int64_t> ids = {tokenizer.bos_id()};
  for (int64_t id : tokenizer.tokenize(chat)) ids.push_back(id);
  return ids;
}

// Greedy decoding from the prompt's last hidden state, the prompt already in the cache.
void decode_greedily(const Gemma3TextModel& gemma, const GemmaTokenizer& tokenizer, Tensor hidden,
                     Gemma3TextModel::KvCache& cache, const EnhanceSettings& settings, bool keep_logits,
                     EnhancedPrompt& out) {
  const std::vector<int64_t>& eos = gemma.config().eos_token_ids;
  const Tensor lm_head = gemma.lm_head();
  for (int64_t step = 0; step < settings.max_new_tokens; ++step) {
    const Tensor logits = gemma.logits(hidden, lm_head);
    const float* p = logits.data<float>();
    const int64_t next = std::max_element(p, p + logits.numel()) - p;  // the first of equal maxima
    if (keep_logits) out.logits.push_back(logits);
    out.generated_ids.push_back(next);
    if (std::find(eos.begin(), eos.end(), next) != eos.end() || step + 1 == settings.max_new_tokens) break;
    hidden = gemma.extend({next}, cache);
  }
  out.decoded = tokenizer.decode(out.generated_ids);
  out.text = clean_enhanced_prompt(out.decoded);
}

void check_max_new_tokens(const EnhanceSettings& settings) {
  LTX2_CHECK(settings.max_new_tokens >= 1, "prompt enhancement: max_new_tokens must be at least 1, got {}",
             settings.max_new_tokens);
}

}  // namespace

EnhancedPrompt enhance_prompt(const Gemma3TextModel& gemma, const GemmaTokenizer& tokenizer,
                              const std::string& prompt, const EnhanceSettings& settings, bool keep_logits) {
  check_max_new_tokens(settings);
  LTX2_CHECK(!settings.image.defined(), "prompt enhancement: an image needs Gemma's vision tower");
  const std::string& system =
      settings.system_prompt.empty() ? default_enhance_system_prompt() : settings.system_prompt;
  EnhancedPrompt out;
  out.prompt_ids = chat_ids(tokenizer, gemma3_chat(system, "user prompt: " + prompt));
  auto cache = gemma.make_cache(static_cast<int64_t>(out.prompt_ids.size()) + settings.max_new_tokens);
  const Tensor hidden = gemma.extend(out.prompt_ids, cache);
  decode_greedily(gemma, tokenizer, hidden, cache, settings, keep_logits, out);
  return out;
}

EnhancedPrompt enhance_prompt_with_image(const Gemma3TextModel& gemma, const Gemma3VisionTower& vision,
                                         const GemmaTokenizer& tokenizer, const std::string& prompt,
                                         const Tensor& pixel_values, const EnhanceSettings& settings,
                                         bool keep_logits) {
  check_max_new_tokens(settings);
  const GemmaVisionConfig& vc = vision.config();
  const std::string& system =
      settings.system_prompt.empty() ? default_enhance_image_system_prompt() : settings.system_prompt;
  EnhancedPrompt out;
  const std::string chat = gemma3_chat_with_image(system, "User Raw Input Prompt: " + prompt + ".");
  out.prompt_ids = chat_ids(tokenizer, expand_gemma3_image_tokens(chat, vc.mm_tokens_per_image));
  const auto T = static_cast<int64_t>(out.prompt_ids.size());

  // The image's tokens: one block (Hugging Face's token_type_ids 1 there); Gemma3Model embeds them as
  // id 0 when the image token lies outside the vocabulary, and the features replace them anyway.
  std::vector<int64_t> block(T, -1), embed_ids = out.prompt_ids, image_rows;
  for (int64_t t = 0; t < T; ++t)
    if (out.prompt_ids[t] == vc.image_token_id) {
      block[t] = 0;
      image_rows.push_back(t);
      if (vc.image_token_id >= gemma.config().vocab_size) embed_ids[t] = 0;
    }
  LTX2_CHECK(
      static_cast<int64_t>(image_rows.size()) == vc.mm_tokens_per_image,
      "prompt enhancement: the chat holds {} image tokens (id {}), the image gives {}: the tokenizer does "
      "not map <image_soft_token> to the config's image_token_index",
      image_rows.size(), vc.image_token_id, vc.mm_tokens_per_image);
  // A block of contiguous tokens, as the processor writes it (<start_of_image> ... <end_of_image>).
  LTX2_CHECK(image_rows.back() - image_rows.front() + 1 == vc.mm_tokens_per_image,
             "prompt enhancement: the image tokens are not one contiguous block");

  const Tensor features = vision.image_features(pixel_values);  // [1, mm_tokens, D]
  Tensor embeds = gemma.embed_tokens(embed_ids);
  embeds.narrow(1, image_rows.front(), vc.mm_tokens_per_image).copy_(features.to(embeds.dtype()));

  auto cache = gemma.make_cache(T + settings.max_new_tokens);
  const Tensor hidden = gemma.extend(embeds, block, cache);
  decode_greedily(gemma, tokenizer, hidden, cache, settings, keep_logits, out);
  return out;
}

}  // namespace ltx2
