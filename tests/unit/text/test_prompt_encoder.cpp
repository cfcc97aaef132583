// Prompt encoding end to end on the tiny pipeline fixtures: tokens, Gemma, feature extractor and
// connectors against the contexts the reference pipelines recorded, and the refusals of a Gemma
// that does not fit the LTX checkpoint.
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/text/prompt_encoder.h"
#include "ops/elementwise.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "text_fixtures.h"

using namespace ltx2;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// Largest violation of |got - want| <= atol + rtol * |want| (<= 0 means within tolerance).
float worst_excess(const Tensor& got, const Tensor& want, float atol, float rtol) {
  REQUIRE(got.shape() == want.shape());
  std::vector<float> g = got.contiguous().to_vector(), w = want.contiguous().to_vector();
  float worst = -1;
  for (size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - w[i]) - (atol + rtol * std::abs(w[i])));
  return worst;
}

std::shared_ptr<const WeightSet> checkpoint(const std::string& c) {
  return WeightSet::open({test::golden_dir(c) + "/checkpoint.safetensors"});
}

}  // namespace

TEST_CASE("prompt encoder: positive and negative prompts in one batch match the reference contexts") {
  const std::string c = "pipeline_ti2vid";
  auto spec = test::case_json(c);
  float atol = spec["tolerance"]["fp32_impl"]["text_context"]["atol"].get<float>();
  float rtol = spec["tolerance"]["fp32_impl"]["text_context"]["rtol"].get<float>();
  PromptEncoder encoder(test::golden_dir(c) + "/gemma", checkpoint(c));
  std::vector<std::string> names = {"prompt", "negative_prompt"};
  auto encoded =
      encoder.encode({spec["prompt"].get<std::string>(), spec["negative_prompt"].get<std::string>()});
  REQUIRE(encoded.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    std::string key = "out.text." + names[i];
    REQUIRE(encoded[i].tokens.ids == test::io_tensor(c, key + ".input_ids").to_vector_i64());
    REQUIRE(encoded[i].tokens.mask == test::io_tensor(c, key + ".attention_mask").to_vector_i64());
    REQUIRE(worst_excess(encoded[i].video_context, test::io_tensor(c, key + ".video_context"), atol, rtol) <=
            0);
    REQUIRE(worst_excess(encoded[i].audio_context, test::io_tensor(c, key + ".audio_context"), atol, rtol) <=
            0);
    REQUIRE(encoded[i].context_mask.to_vector_i64() ==
            test::io_tensor(c, key + ".context_mask").to_vector_i64());
  }
}

TEST_CASE("prompt encoder: a single prompt gives the same context as in a batch") {
  const std::string c = "pipeline_distilled";
  auto spec = test::case_json(c);
  PromptEncoder encoder(test::golden_dir(c) + "/gemma", checkpoint(c));
  auto one = encoder.encode({spec["prompt"].get<std::string>()});
  REQUIRE(worst_excess(one[0].video_context, test::io_tensor(c, "out.text.prompt.video_context"), 1e-4f,
                       1e-3f) <= 0);
  REQUIRE(worst_excess(one[0].audio_context, test::io_tensor(c, "out.text.prompt.audio_context"), 1e-4f,
                       1e-3f) <= 0);
}

TEST_CASE("prompt encoder: a Gemma of another width or depth is refused before loading it") {
  test::ScratchDir dir("text_wrong_gemma");
  fs::copy_file(test::golden_dir("gemma3_tiny") + "/weights.safetensors", dir.file("model.safetensors"));
  fs::copy_file(test::golden_dir("pipeline_distilled") + "/gemma/tokenizer.model",
                dir.file("tokenizer.model"));
  test::write_bytes(dir.file("config.json"), test::case_json("gemma3_tiny")["config_json"].dump());
  REQUIRE_THROWS_WITH(PromptEncoder(dir.path(), checkpoint("pipeline_distilled")),
                      Contains("expects hidden size 16 and 3 layers"));
}

TEST_CASE("prompt encoder: the Gemma version rule of LTX-2.4+ checkpoints") {
  test::ScratchDir dir("text_gemma_version");
  auto write = [&](const std::string& name, const std::map<std::string, std::string>& meta) {
    write_safetensors(dir.file(name), {{"x", Tensor::zeros({1})}}, meta);
    return WeightSet::open({dir.file(name)});
  };
  auto config = [](const std::string& version) {
    GemmaConfig g;
    g.model_type = "gemma3";
    g.gemma_version = version;
    return g;
  };
  GemmaConfig gemma = config("");
  REQUIRE_NOTHROW(check_gemma_version(*write("old.safetensors", {}), gemma, "g"));
  gemma = config("3");
  auto named = write("named.safetensors", {{"gemma_source_checkpoint", R"({"gemma_version": "4"})"}});
  REQUIRE_THROWS_WITH(check_gemma_version(*named, gemma, "g"), Contains("trained with Gemma version '4'"));
  gemma = config("4");
  REQUIRE_NOTHROW(check_gemma_version(*named, gemma, "g"));
  auto v24 = write("v24.safetensors", {{"model_version", "2.4.0"}});
  REQUIRE_THROWS_WITH(check_gemma_version(*v24, gemma, "g"), Contains("does not say which Gemma"));
  gemma = config("");
  REQUIRE_NOTHROW(check_gemma_version(*v24, gemma, "g"));
}

TEST_CASE("prompt encoder: a Gemma folder without tokenizer.model is refused naming it") {
  test::ScratchDir dir("text_no_tokenizer_model");
  fs::copy_file(test::golden_dir("pipeline_distilled") + "/gemma/model.safetensors",
                dir.file("model.safetensors"));
  fs::copy_file(test::golden_dir("pipeline_distilled") + "/gemma/config.json", dir.file("config.json"));
  REQUIRE_THROWS_WITH(PromptEncoder(dir.path(), checkpoint("pipeline_distilled")),
                      Contains("tokenizer.model"));
}

TEST_CASE("prompt encoder: a tokenizer that disagrees with the Gemma config on <bos> is refused") {
  test::ScratchDir dir("text_bos_mismatch");
  const std::string src = test::golden_dir("pipeline_distilled") + "/gemma/";
  for (const char* f : {"model.safetensors", "tokenizer.model"}) fs::copy_file(src + f, dir.file(f));
  std::ifstream in(src + "config.json");
  nlohmann::json cfg = nlohmann::json::parse(in);
  cfg["text_config"]["bos_token_id"] = 7;
  test::write_bytes(dir.file("config.json"), cfg.dump());
  REQUIRE_THROWS_WITH(PromptEncoder(dir.path(), checkpoint("pipeline_distilled")),
                      Contains("the tokenizer's <bos> is 2 but the Gemma config says bos_token_id 7"));
}

// Placed in bf16 on the CPU (every op rounding its result, ops/cpu/bf16_widening.h) the encoder is
// the naive bf16 run the GPU's bf16 encoder is judged against: close to the fixture, not equal.
TEST_CASE("prompt encoder: placed in bf16 on the CPU, the contexts stay within bf16 error") {
  const std::string c = "pipeline_distilled";
  auto spec = test::case_json(c);
  PromptEncoder encoder(test::golden_dir(c) + "/gemma", checkpoint(c), kGemmaTokenizerMaxLength, DType::BF16,
                        Device::cpu());
  const EncodedPrompt e = encoder.encode({spec["prompt"].get<std::string>()}).at(0);
  REQUIRE(e.video_context.dtype() == DType::BF16);
  for (const auto& [key, got] :
       {std::pair{"video_context", e.video_context}, {"audio_context", e.audio_context}}) {
    const Tensor ref = test::io_tensor(c, std::string("out.text.prompt.") + key);
    const float scale = test::max_abs_diff(ref, ops::mul(ref, 0.f));
    const float err = test::max_abs_diff(got.to(DType::F32), ref);
    INFO(key << ": bf16 error " << err << " of values up to " << scale);
    REQUIRE(err > 0.f);
    REQUIRE(err < 0.05f * scale);
  }
}
