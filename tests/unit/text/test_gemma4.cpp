// Gemma 4 (gemma4_unified, LTX-2.5's text encoder): config parsing (Gemma4UnifiedTextConfig's
// defaults, refusals naming the key), loading from the reference's packed file (ComfyUI's flat keys)
// and from a Hugging Face folder, parity with the gemma4_tiny fixture, missing and mis-shaped
// tensors, the tokenizer's <bos> rule and tokenizer.json pre-tokenizer, and the prompt encoder's
// refusal of --enhance-prompt with it.
#include <filesystem>
#include <functional>
#include <map>

#include "core/error.h"
#include "io/configs/gemma_config.h"
#include "io/safetensors.h"
#include "models/text/gemma3.h"
#include "models/text/gemma4.h"
#include "models/text/prompt_encoder.h"
#include "models/text/tokenizer.h"
#include "models/text/tokenizer_json.h"
#include "ops/elementwise.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "text_fixtures.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

const char* kCase = "gemma4_tiny";

std::string te_file() {
  return test::golden_dir(kCase) + "/text_encoder.safetensors";
}
std::string connectors_file() {
  return test::golden_dir(kCase) + "/connectors.safetensors";
}
json fixture_config() {
  return test::case_json(kCase)["config_json"];
}

// The packed file's tensors, each passed through `edit` (return false to leave it out).
using Edit = std::function<bool(std::string& name, Tensor& t)>;
void rewrite_te(const std::string& out, const Edit& edit, std::map<std::string, std::string> metadata = {}) {
  auto file = SafetensorsFile::open(te_file());
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& info : file->tensors()) {
    std::string name = info.name;
    Tensor t = file->tensor(info.name).clone();
    if (edit(name, t)) tensors.emplace_back(name, t);
  }
  if (metadata.empty()) metadata = file->metadata();
  write_safetensors(out, tensors, metadata);
}

std::vector<Tensor> run(const Gemma4TextModel& model) {
  return model.forward(test::io_tensor(kCase, "in.input_ids"), test::io_tensor(kCase, "in.attention_mask"));
}

}  // namespace

TEST_CASE("gemma4 config: the fixture's settings") {
  const GemmaConfig c = parse_gemma_config(fixture_config());
  REQUIRE(c.gemma4);
  REQUIRE(c.model_type == "gemma4_unified");
  REQUIRE(c.gemma_version == "gemma-4-tiny-test");
  REQUIRE(c.hidden_size == 32);
  REQUIRE(c.num_layers == 6);
  REQUIRE(c.layer_is_sliding == std::vector<bool>{true, false, true, false, true, false});
  REQUIRE(c.layer_head_dim(0) == 16);
  REQUIRE(c.layer_head_dim(1) == 32);
  REQUIRE(c.layer_kv_heads(0) == 2);
  REQUIRE(c.layer_kv_heads(1) == 1);
  REQUIRE(c.attention_k_eq_v);
  REQUIRE(c.num_kv_shared_layers == 2);
  REQUIRE(c.double_wide_mlp);
  REQUIRE(c.rope_global_partial_factor == 0.25);
  REQUIRE(c.rope_global_theta == 1e6);
  REQUIRE(c.rope_local_theta == 1e4);
  REQUIRE(c.query_pre_attn_scalar == 0);
  const json ids = test::case_json(kCase)["tokenizer"]["special_ids"];
  REQUIRE(c.placeholder_token_ids == std::vector<int64_t>{ids["<|image|>"].get<int64_t>(),
                                                          ids["<|video|>"].get<int64_t>(),
                                                          ids["<|audio|>"].get<int64_t>()});
  REQUIRE(c.eos_token_ids == std::vector<int64_t>{1, ids["<turn|>"].get<int64_t>()});
}

TEST_CASE("gemma4 config: Gemma4UnifiedTextConfig's defaults fill what a config leaves out") {
  json j = {{"model_type", "gemma4_unified"},
            {"text_config", {{"hidden_size", 3840}, {"num_hidden_layers", 8}, {"num_attention_heads", 16}}}};
  const GemmaConfig c = parse_gemma_config(j);
  REQUIRE(c.vocab_size == 262144);
  REQUIRE(c.head_dim == 256);
  REQUIRE(c.global_head_dim == 512);
  REQUIRE(c.sliding_window == 1024);
  REQUIRE(c.rope_global_partial_factor == 0.25);
  REQUIRE(c.rope_global_theta == 1e6);
  REQUIRE(c.rope_local_theta == 1e4);
  REQUIRE(!c.attention_k_eq_v);
  REQUIRE(c.layer_kv_heads(5) == 4);
  // The pattern of 6, and the last layer made full attention as Hugging Face forces it.
  REQUIRE(c.layer_is_sliding == std::vector<bool>{true, true, true, true, true, false, true, false});
  REQUIRE(c.placeholder_token_ids == std::vector<int64_t>{258880, 258884, 258881});
  // A bare text config is read as one too.
  GemmaConfig bare = parse_gemma_config(fixture_config()["text_config"]);
  REQUIRE(bare.gemma4);
  REQUIRE(bare.placeholder_token_ids.empty());
}

TEST_CASE("gemma4 config: unsupported settings are refused naming the key") {
  auto refused = [](const std::function<void(json&)>& edit) {
    json j = fixture_config();
    edit(j);
    try {
      parse_gemma_config(j);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  auto text = [&](const std::string& key, const json& value) {
    return refused([&](json& j) { j["text_config"][key] = value; });
  };
  REQUIRE_THAT(text("use_bidirectional_attention", "all"), Contains("use_bidirectional_attention"));
  REQUIRE_THAT(text("hidden_activation", "silu"), Contains("hidden_activation"));
  REQUIRE_THAT(text("attention_bias", true), Contains("attention_bias"));
  REQUIRE_THAT(text("attn_logit_softcapping", 50.0), Contains("attn_logit_softcapping"));
  REQUIRE_THAT(text("hidden_size_per_layer_input", 256), Contains("hidden_size_per_layer_input"));
  REQUIRE_THAT(text("num_kv_shared_layers", 6), Contains("num_kv_shared_layers"));
  REQUIRE_THAT(text("num_global_key_value_heads", nullptr), Contains("num_global_key_value_heads"));
  REQUIRE_THAT(text("num_global_key_value_heads", 3), Contains("num_global_key_value_heads"));
  REQUIRE_THAT(text("model_type", "gemma3_text"), Contains("model_type"));
  REQUIRE_THAT(
      refused([](json& j) { j["text_config"]["rope_parameters"]["full_attention"]["rope_type"] = "yarn"; }),
      Contains("rope_type"));
  REQUIRE_THAT(refused([](json& j) {
                 j["text_config"]["rope_parameters"]["full_attention"]["partial_rotary_factor"] = 1.5;
               }),
               Contains("partial_rotary_factor"));
  REQUIRE_THAT(refused([](json& j) { j["text_config"]["rope_parameters"].erase("sliding_attention"); }),
               Contains("sliding_attention"));
  REQUIRE_THAT(refused([](json& j) {
                 j["text_config"]["rope_parameters"]["full_attention"] = {{"rope_type", "default"},
                                                                          {"rope_theta", 1e6}};
               }),
               Contains("global_head_dim"));
  REQUIRE_THAT(refused([](json& j) { j["model_type"] = "gemma4"; }), Contains("model_type"));
}

TEST_CASE("gemma4: the packed text-encoder file (ComfyUI's flat keys) loads and matches the fixture") {
  auto model = Gemma4TextModel::open(te_file());
  const std::vector<Tensor> states = run(*model);
  REQUIRE(states.size() == 7);
  REQUIRE(test::max_valid_row_diff(states, kCase) < 2e-4f);
  REQUIRE(test::max_abs_diff(states.back(), test::io_tensor(kCase, "out.last_hidden_state")) < 2e-4f);
  REQUIRE(test::max_abs_diff(states[0], test::io_tensor(kCase, "mid.hidden_states_raw").select(0, 0)) <
          2e-4f);
}

TEST_CASE("gemma4: a Hugging Face folder (model.language_model.* keys, config.json) matches the fixture") {
  test::ScratchDir dir("text_gemma4_hf");
  rewrite_te(dir.file("model.safetensors"), [](std::string& name, Tensor&) {
    for (const char* lm : {"model.layers.", "model.embed_tokens.", "model.norm."})
      if (name.rfind(lm, 0) == 0) {
        name = "model.language_model." + name.substr(6);
        return true;
      }
    return false;  // the tokenizer, sidecars, projection and the towers stay out
  });
  test::write_bytes(dir.file("config.json"), fixture_config().dump());
  const Tensor tokenizer = SafetensorsFile::open(te_file())->tensor(kTokenizerJsonTensor);
  test::write_bytes(dir.file("tokenizer.json"),
                    std::string(static_cast<const char*>(tokenizer.data_ptr()), tokenizer.numel()));
  auto model = Gemma4TextModel::open(dir.path());
  REQUIRE(test::max_valid_row_diff(run(*model), kCase) < 2e-4f);
  // Its tokenizer.json (Gemma 4's Split(" ") pre-tokenizer) tokenizes as the reference did.
  GemmaTokenizer tok(dir.path());
  tok.set_tokenizer_adds_bos(false);
  const json prompts = test::case_json(kCase)["prompts"];
  for (const auto& [name, text] : prompts.items())
    REQUIRE(tok.encode(text.get<std::string>()).ids ==
            test::io_tensor(kCase, "out.text." + name + ".input_ids").to_vector_i64());
}

TEST_CASE("gemma4: a missing tensor is refused naming it") {
  test::ScratchDir dir("text_gemma4_missing");
  for (const std::string missing : {"model.layers.1.self_attn.k_proj.weight", "model.layers.3.layer_scalar",
                                    "model.layers.5.self_attn.q_norm.weight"}) {
    const std::string file = dir.file("te.safetensors");
    rewrite_te(file, [&](std::string& name, Tensor&) { return name != missing; });
    REQUIRE_THROWS_WITH(Gemma4TextModel::open(file), Contains(missing.substr(6)));
  }
}

TEST_CASE("gemma4: a tensor of the wrong shape, or a config that does not match the weights, is refused") {
  test::ScratchDir dir("text_gemma4_shape");
  const std::string file = dir.file("te.safetensors");
  rewrite_te(file, [](std::string& name, Tensor& t) {
    if (name == "model.layers.1.self_attn.k_proj.weight") t = Tensor::zeros({64, 32});  // 2 KV heads, not 1
    return true;
  });
  REQUIRE_THROWS_WITH(Gemma4TextModel::open(file), Contains("layers.1.self_attn.k_proj.weight"));
  json cfg = fixture_config();
  cfg["text_config"]["use_double_wide_mlp"] = false;  // the shared layers' MLPs are twice as wide
  rewrite_te(file, [](std::string&, Tensor&) { return true; }, {{"gemma_config", cfg.dump()}});
  REQUIRE_THROWS_WITH(Gemma4TextModel::open(file), Contains("layers.4.mlp.gate_proj.weight"));
  cfg = fixture_config();
  cfg["text_config"]["global_head_dim"] = 16;
  rewrite_te(file, [](std::string&, Tensor&) { return true; }, {{"gemma_config", cfg.dump()}});
  REQUIRE_THROWS_WITH(Gemma4TextModel::open(file), Contains("layers.1.self_attn.q_proj.weight"));
  // A Gemma 3 config is not taken for a Gemma 4 one.
  REQUIRE_THROWS_WITH(Gemma4TextModel::open(test::golden_dir("gemma3_tiny") + "/weights.safetensors"),
                      Contains("not gemma4_unified"));
}

// In bf16 on the CPU every op rounds to bf16 (the naive bf16 run the GPU path is judged against):
// close to the fixture, yet not equal to the float32 run.
TEST_CASE("gemma4: placed in bf16 on the CPU, the decoder stays within bf16 error of the fixture") {
  auto model = Gemma4TextModel::open(te_file(), DType::BF16, Device::cpu());
  std::vector<Tensor> states = run(*model);
  REQUIRE(states.back().dtype() == DType::BF16);
  for (Tensor& s : states) s = s.to(DType::F32);
  const Tensor expected = test::io_tensor(kCase, "out.hidden_states");
  const float scale = test::max_abs_diff(expected, ops::mul(expected, 0.f));
  const float err = test::max_valid_row_diff(states, kCase);
  INFO("bf16 error " << err << " of outputs up to " << scale);
  REQUIRE(err > 2e-4f);
  REQUIRE(err < 0.05f * scale);
}

TEST_CASE("gemma4 tokenizer: <bos> is prepended only where the tokens do not start with one") {
  REQUIRE(format_prompt_ids({2, 7}, 2, 0, 5, true).ids == std::vector<int64_t>{0, 0, 0, 2, 7});
  REQUIRE(format_prompt_ids({7, 8}, 2, 0, 5, true).ids == std::vector<int64_t>{0, 0, 2, 7, 8});
  REQUIRE(format_prompt_ids({}, 2, 0, 3, true).ids == std::vector<int64_t>{0, 0, 2});
  REQUIRE(format_prompt_ids({2, 3, 4, 5}, 2, 0, 3, true).ids == std::vector<int64_t>{2, 3, 4});
  REQUIRE(format_prompt_ids({2, 7}, 2, 0, 5).ids == std::vector<int64_t>{0, 0, 2, 2, 7});  // Gemma 3
}

TEST_CASE("gemma4 tokenizer: the Split pre-tokenizer is accepted only after the space-escaping normalizer") {
  const Tensor t = SafetensorsFile::open(te_file())->tensor(kTokenizerJsonTensor);
  const json j = json::parse(std::string(static_cast<const char*>(t.data_ptr()), t.numel()));
  REQUIRE(j["pre_tokenizer"]["type"] == "Split");
  REQUIRE_NOTHROW(sentencepiece_model_from_tokenizer_json(j.dump(), "gemma4"));
  json bare = j;
  bare["normalizer"] = nullptr;
  REQUIRE_THROWS_WITH(sentencepiece_model_from_tokenizer_json(bare.dump(), "gemma4"),
                      Contains("pre_tokenizer"));
  json other = j;
  other["pre_tokenizer"]["behavior"] = "Isolated";
  REQUIRE_THROWS_WITH(sentencepiece_model_from_tokenizer_json(other.dump(), "gemma4"),
                      Contains("pre_tokenizer"));
}

TEST_CASE("gemma4 prompt encoder: the fixture's contexts, and --enhance-prompt refused naming the model") {
  auto ltx = WeightSet::open({connectors_file(), te_file()});
  PromptEncoder encoder(te_file(), ltx);
  const std::string prompt = test::case_json(kCase)["prompts"]["prompt"].get<std::string>();
  const EncodedPrompt e = encoder.encode({prompt}).at(0);
  REQUIRE(e.tokens.ids == test::io_tensor(kCase, "out.text.prompt.input_ids").to_vector_i64());
  REQUIRE(test::max_abs_diff(e.video_context, test::io_tensor(kCase, "out.text.prompt.video_context")) <
          2e-4f);
  REQUIRE(test::max_abs_diff(e.audio_context, test::io_tensor(kCase, "out.text.prompt.audio_context")) <
          2e-4f);
  REQUIRE_THROWS_WITH(encoder.encode({prompt}, EnhanceSettings{}), Contains("gemma4_unified"));
}

TEST_CASE("gemma4 prompt encoder: a Gemma whose version the checkpoint does not name is refused") {
  test::ScratchDir dir("text_gemma4_version");
  const std::string file = dir.file("te.safetensors");
  json cfg = fixture_config();
  cfg["gemma_version"] = "gemma-4-other";
  rewrite_te(file, [](std::string&, Tensor&) { return true; }, {{"gemma_config", cfg.dump()}});
  REQUIRE_THROWS_WITH(PromptEncoder(file, WeightSet::open({connectors_file(), file})),
                      Contains("trained with Gemma version 'gemma-4-tiny-test'"));
}
