// The tiny model set's tokenizer: a byte-fallback BPE SentencePiece model trained from a small
// built-in English corpus, with Gemma's special pieces at Gemma's ids (<pad> 0, <eos> 1, <bos> 2,
// <unk> 3, then <start_of_turn>, <end_of_turn>, <start_of_image>, <end_of_image>,
// <image_soft_token>) and Gemma's normalisation (no dummy prefix, whitespace kept, digits split),
// so that GemmaTokenizer reads it as it reads the real tokenizer.model.
#pragma once

#include <cstdint>
#include <string>

namespace ltx2::model_sets {

inline constexpr int64_t kTinyTokenizerVocab = 512;

// The serialized ModelProto (the bytes of a tokenizer.model). Training runs single-threaded over a
// fixed corpus, so the same bytes come out every time.
std::string train_tiny_tokenizer();

}  // namespace ltx2::model_sets
