// Packed runs (Chunk::packed): a runner whose work writes its records end to end in the chunk
// (what the read stage does for a consumer that takes runs only) hands out runs whose bytes
// and ends name each record, unpacks a record into the element when Next() is called anyway,
// counts the same bytes as the same records held in tensors, and a StringRunStacker fed
// packed and unpacked runs, cut anywhere, stacks the batch StackBatch makes of the elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/parallel_runner.h"
#include "pipeline/stacking.h"
#include "unit/runner_test_context.h"

namespace sluice::pipeline {
namespace {

// Record i: its number and i % 29 'x's (lengths 1 to 31, the empty record when i % 50 == 49).
std::string RecordOf(uint64_t i) {
  return i % 50 == 49 ? std::string() : std::to_string(i) + std::string(i % 29, 'x');
}

// Records 0..n-1 in chunks of `per_chunk`; chunk k packed when packed(k), else one scalar
// string tensor per element. Records with i % 13 == 12 are dropped, as a skipped record is
// (the element goes, nothing of it is packed).
class RecordWork final : public ChunkWork {
 public:
  RecordWork(uint64_t n, bool (*packed)(uint64_t chunk), BufferPool* pool)
      : n_(n), packed_(packed), pool_(pool) {}
  void Pull(Chunk* c, size_t max_elements) override {
    for (; c->size < max_elements && next_ < n_; ++next_) c->Slot(c->size++).id.position = next_;
    c->end = next_ == n_;
  }
  void Work(Chunk* c) override {
    c->packed = packed_(c->seq);
    c->records.clear();
    c->record_ends.clear();
    for (size_t i = 0; i < c->size;) {
      Element& e = c->elems[i];
      e.mark.valid = true;
      e.mark.cursor = e.id.position + 1;
      if (e.id.position % 13 == 12) {
        c->Drop(i);
        continue;
      }
      const std::string r = RecordOf(e.id.position);
      if (c->packed) {
        e.tensors.clear();
        c->records += r;
        c->record_ends.push_back(c->records.size());
      } else {
        e.tensors.resize(1);
        e.tensors[0].SetScalarString(r, pool_);
      }
      ++i;
    }
  }

 private:
  const uint64_t n_;
  bool (*const packed_)(uint64_t);
  BufferPool* const pool_;
  uint64_t next_ = 0;  // Pull is serialized by the runner
};

std::vector<uint64_t> KeptPositions(uint64_t n) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 13 != 12) out.push_back(i);
  }
  return out;
}

// A record of a run: from the packed bytes, or from the element's tensor.
std::string RecordIn(const ElementRun& run, size_t i) {
  if (run.bytes == nullptr) return std::string(run.first[i].tensors.at(0).string(0));
  const uint64_t begin = i == 0 ? run.begin : run.ends[i - 1];
  return std::string(run.bytes + begin, run.ends[i] - begin);
}

// Takes every run of `runner` (NextSpan(max)) into *positions, checking each run's length
// and each record, its mark, and that a packed run's elements hold no tensors.
void TakeRuns(ParallelRunner* runner, size_t max, std::vector<uint64_t>* positions) {
  ElementRun run;
  for (;;) {
    Result<bool> more = runner->NextSpan(max, &run);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    ASSERT_GE(run.count, 1u);
    ASSERT_LE(run.count, max);
    for (size_t i = 0; i < run.count; ++i) {
      const uint64_t p = run.first[i].id.position;
      positions->push_back(p);
      ASSERT_EQ(RecordIn(run, i), RecordOf(p)) << "position " << p << " max " << max;
      EXPECT_EQ(run.first[i].mark.cursor, p + 1);
      if (run.bytes != nullptr) {
        EXPECT_TRUE(run.first[i].tensors.empty());
      }
    }
  }
}

class PackedRuns : public ::testing::Test {
 protected:
  std::unique_ptr<ParallelRunner> Runner(RecordWork* work, size_t chunk_elements) {
    RunnerOptions ro;
    ro.chunk_elements = chunk_elements;
    ro.parallelism = 2;
    ro.window = 4;
    ro.kind = Tunable::Kind::kReadParallelism;
    return std::make_unique<ParallelRunner>(&rt_.ctx, &counters_, work, ro);
  }

  testing::RunnerTestContext rt_{2};
  StageCounters counters_;
};

bool Always(uint64_t) { return true; }
bool Never(uint64_t) { return false; }
bool EveryOther(uint64_t chunk) { return chunk % 2 == 0; }


TEST_F(PackedRuns, RunsNameEachRecordWhereverTheyAreCut) {
  for (auto packed : {&Always, &Never, &EveryOther}) {
    for (size_t max : {size_t{1}, size_t{3}, size_t{16}, size_t{1000}}) {
      RecordWork work(500, packed, rt_.buffers.get());
      auto runner = Runner(&work, 16);
      std::vector<uint64_t> positions;
      ASSERT_NO_FATAL_FAILURE(TakeRuns(runner.get(), max, &positions));
      EXPECT_EQ(positions, KeptPositions(500)) << "max " << max;
    }
  }
}

// A finished runner's chunks whose elements hold no tensors (packed runs) are kept for the
// next runners, process-wide (ChunkRecycler); ones holding tensors are not (their buffers
// belong to the finished pipeline's pool, which goes with it here). Runners in turn, each
// with a context and pool of its own, packed and not, taking runs of every length: each
// gets its own records, marks and drops only (under ASan: no access to a gone pool).
TEST(PackedRunsRecycled, EachRunnerGetsItsOwnRecordsFromRecycledChunks) {
  for (int round = 0; round < 3; ++round) {
    for (auto packed : {&Always, &Never, &EveryOther}) {
      for (size_t max : {size_t{5}, size_t{256}}) {
        testing::RunnerTestContext rt(2);
        StageCounters counters;
        const uint64_t n = 2000 + 300 * static_cast<uint64_t>(round);
        RecordWork work(n, packed, rt.buffers.get());
        RunnerOptions ro;
        ro.chunk_elements = 64 << round;  // the kept chunks' elements: fewer or more
        ro.parallelism = 2;
        ro.window = 4;
        ro.kind = Tunable::Kind::kReadParallelism;
        auto runner = std::make_unique<ParallelRunner>(&rt.ctx, &counters, &work, ro);
        std::vector<uint64_t> positions;
        ASSERT_NO_FATAL_FAILURE(TakeRuns(runner.get(), max, &positions)) << "round " << round;
        EXPECT_EQ(positions, KeptPositions(n)) << "round " << round;
        runner.reset();  // its bare chunks go to the recycler; then the context goes
        EXPECT_EQ(rt.budget.used(), 0u);
      }
    }
  }
}

// Next() on a packed chunk (a consumer that takes elements after all) gets each record in
// its element's tensor, as from an unpacked one.
TEST_F(PackedRuns, NextUnpacksTheRecordIntoTheElement) {
  for (auto packed : {&Always, &Never, &EveryOther}) {
    RecordWork work(300, packed, rt_.buffers.get());
    auto runner = Runner(&work, 16);
    std::vector<uint64_t> positions;
    Element e;
    for (;;) {
      Result<bool> more = runner->Next(&e);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      ASSERT_EQ(e.tensors.size(), 1u);
      ASSERT_TRUE(e.tensors[0].is_string());
      EXPECT_EQ(e.tensors[0].shape().rank(), 0u);
      EXPECT_EQ(std::string(e.tensors[0].string(0)), RecordOf(e.id.position));
      positions.push_back(e.id.position);
    }
    EXPECT_EQ(positions, KeptPositions(300));
  }
}

// Stats and the memory budget count a packed record as the scalar string tensor it stands for.
TEST_F(PackedRuns, PackedAndUnpackedRecordsCountTheSameBytes) {
  uint64_t want = 0;
  for (uint64_t p : KeptPositions(400)) want += RecordOf(p).size() + 2 * sizeof(uint64_t);
  for (auto packed : {&Always, &Never}) {
    StageCounters counters;
    RecordWork work(400, packed, rt_.buffers.get());
    RunnerOptions ro;
    ro.chunk_elements = 32;
    ro.parallelism = 1;
    ro.window = 2;
    ParallelRunner runner(&rt_.ctx, &counters, &work, ro);
    ElementRun run;
    while (*runner.NextSpan(7, &run)) {
    }
    EXPECT_EQ(counters.bytes.load(), want) << (packed == &Always ? "packed" : "unpacked");
  }
  EXPECT_EQ(rt_.budget.used(), 0u);  // every chunk's charge released
}

// Batches stacked from runs, packed or not, cut anywhere, equal StackBatch of the elements.
TEST_F(PackedRuns, StackerOverMixedRunsEqualsStackBatch) {
  const Schema schema(std::vector<FeatureInfo>{{"record", DType::kString, Shape()}});
  StackContext sc;
  sc.pool = rt_.buffers.get();
  sc.schema = &schema;
  sc.ctx = &rt_.ctx;
  sc.stage = "batch";
  for (size_t batch : {size_t{1}, size_t{5}, size_t{16}, size_t{40}, size_t{1000}}) {
    RecordWork work(450, &EveryOther, rt_.buffers.get());
    auto runner = Runner(&work, 16);
    StringRunStacker stacker;
    std::vector<Element> elems;
    bool more = true;
    size_t batches = 0;
    while (more) {
      stacker.Clear();
      elems.clear();
      while (stacker.size() < batch) {
        ElementRun run;
        Result<bool> r = runner->NextSpan(batch - stacker.size(), &run);
        ASSERT_TRUE(r.ok());
        more = *r;
        if (!more) break;
        stacker.Add(run);
        for (size_t i = 0; i < run.count; ++i) {
          Element e;
          e.id = run.first[i].id;
          e.mark = run.first[i].mark;
          e.tensors.resize(1);
          e.tensors[0].SetScalarString(RecordIn(run, i), rt_.buffers.get());
          elems.push_back(std::move(e));
        }
      }
      if (stacker.size() == 0) break;
      Element got, want;
      stacker.Finish(sc, &got);
      ASSERT_TRUE(StackBatch(sc, elems, elems.size(), &want).ok());
      ++batches;
      ASSERT_EQ(got.tensors.size(), 1u);
      ASSERT_EQ(got.tensors[0].num_elements(), want.tensors[0].num_elements());
      for (int64_t i = 0; i < want.tensors[0].num_elements(); ++i) {
        ASSERT_EQ(got.tensors[0].string(i), want.tensors[0].string(i))
            << "batch " << batches << " element " << i;
      }
      EXPECT_EQ(got.mark.cursor, want.mark.cursor);
      EXPECT_EQ(got.id.position, want.id.position);
    }
    EXPECT_EQ(batches, (KeptPositions(450).size() + batch - 1) / batch) << "batch " << batch;
  }
}

}  // namespace
}  // namespace sluice::pipeline
