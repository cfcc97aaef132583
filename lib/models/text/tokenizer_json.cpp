// tokenizer.json -> SentencePiece ModelProto (see tokenizer_json.h).
#include "models/text/tokenizer_json.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/error.h"
#include "models/text/utf8.h"

namespace ltx2 {

namespace {

using json = nlohmann::json;

// The protobuf wire format, as much of it as ModelProto needs. Field numbers are those of
// SentencePiece's sentencepiece_model.proto (the library installs no generated header).
class ProtoWriter {
 public:
  void varint_field(int field, uint64_t v) {
    key(field, 0);
    varint(v);
  }
  void int_field(int field, int64_t v) {
    varint_field(field, static_cast<uint64_t>(v));
  }  // int32: sign-extended
  void float_field(int field, float v) {
    key(field, 5);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  void bytes_field(int field, const std::string& v) {
    key(field, 2);
    varint(v.size());
    out_ += v;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
  void key(int field, int wire_type) { varint((static_cast<uint64_t>(field) << 3) | wire_type); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
};

// ModelProto.SentencePiece.Type
enum class PieceType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct Piece {
  std::string text;
  PieceType type = PieceType::Normal;
  std::optional<int64_t> first_merge;  // rank of the first merge that forms it
};

constexpr const char* kSpaceMark = "\xe2\x96\x81";  // U+2581, SentencePiece's escaped space

bool is_byte_piece(const std::string& p) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && hex(p[3]) && hex(p[4]) && p[5] == '>';
}

// true when the normalizer escapes spaces as U+2581; refuses any other normalizer.
bool escapes_spaces(const json& normalizer, const std::string& source) {
  if (normalizer.is_null()) return false;
  const bool replace_space = normalizer.value("type", "") == "Replace" && normalizer.contains("pattern") &&
                             normalizer["pattern"].value("String", "") == " " &&
                             normalizer.value("content", "") == kSpaceMark;
  LTX2_CHECK(replace_space,
             "{}: tokenizer.json normalizer {} is not supported (only Replace \" \" -> \"{}\")", source,
             normalizer.dump(), kSpaceMark);
  return true;
}

// Split(" ", merged_with_previous): transformers' GemmaTokenizer writes it, and Gemma 4's
// tokenizer.json has it. After the Replace(" " -> "▁") normalizer no space is left to split at, so
// it changes nothing.
bool splits_at_spaces_only(const json& pre) {
  return pre.is_object() && pre.value("type", "") == "Split" && pre.contains("pattern") &&
         pre["pattern"].is_object() && pre["pattern"].value("String", "") == " " &&
         pre.value("behavior", "") == "MergedWithPrevious" && pre.value("invert", true) == false;
}

}  // namespace

std::string sentencepiece_model_from_tokenizer_json(const std::string& tokenizer_json,
                                                    const std::string& source) {
  json j;
  try {
    j = json::parse(tokenizer_json);
  } catch (const json::exception& e) {
    LTX2_FAIL("{}: tokenizer.json is not valid JSON: {}", source, e.what());
  }
  LTX2_CHECK(j.is_object() && j.contains("model") && j["model"].is_object(),
             "{}: tokenizer.json has no model", source);
  const json& model = j["model"];
  LTX2_CHECK(model.value("type", "") == "BPE", "{}: tokenizer.json model type '{}' is not BPE", source,
             model.value("type", ""));
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"})
    LTX2_CHECK(!model.contains(field) || model[field].is_null() || model[field] == "",
               "{}: tokenizer.json model.{} is not supported", source, field);
  LTX2_CHECK(!model.contains("dropout") || model["dropout"].is_null() || model["dropout"] == 0,
             "{}: tokenizer.json model.dropout is not supported", source);
  const bool escape = escapes_spaces(j.value("normalizer", json()), source);
  LTX2_CHECK(!j.contains("pre_tokenizer") || j["pre_tokenizer"].is_null() ||
                 (escape && splits_at_spaces_only(j["pre_tokenizer"])),
             "{}: tokenizer.json has a pre_tokenizer ({}); only tokenizers without one (or with Split(\" \", "
             "merged_with_previous) after the space-escaping normalizer) are supported",
             source, j["pre_tokenizer"].dump());
  const bool byte_fallback = model.value("byte_fallback", false);
  LTX2_CHECK(model.contains("vocab") && model["vocab"].is_object(), "{}: tokenizer.json has no model.vocab",
             source);

  std::map<int64_t, Piece> by_id;
  std::map<std::string, int64_t> id_of;
  auto add = [&](const std::string& text, const json& id_json, PieceType type) {
    LTX2_CHECK(id_json.is_number_integer() && id_json.get<int64_t>() >= 0,
               "{}: tokenizer.json token '{}' has no valid id", source, text);
    const int64_t id = id_json.get<int64_t>();
    LTX2_CHECK(!text.empty(), "{}: tokenizer.json has an empty token (id {})", source, id);
    auto [it, fresh] = by_id.emplace(id, Piece{text, type, std::nullopt});
    if (!fresh) {
      LTX2_CHECK(it->second.text == text, "{}: tokenizer.json gives id {} to both '{}' and '{}'", source, id,
                 it->second.text, text);
      it->second.type = type;  // an added token declared in the vocabulary too
    }
    id_of[text] = id;
  };
  for (const auto& [text, id] : model["vocab"].items())
    add(text, id, byte_fallback && is_byte_piece(text) ? PieceType::Byte : PieceType::Normal);
  const std::string unk = model.value("unk_token", "");
  for (const json& t : j.value("added_tokens", json::array())) {
    const std::string content = t.value("content", "");
    const PieceType type = content == unk              ? PieceType::Unknown
                           : t.value("special", false) ? PieceType::Control
                                                       : PieceType::UserDefined;
    add(type == PieceType::UserDefined && escape ? utf8::replace_all(content, " ", kSpaceMark) : content, t.value("id", json()),
        type);
  }
  LTX2_CHECK(!unk.empty() && id_of.count(unk), "{}: tokenizer.json names no unk_token in its vocabulary",
             source);
  by_id[id_of[unk]].type = PieceType::Unknown;
  const int64_t n = static_cast<int64_t>(by_id.size());
  LTX2_CHECK(by_id.rbegin()->first == n - 1, "{}: tokenizer.json ids are not 0..{} (the largest is {})",
             source, n - 1, by_id.rbegin()->first);

  const json merges = model.value("merges", json::array());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string left, right;
    if (m.is_string()) {  // "left right" (older files)
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      LTX2_CHECK(space != std::string::npos, "{}: tokenizer.json merge {} '{}' is not a pair", source, rank,
                 s);
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else {
      LTX2_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
                 "{}: tokenizer.json merge {} is not a pair of strings", source, rank);
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    }
    auto it = id_of.find(left + right);
    LTX2_CHECK(it != id_of.end(), "{}: tokenizer.json merge {} forms '{}', which is not in the vocabulary",
               source, rank, left + right);
    Piece& p = by_id[it->second];
    if (!p.first_merge) p.first_merge = static_cast<int64_t>(rank);
  }

  ProtoWriter proto;
  const float lowest = -static_cast<float>(merges.size()) - 1.f;
  auto several_chars = [](const std::string& text) {
    size_t first = 0;
    utf8::code_point_at(text, 0, &first);
    return first < text.size();
  };
  for (auto& [id, p] : by_id) {
    float score = 0.f;
    if (p.type == PieceType::Normal && p.first_merge) {
      score = -static_cast<float>(*p.first_merge);
    } else if (p.type == PieceType::Normal && several_chars(p.text)) {
      p.type = PieceType::Unused;
      score = lowest;
    }
    ProtoWriter piece;
    piece.bytes_field(1, p.text);  // piece
    piece.float_field(2, score);   // score
    piece.int_field(3, static_cast<int64_t>(p.type));
    proto.bytes_field(1, piece.bytes());  // ModelProto.pieces
  }
  auto id_or_none = [&](const char* piece) -> int64_t {
    auto it = id_of.find(piece);
    return it != id_of.end() && by_id[it->second].type == PieceType::Control ? it->second : -1;
  };
  ProtoWriter trainer;
  trainer.int_field(3, 2);  // model_type BPE
  trainer.int_field(4, n);  // vocab_size
  trainer.varint_field(35, byte_fallback ? 1 : 0);
  trainer.int_field(40, id_of[unk]);
  trainer.int_field(41, id_or_none("<bos>"));
  trainer.int_field(42, id_or_none("<eos>"));
  trainer.int_field(43, id_or_none("<pad>"));
  trainer.bytes_field(45, unk);
  trainer.bytes_field(46, "<bos>");
  trainer.bytes_field(47, "<eos>");
  trainer.bytes_field(48, "<pad>");
  proto.bytes_field(2, trainer.bytes());
  ProtoWriter normalizer;
  normalizer.bytes_field(1, "identity");
  normalizer.varint_field(3, 0);  // add_dummy_prefix
  normalizer.varint_field(4, 0);  // remove_extra_whitespaces
  normalizer.varint_field(5, escape ? 1 : 0);
  proto.bytes_field(3, normalizer.bytes());
  return proto.bytes();
}

}  // namespace ltx2
