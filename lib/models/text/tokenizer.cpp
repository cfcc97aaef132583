// Gemma prompt tokenization (see tokenizer.h).
#include "models/text/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/text/tokenizer_json.h"
#include "models/text/utf8.h"

namespace ltx2 {

namespace fs = std::filesystem;

int64_t TokenizedPrompt::num_tokens() const {
  int64_t n = 0;
  for (int64_t m : mask) n += m;
  return n;
}

TokenizedPrompt format_prompt_ids(const std::vector<int64_t>& raw_ids, int64_t bos_id, int64_t pad_id,
                                  int64_t max_length, bool bos_if_absent) {
  LTX2_CHECK(max_length > 0, "tokenizer: max length must be positive, got {}", max_length);
  std::vector<int64_t> tokens;
  if (!bos_if_absent || raw_ids.empty() || raw_ids.front() != bos_id) tokens.push_back(bos_id);
  for (int64_t id : raw_ids) {
    if (static_cast<int64_t>(tokens.size()) == max_length) break;
    tokens.push_back(id);
  }
  TokenizedPrompt out;
  int64_t pads = max_length - static_cast<int64_t>(tokens.size());
  out.ids.assign(pads, pad_id);
  out.mask.assign(pads, 0);
  out.ids.insert(out.ids.end(), tokens.begin(), tokens.end());
  out.mask.insert(out.mask.end(), tokens.size(), 1);
  return out;
}

namespace {

bool is_python_whitespace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

}  // namespace

std::string strip_unicode_whitespace(const std::string& text) {
  size_t begin = 0, len = 0;
  while (begin < text.size() && is_python_whitespace(utf8::code_point_at(text, begin, &len))) begin += len;
  size_t end = text.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<uint8_t>(text[start]) & 0xc0) == 0x80) --start;
    if (utf8::code_point_at(text, start, &len) != utf8::kReplacement && start + len == end &&
        is_python_whitespace(utf8::code_point_at(text, start, &len)))
      end = start;
    else
      break;
  }
  return text.substr(begin, end - begin);
}

GemmaTokenizerLocation locate_gemma_tokenizer(const std::string& source) {
  using Kind = GemmaTokenizerLocation::Kind;
  const fs::path path(source);
  if (fs::is_directory(path)) {
    if (fs::is_regular_file(path / "tokenizer.model"))
      return {Kind::SentencePieceFile, (path / "tokenizer.model").string(), {}};
    LTX2_CHECK(fs::is_regular_file(path / "tokenizer.json"),
               "{}: Gemma folder has neither tokenizer.model nor tokenizer.json", source);
    return {Kind::TokenizerJsonFile, (path / "tokenizer.json").string(), {}};
  }
  LTX2_CHECK(fs::is_regular_file(path), "{}: no such Gemma tokenizer, folder or text-encoder file", source);
  if (path.extension() == ".json") return {Kind::TokenizerJsonFile, source, {}};
  if (path.extension() != ".safetensors") return {Kind::SentencePieceFile, source, {}};
  auto file = SafetensorsFile::open(source);
  for (auto [kind, tensor] : {std::pair{Kind::SentencePieceTensor, kSentencePieceTensor},
                              std::pair{Kind::TokenizerJsonTensor, kTokenizerJsonTensor}}) {
    if (!file->contains(tensor)) continue;
    LTX2_CHECK(file->info(tensor).dtype == DType::U8, "{}: tensor '{}' is not uint8 bytes", source, tensor);
    return {kind, source, tensor};
  }
  LTX2_FAIL("{}: holds no tokenizer (tensor '{}' or '{}')", source, kTokenizerJsonTensor,
            kSentencePieceTensor);
}

namespace {

GemmaTokenizerModel read_tokenizer_at(const GemmaTokenizerLocation& at) {
  using Kind = GemmaTokenizerLocation::Kind;
  std::string bytes, origin = at.path;
  if (at.tensor.empty()) {
    std::ifstream in(at.path, std::ios::binary);
    LTX2_CHECK(in, "{}: cannot read the tokenizer file", at.path);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  } else {
    const Tensor t = SafetensorsFile::open(at.path)->read(at.tensor);
    bytes.assign(static_cast<const char*>(t.data_ptr()), t.numel());
    origin += " (tensor " + at.tensor + ")";
  }
  const bool json = at.kind == Kind::TokenizerJsonFile || at.kind == Kind::TokenizerJsonTensor;
  return {json ? sentencepiece_model_from_tokenizer_json(bytes, origin) : std::move(bytes), origin};
}

}  // namespace

GemmaTokenizerModel read_gemma_tokenizer(const std::string& source) {
  return read_tokenizer_at(locate_gemma_tokenizer(source));
}

GemmaTokenizer::GemmaTokenizer(const std::string& gemma_source, int64_t max_length)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()),
      location_(locate_gemma_tokenizer(gemma_source)),
      max_length_(max_length) {
  const GemmaTokenizerModel model = read_tokenizer_at(location_);
  auto status = sp_->LoadFromSerializedProto(model.proto);
  LTX2_CHECK(status.ok(), "{}: cannot load the SentencePiece model: {}", model.origin, status.ToString());
  bos_id_ = sp_->bos_id() >= 0 ? sp_->bos_id() : sp_->PieceToId("<bos>");
  LTX2_CHECK(bos_id_ >= 0 && sp_->IdToPiece(static_cast<int>(bos_id_)) == "<bos>",
             "{}: the vocabulary has no <bos> token", model.origin);
  int pad = sp_->pad_id() >= 0 ? sp_->pad_id() : sp_->eos_id();
  LTX2_CHECK(pad >= 0, "{}: the vocabulary has neither a pad nor an eos token", model.origin);
  pad_id_ = pad;
  for (int id = 0; id < sp_->GetPieceSize(); ++id)
    if (sp_->IsControl(id) || sp_->IsUnknown(id)) literal_specials_.emplace_back(sp_->IdToPiece(id), id);
  std::sort(literal_specials_.begin(), literal_specials_.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::vector<int64_t> GemmaTokenizer::encode_text(const std::string& text) const {
  std::vector<int64_t> out;
  auto encode_plain = [&](size_t begin, size_t end) {
    if (begin == end) return;
    std::vector<int> ids;
    auto status = sp_->Encode(text.substr(begin, end - begin), &ids);
    LTX2_CHECK(status.ok(), "tokenizer: cannot encode the prompt: {}", status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
  };
  size_t plain_start = 0, i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    for (const auto& special : literal_specials_)
      if (!special.first.empty() && text.compare(i, special.first.size(), special.first) == 0) {
        hit = &special;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    encode_plain(plain_start, i);
    out.push_back(hit->second);
    i += hit->first.size();
    plain_start = i;
  }
  encode_plain(plain_start, text.size());
  return out;
}

GemmaTokenizer::~GemmaTokenizer() = default;

std::vector<int64_t> GemmaTokenizer::tokenize(const std::string& text) const {
  return encode_text(text);
}

std::string GemmaTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::call_once(special_made_, [this] {
    special_.resize(sp_->GetPieceSize());
    for (int id = 0; id < sp_->GetPieceSize(); ++id) special_[id] = sp_->IsControl(id) || sp_->IsUnknown(id);
    const fs::path beside = fs::path(location_.path).parent_path() / "tokenizer.json";
    if (location_.kind == GemmaTokenizerLocation::Kind::SentencePieceFile && fs::is_regular_file(beside)) {
      std::ifstream in(beside);
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      LTX2_CHECK(j.is_object(), "{}: not valid JSON", beside.string());
      for (const nlohmann::json& t : j.value("added_tokens", nlohmann::json::array())) {
        const int64_t id = t.value("id", int64_t{-1});
        if (t.value("special", false) && id >= 0 && id < sp_->GetPieceSize()) special_[id] = true;
      }
    }
  });
  std::string out, bytes;
  size_t byte_pieces = 0;
  auto flush = [&] {
    if (utf8::valid(bytes))
      out += bytes;
    else
      for (size_t i = 0; i < byte_pieces; ++i) out += "\xef\xbf\xbd";  // U+FFFD
    bytes.clear();
    byte_pieces = 0;
  };
  for (int64_t id : ids) {
    LTX2_CHECK(id >= 0 && id < sp_->GetPieceSize(), "tokenizer: id {} is outside the vocabulary of {}", id,
               sp_->GetPieceSize());
    const int piece_id = static_cast<int>(id);
    if (special_[piece_id]) continue;
    if (sp_->IsByte(piece_id)) {
      bytes.push_back(static_cast<char>(std::stoi(sp_->IdToPiece(piece_id).substr(3, 2), nullptr, 16)));
      ++byte_pieces;
      continue;
    }
    flush();
    out += utf8::replace_all(sp_->IdToPiece(piece_id), "\xe2\x96\x81", " ");
  }
  flush();
  return out;
}

TokenizedPrompt GemmaTokenizer::encode(const std::string& prompt) const {
  return format_prompt_ids(encode_text(strip_unicode_whitespace(prompt)), bos_id_, pad_id_, max_length_,
                           !tokenizer_adds_bos_);
}

std::pair<Tensor, Tensor> GemmaTokenizer::encode_batch(const std::vector<std::string>& prompts) const {
  std::vector<int64_t> ids, mask;
  for (const std::string& p : prompts) {
    TokenizedPrompt t = encode(p);
    ids.insert(ids.end(), t.ids.begin(), t.ids.end());
    mask.insert(mask.end(), t.mask.begin(), t.mask.end());
  }
  int64_t n = static_cast<int64_t>(prompts.size());
  return {Tensor::from_vector_i64(ids, {n, max_length_}), Tensor::from_vector_i64(mask, {n, max_length_})};
}

}  // namespace ltx2
