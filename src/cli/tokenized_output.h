// What `convert text` and `convert jsonl --tokenizer` share: the tokenization flags, and a
// writer that encodes queued documents in parallel batches (text::EncodeDocuments, so the
// invalid-UTF-8 policy names the line), applies the length limit, and writes an Example per
// document into shards or the ids into a token cache (docs/cli.md, "Tokenizing").
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/progress.h"
#include "sluice/format/example.h"
#include "sluice/format/example_json.h"
#include "sluice/format/writer_lock.h"
#include "sluice/text/encode_documents.h"
#include "sluice/text/length_limit.h"
#include "sluice/text/token_cache.h"
#include "sluice/text/tokenizer.h"

namespace sluice::cli {

struct TokenizeFlags {
  std::string tokenizer;                 // --tokenizer MODEL. Default: "" (no tokenization)
  bool keep_text = false;                // --keep-text. Default: false
  bool token_cache = false;              // --token-cache: OUT/tokens.{bin,idx}, no shards
  std::string on_error = "raise";        // --on-error raise|skip (invalid UTF-8)
  size_t max_tokens = 0;                 // --max-tokens N. Default: 0, no limit
  std::string long_policy = "truncate";  // --long raise|truncate|split. Default: truncate
  size_t threads = 0;                    // --threads. Default: 0, all cores
};
void AddTokenizeFlags(CLI::App* command, TokenizeFlags* flags);
// The flags that change what is written, as text: part of a distributed job's identity.
std::string TokenizeIdentity(const TokenizeFlags& flags);

// A document waiting to be tokenized, with the other features of its Example.
struct PendingDocument {
  std::string text;
  uint64_t offset = 0;  // byte offset of the text's line in the input file
  uint64_t line = 0;    // 1-based line number
  format::ExampleBuilder features;
};

class TokenizedWriter {
 public:
  TokenizedWriter() = default;  // use Open
  // `file` names the input in errors; `text_feature` is where --keep-text puts the text.
  static Result<std::unique_ptr<TokenizedWriter>> Open(const TokenizeFlags& flags,
                                                       const std::string& file, const Location& out,
                                                       const OutputOptions& output,
                                                       std::string text_feature);
  // A writer into `shards` (not owned; the caller closes it: a distributed job's task
  // writer) with `tokenizer` (LoadTokenizer, once per process). Finish then flushes and
  // counts, and schema() is what was written.
  static Result<std::unique_ptr<TokenizedWriter>> Into(
      const TokenizeFlags& flags, const std::string& file, format::ShardWriter* shards,
      std::string text_feature, std::shared_ptr<const text::Tokenizer> tokenizer);
  static Result<std::shared_ptr<const text::Tokenizer>> LoadTokenizer(const TokenizeFlags& flags);
  // The documents added next come from `file` (errors name it): of several input files.
  Status StartFile(std::string file);
  std::map<std::string, format::FeatureSchema> schema() const { return schema_.schema(); }
  // Queues a document; full batches are encoded and written.
  Status Add(PendingDocument doc);
  // Writes what is queued, closes the output and fills the summary's counts.
  Status Finish(const std::string& source, ConvertSummary* summary);

 private:
  // `tokenizer` null: loaded from flags.tokenizer.
  static Result<std::unique_ptr<TokenizedWriter>> Make(
      const TokenizeFlags& flags, const std::string& file, std::string text_feature,
      std::shared_ptr<const text::Tokenizer> tokenizer);
  Status Flush();
  Status Write(const PendingDocument& doc, std::span<const int32_t> ids);

  static constexpr size_t kBatchDocuments = 4096;
  TokenizeFlags flags_;
  std::string file_, text_feature_, out_path_;
  text::EncodeDocumentsOptions encode_;
  text::LengthLimit limit_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  format::ShardWriter* shards_ = nullptr;  // owned_shards_ or the caller's; or
  std::unique_ptr<format::ShardWriter> owned_shards_;
  std::unique_ptr<format::WriterLock> cache_lock_;  // held while cache_ writes (outlives it)
  std::unique_ptr<text::TokenCacheWriter> cache_;
  format::SchemaInference schema_;
  std::vector<PendingDocument> pending_;
  text::RaggedIds ids_;
  std::vector<std::span<const int32_t>> pieces_;
  std::string record_;
  uint64_t records_ = 0, skipped_ = 0, truncated_ = 0, split_ = 0;
};

}  // namespace sluice::cli
