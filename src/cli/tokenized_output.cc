#include "cli/tokenized_output.h"

#include <cstdio>

#include "sluice/text/plain_text.h"

namespace sluice::cli {

void AddTokenizeFlags(CLI::App* cmd, TokenizeFlags* f) {
  cmd->add_option("--tokenizer", f->tokenizer, "SentencePiece .model: write token ids");
  cmd->add_flag("--keep-text", f->keep_text, "also keep each document's text (with --tokenizer)");
  cmd->add_flag("--token-cache", f->token_cache,
                "write the ids as a token cache OUT/tokens.bin + OUT/tokens.idx instead of shards");
  cmd->add_option("--on-error", f->on_error, "invalid UTF-8: raise (stop) or skip the document")
      ->check(CLI::IsMember({"raise", "skip"}))
      ->capture_default_str();
  cmd->add_option("--max-tokens", f->max_tokens, "longest document in tokens (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--long", f->long_policy, "over --max-tokens: raise, truncate or split")
      ->check(CLI::IsMember({"raise", "truncate", "split"}))
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "tokenizer threads (0: all cores)")
      ->capture_default_str();
}

std::string TokenizeIdentity(const TokenizeFlags& f) {
  return f.tokenizer + (f.keep_text ? " keep-text" : "") + " on-error=" + f.on_error +
         " max-tokens=" + std::to_string(f.max_tokens) + " long=" + f.long_policy;
}

Result<std::shared_ptr<const text::Tokenizer>> TokenizedWriter::LoadTokenizer(
    const TokenizeFlags& flags) {
  SLUICE_ASSIGN_OR_RETURN(Location model, Locate(flags.tokenizer));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                          text::Tokenizer::Open(model.fs, model.path));
  return std::shared_ptr<const text::Tokenizer>(std::move(tokenizer));
}

Result<std::unique_ptr<TokenizedWriter>> TokenizedWriter::Make(
    const TokenizeFlags& flags, const std::string& file, std::string text_feature,
    std::shared_ptr<const text::Tokenizer> tokenizer) {
  auto w = std::make_unique<TokenizedWriter>();
  w->flags_ = flags;
  w->file_ = file;
  w->text_feature_ = std::move(text_feature);
  w->encode_.invalid_utf8 =
      flags.on_error == "skip" ? text::InvalidUtf8Policy::kSkip : text::InvalidUtf8Policy::kRaise;
  w->encode_.threads = flags.threads;
  w->limit_.max_length = flags.max_tokens;
  w->limit_.policy = flags.long_policy == "raise"   ? text::LongDocumentPolicy::kError
                     : flags.long_policy == "split" ? text::LongDocumentPolicy::kSplit
                                                    : text::LongDocumentPolicy::kTruncate;
  if (tokenizer == nullptr) {
    SLUICE_ASSIGN_OR_RETURN(tokenizer, LoadTokenizer(flags));
  }
  w->tokenizer_ = std::move(tokenizer);
  return w;
}

Result<std::unique_ptr<TokenizedWriter>> TokenizedWriter::Into(
    const TokenizeFlags& flags, const std::string& file, format::ShardWriter* shards,
    std::string text_feature, std::shared_ptr<const text::Tokenizer> tokenizer) {
  if (flags.token_cache) {
    return InvalidArgument("--token-cache is written by one process: run it without mpirun/srun");
  }
  SLUICE_ASSIGN_OR_RETURN(auto w, Make(flags, file, std::move(text_feature), std::move(tokenizer)));
  w->shards_ = shards;
  return w;
}

Result<std::unique_ptr<TokenizedWriter>> TokenizedWriter::Open(const TokenizeFlags& flags,
                                                               const std::string& file,
                                                               const Location& out,
                                                               const OutputOptions& output,
                                                               std::string text_feature) {
  SLUICE_ASSIGN_OR_RETURN(auto w, Make(flags, file, std::move(text_feature), nullptr));
  w->out_path_ = out.path;
  if (flags.token_cache) {
    SLUICE_RETURN_IF_ERROR(out.fs->CreateDirs(out.path));
    // A token cache has no manifest to commit (its .idx, renamed last, marks it complete),
    // but two writers must not replace each other's files: the directory's lock keeps a
    // second one out until this one is done.
    format::WriterLockOptions lock;
    lock.run = format::NewRunId();
    lock.command = "sluice convert --token-cache";
    SLUICE_ASSIGN_OR_RETURN(w->cache_lock_, format::WriterLock::Acquire(out.fs, out.path, lock));
    SLUICE_ASSIGN_OR_RETURN(w->cache_, text::TokenCacheWriter::Create(
                                           out.fs, out.path + "/tokens",
                                           static_cast<uint64_t>(w->tokenizer_->vocab_size())));
  } else {
    SLUICE_ASSIGN_OR_RETURN(w->owned_shards_,
                            OpenShardWriter(out, output, "sluice convert --tokenizer"));
    w->shards_ = w->owned_shards_.get();
  }
  return w;
}

Status TokenizedWriter::StartFile(std::string file) {
  SLUICE_RETURN_IF_ERROR(Flush());
  file_ = std::move(file);
  return Status::OK();
}

Status TokenizedWriter::Add(PendingDocument doc) {
  pending_.push_back(std::move(doc));
  return pending_.size() >= kBatchDocuments ? Flush() : Status::OK();
}

Status TokenizedWriter::Flush() {
  std::vector<text::TextDocument> docs;
  docs.reserve(pending_.size());
  for (const PendingDocument& d : pending_) docs.push_back({d.text, d.offset, d.line});
  std::vector<text::TextDocument> skipped;
  SLUICE_RETURN_IF_ERROR(text::EncodeDocuments(*tokenizer_, file_, docs, encode_, &ids_, &skipped));
  size_t row = 0, next_skip = 0;
  for (const PendingDocument& d : pending_) {
    if (next_skip < skipped.size() && skipped[next_skip].line == d.line) {
      std::fprintf(stderr, "sluice: skipped %s:%llu: invalid UTF-8\n", file_.c_str(),
                   static_cast<unsigned long long>(d.line));
      ++next_skip;
      ++skipped_;
      continue;
    }
    SLUICE_RETURN_IF_ERROR(Write(d, ids_[row++]));
  }
  pending_.clear();
  return Status::OK();
}

Status TokenizedWriter::Write(const PendingDocument& doc, std::span<const int32_t> ids) {
  pieces_.clear();
  Status s = text::ApplyLengthLimit(ids, limit_, doc.line, &pieces_);
  if (!s.ok()) {
    return ResourceExhausted(file_ + ": offset " + std::to_string(doc.offset) + ": line " +
                             std::to_string(doc.line) + ": " + std::to_string(ids.size()) +
                             " tokens, over --max-tokens " + std::to_string(limit_.max_length) +
                             " (--long truncate or split to accept it)");
  }
  if (pieces_.size() > 1) ++split_;
  if (pieces_.size() == 1 && pieces_[0].size() < ids.size()) ++truncated_;
  for (std::span<const int32_t> piece : pieces_) {
    ++records_;
    if (cache_) {
      SLUICE_RETURN_IF_ERROR(cache_->Append(piece));
      continue;
    }
    format::ExampleBuilder example = doc.features;
    example.AddInt64s("tokens", std::vector<int64_t>(piece.begin(), piece.end()));
    if (flags_.keep_text) example.AddBytes(text_feature_, std::string_view(doc.text));
    record_.clear();
    example.SerializeTo(&record_);
    format::ExampleView view;
    SLUICE_RETURN_IF_ERROR(view.Parse(record_));
    SLUICE_RETURN_IF_ERROR(schema_.Add(view));
    SLUICE_RETURN_IF_ERROR(shards_->Write(record_));
  }
  return Status::OK();
}

Status TokenizedWriter::Finish(const std::string& source, ConvertSummary* summary) {
  SLUICE_RETURN_IF_ERROR(Flush());
  if (shards_ != nullptr && !owned_shards_) {  // the caller's writer: a task of a job
    summary->records += records_;
    summary->skipped += skipped_;
    return Status::OK();
  }
  if (records_ == 0) return DataLoss(file_ + ": no document could be converted");
  if (cache_) {
    SLUICE_RETURN_IF_ERROR(cache_->Close());
    SLUICE_RETURN_IF_ERROR(cache_lock_->Release());
    summary->shards = 0;
    summary->notes.push_back("token cache " + out_path_ +
                             "/tokens.{bin,idx}: " + std::to_string(cache_->tokens()) + " tokens");
  } else {
    shards_->SetFeatures(schema_.schema());
    shards_->SetMetadata("source", source);
    shards_->SetMetadata("tokenizer", flags_.tokenizer);
    SLUICE_RETURN_IF_ERROR(shards_->Close());
    summary->shards = shards_->manifest().shards.size();
    for (const auto& shard : shards_->manifest().shards) summary->bytes_out += shard.file_bytes;
  }
  summary->records += records_;
  summary->skipped += skipped_;
  if (truncated_ > 0)
    summary->notes.push_back(std::to_string(truncated_) + " document(s) truncated");
  if (split_ > 0) summary->notes.push_back(std::to_string(split_) + " document(s) split");
  return Status::OK();
}

}  // namespace sluice::cli
