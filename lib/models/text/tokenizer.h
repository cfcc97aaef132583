// The prompt tokenizer of LTX's Gemma text encoder: SentencePiece (the Gemma folder's
// tokenizer.model, or a tokenizer.json converted to one) plus the reference's prompt handling
// (LTXGemmaTokenizer): the prompt is str.strip()ped, tokenized without a chat template, starts with <bos>,
// gets no <eos>, is cut to max_length and LEFT-padded with <pad> (eos when the vocabulary has no pad) to
// exactly max_length.
//
// The reference tokenizes with Hugging Face's tokenizer.json, which recognises its special tokens
// (<bos>, <eos>, <pad>, <unk>, ...) written literally in the text; SentencePiece already does so for
// its user-defined pieces but spells its control and unknown pieces out character by character, so
// those are split out of the text first and the pieces between them are encoded on their own.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/layout.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace ltx2 {

inline constexpr int64_t kGemmaTokenizerMaxLength = 1024;

struct TokenizedPrompt {
  std::vector<int64_t> ids;   // max_length ids, pads first
  std::vector<int64_t> mask;  // 0 for pads, 1 for tokens
  int64_t num_tokens() const;
};

// The reference's BOS/truncate/left-pad rule on raw ids (without BOS): [bos] + raw cut to
// max_length, then pads on the left. With `bos_if_absent` (Gemma 4, whose tokenizer adds no <bos>:
// LTXGemmaTokenizer prepends one only when the ids do not already start with it), raw ids that
// start with <bos> get no second one.
TokenizedPrompt format_prompt_ids(const std::vector<int64_t>& raw_ids, int64_t bos_id, int64_t pad_id,
                                  int64_t max_length, bool bos_if_absent = false);

// Python's str.strip() on UTF-8 text (every Unicode whitespace code point Python strips).
std::string strip_unicode_whitespace(const std::string& text);

// Where a Gemma source keeps its tokenizer. The source is a Gemma folder (its tokenizer.model, else
// its tokenizer.json), a text-encoder .safetensors file (tensor spiece_model, else tokenizer_json), a
// tokenizer.json or a tokenizer.model file. Reads no more than a safetensors header; throws naming
// the source when there is no tokenizer.
struct GemmaTokenizerLocation {
  enum class Kind { SentencePieceFile, TokenizerJsonFile, SentencePieceTensor, TokenizerJsonTensor };
  Kind kind;
  std::string path;
  std::string tensor;  // the *Tensor kinds: the tensor's name in `path`
};
GemmaTokenizerLocation locate_gemma_tokenizer(const std::string& source);

// A Gemma source's tokenizer as a serialized SentencePiece model (tokenizer.json converted:
// tokenizer_json.h), and where it was read, for messages.
struct GemmaTokenizerModel {
  std::string proto;
  std::string origin;
};
GemmaTokenizerModel read_gemma_tokenizer(const std::string& source);

class GemmaTokenizer {
 public:
  // The tokenizer of a Gemma source (read_gemma_tokenizer).
  explicit GemmaTokenizer(const std::string& gemma_source, int64_t max_length = kGemmaTokenizerMaxLength);
  ~GemmaTokenizer();
  GemmaTokenizer(const GemmaTokenizer&) = delete;
  GemmaTokenizer& operator=(const GemmaTokenizer&) = delete;

  TokenizedPrompt encode(const std::string& prompt) const;
  // Raw ids of a text, as Hugging Face's tokenizer gives them without special tokens added (no
  // stripping, no <bos>; special tokens written in the text are recognised).
  std::vector<int64_t> tokenize(const std::string& text) const;
  // Text of ids as Hugging Face's decode(skip_special_tokens=True) gives it for Gemma's
  // tokenizer.json: special tokens dropped, U+2581 read as a space, and each run of byte pieces
  // joined into its UTF-8 text, or one U+FFFD per byte when the run is not valid UTF-8 (its
  // ByteFallback decoder). The special tokens are tokenizer.json's (its added tokens marked
  // special, also when the ids come from the tokenizer.model beside it: SentencePiece types some
  // of them, <end_of_turn> for one, as user-defined); with no tokenizer.json, the control and
  // unknown pieces.
  std::string decode(const std::vector<int64_t>& ids) const;
  // Several prompts as one batch: ids and mask [N, max_length] int64.
  std::pair<Tensor, Tensor> encode_batch(const std::vector<std::string>& prompts) const;

  // Whether the reference's Hugging Face tokenizer puts <bos> first by itself: Gemma 3's does
  // (its post-processor; a prompt that starts with a literal "<bos>" then has two), Gemma 4's does
  // not (LTXGemmaTokenizer prepends one unless the tokens already start with it). Default: Gemma 3's.
  void set_tokenizer_adds_bos(bool adds) { tokenizer_adds_bos_ = adds; }

  int64_t bos_id() const { return bos_id_; }
  int64_t pad_id() const { return pad_id_; }
  int64_t max_length() const { return max_length_; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  GemmaTokenizerLocation location_;
  // By id, made by the first decode() (it may read tokenizer.json): once, whichever threads decode.
  mutable std::vector<bool> special_;
  mutable std::once_flag special_made_;
  std::vector<std::pair<std::string, int64_t>> literal_specials_;  // control/unknown pieces, longest first
  int64_t bos_id_ = 2, pad_id_ = 0, max_length_;
  bool tokenizer_adds_bos_ = true;

  std::vector<int64_t> encode_text(const std::string& text) const;
};

}  // namespace ltx2
