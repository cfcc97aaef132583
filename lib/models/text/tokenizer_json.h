// A Hugging Face tokenizer.json of the Gemma kind as a SentencePiece model, so that SentencePiece
// tokenizes for files that carry no tokenizer.model: the reference's packed text-encoder file
// (tensor `tokenizer_json`) and Gemma folders with only tokenizer.json.
//
// What is converted, and refused otherwise (one line naming the source and the field): a "BPE"
// model with byte fallback or none, no pre-tokenizer (SentencePiece's BPE does not split words
// either; the Split(" ", merged_with_previous) that Gemma 4's file carries is accepted after the
// space-escaping normalizer, where no space is left for it to split at), no normalizer or the
// Replace(" " -> "▁") one (SentencePiece's whitespace escaping), no
// subword prefix or suffix, no dropout, ids 0..N-1 each used once over the vocabulary and the added
// tokens. Pieces keep their ids; special added tokens become control pieces (unk_token the unknown
// one), other added tokens user-defined pieces, <0xNN> byte pieces when byte fallback is on.
//
// Why the merges become scores: Hugging Face's BPE applies the lowest-ranked merge first;
// SentencePiece's merges the adjacent pair whose concatenation is the highest-scored piece. A piece
// scored minus the rank of the first merge that forms it gives the same order (converted Gemma files
// list a piece's merges together, ordered by piece). A piece no merge forms is "unused" with the
// lowest score: SentencePiece then forms it only when nothing else merges and splits it back at the
// end, as Hugging Face never forms it.
#pragma once

#include <string>

namespace ltx2 {

// The serialized SentencePiece ModelProto (for SentencePieceProcessor::LoadFromSerializedProto).
// `source` names the file in errors.
std::string sentencepiece_model_from_tokenizer_json(const std::string& tokenizer_json,
                                                    const std::string& source);

}  // namespace ltx2
