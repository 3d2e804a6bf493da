// Building blocks of the CLI: ordered parallel processing (cli/) and the line reader (io/).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/ordered_parallel.h"
#include "sluice/io/line_reader.h"

namespace sluice::cli {
namespace {

// Uneven work per item, so items finish out of order on several threads.
int SlowSquare(size_t i) {
  std::mt19937 rng(static_cast<uint32_t>(i));
  for (uint32_t k = rng() % 20000; k > 0; --k) std::this_thread::yield();
  return static_cast<int>(i * i);
}

TEST(OrderedParallelMapTest, ConsumesInInputOrderForAnyThreadCount) {
  for (size_t threads : {1, 2, 7}) {
    std::vector<int> got;
    OrderedParallelMap<int>(200, threads, 4, SlowSquare, [&](size_t i, int&& v) {
      EXPECT_EQ(i, got.size());
      got.push_back(v);
      return true;
    });
    ASSERT_EQ(got.size(), 200u) << threads;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int>(i * i));
  }
}

TEST(OrderedParallelMapTest, EarlyStopProducesNoMoreThanTheWindow) {
  std::atomic<size_t> produced{0};
  size_t consumed = 0;
  OrderedParallelMap<int>(
      1000, 3, 6,
      [&](size_t i) {
        ++produced;
        return static_cast<int>(i);
      },
      [&](size_t, int&&) { return ++consumed < 10; });
  EXPECT_EQ(consumed, 10u);
  EXPECT_LE(produced.load(), 10u + 6u);
}

TEST(OrderedParallelMapTest, NothingToDo) {
  bool called = false;
  OrderedParallelMap<int>(0, 4, 8, SlowSquare, [&](size_t, int&&) { return called = true; });
  EXPECT_FALSE(called);
}

std::vector<std::string> ReadLines(const std::string& content) {
  auto fs = io::NewMemoryFileSystem();
  EXPECT_TRUE(fs->WriteAll("/f.jsonl", content).ok());
  auto reader = io::LineReader::Open(fs.get(), "/f.jsonl");
  EXPECT_TRUE(reader.ok());
  std::vector<std::string> lines;
  std::string_view line;
  while (true) {
    auto more = (*reader)->Next(&line);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    lines.emplace_back(line);
    EXPECT_EQ((*reader)->line_number(), lines.size());
  }
  EXPECT_EQ((*reader)->bytes_consumed(), content.size());
  return lines;
}

TEST(LineReaderTest, SplitsLinesAndStripsCarriageReturns) {
  using L = std::vector<std::string>;
  EXPECT_EQ(ReadLines(""), L{});
  EXPECT_EQ(ReadLines("a\nb\n"), (L{"a", "b"}));
  EXPECT_EQ(ReadLines("a\r\nb"), (L{"a", "b"}));  // last line without newline
  EXPECT_EQ(ReadLines("\n\nx\n"), (L{"", "", "x"}));
}

TEST(LineReaderTest, LinesLongerThanOneRead) {
  std::string big(3 << 20, 'x');  // spans several 1 MiB reads
  auto lines = ReadLines("a\n" + big + "\nb\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], big);
  EXPECT_EQ(lines[2], "b");
}

TEST(LineReaderTest, MissingFileIsNotFound) {
  auto fs = io::NewMemoryFileSystem();
  EXPECT_EQ(io::LineReader::Open(fs.get(), "/none").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::cli
