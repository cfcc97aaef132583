// Prompt enhancement's parts: the chat format, Hugging Face's decode rule for Gemma (expected texts
// from the `tokenizers` library's decode(skip_special_tokens=True) on the fixture's tokenizer.json),
// the reference's clean_response, the key/value cache against the full forward, and greedy decoding.
// The whole enhancement against the reference is the golden case enhance_prompt.
#include "core/error.h"
#include "models/text/gemma3.h"
#include "models/text/prompt_enhancer.h"
#include "models/text/tokenizer.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "text_fixtures.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

std::string gemma_folder() {
  return test::golden_dir("pipeline_ti2vid") + "/gemma";
}

}  // namespace

TEST_CASE("enhance: Gemma 3's chat format puts the system text in the first user turn") {
  REQUIRE(gemma3_chat("Be brief.", "  user prompt: a fox \n") ==
          "<bos><start_of_turn>user\nBe brief.\n\nuser prompt: a fox<end_of_turn>\n<start_of_turn>model\n");
  const auto spec = test::case_json("enhance_prompt");
  REQUIRE(spec["chat_text"].get<std::string>() ==
          gemma3_chat(spec["system_prompt"].get<std::string>(),
                      "user prompt: " + spec["prompt"].get<std::string>()));
}

TEST_CASE("enhance: ids decode as Hugging Face's tokenizer decodes them, byte runs included") {
  GemmaTokenizer tok(gemma_folder());
  const std::string fffd = "\xef\xbf\xbd";
  REQUIRE(tok.decode({2, 492, 3, 47, 1, 47}) == "q&&");  // specials skipped, the byte run joined across
  REQUIRE(tok.decode({204, 178, 492}) == "\xc3\xa9q");   // a valid UTF-8 run
  REQUIRE(tok.decode({204, 492, 178}) == fffd + "q" + fffd);
  REQUIRE(tok.decode({47, 5, 168}) == fffd + fffd);  // an invalid run: one U+FFFD per byte, '&' too
  // <end_of_turn> (5) is special for tokenizer.json, user-defined for SentencePiece: skipped from
  // either source.
  REQUIRE(GemmaTokenizer(gemma_folder() + "/tokenizer.json").decode({47, 5, 168}) == fffd + fffd);
  REQUIRE(tok.decode({491, 340, 476}) == "A red");
  REQUIRE(tok.decode({249, 168, 175, 147}) == "\xf0\x9f\xa6\x8a");
  REQUIRE(tok.decode({}).empty());
  REQUIRE_THROWS_WITH(tok.decode({512}), "tokenizer: id 512 is outside the vocabulary of 512");
  // tokenize is encode's raw ids: no <bos>, no stripping.
  REQUIRE(tok.tokenize("A red fox") == std::vector<int64_t>{491, 340, 476, 373, 490});
}

TEST_CASE("enhance: the reference's clean_response") {
  REQUIRE(clean_enhanced_prompt("\xe2\x80\x9c"
                                "A fox\xe2\x80\x99s tail\xe2\x80\x9d \xe2\x80\x94 dawn") ==
          "A fox's tail\" - dawn");
  REQUIRE(clean_enhanced_prompt("** 1. A fox") == "A fox");
  REQUIRE(clean_enhanced_prompt("\n\n\xc2\xab\xc3\x89lan\xc2\xbb") ==
          "\xc3\x89lan\xc2\xbb");                                   // a non-ASCII letter
  REQUIRE(clean_enhanced_prompt("12 \xe2\x88\x92 3") == "12 - 3");  // no letter: kept whole
  REQUIRE(clean_enhanced_prompt("").empty());
}

TEST_CASE("enhance: the key/value cache gives the full forward's last hidden state, chunk by chunk") {
  auto gemma = Gemma3TextModel::open(gemma_folder());
  GemmaTokenizer tok(gemma_folder());
  // Longer than the tiny model's sliding window (4), so the cached path must apply it.
  std::vector<int64_t> ids = {tok.bos_id()};
  for (int64_t id : tok.tokenize("A red fox trots across a snowy meadow at dawn")) ids.push_back(id);
  const auto T = static_cast<int64_t>(ids.size());
  const std::vector<Tensor> full = gemma->forward(
      Tensor::from_vector_i64(ids, {1, T}), Tensor::from_vector_i64(std::vector<int64_t>(T, 1), {1, T}));
  auto cache = gemma->make_cache(T);
  Tensor last;
  for (int64_t at = 0; at < T; at += 3)
    last = gemma->extend(std::vector<int64_t>(ids.begin() + at, ids.begin() + std::min(at + 3, T)), cache);
  REQUIRE(cache.length == T);
  REQUIRE(test::max_abs_diff(last, full.back().select(1, T - 1)) < 1e-5f);
  REQUIRE_THROWS_WITH(gemma->extend({2}, cache), "gemma: " + std::to_string(T + 1) +
                                                     " tokens exceed the key/value cache's " +
                                                     std::to_string(T) + " positions");
}

TEST_CASE("enhance: greedy decoding stops at max_new_tokens or an end-of-sequence id") {
  auto gemma = Gemma3TextModel::open(gemma_folder());
  GemmaTokenizer tok(gemma_folder());
  EnhanceSettings s;
  s.system_prompt = "Be brief.";
  s.max_new_tokens = 3;
  const EnhancedPrompt e = enhance_prompt(*gemma, tok, "a fox", s, true);
  REQUIRE(e.generated_ids.size() == 3);
  REQUIRE(e.logits.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<float> l = e.logits[i].to_vector();
    REQUIRE(e.generated_ids[i] == std::max_element(l.begin(), l.end()) - l.begin());
  }
  REQUIRE(e.prompt_ids.front() == tok.bos_id());
  REQUIRE(e.prompt_ids.at(1) == tok.bos_id());  // the processor's <bos>, then the chat's
  s.max_new_tokens = 0;
  REQUIRE_THROWS_WITH(enhance_prompt(*gemma, tok, "a fox", s), Contains("max_new_tokens must be at least 1"));
  REQUIRE(gemma->config().eos_token_ids == std::vector<int64_t>{1, 5});
}
