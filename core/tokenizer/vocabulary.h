// A tokenizer's data, independent of the file it came from: the token texts with their types
// and scores or merges, the special ids and the flags that say how text is normalised.
//
// The loaders fill it from GGUF metadata (gguf_vocabulary.h), a Hugging Face tokenizer.json
// (hf_vocabulary.h), a SentencePiece tokenizer.model or GPT-2 style encoder.json + vocab.bpe
// (legacy_vocabulary.h); a Tokenizer (tokenizer.h) is built from it.
//
// Token texts are stored the way the model stores them: Metaspace vocabularies keep '▁' for a
// space and <0xNN> byte tokens, byte-level vocabularies keep normal tokens in GPT-2's byte
// alphabet (byte_level.h); control and user-defined tokens are plain text in both.
#ifndef TANDEM_CORE_TOKENIZER_VOCABULARY_H_
#define TANDEM_CORE_TOKENIZER_VOCABULARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tandem {

// Token types, numbered as GGUF and SentencePiece number them.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // BOS, EOS, <|im_start|>: matched in text only when parse_special is set
  kUserDefined = 4,  // added tokens that are always matched in text, and decode as their text
  kUnused = 5,
  kByte = 6,  // <0xNN>
};

// How text is stored in token texts.
enum class TextEncoding {
  kMetaspace,  // SentencePiece: ' ' is '▁'; bytes without a token are <0xNN> tokens
  kByteLevel,  // GPT-2: each byte is one character of the byte-level alphabet
  kWordPiece,  // BERT (llama.cpp's GGUF form): lower-cased words, a word start is '▁'
};

// How the characters of a piece are merged into tokens.
enum class MergeModel {
  kScores,     // SentencePiece BPE: merge the adjacent pair whose result scores highest
  kRanks,      // BPE: merge the adjacent pair that comes first in the merge list
  kWordPiece,  // greedy longest match from the start of each word
};

// Where the Metaspace encoding puts a '▁' before a segment of text (segments are separated
// by special tokens).
enum class SpacePrefix {
  kNever,
  kFirst,   // only before the segment at the very start of the text
  kAlways,  // before every segment (SentencePiece's and llama.cpp's dummy prefix)
};

struct Vocabulary {
  TextEncoding encoding = TextEncoding::kMetaspace;
  MergeModel model = MergeModel::kScores;

  std::vector<std::string> tokens;  // indexed by id
  std::vector<TokenType> types;     // one per token
  std::vector<float> scores;        // one per token for kScores, else empty
  // kRanks: the merges in rank order, as pairs of token texts.
  std::vector<std::pair<std::string, std::string>> merges;

  // kByteLevel: the pre-tokenizer family (GGUF `tokenizer.ggml.pre`, see pre_tokenizer.h), or
  // explicit regexes (from a tokenizer.json), which take precedence when not empty.
  std::string pre_tokenizer = "gpt-2";
  std::vector<std::string> pre_tokenizer_regexes;

  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
  std::optional<int32_t> unk_id;
  std::optional<int32_t> pad_id;
  // Ids the model's files declare as ending a turn besides EOS (GGUF tokenizer.ggml.eot_token_id
  // and eom_token_id, the eos_token_id list of a Hugging Face generation_config.json), in the
  // order read, without repeats. EndOfTurnIds (special_tokens.h) adds the known texts.
  std::vector<int32_t> end_of_turn_ids;
  // Special tokens that absorb the whitespace before (lstrip) or after (rstrip) them when
  // matched in text, as tokenizer.json added tokens may say (Phi-3's chat tokens rstrip: the
  // "\n" after <|user|> is not encoded).
  std::vector<int32_t> lstrip_ids;
  std::vector<int32_t> rstrip_ids;
  bool add_bos = false;  // Encode with add_special puts BOS first
  bool add_eos = false;  // ... and EOS last

  SpacePrefix space_prefix = SpacePrefix::kNever;  // kMetaspace
  bool metaspace_split = false;    // kMetaspace: each '▁'-started word is merged on its own
  bool byte_prefix_space = false;  // kByteLevel: a text not starting with ' ' gets one
  bool byte_fallback = false;      // kMetaspace: characters without a token become <0xNN>
  bool ignore_merges = false;      // kRanks: a piece that is a whole token is taken as is
  bool fuse_unk = false;           // consecutive unknown characters give one unknown token
};

// kDataLoss naming the culprit if the parts disagree: sizes of types/scores, special ids out
// of range, empty token texts, an empty vocabulary. (Tokenizer::Create checks the merges.)
absl::Status ValidateVocabulary(const Vocabulary& vocab);

absl::string_view TextEncodingName(TextEncoding encoding);

// A 64-bit FNV-1a digest (16 hex digits) over the text encoding, every token text and the
// BOS/EOS/UNK/PAD ids: equal fingerprints mean the two vocabularies map ids to the same text
// (e.g. a GGUF and its Hugging Face export), so a draft and a target can share token ids.
std::string VocabularyFingerprint(const Vocabulary& vocab);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_VOCABULARY_H_
