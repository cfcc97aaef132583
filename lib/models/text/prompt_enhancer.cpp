// Prompt enhancement (see prompt_enhancer.h).
#include "models/text/prompt_enhancer.h"

#include <locale.h>

#include <algorithm>
#include <clocale>
#include <cwctype>

#include "core/error.h"
#include "models/text/gemma3.h"
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

std::string gemma3_chat(const std::string& system, const std::string& user) {
  return "<bos><start_of_turn>user\n" + system + "\n\n" + strip_unicode_whitespace(user) +
         "<end_of_turn>\n<start_of_turn>model\n";
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

EnhancedPrompt enhance_prompt(const Gemma3TextModel& gemma, const GemmaTokenizer& tokenizer,
                              const std::string& prompt, const EnhanceSettings& settings, bool keep_logits) {
  LTX2_CHECK(settings.max_new_tokens >= 1, "prompt enhancement: max_new_tokens must be at least 1, got {}",
             settings.max_new_tokens);
  const std::string& system =
      settings.system_prompt.empty() ? default_enhance_system_prompt() : settings.system_prompt;
  EnhancedPrompt out;
  out.prompt_ids = {tokenizer.bos_id()};  // the processor's own <bos>, before the chat's
  for (int64_t id : tokenizer.tokenize(gemma3_chat(system, "user prompt: " + prompt)))
    out.prompt_ids.push_back(id);

  const std::vector<int64_t>& eos = gemma.config().eos_token_ids;
  auto cache = gemma.make_cache(static_cast<int64_t>(out.prompt_ids.size()) + settings.max_new_tokens);
  const Tensor lm_head = gemma.lm_head();
  Tensor hidden = gemma.extend(out.prompt_ids, cache);
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
  return out;
}

}  // namespace ltx2
