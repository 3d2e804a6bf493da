// The convert job without processes: input splitting at line boundaries, and RunConvertJob
// over in-process ranks on a memory file system (one publication in task order, Revise
// rounds replacing a task's output, a failed task publishing nothing).
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "sluice/dist/convert_job.h"
#include "sluice/dist/input_split.h"
#include "sluice/format/record_reader.h"
#include "sluice/format/writer_lock.h"
#include "sluice/io/line_reader.h"

namespace sluice::dist {
namespace {

TEST(DistInputSplit, ALargeFileBecomesRangesCoveringEveryByteOnce) {
  auto tasks = FileTasks({{"a", 10}, {"b", 3}}, 4, /*splittable=*/true);
  ASSERT_EQ(tasks.size(), 4u);  // a: 3 ranges, b: whole
  uint64_t next = 0;
  for (size_t i = 0; i < 3; ++i) {
    auto r = FileRange::Decode(tasks[i].input);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->path, "a");
    EXPECT_FALSE(r->whole);
    EXPECT_EQ(r->begin, next);
    next = r->end;
    EXPECT_EQ(tasks[i].id, i);
  }
  EXPECT_EQ(next, 10u);
  auto b = FileRange::Decode(tasks[3].input);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->whole);
  EXPECT_EQ(FileTasks({{"a", 10}}, 4, /*splittable=*/false).size(), 1u);
}

TEST(DistInputSplit, AMalformedTaskIsAnErrorNotAGuess) {
  EXPECT_FALSE(FileRange::Decode("garbage").ok());
}

TEST(DistInputSplit, LineAlignedRangesAtEveryCutGiveEachLineExactlyOnce) {
  auto fs = io::NewMemoryFileSystem();
  const std::string text = "alpha\nbe\n\nlonger line here\nx\nlast without newline";
  ASSERT_TRUE(fs->WriteAll("/t.txt", text).ok());
  auto file = fs->OpenForRead("/t.txt");
  ASSERT_TRUE(file.ok());
  for (uint64_t step = 1; step <= text.size(); ++step) {
    std::vector<std::string> lines;
    for (uint64_t start = 0; start < text.size(); start += step) {
      auto range =
          io::LineAlignedRange(**file, start, std::min<uint64_t>(start + step, text.size()));
      ASSERT_TRUE(range.ok()) << range.status().ToString();
      auto reader = io::LineReader::Open(fs.get(), "/t.txt", range->first, range->second);
      ASSERT_TRUE(reader.ok());
      std::string_view line;
      while (*(*reader)->Next(&line)) lines.emplace_back(line);
    }
    EXPECT_EQ(lines, (std::vector<std::string>{"alpha", "be", "", "longer line here", "x",
                                               "last without newline"}))
        << "step " << step;
  }
}

// Writes one record per '|'-separated item of the task's input, suffixed with the hint.
class ItemsConverter : public TaskConverter {
 public:
  explicit ItemsConverter(std::map<TaskId, std::string> redo = {}, TaskId fail = ~TaskId{0})
      : redo_(std::move(redo)), fail_(fail) {}

  Result<std::string> Convert(const TaskSpec& task, const std::string& hint,
                              format::ShardWriter* out, const io::CancelToken&) override {
    if (task.id == fail_) return DataLoss("task " + std::to_string(task.id) + " is bad");
    size_t start = 0;
    while (start <= task.input.size()) {
      size_t end = task.input.find('|', start);
      if (end == std::string::npos) end = task.input.size();
      SLUICE_RETURN_IF_ERROR(out->Write(task.input.substr(start, end - start) + hint));
      start = end + 1;
    }
    return std::string(hint.empty() ? "plain" : "hinted");
  }
  Result<std::map<TaskId, std::string>> Revise(const std::vector<std::string>& results) override {
    std::map<TaskId, std::string> redo;
    for (const auto& [task, hint] : redo_) {
      if (results[task] != "hinted") redo[task] = hint;
    }
    return redo;
  }
  Status Finish(const std::vector<std::string>&, JobOutput*, format::Manifest* m) override {
    m->metadata["source"] = "items";
    return Status::OK();
  }

 private:
  std::map<TaskId, std::string> redo_;
  TaskId fail_;
};

std::vector<TaskSpec> ItemTasks(const std::vector<std::string>& inputs) {
  std::vector<TaskSpec> tasks(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    tasks[i].id = i;
    tasks[i].input = inputs[i];
  }
  return tasks;
}

std::vector<Result<ConvertJobResult>> RunJob(io::FileSystem* fs, int ranks,
                                             const std::vector<TaskSpec>& tasks,
                                             std::function<ItemsConverter()> make) {
  auto group = InProcessGroup(ranks);
  std::vector<Result<ConvertJobResult>> out(ranks, Internal("not run"));
  std::vector<std::thread> threads;
  for (Rank r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      ItemsConverter converter = make();
      ConvertJobOptions o;
      o.output.shards.record.codec = format::Codec::kNone;
      o.output.command = "test";
      out[r] = RunConvertJob(group[r].get(), fs, "/out", r == 0 ? tasks : std::vector<TaskSpec>{},
                             &converter, o);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// The records of the published dataset, in manifest order.
std::vector<std::string> Published(io::FileSystem* fs) {
  auto m = format::Manifest::Load(fs, "/out");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  std::vector<std::string> records;
  if (!m.ok()) return records;
  for (const auto& shard : m->shards) {
    auto reader = format::RecordReader::Open(fs, "/out/" + shard.path);
    EXPECT_TRUE(reader.ok());
    ByteView record;
    while (true) {
      auto more = (*reader)->Next(&record);
      EXPECT_TRUE(more.ok());
      if (!more.ok() || !*more) break;
      records.emplace_back(record);
    }
  }
  return records;
}

std::set<std::string> Files(io::FileSystem* fs) {
  std::set<std::string> names;
  auto list = fs->List("/out");
  if (list.ok()) {
    for (const auto& e : *list) {
      std::string name(io::Basename(e.path));
      // The writer lock's last (release) entry stays by design (format/writer_lock.h).
      if (!name.starts_with(format::WriterLock::kFilePrefix)) names.insert(name);
    }
  }
  return names;
}

TEST(DistConvertJob, FourRanksPublishEveryTaskOnceInTaskOrder) {
  auto fs = io::NewMemoryFileSystem();
  auto tasks = ItemTasks({"a|b", "c", "d|e|f", "g", "h", "i|j"});
  auto results = RunJob(fs.get(), 4, tasks, [] { return ItemsConverter(); });
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(results[0]->tasks, 6u);
  EXPECT_EQ(results[0]->manifest.metadata.at("source"), "items");
  EXPECT_EQ(Published(fs.get()),
            (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}));
  std::set<std::string> expected{"dataset.json"};
  for (const auto& s : results[0]->manifest.shards) {
    expected.insert(s.path);
    if (!s.index.empty()) expected.insert(s.index);
  }
  EXPECT_EQ(Files(fs.get()), expected);  // no job directory, no losing copies
}

TEST(DistConvertJob, ARevisedTaskIsPublishedFromItsSecondRoundOnly) {
  auto fs = io::NewMemoryFileSystem();
  auto tasks = ItemTasks({"a", "b|c", "d"});
  auto results = RunJob(fs.get(), 3, tasks, [] { return ItemsConverter({{1, "+"}}); });
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(results[0]->redone, 1u);
  EXPECT_EQ(Published(fs.get()), (std::vector<std::string>{"a", "b+", "c+", "d"}));
  for (const auto& name : Files(fs.get())) EXPECT_EQ(name.find("-t000001a"), std::string::npos);
}

TEST(DistConvertJob, AFailedTaskFailsEveryRankAndPublishesNothing) {
  auto fs = io::NewMemoryFileSystem();
  auto tasks = ItemTasks({"a", "b", "c", "d"});
  auto results = RunJob(fs.get(), 3, tasks, [] { return ItemsConverter({}, 2); });
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("task 2 is bad"), std::string::npos)
        << r.status().ToString();
  }
  EXPECT_FALSE(fs->Stat("/out/dataset.json").ok());
  for (const auto& name : Files(fs.get())) ADD_FAILURE() << "left behind: " << name;
}

}  // namespace
}  // namespace sluice::dist
