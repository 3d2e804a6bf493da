// Tokenizer: SentencePiece (Debian's libsentencepiece) behind sluice's error model, with a
// parallel batch encode. Contract (docs/text.md, "Tokenizer"): the ids of every input are
// exactly those of SentencePiece's own encode (spm_encode --output_format=id, Python's
// SentencePieceProcessor.encode), including empty text and invalid UTF-8, whose bad bytes
// SentencePiece turns into U+FFFD (see utf8.h for reporting them instead).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/io/file_system.h"
#include "sluice/text/token_ids.h"

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace sluice::text {

struct TokenizerOptions {
  // Prepend the model's <s> / append its </s> to every encoded text, as SentencePiece's
  // encode(add_bos=True, add_eos=True) does. Fails at load if the model has no such piece.
  bool add_bos = false;  // Default: false
  bool add_eos = false;  // Default: false
};

// Threading: every const method may be called from many threads at once. They share one
// SentencePieceProcessor, whose Encode is const and keeps no per-call state (SentencePiece's
// own batch encode shares one processor across its threads the same way).
class Tokenizer {
 public:
  // Loads a serialized ModelProto (the bytes of a .model file). `name` is used in errors.
  static Result<std::unique_ptr<Tokenizer>> FromModelProto(ByteView model_proto,
                                                           const TokenizerOptions& options = {},
                                                           std::string_view name = "<memory>");
  // Reads a .model file through `fs`.
  static Result<std::unique_ptr<Tokenizer>> Open(io::FileSystem* fs, const std::string& path,
                                                 const TokenizerOptions& options = {});
  ~Tokenizer();

  // Replaces *ids with the ids of `text`. Reuses ids' capacity.
  Status Encode(std::string_view text, std::vector<int32_t>* ids) const;

  // Encodes texts[i] into document i of *out (cleared first), splitting the work over
  // `threads` threads (0: ThreadPool::DefaultThreads()). The result does not depend on the
  // thread count. Threads are started per call, so batches should hold at least a few
  // thousand texts; a pipeline stage with its own pool calls Encode from it instead.
  Status EncodeBatch(std::span<const std::string_view> texts, size_t threads, RaggedIds* out) const;

  // Ids back to text (for inspection and round-trip tests).
  Result<std::string> Decode(std::span<const int32_t> ids) const;

  // Number of pieces; every id is in [0, vocab_size()).
  int32_t vocab_size() const;
  // Special ids, or -1 when the model has none (SentencePiece's convention).
  int32_t unk_id() const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t pad_id() const;
  // The piece of an id ("▁the"), for inspection. Empty for an out-of-range id.
  std::string IdToPiece(int32_t id) const;
  const std::string& name() const { return name_; }

 private:
  Tokenizer(std::string name, std::unique_ptr<sentencepiece::SentencePieceProcessor> sp);

  std::string name_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace sluice::text
