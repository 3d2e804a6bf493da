// GatherRanges (src/io/ranged_read.h) with a scripted part fetcher: parts answered in any
// order are gathered in file order; the first failure wins and cancels the rest; a part of
// the wrong size is never handed on; done runs once, never inside the call.
#include "io/ranged_read.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <vector>

namespace sluice::io {
namespace {

std::string Bytes(uint64_t first, uint64_t length) {
  std::string out(length, '\0');
  for (uint64_t i = 0; i < length; ++i) out[i] = static_cast<char>((first + i) * 31 % 251);
  return out;
}

// Records part requests; the test answers them later, in any order.
class ScriptedFetcher {
 public:
  struct Part {
    uint64_t first, length;
    std::function<void(Result<std::string>)> done;
  };

  PartFetcher fetcher() {
    PartFetcher f;
    f.fetch = [this](uint64_t first, uint64_t length,
                     std::function<void(Result<std::string>)> done) {
      std::lock_guard<std::mutex> lock(mu_);
      parts_.push_back({first, length, std::move(done)});
      return uint64_t(parts_.size() - 1);
    };
    f.cancel = [this](uint64_t handle) {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_.push_back(handle);
    };
    return f;
  }
  std::vector<Part>& parts() { return parts_; }
  std::vector<uint64_t> cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  std::vector<Part> parts_;
  std::vector<uint64_t> cancelled_;
};

struct Outcome {
  std::promise<Result<std::string>> promise;
  std::atomic<int> calls{0};
  ReadCallback callback() {
    return [this](Result<std::string> r) {
      if (calls.fetch_add(1) == 0) promise.set_value(std::move(r));
    };
  }
};

TEST(GatherRanges, PartsAnsweredOutOfOrderAreGatheredInOrder) {
  ScriptedFetcher script;
  Outcome outcome;
  GatherRanges("f", 100, 25, 10, script.fetcher(), outcome.callback(), {});
  ASSERT_EQ(script.parts().size(), 3u);
  EXPECT_EQ(script.parts()[0].first, 100u);
  EXPECT_EQ(script.parts()[2].first, 120u);
  EXPECT_EQ(script.parts()[2].length, 5u);
  EXPECT_EQ(outcome.calls.load(), 0);  // nothing delivered before every part answered
  for (int i : {2, 0, 1}) {
    auto& p = script.parts()[i];
    p.done(Bytes(p.first, p.length));
  }
  Result<std::string> got = outcome.promise.get_future().get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Bytes(100, 25));
  EXPECT_TRUE(script.cancelled().empty());
}

TEST(GatherRanges, FirstFailureWinsAndCancelsTheOtherParts) {
  ScriptedFetcher script;
  Outcome outcome;
  GatherRanges("f", 0, 40, 10, script.fetcher(), outcome.callback(), {});
  ASSERT_EQ(script.parts().size(), 4u);
  script.parts()[1].done(IoError("GET f: HTTP 503 SlowDown after 6 attempts"));
  EXPECT_EQ(script.cancelled().size(), 4u);  // every handle (the failed one's is harmless)
  script.parts()[0].done(Bytes(0, 10));
  script.parts()[2].done(Cancelled("cancelled"));
  script.parts()[3].done(Bytes(30, 10));
  Result<std::string> got = outcome.promise.get_future().get();
  EXPECT_EQ(got.status().code(), StatusCode::kIoError);
  EXPECT_NE(got.status().message().find("SlowDown"), std::string::npos);
  EXPECT_EQ(outcome.calls.load(), 1);
}

TEST(GatherRanges, ShortPartIsDataLossNeverHandedOn) {
  ScriptedFetcher script;
  Outcome outcome;
  GatherRanges("hdfs://nn:1/x", 0, 10, 10, script.fetcher(), outcome.callback(), {});
  script.parts()[0].done(Bytes(0, 9));
  Result<std::string> got = outcome.promise.get_future().get();
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("hdfs://nn:1/x"), std::string::npos);
}

TEST(GatherRanges, EmptyReadAndCancelledContextNeverFetch) {
  ScriptedFetcher script;
  Outcome empty;
  GatherRanges("f", 5, 0, 10, script.fetcher(), empty.callback(), {});
  EXPECT_EQ(*empty.promise.get_future().get(), "");
  auto token = std::make_shared<CancelToken>();
  token->Cancel();
  IoContext context;
  context.cancel = token;
  Outcome cancelled;
  GatherRanges("f", 0, 10, 10, script.fetcher(), cancelled.callback(), context);
  EXPECT_EQ(cancelled.promise.get_future().get().status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(script.parts().empty());
}

TEST(GatherRanges, LastPartDeliveryNeedsNoExecutorThread) {
  ScriptedFetcher script;
  Outcome outcome;
  GatherRanges("f", 0, 20, 10, script.fetcher(), outcome.callback(), {}, Delivery::kLastPart);
  script.parts()[1].done(Bytes(10, 10));
  EXPECT_EQ(outcome.calls.load(), 0);
  script.parts()[0].done(Bytes(0, 10));
  EXPECT_EQ(outcome.calls.load(), 1);  // delivered by the answering thread itself
  EXPECT_EQ(*outcome.promise.get_future().get(), Bytes(0, 20));
}

}  // namespace
}  // namespace sluice::io
