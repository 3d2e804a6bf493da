#include "sluice/dist/spill.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <queue>

#include "sluice/base/bytes.h"
#include "sluice/io/file_system.h"

namespace sluice::dist {

uint64_t MergeValues(Merge merge, uint64_t a, uint64_t b) {
  return merge == Merge::kSum ? a + b : std::min(a, b);
}

std::string PrintableKey(std::string_view key) {
  std::string out = "'";
  for (size_t i = 0; i < key.size() && out.size() < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  if (out.size() >= 64) out += "...";
  return out + "' (" + std::to_string(key.size()) + " bytes)";
}

namespace {

class VectorStream final : public SortedStream {
 public:
  explicit VectorStream(std::vector<KeyValue> entries) : entries_(std::move(entries)) {}
  Result<bool> Next(KeyValue* kv) override {
    if (next_ == entries_.size()) return false;
    *kv = std::move(entries_[next_++]);
    return true;
  }

 private:
  std::vector<KeyValue> entries_;
  size_t next_ = 0;
};

// A run file: entries as u32 key length, key, u64 value; read in 1 MiB chunks.
class RunStream final : public SortedStream {
 public:
  explicit RunStream(std::unique_ptr<io::RandomAccessFile> file) : file_(std::move(file)) {}
  Result<bool> Next(KeyValue* kv) override {
    SLUICE_ASSIGN_OR_RETURN(bool more, Ensure(4));
    if (!more) return false;
    uint32_t n = DecodeFixed32(buffer_.data() + pos_);
    SLUICE_ASSIGN_OR_RETURN(more, Ensure(4 + uint64_t{n} + 8));
    if (!more) return DataLoss(file_->path() + ": spill run truncated");
    kv->key.assign(buffer_.data() + pos_ + 4, n);
    kv->value = DecodeFixed64(buffer_.data() + pos_ + 4 + n);
    pos_ += 4 + uint64_t{n} + 8;
    return true;
  }

 private:
  // Makes `n` bytes available at pos_; false at a clean end of file.
  Result<bool> Ensure(uint64_t n) {
    while (buffer_.size() - pos_ < n) {
      buffer_.erase(0, pos_);
      pos_ = 0;
      size_t want = std::max<uint64_t>(n - buffer_.size(), size_t{1} << 20);
      scratch_.resize(want);
      SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(offset_, want, scratch_.data()));
      if (got.empty() && buffer_.empty()) return false;
      if (got.empty()) return DataLoss(file_->path() + ": spill run truncated");
      buffer_.append(got);
      offset_ += got.size();
    }
    return true;
  }

  std::unique_ptr<io::RandomAccessFile> file_;
  std::string buffer_, scratch_;
  size_t pos_ = 0;
  uint64_t offset_ = 0;
};

class MergingStream final : public SortedStream {
 public:
  MergingStream(std::vector<std::unique_ptr<SortedStream>> inputs, Merge merge)
      : inputs_(std::move(inputs)), merge_(merge), heads_(inputs_.size()) {}

  Result<bool> Next(KeyValue* kv) override {
    if (!started_) {
      started_ = true;
      for (size_t i = 0; i < inputs_.size(); ++i) SLUICE_RETURN_IF_ERROR(Advance(i));
    }
    if (heap_.empty()) return false;
    size_t i = heap_.top();
    heap_.pop();
    *kv = std::move(heads_[i]);
    SLUICE_RETURN_IF_ERROR(Advance(i));
    while (merge_ != Merge::kNone && !heap_.empty() && heads_[heap_.top()].key == kv->key) {
      size_t j = heap_.top();
      heap_.pop();
      kv->value = MergeValues(merge_, kv->value, heads_[j].value);
      SLUICE_RETURN_IF_ERROR(Advance(j));
    }
    return true;
  }

 private:
  Status Advance(size_t i) {
    SLUICE_ASSIGN_OR_RETURN(bool more, inputs_[i]->Next(&heads_[i]));
    if (more) heap_.push(i);
    return Status::OK();
  }
  struct Greater {
    const std::vector<KeyValue>* heads;
    bool operator()(size_t a, size_t b) const {
      return (*heads)[a].key != (*heads)[b].key ? (*heads)[a].key > (*heads)[b].key : a > b;
    }
  };

  std::vector<std::unique_ptr<SortedStream>> inputs_;
  const Merge merge_;
  std::vector<KeyValue> heads_;
  std::priority_queue<size_t, std::vector<size_t>, Greater> heap_{Greater{&heads_}};
  bool started_ = false;
};

}  // namespace

std::unique_ptr<SortedStream> MergeStreams(std::vector<std::unique_ptr<SortedStream>> inputs,
                                           Merge merge) {
  return std::make_unique<MergingStream>(std::move(inputs), merge);
}

Result<std::unique_ptr<SortedStream>> OpenRun(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto file, io::LocalFileSystem()->OpenForRead(path));
  return std::unique_ptr<SortedStream>(std::make_unique<RunStream>(std::move(file)));
}

Result<std::unique_ptr<RunWriter>> RunWriter::Open(const std::string& path) {
  // A spill run is scratch: lost with its job, never committed.
  SLUICE_ASSIGN_OR_RETURN(
      auto file, io::LocalFileSystem()->OpenForWrite(path, io::WriteOptions{.durable = false}));
  return std::unique_ptr<RunWriter>(new RunWriter(std::move(file)));
}

Status RunWriter::Add(std::string_view key, uint64_t value) {
  if (key.size() > UINT32_MAX) return InvalidArgument("run entry of 4 GiB or more");
  PutFixed32(&buffer_, static_cast<uint32_t>(key.size()));
  buffer_.append(key);
  PutFixed64(&buffer_, value);
  ++entries_;
  if (buffer_.size() < (size_t{1} << 20)) return Status::OK();
  Status s = file_->Append(buffer_);
  buffer_.clear();
  return s;
}

Status RunWriter::Close() {
  SLUICE_RETURN_IF_ERROR(file_->Append(buffer_));
  buffer_.clear();
  return file_->Close();
}

Result<uint64_t> WriteRun(SortedStream* stream, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto writer, RunWriter::Open(path));
  KeyValue kv;
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(bool more, stream->Next(&kv));
    if (!more) break;
    SLUICE_RETURN_IF_ERROR(writer->Add(kv.key, kv.value));
  }
  SLUICE_RETURN_IF_ERROR(writer->Close());
  return writer->entries();
}

SpillingAggregator::SpillingAggregator(Merge merge, uint64_t budget_bytes, std::string spill_prefix,
                                       std::string stage)
    : merge_(merge),
      budget_(budget_bytes),
      prefix_(std::move(spill_prefix)),
      stage_(std::move(stage)) {}

SpillingAggregator::~SpillingAggregator() {
  for (const auto& run : runs_) (void)io::LocalFileSystem()->Delete(run);
}

Status SpillingAggregator::Add(std::string_view key, uint64_t value) {
  const uint64_t cost = key.size() + kEntryOverhead;
  if (cost > budget_) {
    return ResourceExhausted(stage_ + ": key " + PrintableKey(key) +
                             " does not fit the memory budget of " + FormatByteSize(budget_) +
                             " (raise --memory-budget)");
  }
  ++added_;
  if (merge_ == Merge::kNone) {
    list_.push_back({std::string(key), value});
    memory_ += cost;
  } else {
    auto [it, inserted] = table_.try_emplace(std::string(key), value);
    if (inserted) {
      memory_ += cost;
    } else {
      it->second = MergeValues(merge_, it->second, value);
    }
  }
  return memory_ > budget_ ? Spill() : Status::OK();
}

std::unique_ptr<SortedStream> SpillingAggregator::TakeMemory() {
  std::vector<KeyValue> entries = std::move(list_);
  list_.clear();
  entries.reserve(entries.size() + table_.size());
  for (auto& [key, value] : table_) entries.push_back({key, value});
  table_.clear();
  memory_ = 0;
  std::stable_sort(entries.begin(), entries.end(),
                   [](const KeyValue& a, const KeyValue& b) { return a.key < b.key; });
  return std::make_unique<VectorStream>(std::move(entries));
}

Status SpillingAggregator::Spill() {
  std::string path = prefix_ + "-" + std::to_string(next_run_++) + ".run";
  auto memory = TakeMemory();
  runs_.push_back(path);
  auto written = WriteRun(memory.get(), path);
  if (!written.ok()) return written.status().WithContext(stage_ + ": spilling to local disk");
  return Status::OK();
}

Result<std::unique_ptr<SortedStream>> SpillingAggregator::Finish() {
  std::vector<std::unique_ptr<SortedStream>> inputs;
  for (const auto& run : runs_) {
    SLUICE_ASSIGN_OR_RETURN(auto stream, OpenRun(run));
    inputs.push_back(std::move(stream));
  }
  inputs.push_back(TakeMemory());
  return MergeStreams(std::move(inputs), merge_);
}

}  // namespace sluice::dist
