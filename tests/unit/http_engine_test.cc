// The HTTP engine against a scripted server on loopback: real libcurl, real sockets, and
// the failures a network produces (503 storms, resets, short bodies, late first bytes,
// servers that never answer).
#include "sluice/io/http_engine.h"

#include <gtest/gtest.h>

#include <future>
#include <map>

#include "unit/http_test_server.h"

namespace sluice::io {
namespace {

using sluice::testing::ScriptedHttpServer;
using Reply = ScriptedHttpServer::Reply;
using Received = ScriptedHttpServer::Received;
using namespace std::chrono_literals;

// Fast retries so that tests of retry logic take milliseconds.
HttpEngineOptions FastOptions() {
  HttpEngineOptions o;
  RetryPolicy::Options r;
  r.base_delay = 1ms;
  r.max_delay = 4ms;
  r.max_attempts = 4;
  o.retry = std::make_shared<const RetryPolicy>(r);
  o.stall_timeout = 1000ms;
  return o;
}

HttpRequest Get(const ScriptedHttpServer& server, const std::string& path) {
  HttpRequest r;
  r.url = server.Url(path);
  return r;
}

// Waits for a callback, failing (not hanging) if the engine never calls it.
Result<HttpResponse> Wait(std::future<Result<HttpResponse>>& f) {
  if (f.wait_for(60s) != std::future_status::ready) return Internal("callback never ran");
  return f.get();
}

TEST(HttpEngine, GetDeliversStatusHeadersAndBody) {
  ScriptedHttpServer server([](const Received& r) {
    Reply reply;
    reply.body = "hello " + r.target;
    reply.headers = {{"ETag", "\"abc\""}};
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello /x");
  ASSERT_NE(r->Header("etag"), nullptr);
  EXPECT_EQ(*r->Header("ETAG"), "\"abc\"");
  EXPECT_EQ(r->attempts, 1);
}

TEST(HttpEngine, PutSendsBodyAndHeadSendsNone) {
  std::mutex mu;
  std::vector<Received> seen;
  ScriptedHttpServer server([&](const Received& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
    Reply reply;
    reply.body = r.method == "HEAD" ? "" : "ok";
    return reply;
  });
  HttpEngine engine(FastOptions());
  HttpRequest put = Get(server, "/p");
  put.method = "PUT";
  put.body = std::make_shared<const std::string>(std::string(3 << 20, 'z'));
  ASSERT_TRUE(engine.Call(put).ok());
  HttpRequest empty_put = Get(server, "/e");
  empty_put.method = "PUT";
  ASSERT_TRUE(engine.Call(empty_put).ok());
  HttpRequest head = Get(server, "/h");
  head.method = "HEAD";
  auto r = engine.Call(head);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->body.empty());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].method, "PUT");
  EXPECT_EQ(seen[0].body.size(), size_t{3} << 20);
  EXPECT_EQ(seen[0].headers.count("expect"), 0u);  // no 100-continue round trip
  EXPECT_EQ(seen[1].headers["content-length"], "0");
  EXPECT_EQ(seen[2].method, "HEAD");
}

TEST(HttpEngine, ServiceUnavailableIsRetriedUntilItPasses) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    if (++calls <= 2) {
      reply.status = 503;
      reply.body = "<Error><Code>SlowDown</Code></Error>";
    } else {
      reply.body = "finally";
    }
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "finally");
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(engine.stats().retries, 2u);
}

TEST(HttpEngine, ServiceUnavailableStormEndsWithTheLastResponseAndAttemptCount) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.status = 503;
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok());  // an HTTP error is a response: the caller names the status
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->attempts, 4);
  EXPECT_EQ(server.requests(), 4);
}

TEST(HttpEngine, NotFoundIsNotRetried) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.status = 404;
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->attempts, 1);
}

TEST(HttpEngine, ErrorCodeInBodyMakesAStatusRetryable) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    if (++calls == 1) {
      reply.status = 400;
      reply.body = "RequestTimeout";
    }
    return reply;
  });
  HttpEngineOptions o = FastOptions();
  RetryPolicy::Options ro = o.retry->options();
  ro.decode_error_code = [](long, std::string_view body) { return std::string(body); };
  o.retry = std::make_shared<const RetryPolicy>(ro);
  HttpEngine engine(o);
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->attempts, 2);
}

TEST(HttpEngine, ErrorDocumentInsideOkReplyIsRetriedWhenFlagged) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    reply.body = ++calls == 1 ? "InternalError" : "<Done/>";
    return reply;
  });
  HttpEngineOptions o = FastOptions();
  RetryPolicy::Options ro = o.retry->options();
  ro.decode_error_code = [](long, std::string_view body) {
    return body == "InternalError" ? std::string(body) : std::string();
  };
  o.retry = std::make_shared<const RetryPolicy>(ro);
  HttpEngine engine(o);
  HttpRequest req = Get(server, "/complete");
  req.method = "POST";
  req.ok_body_may_be_error = true;
  auto r = engine.Call(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "<Done/>");
  EXPECT_EQ(r->attempts, 2);
}

TEST(HttpEngine, BodyCutShortIsRetriedAndNeverHandedOn) {
  std::atomic<int> calls{0};
  const std::string payload(100000, 'p');
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    reply.body = payload;
    if (++calls == 1) reply.cut_after = 5000;
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, payload);
  EXPECT_EQ(r->attempts, 2);
}

TEST(HttpEngine, BodyOfTheWrongLengthFailsNamingTheUrl) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.body = "0123456789";  // complete per Content-Length, but not what was asked for
    return reply;
  });
  HttpEngine engine(FastOptions());
  HttpRequest req = Get(server, "/range");
  req.expected_body_bytes = 20;
  auto r = engine.Call(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find(server.Url("/range")), std::string::npos);
  EXPECT_NE(r.status().message().find("expected 20"), std::string::npos);
  EXPECT_NE(r.status().message().find("4 attempts"), std::string::npos);
}

TEST(HttpEngine, LongerBodyThanAskedForIsNeverHandedOn) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    reply.body = ++calls == 1 ? std::string(50, 'x') : std::string(20, 'y');
    return reply;
  });
  HttpEngine engine(FastOptions());
  HttpRequest req = Get(server, "/range");
  req.expected_body_bytes = 20;
  auto r = engine.Call(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, std::string(20, 'y'));
}

TEST(HttpEngine, ConnectionResetIsRetried) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    reply.reset = ++calls <= 2;
    reply.body = "after resets";
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "after resets");
  EXPECT_EQ(r->attempts, 3);
}

TEST(HttpEngine, RefusedConnectionFailsAfterTheRetriesNamingUrlAndAttempts) {
  int port;
  {
    ScriptedHttpServer gone([](const Received&) { return Reply(); });
    port = gone.port();
  }  // nothing listens there any more
  HttpEngine engine(FastOptions());
  HttpRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  req.headers = {{"Authorization", "secret-token-value"}};
  auto r = engine.Call(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find(req.url), std::string::npos);
  EXPECT_NE(r.status().message().find("4 attempts"), std::string::npos);
  EXPECT_EQ(r.status().message().find("secret-token-value"), std::string::npos);
}

TEST(HttpEngine, ServerThatNeverAnswersFailsAtTheDeadline) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.hang = true;
    return reply;
  });
  HttpEngine engine(FastOptions());
  HttpRequest req = Get(server, "/x");
  req.timeout = 300ms;
  auto r = engine.Call(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("no complete response within"), std::string::npos);
}

TEST(HttpEngine, StalledTransferIsRetried) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received&) {
    Reply reply;
    if (++calls == 1) reply.hang = true;  // the stall timeout (1 s) ends this attempt
    reply.body = "second";
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto r = engine.Call(Get(server, "/x"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "second");
  EXPECT_EQ(r->attempts, 2);
}

TEST(HttpEngine, CancelTokenEndsEveryRequestInFlight) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.hang = true;
    return reply;
  });
  HttpEngine engine(FastOptions());
  auto token = std::make_shared<CancelToken>();
  std::vector<std::future<Result<HttpResponse>>> futures;
  std::vector<std::shared_ptr<std::promise<Result<HttpResponse>>>> promises;
  for (int i = 0; i < 10; ++i) {
    auto p = std::make_shared<std::promise<Result<HttpResponse>>>();
    futures.push_back(p->get_future());
    HttpRequest req = Get(server, "/x" + std::to_string(i));
    req.cancel = token;
    engine.Submit(req, [p](Result<HttpResponse> r) { p->set_value(std::move(r)); });
  }
  while (server.requests() < 10) std::this_thread::sleep_for(1ms);
  token->Cancel();
  for (auto& f : futures) {
    auto r = Wait(f);
    EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().ToString();
  }
  EXPECT_EQ(engine.stats().in_flight, 0u);
}

TEST(HttpEngine, CancelByIdStopsOnlyThatRequest) {
  ScriptedHttpServer server([](const Received& r) {
    Reply reply;
    reply.hang = r.target == "/slow";
    reply.delay = r.target == "/fast" ? 100ms : 0ms;
    reply.body = "fast";
    return reply;
  });
  HttpEngine engine(FastOptions());
  std::promise<Result<HttpResponse>> slow, fast;
  auto slow_f = slow.get_future(), fast_f = fast.get_future();
  auto id = engine.Submit(Get(server, "/slow"),
                          [&](Result<HttpResponse> r) { slow.set_value(std::move(r)); });
  engine.Submit(Get(server, "/fast"),
                [&](Result<HttpResponse> r) { fast.set_value(std::move(r)); });
  engine.Cancel(id);
  EXPECT_EQ(Wait(slow_f).status().code(), StatusCode::kCancelled);
  auto f = Wait(fast_f);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->body, "fast");
}

TEST(HttpEngine, NeverRunsMoreThanMaxInFlight) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.delay = 20ms;
    reply.body = "x";
    return reply;
  });
  HttpEngineOptions o = FastOptions();
  o.max_in_flight = 3;
  HttpEngine engine(o);
  std::vector<std::future<Result<HttpResponse>>> futures;
  for (int i = 0; i < 12; ++i) {
    auto p = std::make_shared<std::promise<Result<HttpResponse>>>();
    futures.push_back(p->get_future());
    engine.Submit(Get(server, "/x"), [p](Result<HttpResponse> r) { p->set_value(std::move(r)); });
  }
  for (auto& f : futures) EXPECT_TRUE(Wait(f).ok());
  EXPECT_LE(server.max_concurrent(), 3);
  EXPECT_LE(server.connections(), 6);  // connections are reused, not one per request
  EXPECT_EQ(engine.stats().requests, 12u);
}

// Answers "data"; the first request for /slow stalls 20 s (counted in *slow_calls).
ScriptedHttpServer::Handler FirstSlowCallStalls(std::atomic<int>* slow_calls) {
  return [slow_calls](const Received& r) {
    Reply reply;
    reply.body = "data";
    if (r.target == "/slow" && ++*slow_calls == 1) reply.delay = 20s;  // the original stalls
    return reply;
  };
}

TEST(HttpEngine, LateFirstByteIsHedgedAndTheDuplicateWins) {
  std::atomic<int> slow_calls{0};
  ScriptedHttpServer server(FirstSlowCallStalls(&slow_calls));
  HttpEngineOptions o = FastOptions();
  o.hedge.min_samples = 20;
  o.hedge.min_delay = 50ms;  // well above scheduling noise on a loaded machine
  o.hedge.burst = 10;
  HttpEngine engine(o);
  for (int i = 0; i < 60; ++i) {  // learn the latency; earn budget
    HttpRequest req = Get(server, "/fast");
    req.hedge = true;
    ASSERT_TRUE(engine.Call(req).ok());
  }
  const HttpEngineStats before = engine.stats();
  HttpRequest req = Get(server, "/slow");
  req.hedge = true;
  auto r = engine.Call(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "data");
  EXPECT_TRUE(r->hedged);
  EXPECT_EQ(r->attempts, 1);
  HttpEngineStats s = engine.stats();
  EXPECT_EQ(s.hedges - before.hedges, 1u);
  EXPECT_EQ(s.hedges_won - before.hedges_won, 1u);
  EXPECT_EQ(s.in_flight, 0u);  // the loser was removed
  EXPECT_EQ(slow_calls.load(), 2);
}

TEST(HttpEngine, RequestThatFoundTheBudgetEmptyIsHedgedWithTheNextToken) {
  std::atomic<int> a_calls{0}, b_calls{0};
  ScriptedHttpServer server([&](const Received& r) {
    Reply reply;
    reply.body = "data";
    if ((r.target == "/a" && ++a_calls == 1) || (r.target == "/b" && ++b_calls == 1)) {
      reply.delay = 20s;  // both originals stall
    }
    return reply;
  });
  HttpEngineOptions o = FastOptions();
  o.stall_timeout = 10s;  // B must be rescued by a hedge, not by a retry
  o.hedge.min_samples = 20;
  o.hedge.min_delay = 50ms;
  o.hedge.burst = 1;
  o.hedge.max_extra_fraction = 0.5;  // a token every 2 requests
  o.hedge.overdue_multiple = 0;      // B waits for its token, however long
  HttpEngine engine(o);
  auto call = [&](const std::string& path) {
    auto p = std::make_shared<std::promise<Result<HttpResponse>>>();
    auto f = p->get_future();
    HttpRequest req = Get(server, path);
    req.hedge = true;
    engine.Submit(req, [p](Result<HttpResponse> r) { p->set_value(std::move(r)); });
    return f;
  };
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(engine.Call([&] {
    HttpRequest req = Get(server, "/fast");
    req.hedge = true;
    return req;
  }()).ok());
  const uint64_t before = engine.stats().hedges;
  auto a = call("/a");  // takes the one saved token once its delay passes
  for (int i = 0; i < 2000 && engine.stats().hedges == before; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(engine.stats().hedges, before + 1);
  auto b = call("/b");  // its own request earns half a token: B waits
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(engine.stats().hedges, before + 1) << "a duplicate without a token";
  HttpRequest fast = Get(server, "/fast");
  fast.hedge = true;
  ASSERT_TRUE(engine.Call(fast).ok());  // the other half: the token goes to B
  for (auto* f : {&a, &b}) {
    auto r = Wait(*f);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->hedged);
    EXPECT_EQ(r->attempts, 1);
  }
  EXPECT_EQ(engine.stats().hedges, before + 2);
}

// One request in flight and an empty budget: the stall itself stops the requests that would
// earn a token, so the overdue request borrows one (else it waits out the whole stall).
TEST(HttpEngine, OverdueRequestBorrowsADuplicateWhenTheBudgetIsEmpty) {
  std::atomic<int> slow_calls{0};
  ScriptedHttpServer server(FirstSlowCallStalls(&slow_calls));
  HttpEngineOptions o = FastOptions();
  o.stall_timeout = 10s;  // rescued by a hedge, not by a retry
  o.hedge.min_samples = 20;
  o.hedge.min_delay = 50ms;
  o.hedge.max_extra_fraction = 0.001;  // 40 requests earn 0.04 of a duplicate
  HttpEngine engine(o);
  for (int i = 0; i < 40; ++i) {
    HttpRequest req = Get(server, "/fast");
    req.hedge = true;
    ASSERT_TRUE(engine.Call(req).ok());
  }
  HttpRequest req = Get(server, "/slow");
  req.hedge = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = engine.Call(req);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "data");
  EXPECT_TRUE(r->hedged);
  EXPECT_EQ(r->attempts, 1);
  EXPECT_LT(took, 10s) << "the stall was waited out";
  EXPECT_EQ(engine.stats().hedges, 1u);
  EXPECT_EQ(slow_calls.load(), 2);
}

TEST(HttpEngine, BodyGoesIntoTheBufferGiven) {
  const std::string payload(100000, 'p');
  ScriptedHttpServer server([&](const Received& r) {
    Reply reply;
    reply.status = r.target == "/missing" ? 404 : 200;
    reply.body = r.target == "/missing" ? "<Error><Code>NoSuchKey</Code></Error>" : payload;
    return reply;
  });
  HttpEngine engine(FastOptions());
  const char* given = nullptr;
  size_t asked = 0;
  HttpRequest req = Get(server, "/x");
  req.expected_body_bytes = payload.size();
  req.body_buffer = [&](size_t n) {
    asked = n;
    std::string buffer(1 << 20, 'z');  // longer than asked, with stale bytes
    given = buffer.data();
    return buffer;
  };
  auto r = engine.Call(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(asked, payload.size());
  EXPECT_EQ(r->body, payload);
  EXPECT_EQ(r->body.data(), given) << "the body did not go into the buffer given";
  EXPECT_GE(r->body.capacity(), size_t{1} << 20);

  asked = 0;  // an error document is not a body for the buffer
  HttpRequest missing = Get(server, "/missing");
  missing.expected_body_bytes = payload.size();
  missing.body_buffer = req.body_buffer;
  auto m = engine.Call(missing);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->status, 404);
  EXPECT_EQ(asked, 0u);
  EXPECT_NE(m->body.find("NoSuchKey"), std::string::npos);
}

TEST(HttpEngine, RequestsNotMarkedHedgeableAreNeverDuplicated) {
  std::atomic<int> calls{0};
  ScriptedHttpServer server([&](const Received& r) {
    Reply reply;
    if (r.target == "/slow") {
      ++calls;
      reply.delay = 200ms;
    }
    return reply;
  });
  HttpEngineOptions o = FastOptions();
  o.hedge.min_samples = 5;
  HttpEngine engine(o);
  for (int i = 0; i < 40; ++i) {
    HttpRequest req = Get(server, "/fast");
    req.hedge = true;
    ASSERT_TRUE(engine.Call(req).ok());
  }
  const uint64_t hedges_before = engine.stats().hedges;
  ASSERT_TRUE(engine.Call(Get(server, "/slow")).ok());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(engine.stats().hedges, hedges_before);
}

class CountingSigner : public RequestSigner {
 public:
  void Sign(std::chrono::system_clock::time_point, HttpRequest* attempt) const override {
    attempt->headers.emplace_back("X-Attempt", std::to_string(++count_));
  }
  mutable std::atomic<int> count_{0};
};

TEST(HttpEngine, EveryAttemptIsSignedAfresh) {
  std::mutex mu;
  std::vector<std::string> attempts;
  ScriptedHttpServer server([&](const Received& r) {
    std::lock_guard<std::mutex> lock(mu);
    attempts.push_back(r.headers.at("x-attempt"));
    Reply reply;
    reply.status = attempts.size() < 3 ? 500 : 200;
    return reply;
  });
  HttpEngine engine(FastOptions());
  HttpRequest req = Get(server, "/x");
  req.signer = std::make_shared<CountingSigner>();
  ASSERT_TRUE(engine.Call(req).ok());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(attempts, (std::vector<std::string>{"1", "2", "3"}));
}

TEST(HttpEngine, DestroyingTheEngineCancelsWhatIsPending) {
  ScriptedHttpServer server([](const Received&) {
    Reply reply;
    reply.hang = true;
    return reply;
  });
  std::promise<Result<HttpResponse>> p;
  auto f = p.get_future();
  {
    HttpEngine engine(FastOptions());
    engine.Submit(Get(server, "/x"), [&](Result<HttpResponse> r) { p.set_value(std::move(r)); });
  }
  EXPECT_EQ(Wait(f).status().code(), StatusCode::kCancelled);
}

TEST(HttpEngine, CallbackMaySubmitAnotherRequest) {
  ScriptedHttpServer server([](const Received& r) {
    Reply reply;
    reply.body = r.target;
    return reply;
  });
  HttpEngine engine(FastOptions());
  std::promise<Result<HttpResponse>> second;
  auto f = second.get_future();
  engine.Submit(Get(server, "/one"), [&](Result<HttpResponse>) {
    engine.Submit(Get(server, "/two"),
                  [&](Result<HttpResponse> r) { second.set_value(std::move(r)); });
  });
  auto r = Wait(f);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body, "/two");
}

}  // namespace
}  // namespace sluice::io
