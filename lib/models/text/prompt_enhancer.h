// Prompt enhancement (--enhance-prompt) as the reference's LTXGemmaTextEncoder.enhance_t2v runs it
// with Gemma 3: the chat (a system text, then "user prompt: <prompt>") in Gemma 3's chat format,
// tokenized with <bos> added before the format's own <bos> (as its processor does), decoded by the
// Gemma model with a key/value cache until an end-of-sequence id of its config or max_new_tokens,
// decoded to text as Hugging Face's tokenizer does (special tokens skipped), then tidied as the
// reference's clean_response.
//
// Where it differs from the reference, on purpose: decoding is greedy (the reference's Gemma 3
// default samples at temperature 0.7 from torch's generator: no other engine could reproduce that
// draw; greedy makes the same request give the same video), and the default system text is this
// project's own (the reference's is not ours to copy); `system_prompt` takes any text, the
// reference's file included. Image-to-video enhancement (the reference's enhance_i2v, which shows
// Gemma the first image through its vision tower) is not built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ltx2 {

class Gemma3TextModel;
class GemmaTokenizer;

struct EnhanceSettings {
  std::string system_prompt;     // empty: default_enhance_system_prompt()
  int64_t max_new_tokens = 512;  // the reference's Gemma 3 default
};

const std::string& default_enhance_system_prompt();

// Gemma 3's chat format for a system text and one user turn, opening the model's turn: <bos>,
// <start_of_turn>user, the system text and a blank line, the user text without surrounding
// whitespace, <end_of_turn>, <start_of_turn>model.
std::string gemma3_chat(const std::string& system, const std::string& user);

// The reference's clean_response: curly quotes, dashes, the no-break space, prime and minus made
// plain, then everything before the first letter dropped (Python's str.isalpha, taken from the
// C.UTF-8 locale's classification).
std::string clean_enhanced_prompt(const std::string& text);

struct EnhancedPrompt {
  std::string text;                    // cleaned: what gets encoded
  std::string decoded;                 // the generated text before cleaning
  std::vector<int64_t> prompt_ids;     // the chat's tokens
  std::vector<int64_t> generated_ids;  // with the end-of-sequence id when one ended it
  std::vector<Tensor> logits;          // per generated token [1, vocab] float32, when asked for
};

EnhancedPrompt enhance_prompt(const Gemma3TextModel& gemma, const GemmaTokenizer& tokenizer,
                              const std::string& prompt, const EnhanceSettings& settings,
                              bool keep_logits = false);

}  // namespace ltx2
