// batch() straight over the read stage stacks the records from the runs the read stage holds
// (StageIterator::NextSpan) instead of taking them one element at a time: the same batches
// (bytes, sizes, marks), states, errors and skipped records as a batch of the same records
// handed over one by one (the read stage behind an identity map), in every codec, shuffled
// and in order, for batch sizes across the read stage's runs.
#include <algorithm>
#include <optional>
#include <sstream>

#include "pipeline_test_util.h"
#include "sluice/format/record_writer.h"

namespace sluice::pipeline {
namespace {

using testing::MakeIt;

// One batch as the test compares it.
struct Batch {
  std::vector<std::string> records;
  uint64_t epoch = 0;
  uint64_t cursor = 0;  // the mark a Save after it resumes from
  bool operator==(const Batch& o) const {
    return records == o.records && epoch == o.epoch && cursor == o.cursor;
  }
};

std::ostream& operator<<(std::ostream& os, const Batch& b) {
  os << "{" << b.records.size() << " records";
  if (!b.records.empty()) os << " '" << b.records.front() << "'..'" << b.records.back() << "'";
  return os << ", epoch " << b.epoch << ", cursor " << b.cursor << "}";
}

Batch BatchOf(const Element& e) {
  Batch b;
  const Tensor& t = e.tensors.at(0);
  EXPECT_TRUE(t.is_string());
  EXPECT_EQ(t.shape().rank(), 1u);
  for (int64_t i = 0; i < t.num_elements(); ++i) b.records.emplace_back(t.string(i));
  b.epoch = e.mark.epoch;
  b.cursor = e.mark.cursor;
  return b;
}

// Next() up to `max` times; the batches, and the error that ended the stream (OK at its end).
std::vector<Batch> Batches(Iterator* it, Status* error = nullptr, size_t max = SIZE_MAX) {
  std::vector<Batch> out;
  Element e;
  for (size_t n = 0; n < max; ++n) {
    Result<bool> more = it->Next(&e);
    if (!more.ok()) {
      if (error != nullptr)
        *error = more.status();
      else
        ADD_FAILURE() << more.status().ToString();
      break;
    }
    if (!*more) break;
    out.push_back(BatchOf(e));
  }
  return out;
}

// Where two streams of batches part (for a failure message).
std::string FirstDifference(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (!(a[i] == b[i])) {
      std::ostringstream os;
      os << "batch " << i << ": " << a[i] << " vs " << b[i];
      return os.str();
    }
  }
  return std::to_string(a.size()) + " batches vs " + std::to_string(b.size());
}

// The record unchanged: a stage between read and batch that hands elements over one by one.
Status Identity(Element*, const MapContext&) { return Status::OK(); }

class BatchRuns : public ::testing::TestWithParam<format::Codec> {
 protected:
  void SetUp() override {
    fs_ = io::NewMemoryFileSystem();
    int id = 0;
    for (int count : {300, 0, 410, 255, 199}) {
      format::RecordWriterOptions o;
      o.codec = GetParam();
      o.zstd_frame_bytes = 256;
      std::string path = "/d/part-" + std::to_string(paths_.size()) + ".tfrecord";
      auto w = format::RecordWriter::Open(fs_.get(), path, o);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      for (int i = 0; i < count; ++i) {
        // Records of varying length (1 to 40 bytes): offsets that a misplaced run would show.
        ASSERT_TRUE((*w)->Write(std::to_string(id) + std::string(id % 37, 'x')).ok());
        ++id;
      }
      ASSERT_TRUE((*w)->Close().ok());
      paths_.push_back(path);
    }
    total_ = id;
  }

  // read (runs of 16 records, chunks of 256 bytes) -> shuffle -> [identity map] -> batch.
  Dataset Pipeline(size_t batch, bool drop, std::optional<ShuffleMode> mode, bool one_by_one,
                   std::optional<ErrorPolicy> on_error = std::nullopt) {
    ReadOptions ro;
    ro.fs = fs_.get();
    ro.paths = paths_;
    ro.chunk_records = chunk_records_;
    ro.chunk_bytes = 256;
    ro.on_error = on_error;
    auto read = Dataset::Read(ro);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    Dataset ds = *read;
    if (mode) ds = ds.Shuffle({.mode = *mode, .seed = 7});
    if (one_by_one) {
      MapOptions m;
      m.name = "identity";
      m.parallelism = 2;
      ds = ds.Map(Identity, m);
    }
    return ds.Batch(batch, drop);
  }

  static PipelineOptions Options(uint32_t threads,
                                 std::optional<ErrorPolicy> on_error = std::nullopt) {
    PipelineOptions o;
    o.threads = threads;
    o.autotune = false;
    if (on_error) o.on_error = *on_error;
    return o;
  }

  std::unique_ptr<io::FileSystem> fs_;
  std::vector<std::string> paths_;
  int total_ = 0;
  uint32_t chunk_records_ = 16;  // records per read task
};

INSTANTIATE_TEST_SUITE_P(Codecs, BatchRuns, testing::AllCodecs(), testing::CodecTestName);

// Batch sizes below, at and across the read stage's runs of 16, and above the dataset.
TEST_P(BatchRuns, SameBatchesAsElementByElement) {
  for (std::optional<ShuffleMode> mode :
       {std::optional<ShuffleMode>(), std::optional<ShuffleMode>(ShuffleMode::kChunks),
        std::optional<ShuffleMode>(ShuffleMode::kGlobal)}) {
    for (size_t batch : {size_t{1}, size_t{7}, size_t{16}, size_t{100}, size_t{5000}}) {
      for (bool drop : {false, true}) {
        for (uint32_t threads : {1u, 2u}) {
          auto runs = MakeIt(Pipeline(batch, drop, mode, false), Options(threads));
          auto one = MakeIt(Pipeline(batch, drop, mode, true), Options(threads));
          ASSERT_TRUE(runs && one);
          const std::vector<Batch> got = Batches(runs.get());
          const std::vector<Batch> want = Batches(one.get());
          ASSERT_TRUE(got == want)
              << FirstDifference(got, want) << " batch " << batch << " drop " << drop << " threads "
              << threads << " mode " << (mode ? ShuffleModeName(*mode) : "none");
          size_t records = 0;
          for (const Batch& b : got) records += b.records.size();
          EXPECT_EQ(records, drop ? total_ / batch * batch : static_cast<size_t>(total_));
        }
      }
    }
  }
}

// The default read task size (1024 records: runs longer than the batches here).
TEST_P(BatchRuns, DefaultTaskSizeGivesTheSameBatches) {
  chunk_records_ = 0;
  for (ShuffleMode mode : {ShuffleMode::kChunks, ShuffleMode::kGlobal}) {
    for (size_t batch : {size_t{7}, size_t{300}}) {
      auto runs = MakeIt(Pipeline(batch, false, mode, false), Options(2));
      auto one = MakeIt(Pipeline(batch, false, mode, true), Options(2));
      const std::vector<Batch> got = Batches(runs.get());
      const std::vector<Batch> want = Batches(one.get());
      ASSERT_TRUE(got == want) << FirstDifference(got, want) << " batch " << batch << " mode "
                               << ShuffleModeName(mode);
      EXPECT_EQ(got.size(), (static_cast<size_t>(total_) + batch - 1) / batch);
    }
  }
}

// A state saved after any batch (the first, inside the epoch, the last) restores into the
// rest of the uninterrupted stream, with other thread counts.
TEST_P(BatchRuns, SaveAndRestoreBetweenBatchesContinueTheStream) {
  const std::vector<Batch> all =
      Batches(MakeIt(Pipeline(7, false, ShuffleMode::kChunks, false), Options(2)).get());
  ASSERT_EQ(all.size(), (static_cast<size_t>(total_) + 6) / 7);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{2}, all.size() / 2, all.size() - 1, all.size()}) {
    auto first = MakeIt(Pipeline(7, false, ShuffleMode::kChunks, false), Options(2));
    const std::vector<Batch> head = Batches(first.get(), nullptr, cut);
    ASSERT_EQ(head.size(), cut);
    Result<std::string> state = first->Save();
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    auto resumed = MakeIt(Pipeline(7, false, ShuffleMode::kChunks, false), Options(1 + cut % 3));
    ASSERT_TRUE(resumed->Restore(*state).ok());
    // The records (a restored stream counts its marks from the restore point on).
    std::vector<std::vector<std::string>> whole, want;
    for (const Batch& b : head) whole.push_back(b.records);
    for (const Batch& b : Batches(resumed.get())) whole.push_back(b.records);
    for (const Batch& b : all) want.push_back(b.records);
    EXPECT_TRUE(whole == want) << "cut after batch " << cut << ": " << whole.size() << " batches, "
                               << want.size() << " uninterrupted";
  }
}

// A damaged shard: under skip the same records are dropped and the same batches delivered;
// under the default policy the same error ends the stream after the same batches.
TEST_P(BatchRuns, DamagedShardGivesTheSameBatchesSkipsAndError) {
  std::string data = *fs_->ReadAll(paths_[2]);
  data[data.size() / 2] ^= 0x55;
  ASSERT_TRUE(fs_->WriteAll(paths_[2], data).ok());
  for (bool skip : {true, false}) {
    std::optional<ErrorPolicy> policy;
    if (skip) policy = ErrorPolicy::kSkip;
    auto runs =
        MakeIt(Pipeline(16, false, ShuffleMode::kChunks, false, policy), Options(2, policy));
    auto one = MakeIt(Pipeline(16, false, ShuffleMode::kChunks, true, policy), Options(2, policy));
    Status runs_error, one_error;
    const std::vector<Batch> got = Batches(runs.get(), &runs_error);
    const std::vector<Batch> want = Batches(one.get(), &one_error);
    EXPECT_EQ(runs_error.ToString(), one_error.ToString());
    if (skip) {
      EXPECT_TRUE(runs_error.ok()) << runs_error.ToString();
      EXPECT_TRUE(got == want) << FirstDifference(got, want);
      EXPECT_GE(runs->stats().stages[0].skipped, 1u);
      EXPECT_EQ(runs->stats().stages[0].skipped, one->stats().stages[0].skipped);
    } else {
      EXPECT_EQ(runs_error.code(), StatusCode::kDataLoss) << runs_error.ToString();
      EXPECT_NE(runs_error.message().find("/d/part-2.tfrecord"), std::string::npos)
          << runs_error.ToString();
      // Both deliver every batch before the damaged record's (element by element, the map
      // may stop one run earlier: its own error stops it, not the batch).
      ASSERT_LE(want.size(), got.size());
      const std::vector<Batch> before(got.begin(), got.begin() + want.size());
      EXPECT_TRUE(before == want) << FirstDifference(before, want);
    }
  }
}

}  // namespace
}  // namespace sluice::pipeline
