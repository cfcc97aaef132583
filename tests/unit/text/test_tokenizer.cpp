// Prompt tokenization: the reference's strip / <bos> / no <eos> / truncate / left-pad rule, checked
// against the tokens the golden pipelines recorded, and the edge cases of prompts.
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/text/tokenizer.h"
#include "models/text/tokenizer_json.h"
#include "models/text/utf8.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "text_fixtures.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

std::string gemma_root() {
  return test::golden_dir("pipeline_distilled") + "/gemma";
}

std::vector<int64_t> valid_ids(const TokenizedPrompt& t) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < t.ids.size(); ++i)
    if (t.mask[i]) out.push_back(t.ids[i]);
  return out;
}

}  // namespace

TEST_CASE("tokenizer: the BOS / truncate / left-pad rule matches the recorded probe") {
  auto spec = test::case_json("gemma3_tiny")["tokenizer_probe"];
  int64_t max_length = spec["max_length"].get<int64_t>();
  for (const char* name : {"short", "long"}) {
    auto raw = spec[std::string(name) + ".hf_raw_ids"].get<std::vector<int64_t>>();
    TokenizedPrompt t = format_prompt_ids(raw, 2, 0, max_length);
    std::string key = std::string("out.tokenizer.") + name;
    REQUIRE(t.ids == test::io_tensor("gemma3_tiny", key + ".input_ids").to_vector_i64());
    REQUIRE(t.mask == test::io_tensor("gemma3_tiny", key + ".attention_mask").to_vector_i64());
  }
}

TEST_CASE("tokenizer: prompts tokenize exactly as the reference recorded them") {
  GemmaTokenizer tok(gemma_root());
  REQUIRE(tok.bos_id() == 2);
  REQUIRE(tok.pad_id() == 0);
  for (const char* which : {"prompt", "negative_prompt"}) {
    auto spec = test::case_json("pipeline_ti2vid");
    TokenizedPrompt t = tok.encode(spec[which].get<std::string>());
    std::string key = std::string("out.text.") + which;
    REQUIRE(t.ids == test::io_tensor("pipeline_ti2vid", key + ".input_ids").to_vector_i64());
    REQUIRE(t.mask == test::io_tensor("pipeline_ti2vid", key + ".attention_mask").to_vector_i64());
    REQUIRE(t.num_tokens() == spec["tokens"][which]["num_valid_tokens"].get<int64_t>());
  }
}

TEST_CASE("tokenizer: empty and whitespace-only prompts are a lone <bos>") {
  GemmaTokenizer tok(gemma_root());
  for (const std::string& p : {std::string(""), std::string("   "), std::string(" \t\n\r\v\f "),
                               std::string("\xc2\xa0\xe3\x80\x80\xe2\x80\xa8")}) {
    TokenizedPrompt t = tok.encode(p);
    REQUIRE(t.ids.size() == 1024);
    REQUIRE(t.num_tokens() == 1);
    REQUIRE(t.ids.back() == 2);
    REQUIRE(t.mask.back() == 1);
    REQUIRE(t.ids.front() == 0);
    REQUIRE(t.mask.front() == 0);
  }
}

TEST_CASE("tokenizer: surrounding whitespace is stripped the way Python's str.strip() does") {
  REQUIRE(strip_unicode_whitespace("  a fox \t\n") == "a fox");
  REQUIRE(strip_unicode_whitespace("\xe3\x80\x80\xc2\xa0"
                                   "a  fox"
                                   "\xe2\x80\x83\xc2\x85") == "a  fox");
  // Zero-width space is not whitespace for Python; it stays.
  REQUIRE(strip_unicode_whitespace("\xe2\x80\x8b"
                                   "x") ==
          "\xe2\x80\x8b"
          "x");
  REQUIRE(strip_unicode_whitespace("\xe6\x9d\xb1") == "\xe6\x9d\xb1");
  GemmaTokenizer tok(gemma_root());
  REQUIRE(tok.encode("\n  A red fox.\xe3\x80\x80 ").ids == tok.encode("A red fox.").ids);
}

TEST_CASE("tokenizer: unicode prompts tokenize, start with <bos> and never end with <eos>") {
  GemmaTokenizer tok(gemma_root());
  std::string text = "Caf\xc3\xa9 au lait \xe2\x80\x94 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\xa6\x8a fox";
  TokenizedPrompt t = tok.encode(text);
  std::vector<int64_t> ids = valid_ids(t);
  REQUIRE(ids.size() > 4);
  REQUIRE(ids.front() == 2);
  REQUIRE(ids.back() != 1);
  for (int64_t id : ids) REQUIRE((id >= 0 && id < 512));
  REQUIRE(tok.encode(text + " ").ids == t.ids);
}

TEST_CASE("tokenizer: a very long prompt is cut to exactly 1024 tokens, <bos> first, no <eos>") {
  GemmaTokenizer tok(gemma_root());
  GemmaTokenizer wide(gemma_root(), 8192);
  std::string neg = test::case_json("pipeline_ti2vid")["negative_prompt"].get<std::string>();
  std::string prompt = neg + ", " + neg + ", " + neg;
  TokenizedPrompt full = wide.encode(prompt);
  REQUIRE(full.num_tokens() > 1024);
  TokenizedPrompt t = tok.encode(prompt);
  REQUIRE(t.ids.size() == 1024);
  REQUIRE(t.num_tokens() == 1024);
  REQUIRE(t.ids.front() == 2);
  std::vector<int64_t> untruncated = valid_ids(full);
  REQUIRE(t.ids == std::vector<int64_t>(untruncated.begin(), untruncated.begin() + 1024));
}

TEST_CASE("tokenizer: special tokens written in the prompt are recognised, as tokenizer.json does") {
  GemmaTokenizer tok(gemma_root());
  auto raw = [&](const std::string& text) {
    std::vector<int64_t> ids = valid_ids(tok.encode(text));
    return std::vector<int64_t>(ids.begin() + 1, ids.end());  // without the leading <bos>
  };
  std::vector<int64_t> want = {2};
  for (int64_t id : raw("a fox")) want.push_back(id);
  want.push_back(1);  // <eos>
  for (int64_t id : raw("b")) want.push_back(id);
  want.push_back(2);  // <bos>
  REQUIRE(valid_ids(tok.encode("a fox<eos>b<bos>")) == want);
  // User-defined pieces (<start_of_turn>) were already whole tokens for SentencePiece.
  REQUIRE(raw("<start_of_turn>") == std::vector<int64_t>{4});
  REQUIRE(raw("<unk>") == std::vector<int64_t>{3});
}

TEST_CASE("tokenizer: a batch holds each prompt's row") {
  GemmaTokenizer tok(gemma_root());
  auto [ids, mask] = tok.encode_batch({"a fox", ""});
  REQUIRE(ids.shape() == Shape({2, 1024}));
  REQUIRE(ids.select(0, 0).contiguous().to_vector_i64() == tok.encode("a fox").ids);
  REQUIRE(mask.select(0, 1).contiguous().to_vector_i64() == tok.encode("").mask);
}

TEST_CASE("tokenizer: a Gemma folder without a tokenizer is refused, naming the file") {
  test::ScratchDir dir("text_no_tokenizer");
  REQUIRE_THROWS_WITH(GemmaTokenizer(dir.path()), Contains("neither tokenizer.model nor tokenizer.json"));
  test::write_bytes(dir.file("tokenizer.model"), "not a sentencepiece model");
  REQUIRE_THROWS_WITH(GemmaTokenizer(dir.path()), Contains("cannot load the SentencePiece model"));
}

namespace {

// Prompts that stress the merges: the fixtures' prompts, odd whitespace and characters, and strings
// glued from random vocabulary pieces (so that every merge order is exercised).
std::vector<std::string> tokenizer_corpus() {
  auto spec = test::case_json("pipeline_ti2vid");
  std::vector<std::string> corpus = {spec["prompt"].get<std::string>(), spec["negative_prompt"].get<std::string>(),
                                     "a  fox\t\tin\n\nthe   snow ", "Caf\xc3\xa9 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\xa6\x8a",
                                     "<start_of_turn>user hi<end_of_turn><eos>x<pad>", "aaaaaaaaaaaaa bbbbbbb  ",
                                     "ingingnging the the thethe"};
  const nlohmann::json vocab =
      nlohmann::json::parse(test::read_bytes(gemma_root() + "/tokenizer.json"))["model"]["vocab"];
  std::vector<std::string> pieces;
  const std::string space_mark = "\xe2\x96\x81";  // pieces spell spaces as U+2581
  for (const auto& [piece, id] : vocab.items()) {
    if (piece.empty() || piece[0] == '<') continue;
    std::string text;
    for (size_t i = 0; i < piece.size();)
      if (piece.compare(i, 3, space_mark) == 0) {
        text += ' ';
        i += 3;
      } else {
        text += piece[i++];
      }
    pieces.push_back(text);
  }
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int line = 0; line < 200; ++line) {
    std::string text;
    for (int k = 0, n = 2 + static_cast<int>(next() % 12); k < n; ++k) text += pieces[next() % pieces.size()];
    corpus.push_back(text);
  }
  return corpus;
}

}  // namespace

TEST_CASE("tokenizer: a tokenizer.json, converted, tokenizes as the folder's tokenizer.model") {
  for (const char* fixture : {"pipeline_distilled", "pipeline_ti2vid"}) {
    const std::string folder = test::golden_dir(fixture) + "/gemma";
    GemmaTokenizer from_model(folder), from_json(folder + "/tokenizer.json");
    REQUIRE(from_json.bos_id() == from_model.bos_id());
    REQUIRE(from_json.pad_id() == from_model.pad_id());
    for (const std::string& text : tokenizer_corpus()) {
      INFO(fixture << ": " << text);
      REQUIRE(from_json.encode(text).ids == from_model.encode(text).ids);
    }
  }
}

TEST_CASE("tokenizer: a text-encoder file carries its tokenizer as tokenizer_json or spiece_model bytes") {
  test::ScratchDir dir("text_tokenizer_tensors");
  const std::string folder = gemma_root();
  auto bytes_tensor = [](const std::string& bytes) {
    Tensor t = Tensor::empty({static_cast<int64_t>(bytes.size())}, DType::U8);
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    return t;
  };
  const Tensor weight = Tensor::zeros({2, 2});
  write_safetensors(dir.file("json.safetensors"),
                    {{"tokenizer_json", bytes_tensor(test::read_bytes(folder + "/tokenizer.json"))}, {"w", weight}});
  write_safetensors(dir.file("spiece.safetensors"),
                    {{"spiece_model", bytes_tensor(test::read_bytes(folder + "/tokenizer.model"))}, {"w", weight}});
  write_safetensors(dir.file("none.safetensors"), {{"w", weight}});
  write_safetensors(dir.file("wide.safetensors"), {{"tokenizer_json", weight}});
  GemmaTokenizer reference(folder);
  const std::string prompt = test::case_json("pipeline_ti2vid")["prompt"].get<std::string>();
  REQUIRE(GemmaTokenizer(dir.file("json.safetensors")).encode(prompt).ids == reference.encode(prompt).ids);
  REQUIRE(GemmaTokenizer(dir.file("spiece.safetensors")).encode(prompt).ids == reference.encode(prompt).ids);
  REQUIRE_THROWS_WITH(GemmaTokenizer(dir.file("none.safetensors")),
                      dir.file("none.safetensors") + ": holds no tokenizer (tensor 'tokenizer_json' or 'spiece_model')");
  REQUIRE_THROWS_WITH(GemmaTokenizer(dir.file("wide.safetensors")),
                      dir.file("wide.safetensors") + ": tensor 'tokenizer_json' is not uint8 bytes");
}

TEST_CASE("tokenizer: a tokenizer.json this engine cannot convert is refused in one line naming what") {
  const nlohmann::json good = nlohmann::json::parse(test::read_bytes(gemma_root() + "/tokenizer.json"));
  auto refused = [&](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json j = good;
    spoil(j);
    try {
      sentencepiece_model_from_tokenizer_json(j.dump(), "t.json");
    } catch (const Error& e) {
      std::string msg = e.what();
      REQUIRE(msg.rfind("t.json: tokenizer.json ", 0) == 0);
      REQUIRE(msg.find('\n') == std::string::npos);
      return msg;
    }
    FAIL("not refused");
    return std::string();
  };
  REQUIRE_THAT(refused([](auto& j) { j["model"]["type"] = "Unigram"; }), Contains("model type 'Unigram' is not BPE"));
  REQUIRE_THAT(refused([](auto& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }), Contains("pre_tokenizer"));
  REQUIRE_THAT(refused([](auto& j) { j["normalizer"] = {{"type", "NFKC"}}; }), Contains("normalizer"));
  REQUIRE_THAT(refused([](auto& j) { j["model"]["continuing_subword_prefix"] = "##"; }),
               Contains("continuing_subword_prefix"));
  REQUIRE_THAT(refused([](auto& j) { j["model"]["unk_token"] = "<nope>"; }), Contains("unk_token"));
  REQUIRE_THAT(refused([](auto& j) { j["model"]["vocab"]["zzzz"] = 100000; }), Contains("ids are not 0.."));
  REQUIRE_THAT(refused([](auto& j) { j["model"]["vocab"]["zzzz"] = 5; }), Contains("gives id 5 to both"));
  REQUIRE_THAT(refused([](auto& j) { j["model"]["merges"].push_back({"q", "zzz"}); }),
               Contains("forms 'qzzz', which is not in the vocabulary"));
  REQUIRE_THAT(refused([](auto& j) { j["model"]["merges"].push_back(42); }), Contains("is not a pair of strings"));
  REQUIRE_THROWS_WITH(sentencepiece_model_from_tokenizer_json("{", "t.json"),
                      Contains("t.json: tokenizer.json is not valid JSON"));
}

TEST_CASE("utf8: code points, Rust's from_utf8 validity, replacing a piece") {
  size_t len = 0;
  REQUIRE(utf8::code_point_at("\xc3\xa9", 0, &len) == 0xe9);
  REQUIRE(len == 2);
  REQUIRE(utf8::code_point_at("\xc3", 0, &len) == utf8::kReplacement);  // truncated
  REQUIRE(len == 1);
  REQUIRE(utf8::valid("a \xc3\xa9 \xf0\x9f\xa6\x8a \xef\xbf\xbd"));
  REQUIRE(utf8::valid(""));
  for (const char* bad : {"\x9f", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "&\x9f"})
    REQUIRE_FALSE(utf8::valid(bad));  // stray, truncated, overlong (2, 3 bytes), surrogate, past U+10FFFF
  REQUIRE(utf8::replace_all("a b  c", " ", "\xe2\x96\x81") == "a\xe2\x96\x81" "b\xe2\x96\x81\xe2\x96\x81" "c");
  REQUIRE(utf8::replace_all("\xe2\x96\x81x\xe2\x96\x81", "\xe2\x96\x81", " ") == " x ");
}
