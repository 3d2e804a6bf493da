// The shared FileSystem suite (file_system_suite.h): its tests, and the local and in-memory
// backends, each also under the seeded latency wrapper. S3 instantiates it in
// s3_file_system_test.cc against a real server.
#include "sluice/io/file_system.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include "sluice/io/slow_file_system.h"
#include "unit/file_system_suite.h"

namespace sluice::io {
namespace {

using testing::FileSystemBackend;
using testing::FileSystemCase;
using testing::FileSystemTest;

// The process-wide local file system, or with `max_open_files` one of its own (2: nearly
// every read reopens its file).
class LocalBackend final : public FileSystemBackend {
 public:
  explicit LocalBackend(size_t max_open_files = 0) {
    char tmpl[] = "/tmp/sluice_fs_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    if (max_open_files > 0) own_ = NewLocalFileSystem({.max_open_files = max_open_files});
  }
  ~LocalBackend() override { std::filesystem::remove_all(dir_); }
  FileSystem* fs() override { return own_ ? own_.get() : LocalFileSystem(); }
  const std::string& root() const override { return dir_; }

 private:
  std::string dir_;
  std::unique_ptr<FileSystem> own_;
};

class MemoryBackend final : public FileSystemBackend {
 public:
  MemoryBackend() : fs_(NewMemoryFileSystem()) { (void)fs_->CreateDirs(dir_); }
  FileSystem* fs() override { return fs_.get(); }
  const std::string& root() const override { return dir_; }

 private:
  std::unique_ptr<FileSystem> fs_;
  std::string dir_ = "/mem";
};

// Any backend behind NewSlowFileSystem (0-1 ms per call, fixed seed).
class SlowBackend final : public FileSystemBackend {
 public:
  explicit SlowBackend(std::unique_ptr<FileSystemBackend> base) : base_(std::move(base)) {
    SlowOptions o;
    o.min_latency = std::chrono::microseconds(0);
    o.max_latency = std::chrono::microseconds(1000);
    o.seed = 42;
    slow_ = NewSlowFileSystem(base_->fs(), o);
  }
  FileSystem* fs() override { return slow_.get(); }
  const std::string& root() const override { return base_->root(); }

 private:
  std::unique_ptr<FileSystemBackend> base_;
  std::unique_ptr<FileSystem> slow_;
};

TEST_P(FileSystemTest, WriteIsInvisibleUntilClose) {
  auto w = fs_->OpenForWrite(P("a.bin"));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("hello ").ok());
  ASSERT_TRUE((*w)->Append("world").ok());
  EXPECT_FALSE(fs_->Exists(P("a.bin")));
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_TRUE(fs_->Exists(P("a.bin")));
  auto data = fs_->ReadAll(P("a.bin"));
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, "hello world");
}

TEST_P(FileSystemTest, AbortedWriteLeavesNothing) {
  {
    auto w = fs_->OpenForWrite(P("b.bin"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("partial").ok());
    // destroyed without Close
  }
  EXPECT_FALSE(fs_->Exists(P("b.bin")));
  auto list = fs_->List(dir_);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty()) << (*list)[0].path;  // no temp file left behind either
}

TEST_P(FileSystemTest, PositionalReadsAndEof) {
  ASSERT_TRUE(fs_->WriteAll(P("c.bin"), "0123456789").ok());
  auto f = fs_->OpenForRead(P("c.bin"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->size(), 10u);
  char buf[16];
  auto r = (*f)->Read(3, 4, buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "3456");
  r = (*f)->Read(8, 10, buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "89");
  r = (*f)->Read(10, 4, buf);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST_P(FileSystemTest, MissingFileIsNotFound) {
  auto f = fs_->OpenForRead(P("nope"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("nope"), std::string::npos);
}

TEST_P(FileSystemTest, ListGlobRename) {
  ASSERT_TRUE(fs_->CreateDirs(P("sub/deeper")).ok());
  for (auto n : {"train-1.tfrecord", "train-0.tfrecord", "val-0.tfrecord"}) {
    ASSERT_TRUE(fs_->WriteAll(P(std::string("sub/") + n), "x").ok());
  }
  auto g = fs_->Glob(P("sub/train-*.tfrecord"));
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0], P("sub/train-0.tfrecord"));
  EXPECT_EQ((*g)[1], P("sub/train-1.tfrecord"));
  auto g2 = fs_->Glob(P("s*/val-?.tfrecord"));
  ASSERT_TRUE(g2.ok());
  ASSERT_EQ(g2->size(), 1u);
  ASSERT_TRUE(fs_->Rename(P("sub/val-0.tfrecord"), P("sub/val-1.tfrecord")).ok());
  EXPECT_FALSE(fs_->Exists(P("sub/val-0.tfrecord")));
  EXPECT_TRUE(fs_->Exists(P("sub/val-1.tfrecord")));
  auto list = fs_->List(P("sub"));
  ASSERT_TRUE(list.ok());
  if (caps().empty_directories) {
    ASSERT_EQ(list->size(), 4u);
    EXPECT_TRUE((*list)[0].is_directory);  // "deeper" sorts first
  } else {
    ASSERT_EQ(list->size(), 3u);
  }
  ASSERT_TRUE(fs_->Delete(P("sub/val-1.tfrecord")).ok());
  EXPECT_EQ(fs_->Delete(P("sub/val-1.tfrecord")).code(),
            caps().delete_missing_is_not_found ? StatusCode::kNotFound : StatusCode::kOk);
  EXPECT_FALSE(fs_->Exists(P("sub/val-1.tfrecord")));
}

TEST_P(FileSystemTest, MapSeesWholeFileAndOutlivesIt) {
  std::string payload(100000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(fs_->WriteAll(P("m.bin"), payload).ok());
  std::unique_ptr<FileMapping> mapping;
  {
    auto file = fs_->OpenForRead(P("m.bin"));
    ASSERT_TRUE(file.ok());
    auto m = (*file)->Map();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mapping = std::move(*m);
  }  // the file object is gone; the mapping stays valid
  EXPECT_EQ(mapping->is_mapped(), caps().maps_in_place);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapping->data().data()) % 16, 0u);
  EXPECT_EQ(mapping->data(), payload);
}

TEST_P(FileSystemTest, OnlyLocalNonEmptyFilesMapInPlace) {
  ASSERT_TRUE(fs_->WriteAll(P("m.bin"), "bytes").ok());
  ASSERT_TRUE(fs_->WriteAll(P("empty.bin"), "").ok());
  auto file = fs_->OpenForRead(P("m.bin"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->MapsInPlace(), caps().maps_in_place);
  auto m = (*file)->Map();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->is_mapped(), (*file)->MapsInPlace());
  auto empty = fs_->OpenForRead(P("empty.bin"));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE((*empty)->MapsInPlace());
}

TEST_P(FileSystemTest, MapOfEmptyFileIsEmpty) {
  ASSERT_TRUE(fs_->WriteAll(P("empty.bin"), "").ok());
  auto file = fs_->OpenForRead(P("empty.bin"));
  ASSERT_TRUE(file.ok());
  auto m = (*file)->Map();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->data().empty());
}

TEST_P(FileSystemTest, PutIfAbsentRefusesExistingFile) {
  ASSERT_TRUE(fs_->PutIfAbsent(P("00.json"), "first").ok());
  Status again = fs_->PutIfAbsent(P("00.json"), "second");
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  EXPECT_EQ(*fs_->ReadAll(P("00.json")), "first");
  // No temporary is left behind by either call.
  auto entries = fs_->List(dir_);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
}

TEST_P(FileSystemTest, PutIfAbsentRaceHasExactlyOneWinner) {
  for (int round = 0; round < 20; ++round) {
    const std::string path = P("race-" + std::to_string(round));
    std::vector<std::thread> threads;
    std::atomic<int> winners{0}, losers{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        Status s = fs_->PutIfAbsent(path, "writer " + std::to_string(t));
        if (s.ok())
          winners++;
        else if (s.code() == StatusCode::kAlreadyExists)
          losers++;
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(losers.load(), 7);
  }
  auto entries = fs_->List(dir_);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->size(), 20u);  // no temporaries left
}

TEST_P(FileSystemTest, ReadAsyncDeliversRangeClippedAtEnd) {
  ASSERT_TRUE(fs_->WriteAll(P("r.bin"), "0123456789").ok());
  auto f = fs_->OpenForRead(P("r.bin"));
  ASSERT_TRUE(f.ok());
  auto read = [&](uint64_t offset, size_t n, std::shared_ptr<const CancelToken> cancel) {
    std::promise<Result<std::string>> p;
    IoContext ctx;
    ctx.cancel = std::move(cancel);
    (*f)->ReadAsync(
        offset, n, [&p](Result<std::string> r) { p.set_value(std::move(r)); }, ctx);
    return p.get_future().get();
  };
  EXPECT_EQ(*read(2, 3, nullptr), "234");
  EXPECT_EQ(*read(8, 100, nullptr), "89");
  EXPECT_EQ(*read(10, 4, nullptr), "");
  EXPECT_EQ(*read(50, 4, nullptr), "");
  auto token = std::make_shared<CancelToken>();
  token->Cancel();
  EXPECT_EQ(read(0, 4, token).status().code(), StatusCode::kCancelled);
}

// IoContext::buffer: file systems that read through the default ReadAsync fill the buffer
// given (a reused one: no zero fill, no fresh pages); whatever it held, the bytes delivered
// are exactly the range's, on every backend.
TEST_P(FileSystemTest, ReadAsyncIntoAGivenBufferDeliversExactlyTheRange) {
  ASSERT_TRUE(fs_->WriteAll(P("b.bin"), "0123456789").ok());
  auto f = fs_->OpenForRead(P("b.bin"));
  ASSERT_TRUE(f.ok());
  for (std::string given : {std::string(64, 'x'), std::string("ab"), std::string()}) {
    const char* given_data = nullptr;
    IoContext ctx;
    ctx.buffer = [&](size_t n) {
      EXPECT_EQ(n, 3u);
      given.reserve(256);
      given_data = given.data();
      return std::move(given);
    };
    std::promise<Result<std::string>> p;
    (*f)->ReadAsync(2, 3, [&p](Result<std::string> r) { p.set_value(std::move(r)); }, ctx);
    Result<std::string> r = p.get_future().get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, "234");
    if (GetParam().name == "local" || GetParam().name == "memory" ||
        GetParam().name == "s3" || GetParam().name == "slow_s3") {
      ASSERT_NE(given_data, nullptr) << "the buffer was not asked for";
      EXPECT_EQ(r->data(), given_data) << "the read did not use the buffer it was given";
    }
  }
}

TEST_P(FileSystemTest, LargeFileReadsBackInRangesAndWhole) {
  // 12 MiB written in uneven appends: S3 uploads it in parts, and reads it back as parallel
  // ranged GETs.
  std::string payload(12u << 20, '\0');
  uint64_t x = 88172645463325252ull;
  for (char& c : payload) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  {
    auto w = fs_->OpenForWrite(P("big.bin"));
    ASSERT_TRUE(w.ok());
    size_t at = 0, step = 1;
    while (at < payload.size()) {
      const size_t n = std::min(payload.size() - at, step);
      ASSERT_TRUE((*w)->Append(ByteView(payload).substr(at, n)).ok());
      at += n;
      step = step * 3 + 1;
    }
    EXPECT_EQ((*w)->bytes_written(), payload.size());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto f = fs_->OpenForRead(P("big.bin"));
  ASSERT_TRUE(f.ok());
  ASSERT_EQ((*f)->size(), payload.size());
  auto read = [&](uint64_t offset, size_t n) {
    std::promise<Result<std::string>> p;
    (*f)->ReadAsync(offset, n, [&p](Result<std::string> r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  };
  auto whole = read(0, payload.size());
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_TRUE(*whole == payload);
  auto middle = read((8u << 20) - 5, 1u << 20);
  ASSERT_TRUE(middle.ok());
  EXPECT_TRUE(*middle == payload.substr((8u << 20) - 5, 1u << 20));
  // Across parts (S3: three ranged GETs gathered) into a given buffer, longer than the read
  // and holding stale bytes: exactly the range comes back.
  IoContext ctx;
  bool asked = false;
  ctx.buffer = [&](size_t n) {
    asked = true;
    return std::string(n + 12345, 'z');
  };
  std::promise<Result<std::string>> p;
  (*f)->ReadAsync(1u << 20, 11u << 20, [&p](Result<std::string> r) { p.set_value(std::move(r)); },
                  ctx);
  auto across = p.get_future().get();
  ASSERT_TRUE(across.ok()) << across.status().ToString();
  EXPECT_TRUE(*across == payload.substr(1u << 20, 11u << 20));
  if (GetParam().name != "hdfs") {
    EXPECT_TRUE(asked) << "the buffer was not asked for";
  }
  std::string scratch(100, '\0');
  auto tail = (*f)->Read(payload.size() - 10, 100, scratch.data());
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, payload.substr(payload.size() - 10));
}

TEST_P(FileSystemTest, ManyReadsInFlightAllComplete) {
  std::string payload;
  for (int i = 0; i < 4096; ++i) payload += static_cast<char>('a' + i % 26);
  ASSERT_TRUE(fs_->WriteAll(P("many.bin"), payload).ok());
  auto f = fs_->OpenForRead(P("many.bin"));
  ASSERT_TRUE(f.ok());
  constexpr int kReads = 64;
  std::vector<std::promise<Result<std::string>>> promises(kReads);
  for (int i = 0; i < kReads; ++i) {
    (*f)->ReadAsync(static_cast<uint64_t>(i) * 64, 64,
                    [&promises, i](Result<std::string> r) { promises[i].set_value(std::move(r)); });
  }
  for (int i = 0; i < kReads; ++i) {
    auto r = promises[i].get_future().get();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, payload.substr(static_cast<size_t>(i) * 64, 64));
  }
}

TEST_P(FileSystemTest, StatTellsFilesFromDirectories) {
  ASSERT_TRUE(fs_->CreateDirs(P("d/e")).ok());
  ASSERT_TRUE(fs_->WriteAll(P("d/e/f.bin"), "12345").ok());
  auto file = fs_->Stat(P("d/e/f.bin"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_FALSE(file->is_directory);
  EXPECT_EQ(file->size, 5u);
  auto dir = fs_->Stat(P("d/e"));
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_TRUE(dir->is_directory);
  EXPECT_EQ(fs_->Stat(P("d/nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_->Rename(P("d/nope"), P("d/x")).code(), StatusCode::kNotFound);
}

// Vacuum of a table deletes only files whose age it knows: Stat and List must tell it.
TEST_P(FileSystemTest, StatAndListTellWhenAFileWasWritten) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  auto now_ms = [] {
    return duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  const int64_t before = now_ms();
  ASSERT_TRUE(fs_->WriteAll(P("aged.bin"), "x").ok());
  const int64_t after = now_ms();
  auto near = [&](int64_t t) { return t >= before - 60000 && t <= after + 60000; };
  auto stat = fs_->Stat(P("aged.bin"));
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_TRUE(near(stat->modification_time_ms)) << stat->modification_time_ms << " " << before;
  auto listing = fs_->List(dir_);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->size(), 1u);
  EXPECT_TRUE(near((*listing)[0].modification_time_ms)) << (*listing)[0].modification_time_ms;
}

TEST_P(FileSystemTest, GlobAcrossDirectories) {
  ASSERT_TRUE(fs_->CreateDirs(P("p/a")).ok());
  ASSERT_TRUE(fs_->CreateDirs(P("p/b")).ok());
  for (auto n : {"p/a/x-1.tfrecord", "p/b/x-2.tfrecord", "p/b/y-1.tfrecord"}) {
    ASSERT_TRUE(fs_->WriteAll(P(n), "x").ok());
  }
  auto g = fs_->Glob(P("p/*/x-*.tfrecord"));
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0], P("p/a/x-1.tfrecord"));
  EXPECT_EQ((*g)[1], P("p/b/x-2.tfrecord"));
}

std::vector<FileSystemCase> LocalCases() {
  testing::FileSystemCapabilities local_caps;
  local_caps.maps_in_place = true;
  auto local = [] { return std::unique_ptr<FileSystemBackend>(new LocalBackend); };
  auto memory = [] { return std::unique_ptr<FileSystemBackend>(new MemoryBackend); };
  return {
      {"local", local_caps, local, ""},
      {"local_two_open_files",
       local_caps,
       [] { return std::unique_ptr<FileSystemBackend>(new LocalBackend(2)); },
       ""},
      {"memory", {}, memory, ""},
      {"slow_local",
       {},  // the wrapper reads files; it does not map them
       [local] { return std::unique_ptr<FileSystemBackend>(new SlowBackend(local())); },
       ""},
      {"slow_memory",
       {},
       [memory] { return std::unique_ptr<FileSystemBackend>(new SlowBackend(memory())); },
       ""},
  };
}

INSTANTIATE_TEST_SUITE_P(Backends, FileSystemTest, ::testing::ValuesIn(LocalCases()),
                         testing::CaseName);

TEST(FileSystemFor, DispatchesSchemes) {
  std::string p;
  auto fs = FileSystemFor("file:///tmp/x", &p);
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ(p, "/tmp/x");
  fs = FileSystemFor("data/x", &p);
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ(p, "data/x");
  fs = FileSystemFor("s3://bucket/x", &p);
  ASSERT_TRUE(fs.ok()) << fs.status().ToString();
  EXPECT_EQ((*fs)->name(), "s3");
  EXPECT_EQ(p, "s3://bucket/x");
  for (const char* hdfs : {"hdfs://namenode:9870/data/x", "webhdfs://namenode/data/x"}) {
    fs = FileSystemFor(hdfs, &p);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    EXPECT_EQ((*fs)->name(), "hdfs");
    EXPECT_EQ(p, hdfs);
  }
  fs = FileSystemFor("gopher://host/x", &p);
  EXPECT_EQ(fs.status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace sluice::io
