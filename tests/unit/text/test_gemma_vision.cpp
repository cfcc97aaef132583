// Image-to-video prompt enhancement's pieces against the golden case enhance_prompt_image (the
// reference run on a tiny Gemma 3 with a tiny vision tower): the two 8-bit resizes against torch's
// and PIL's outputs, the processor's pixel values of the case's image, the vision tower and the
// projector, the chat with its image block, and the whole greedy rewrite; and the refusals: a Gemma
// without a vision tower, processor settings we do not implement, vision configs that do not tile.
// The same case through PromptEncoder (with the contexts) is `ltx2 check`'s (tests/golden).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "media/image_reader.h"
#include "models/text/gemma3.h"
#include "models/text/gemma3_image.h"
#include "models/text/gemma3_vision.h"
#include "models/text/prompt_enhancer.h"
#include "models/text/tokenizer.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "text_fixtures.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const char* kCase = "enhance_prompt_image";

std::string case_gemma() {
  return test::golden_dir(kCase) + "/gemma";
}

// max over elements of |got - want| - (atol + rtol |want|): <= 0 when every element is within.
float excess(const Tensor& got, const Tensor& want, const nlohmann::json& tol) {
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to(Device::cpu()).to(DType::F32).contiguous().to_vector();
  const auto w = want.to(Device::cpu()).to(DType::F32).contiguous().to_vector();
  const float atol = tol.at("atol").get<float>(), rtol = tol.at("rtol").get<float>();
  float worst = -INFINITY;
  for (size_t i = 0; i < g.size(); ++i) {
    const float d = std::fabs(g[i] - w[i]) - (atol + rtol * std::fabs(w[i]));
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  return worst;
}

Tensor u8_as_f32(const Tensor& t) {
  return t.to(DType::F32);
}

// A copy of the case's Gemma folder whose files can be altered.
std::string copy_gemma(const test::ScratchDir& scratch) {
  const std::string dir = scratch.file("gemma");
  fs::copy(case_gemma(), dir, fs::copy_options::recursive);
  return dir;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream(path) << j.dump(1);
}

}  // namespace

TEST_CASE("gemma vision: the 8-bit bilinear resizes give torch's and PIL's samples exactly") {
  const auto spec = test::case_json(kCase);
  const auto& resizes = spec.at("resizes");
  REQUIRE(resizes.size() >= 4);
  for (size_t i = 0; i < resizes.size(); ++i) {
    INFO("resize " << i);
    const std::string at = "mid.resize." + std::to_string(i) + ".";
    const Tensor in = u8_as_f32(test::io_tensor(kCase, at + "in"));
    const int64_t h = resizes[i]["out"][0].get<int64_t>(), w = resizes[i]["out"][1].get<int64_t>();
    REQUIRE(test::max_abs_diff(resize_bilinear_like_torch_u8(in, h, w),
                               u8_as_f32(test::io_tensor(kCase, at + "torch"))) == 0.f);
    REQUIRE(test::max_abs_diff(resize_bilinear_like_pil(in, h, w),
                               u8_as_f32(test::io_tensor(kCase, at + "pil"))) == 0.f);
  }
  // Same size: the image as it is.
  const Tensor in = u8_as_f32(test::io_tensor(kCase, "mid.resize.0.in"));
  REQUIRE(test::max_abs_diff(resize_bilinear_like_pil(in, in.size(0), in.size(1)), in) == 0.f);
  REQUIRE_THROWS_WITH(resize_bilinear_like_pil(Tensor::full({2, 2, 3}, 0.5f), 4, 4),
                      Contains("8-bit values 0..255, found 0.5"));
  REQUIRE_THROWS_WITH(resize_bilinear_like_torch_u8(Tensor::zeros({2, 2}), 4, 4),
                      Contains("must be [H, W, 3]"));
}

TEST_CASE("gemma vision: the case's image becomes the processor's pixel values") {
  const auto spec = test::case_json(kCase);
  const Tensor image = media::read_image(test::golden_dir(kCase) + "/" + spec.at("image").get<std::string>());
  const Tensor long_side = resize_long_side_like_reference(image);
  REQUIRE(long_side.shape() == Shape(spec.at("image_long_side_shape").get<std::vector<int64_t>>()));
  const auto vision = Gemma3VisionTower::open(case_gemma());
  const GemmaImageProcessing settings = read_gemma_image_processing(case_gemma(), vision->config());
  REQUIRE(settings.height == vision->config().image_size);
  const Tensor pixels = gemma3_pixel_values(long_side, settings);
  REQUIRE(excess(pixels, test::io_tensor(kCase, "mid.vision.pixel_values"),
                 spec["tolerance"]["pixel_values"]) <= 0);
}

TEST_CASE("gemma vision: the vision tower and the projector against the reference") {
  const auto spec = test::case_json(kCase);
  const auto vision = Gemma3VisionTower::open(case_gemma());
  const GemmaVisionConfig& c = vision->config();
  REQUIRE(c.pool_kernel() == 2);  // the case pools, so the average is checked
  REQUIRE(c.num_layers == 2);
  const Tensor out = vision->encode(test::io_tensor(kCase, "mid.vision.pixel_values"));
  REQUIRE(excess(out, test::io_tensor(kCase, "mid.vision.last_hidden_state"), spec["tolerance"]["vision"]) <=
          0);
  const Tensor features = vision->project(test::io_tensor(kCase, "mid.vision.last_hidden_state"));
  REQUIRE(excess(features, test::io_tensor(kCase, "mid.vision.image_features"),
                 spec["tolerance"]["vision"]) <= 0);
  REQUIRE_THROWS_WITH(vision->encode(Tensor::zeros({1, 3, 28, 28})), Contains("must be [B, 3, 56, 56]"));
}

TEST_CASE("gemma vision: the rewrite with an image against the reference, greedily") {
  const auto spec = test::case_json(kCase);
  auto gemma = Gemma3TextModel::open(case_gemma());
  const auto vision = Gemma3VisionTower::open(case_gemma());
  GemmaTokenizer tok(case_gemma());
  EnhanceSettings s;
  s.system_prompt = spec.at("system_prompt").get<std::string>();
  s.max_new_tokens = spec.at("max_new_tokens").get<int64_t>();
  const std::string prompt = spec.at("prompt").get<std::string>();
  REQUIRE(gemma3_chat_with_image(s.system_prompt, "User Raw Input Prompt: " + prompt + ".") ==
          spec.at("chat_text").get<std::string>());

  const EnhancedPrompt e = enhance_prompt_with_image(
      *gemma, *vision, tok, prompt, test::io_tensor(kCase, "mid.vision.pixel_values"), s, true);
  // The reference's ids with its left alignment pads dropped (they are neither positions nor seen).
  const auto ids = test::io_tensor(kCase, "out.enhance.input_ids").to_vector_i64();
  const auto mask = test::io_tensor(kCase, "out.enhance.attention_mask").to_vector_i64();
  const auto types = test::io_tensor(kCase, "out.enhance.token_type_ids").to_vector_i64();
  std::vector<int64_t> want;
  int64_t image_tokens = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (mask[i]) want.push_back(ids[i]);
    image_tokens += types[i];
    REQUIRE(types[i] == (ids[i] == vision->config().image_token_id ? 1 : 0));
  }
  REQUIRE(image_tokens == vision->config().mm_tokens_per_image);
  REQUIRE(e.prompt_ids == want);
  REQUIRE(e.generated_ids == test::io_tensor(kCase, "out.enhance.generated_ids").to_vector_i64());
  REQUIRE(excess(ops::cat(e.logits, 0), test::io_tensor(kCase, "mid.enhance.logits"),
                 spec["tolerance"]["logits"]) <= 0);
  REQUIRE(e.decoded == spec.at("decoded").get<std::string>());
  REQUIRE(e.text == spec.at("enhanced_prompt").get<std::string>());

  // The image is seen: other pixels give other logits from the first token on.
  const Tensor other = ops::mul(test::io_tensor(kCase, "mid.vision.pixel_values"), -1.f);
  s.max_new_tokens = 1;
  const EnhancedPrompt o = enhance_prompt_with_image(*gemma, *vision, tok, prompt, other, s, true);
  REQUIRE(test::max_abs_diff(o.logits[0], e.logits[0]) > 1e-3f);
}

TEST_CASE("gemma vision: the image tokens see their whole block while the prompt is read") {
  // A prompt read at once and read token by token differ only in the image block's attention: the
  // block's first token sees later ones at once, not when read alone.
  auto gemma = Gemma3TextModel::open(case_gemma());
  GemmaTokenizer tok(case_gemma());
  const std::vector<int64_t> ids = tok.tokenize("<bos>a fox<image_soft_token><image_soft_token> runs");
  const auto T = static_cast<int64_t>(ids.size());
  std::vector<int64_t> block(T, -1);
  for (int64_t t = 0; t < T; ++t)
    if (ids[t] == 8) block[t] = 0;
  const Tensor embeds = gemma->embed_tokens(ids);
  auto all = gemma->make_cache(T);
  const Tensor at_once = gemma->extend(embeds, block, all);
  auto causal = gemma->make_cache(T);
  const Tensor causal_last = gemma->extend(embeds, std::vector<int64_t>(T, -1), causal);
  REQUIRE(test::max_abs_diff(at_once, causal_last) > 1e-4f);
  // Without an image block, embeddings give what the ids give.
  auto by_ids = gemma->make_cache(T);
  REQUIRE(test::max_abs_diff(gemma->extend(ids, by_ids), causal_last) == 0.f);
  REQUIRE_THROWS_WITH(gemma->extend(embeds, std::vector<int64_t>(2, -1), by_ids),
                      Contains("image-block entries"));
}

TEST_CASE("gemma vision: the processor's expansion of the image placeholder") {
  REQUIRE(expand_gemma3_image_tokens("a<start_of_image>b", 2) ==
          "a\n\n<start_of_image><image_soft_token><image_soft_token><end_of_image>\n\nb");
  REQUIRE(expand_gemma3_image_tokens("no image", 2) == "no image");
  REQUIRE(gemma3_chat_with_image("Sys.", " hi ") ==
          "<bos><start_of_turn>user\nSys.\n\n<start_of_image>hi<end_of_turn>\n<start_of_turn>model\n");
  REQUIRE(default_enhance_image_system_prompt() != default_enhance_system_prompt());
}

TEST_CASE("gemma vision: a Gemma without a vision tower is refused in one line naming it") {
  test::ScratchDir scratch("gemma_vision");
  // The config has no vision_config.
  const std::string text_only = copy_gemma(scratch);
  nlohmann::json config = read_json(text_only + "/config.json");
  config.erase("vision_config");
  write_json(text_only + "/config.json", config);
  REQUIRE_THROWS_WITH(Gemma3VisionTower::open(text_only),
                      text_only +
                          ": the Gemma config has no vision_config (a text-only Gemma): it cannot be shown "
                          "an image");
  // The tensors are missing (a checkpoint stripped of them).
  test::ScratchDir scratch2("gemma_vision_tensors");
  const std::string stripped = copy_gemma(scratch2);
  auto file = SafetensorsFile::open(case_gemma() + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const TensorInfo& t : file->tensors())
    if (t.name.rfind("language_model.", 0) == 0) kept.emplace_back(t.name, file->tensor(t.name));
  write_safetensors(stripped + "/model.safetensors", kept, file->metadata());
  REQUIRE_FALSE(Gemma3VisionTower::held_by(*WeightSet::open({stripped + "/model.safetensors"})));
  REQUIRE(Gemma3VisionTower::held_by(*WeightSet::open({case_gemma() + "/model.safetensors"})));
  try {
    Gemma3VisionTower::open(stripped);
    FAIL("no refusal");
  } catch (const Error& e) {
    const std::string what = e.what();
    REQUIRE(what.find('\n') == std::string::npos);
    REQUIRE_THAT(what, Contains(stripped + ": holds no Gemma 3 vision tower"));
    REQUIRE_THAT(what, Contains("--enhance-prompt with --image"));
  }
  // A text-to-video call given an image.
  auto gemma = Gemma3TextModel::open(case_gemma());
  GemmaTokenizer tok(case_gemma());
  EnhanceSettings s;
  s.image = Tensor::zeros({4, 4, 3});
  REQUIRE_THROWS_WITH(enhance_prompt(*gemma, tok, "a fox", s), Contains("needs Gemma's vision tower"));
}

TEST_CASE("gemma vision: processor settings and vision configs we cannot run are refused naming the key") {
  test::ScratchDir scratch("gemma_vision_pre");
  const std::string dir = copy_gemma(scratch);
  const std::string pre = dir + "/preprocessor_config.json";
  const GemmaVisionConfig vc = parse_gemma_vision_config(read_json(dir + "/config.json"), dir);
  const nlohmann::json original = read_json(pre);
  auto refused = [&](const char* key, const nlohmann::json& value, const std::string& message) {
    nlohmann::json j = original;
    j[key] = value;
    write_json(pre, j);
    REQUIRE_THROWS_WITH(read_gemma_image_processing(dir, vc), Contains(pre + ": " + message));
  };
  refused("resample", 3, "resample is 3; ltx2 implements Gemma 3's bilinear (2) only");
  refused("do_pan_and_scan", true, "do_pan_and_scan is true");
  refused("size", {{"height", 28}, {"width", 28}}, "the processor gives 28 x 28 images");
  refused("image_mean", "x", "'image_mean' must be a number or three numbers");
  write_json(pre, original);
  REQUIRE(std::fabs(read_gemma_image_processing(dir, vc).rescale_factor - 1.0 / 255) < 1e-12);
  fs::remove(pre);  // no file: Gemma3ImageProcessor's defaults at the vision tower's size
  const GemmaImageProcessing defaults = read_gemma_image_processing(dir, vc);
  REQUIRE(defaults.height == 56);
  REQUIRE(defaults.mean[0] == 0.5f);

  nlohmann::json config = read_json(dir + "/config.json");
  auto bad_config = [&](const std::function<void(nlohmann::json&)>& change, const std::string& message) {
    nlohmann::json j = config;
    change(j);
    REQUIRE_THROWS_WITH(parse_gemma_vision_config(j, "cfg"), Contains(message));
  };
  bad_config([](auto& j) { j["mm_tokens_per_image"] = 3; }, "mm_tokens_per_image 3 is not a square");
  bad_config([](auto& j) { j["mm_tokens_per_image"] = 9; }, "whose side divides the 4 x 4 patch grid");
  bad_config([](auto& j) { j["vision_config"]["patch_size"] = 15; },
             "image_size 56 is not a multiple of patch_size 15");
  bad_config([](auto& j) { j["vision_config"]["vision_use_head"] = true; }, "vision_use_head is true");
  bad_config([](auto& j) { j["vision_config"]["hidden_act"] = "relu"; }, "hidden_act");
}
