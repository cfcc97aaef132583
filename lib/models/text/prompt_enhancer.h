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
// reference's file included.
//
// With an image (the reference's enhance_i2v: --enhance-prompt with --image, the first image given),
// the user turn is the image then "User Raw Input Prompt: <prompt>.", Gemma3Processor expands the
// image's <start_of_image> to "\n\n<start_of_image>", mm_tokens_per_image <image_soft_token>s,
// "<end_of_image>\n\n", the vision tower's features (gemma3_vision.h, of the pixels gemma3_image.h
// makes) replace those tokens' embeddings, and the image's tokens attend to one another both ways
// while the prompt is read; decoding is then the same. Its default system text is also ours.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ltx2 {

class Gemma3TextModel;
class Gemma3VisionTower;
class GemmaTokenizer;

struct EnhanceSettings {
  std::string system_prompt;     // empty: default_enhance_system_prompt() (with an image: ..._image_...)
  int64_t max_new_tokens = 512;  // the reference's Gemma 3 default
  // The image to show Gemma (image-to-video), float32 [H, W, 3] holding 0..255 as media::read_image
  // decodes it; undefined: text to video.
  Tensor image;
};

const std::string& default_enhance_system_prompt();
const std::string& default_enhance_image_system_prompt();

// Gemma 3's chat format for a system text and one user turn, opening the model's turn: <bos>,
// <start_of_turn>user, the system text and a blank line, the user text without surrounding
// whitespace, <end_of_turn>, <start_of_turn>model.
std::string gemma3_chat(const std::string& system, const std::string& user);
// The same with an image first in the user turn: its <start_of_image> right after the system text's
// blank line, then the user text without surrounding whitespace.
std::string gemma3_chat_with_image(const std::string& system, const std::string& user);
// Gemma3Processor's expansion of every <start_of_image> in a chat into the image's token block.
std::string expand_gemma3_image_tokens(const std::string& chat, int64_t tokens_per_image);

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

// Text-to-video enhancement; settings.image must be undefined (an image needs the vision tower).
EnhancedPrompt enhance_prompt(const Gemma3TextModel& gemma, const GemmaTokenizer& tokenizer,
                              const std::string& prompt, const EnhanceSettings& settings,
                              bool keep_logits = false);

// Image-to-video enhancement with the processor's pixel_values [1, 3, S, S] of the image
// (settings.image is not read here: gemma3_image.h makes the pixels of it). Throws when the tokenized chat
// does not hold exactly the image's mm_tokens_per_image image tokens (a tokenizer without Gemma 3's
// image tokens).
EnhancedPrompt enhance_prompt_with_image(const Gemma3TextModel& gemma, const Gemma3VisionTower& vision,
                                         const GemmaTokenizer& tokenizer, const std::string& prompt,
                                         const Tensor& pixel_values, const EnhanceSettings& settings,
                                         bool keep_logits = false);

}  // namespace ltx2
