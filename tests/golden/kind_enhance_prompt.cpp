// Check runner for "enhance_prompt" cases: the reference's prompt enhancement (text to video,
// Gemma 3, greedy; case.json gives the system prompt and max_new_tokens) on the model set of
// "models_from": the chat's tokens (the reference's left alignment pads left out: they are neither
// positions nor seen), every generated token and its logits, the decoded and cleaned text, and the
// contexts of the enhanced prompt as PromptEncoder encodes it with --enhance-prompt.
// "enhance_prompt_image" cases: the same with an image (--enhance-prompt --image) on the case's own
// Gemma (its "gemma" folder, a vision tower included): the image's pixel values as the reference's
// resize and Gemma3Processor make them, the vision tower's output and the projector's, then as above.
#include "core/error.h"
#include "golden/kinds.h"
#include "media/image_reader.h"
#include "models/text/gemma3.h"
#include "models/text/gemma3_image.h"
#include "models/text/gemma3_vision.h"
#include "models/text/prompt_encoder.h"
#include "models/text/prompt_enhancer.h"
#include "models/text/tokenizer.h"
#include "ops/shape.h"

namespace ltx2::golden {
namespace {

Tensor ids_tensor(const std::vector<int64_t>& ids) {
  return Tensor::from_vector_i64(ids, {static_cast<int64_t>(ids.size())}).to(DType::F32);
}

// A text as its bytes, compared exactly (a length mismatch is a failed row naming both).
void check_text(Report& report, const std::string& name, const std::string& got, const std::string& want) {
  if (got.size() != want.size()) {
    report.fail(name, "got '" + got + "', expected '" + want + "'");
    return;
  }
  auto bytes = [](const std::string& s) {
    std::vector<float> v(s.begin(), s.end());
    return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
  };
  report.check(name, bytes(got), bytes(want), parse_tolerance("exact"));
}

// The rewrite against the case: the chat's tokens (the reference's left-alignment pads left out),
// every generated token exactly, the logits at the case's tolerance, the decoded and cleaned text.
void check_enhancement(const GoldenCase& c, Report& report, const EnhancedPrompt& e) {
  const Tolerance exact = parse_tolerance("exact");
  std::vector<int64_t> want_ids;
  const std::vector<int64_t> ids = c.tensor("out.enhance.input_ids").to_vector_i64();
  const std::vector<int64_t> mask = c.tensor("out.enhance.attention_mask").to_vector_i64();
  for (size_t i = 0; i < ids.size(); ++i)
    if (mask[i]) want_ids.push_back(ids[i]);
  report.check("out.enhance.input_ids (unpadded)", ids_tensor(e.prompt_ids), ids_tensor(want_ids), exact);
  report.check("out.enhance.generated_ids", ids_tensor(e.generated_ids),
               c.tensor("out.enhance.generated_ids").to(DType::F32), exact);
  if (!e.logits.empty())
    report.check("mid.enhance.logits", ops::cat(e.logits, 0), c.tensor("mid.enhance.logits"),
                 parse_tolerance(c.spec().at("tolerance").at("logits")));
  check_text(report, "decoded", e.decoded, c.spec().at("decoded").get<std::string>());
  check_text(report, "enhanced_prompt", e.text, c.spec().at("enhanced_prompt").get<std::string>());
}

// The enhanced prompt's contexts as PromptEncoder encodes it.
void check_enhanced_contexts(const GoldenCase& c, Report& report, const EncodedPrompt& out) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance").at("text_context"));
  report.check("out.text.enhanced.video_context", out.video_context,
               c.tensor("out.text.enhanced.video_context"), tol);
  report.check("out.text.enhanced.audio_context", out.audio_context,
               c.tensor("out.text.enhanced.audio_context"), tol);
}

void run_enhance_prompt(const GoldenCase& c, Report& report) {
  const nlohmann::json& s = c.spec();
  const std::string models = c.path("../" + s.at("models_from").get<std::string>());
  EnhanceSettings settings;
  settings.system_prompt = s.at("system_prompt").get<std::string>();
  settings.max_new_tokens = s.at("max_new_tokens").get<int64_t>();
  const std::string prompt = s.at("prompt").get<std::string>();

  GemmaTokenizer tokenizer(models + "/gemma");
  check_text(report, "chat_text", "<bos>" + gemma3_chat(settings.system_prompt, "user prompt: " + prompt),
             "<bos>" + s.at("chat_text").get<std::string>());
  auto gemma = Gemma3TextModel::open(models + "/gemma");
  const EnhancedPrompt e = enhance_prompt(*gemma, tokenizer, prompt, settings, true);

  check_enhancement(c, report, e);

  PromptEncoder encoder(models + "/gemma", WeightSet::open({models + "/checkpoint.safetensors"}));
  const EncodedPrompt out = encoder.encode({prompt}, settings).at(0);
  check_enhanced_contexts(c, report, out);
}

void run_enhance_prompt_image(const GoldenCase& c, Report& report) {
  const nlohmann::json& s = c.spec();
  const std::string models = c.path("../" + s.at("models_from").get<std::string>());
  const std::string gemma_dir = c.path(s.at("gemma").get<std::string>());
  EnhanceSettings settings;
  settings.system_prompt = s.at("system_prompt").get<std::string>();
  settings.max_new_tokens = s.at("max_new_tokens").get<int64_t>();
  settings.image = media::read_image(c.path(s.at("image").get<std::string>()));
  const std::string prompt = s.at("prompt").get<std::string>();
  const nlohmann::json& tol = s.at("tolerance");

  GemmaTokenizer tokenizer(gemma_dir);
  check_text(report, "chat_text",
             gemma3_chat_with_image(settings.system_prompt, "User Raw Input Prompt: " + prompt + "."),
             s.at("chat_text").get<std::string>());
  const auto vision = Gemma3VisionTower::open(gemma_dir);
  const Tensor pixels = gemma3_pixel_values(resize_long_side_like_reference(settings.image),
                                            read_gemma_image_processing(gemma_dir, vision->config()));
  report.check("mid.vision.pixel_values", pixels, c.tensor("mid.vision.pixel_values"),
               parse_tolerance(tol.at("pixel_values")));
  const Tensor hidden = vision->encode(c.tensor("mid.vision.pixel_values"));
  report.check("mid.vision.last_hidden_state", hidden, c.tensor("mid.vision.last_hidden_state"),
               parse_tolerance(tol.at("vision")));
  report.check("mid.vision.image_features", vision->project(c.tensor("mid.vision.last_hidden_state")),
               c.tensor("mid.vision.image_features"), parse_tolerance(tol.at("vision")));

  auto gemma = Gemma3TextModel::open(gemma_dir);
  const EnhancedPrompt e =
      enhance_prompt_with_image(*gemma, *vision, tokenizer, prompt, pixels, settings, true);
  check_enhancement(c, report, e);

  PromptEncoder encoder(gemma_dir, WeightSet::open({models + "/checkpoint.safetensors"}));
  const EncodedPrompt out = encoder.encode({prompt}, settings).at(0);
  check_enhanced_contexts(c, report, out);
}

const bool registered = register_kind_runner("enhance_prompt", &run_enhance_prompt);
const bool registered_image = register_kind_runner("enhance_prompt_image", &run_enhance_prompt_image);

}  // namespace
}  // namespace ltx2::golden
