// Tokenizer over libsentencepiece. The only file that includes SentencePiece's headers.
#include "sluice/text/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "sluice/base/thread_pool.h"

namespace sluice::text {
namespace {

Status FromSentencePiece(const sentencepiece::util::Status& st, std::string_view context) {
  if (st.ok()) return Status::OK();
  return Internal(std::string(context) + ": sentencepiece: " + st.ToString());
}

// Appends the ids of texts[begin, end) to *ids and their end offsets to *offsets.
Status EncodeRange(const sentencepiece::SentencePieceProcessor& sp,
                   std::span<const std::string_view> texts, size_t begin, size_t end,
                   std::vector<int32_t>* ids, std::vector<uint64_t>* offsets) {
  std::vector<int> scratch;
  for (size_t i = begin; i < end; ++i) {
    auto st = sp.Encode(texts[i], &scratch);
    if (!st.ok()) return FromSentencePiece(st, "encode text " + std::to_string(i));
    ids->insert(ids->end(), scratch.begin(), scratch.end());
    offsets->push_back(ids->size());
  }
  return Status::OK();
}

// One unit of parallel work: a contiguous range of texts and its encoded ids. Offsets are
// relative to the chunk until the merge rebases them.
struct Chunk {
  size_t begin = 0, end = 0;
  std::vector<int32_t> ids;
  std::vector<uint64_t> offsets;
  Status status;
};

std::vector<Chunk> MakeChunks(size_t n, size_t threads) {
  // Many more chunks than threads, so that long texts do not leave threads idle at the end.
  const size_t count = std::min(n, threads * 16);
  std::vector<Chunk> chunks(count);
  for (size_t c = 0; c < count; ++c) {
    chunks[c].begin = n * c / count;
    chunks[c].end = n * (c + 1) / count;
  }
  return chunks;
}

}  // namespace

Tokenizer::Tokenizer(std::string name, std::unique_ptr<sentencepiece::SentencePieceProcessor> sp)
    : name_(std::move(name)), sp_(std::move(sp)) {}

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromModelProto(ByteView model_proto,
                                                             const TokenizerOptions& options,
                                                             std::string_view name) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto st = sp->LoadFromSerializedProto(model_proto);
  if (!st.ok()) {
    return DataLoss(std::string(name) + ": not a valid SentencePiece model (" +
                    std::to_string(model_proto.size()) + " bytes): " + st.ToString());
  }
  if ((options.add_bos && sp->bos_id() < 0) || (options.add_eos && sp->eos_id() < 0)) {
    return InvalidArgument(std::string(name) + ": add_bos/add_eos asked for, but the model " +
                           "has no <s>/</s> piece");
  }
  std::string extra;
  if (options.add_bos) extra += "bos";
  if (options.add_eos) extra += extra.empty() ? "eos" : ":eos";
  if (!extra.empty()) {
    SLUICE_RETURN_IF_ERROR(FromSentencePiece(sp->SetEncodeExtraOptions(extra), name));
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::string(name), std::move(sp)));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::Open(io::FileSystem* fs, const std::string& path,
                                                   const TokenizerOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::string bytes, fs->ReadAll(path));
  return FromModelProto(bytes, options, path);
}

Status Tokenizer::Encode(std::string_view text, std::vector<int32_t>* ids) const {
  return FromSentencePiece(sp_->Encode(text, ids), name_);
}

Status Tokenizer::EncodeBatch(std::span<const std::string_view> texts, size_t threads,
                              RaggedIds* out) const {
  out->Clear();
  if (threads == 0) threads = ThreadPool::DefaultThreads();
  threads = std::min(threads, texts.size());
  if (threads <= 1) return EncodeRange(*sp_, texts, 0, texts.size(), &out->ids, &out->offsets);

  std::vector<Chunk> chunks = MakeChunks(texts.size(), threads);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t c = next.fetch_add(1); c < chunks.size(); c = next.fetch_add(1)) {
      Chunk& ch = chunks[c];
      ch.status = EncodeRange(*sp_, texts, ch.begin, ch.end, &ch.ids, &ch.offsets);
    }
  };
  {
    std::vector<std::jthread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }  // joins

  size_t total = 0;
  for (const Chunk& ch : chunks) {
    SLUICE_RETURN_IF_ERROR(ch.status);
    total += ch.ids.size();
  }
  out->ids.reserve(total);
  out->offsets.reserve(texts.size() + 1);
  for (const Chunk& ch : chunks) {
    const uint64_t base = out->ids.size();
    out->ids.insert(out->ids.end(), ch.ids.begin(), ch.ids.end());
    for (uint64_t off : ch.offsets) out->offsets.push_back(base + off);
  }
  return Status::OK();
}

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids) const {
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return InvalidArgument(name_ + ": decode: id " + std::to_string(id) +
                             " outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    }
  }
  std::string text;
  const std::vector<int> v(ids.begin(), ids.end());
  SLUICE_RETURN_IF_ERROR(FromSentencePiece(sp_->Decode(v, &text), name_));
  return text;
}

int32_t Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int32_t Tokenizer::unk_id() const { return sp_->unk_id(); }
int32_t Tokenizer::bos_id() const { return sp_->bos_id(); }
int32_t Tokenizer::eos_id() const { return sp_->eos_id(); }
int32_t Tokenizer::pad_id() const { return sp_->pad_id(); }

std::string Tokenizer::IdToPiece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::string();
  return sp_->IdToPiece(id);
}

}  // namespace sluice::text
