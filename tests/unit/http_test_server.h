// A scripted HTTP/1.1 server on 127.0.0.1 (port picked by the kernel) for the HTTP engine's
// tests: a handler decides each reply, including the misbehaviours a real network shows
// (late first byte, a body cut short, a reset connection, a server that never answers).
// Connections are kept alive like a real server's. Everything stops in the destructor.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::testing {

class ScriptedHttpServer {
 public:
  struct Received {
    std::string method, target;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
  };
  struct Reply {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::chrono::milliseconds delay{0};  // before the status line
    std::optional<size_t> cut_after;     // send this many body bytes, then close
    bool reset = false;                  // close with RST instead of answering
    bool hang = false;                   // never answer (until the server stops)
  };
  using Handler = std::function<Reply(const Received&)>;

  explicit ScriptedHttpServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 128);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~ScriptedHttpServer() {
    stopping_ = true;
    acceptor_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(connections_);
    }
    for (auto& t : threads) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int requests() const { return requests_.load(); }
  int max_concurrent() const { return max_concurrent_.load(); }
  int connections() const { return accepted_.load(); }

 private:
  // Waits up to 20 ms for `fd` to be readable; false when the server stops.
  bool WaitReadable(int fd) {
    while (!stopping_) {
      pollfd p{fd, POLLIN, 0};
      int r = ::poll(&p, 1, 20);
      if (r > 0) return true;
    }
    return false;
  }

  void AcceptLoop() {
    while (WaitReadable(listen_fd_)) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      accepted_++;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Reads one request; false on EOF or stop.
  bool ReadRequest(int fd, std::string* buffer, Received* req) {
    size_t end;
    while ((end = buffer->find("\r\n\r\n")) == std::string::npos) {
      if (!WaitReadable(fd)) return false;
      char chunk[65536];
      ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return false;
      buffer->append(chunk, static_cast<size_t>(n));
    }
    std::string head = buffer->substr(0, end);
    buffer->erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    std::string line = head.substr(0, line_end);
    size_t s1 = line.find(' '), s2 = line.rfind(' ');
    req->method = line.substr(0, s1);
    req->target = line.substr(s1 + 1, s2 - s1 - 1);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t next = head.find("\r\n", pos);
      if (next == std::string::npos) next = head.size();
      std::string h = head.substr(pos, next - pos);
      size_t colon = h.find(':');
      if (colon != std::string::npos) {
        std::string name = h.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t v = h.find_first_not_of(' ', colon + 1);
        req->headers[name] = v == std::string::npos ? "" : h.substr(v);
      }
      pos = next + 2;
    }
    size_t length =
        req->headers.count("content-length") ? std::stoul(req->headers["content-length"]) : 0;
    while (buffer->size() < length) {
      if (!WaitReadable(fd)) return false;
      char chunk[65536];
      ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return false;
      buffer->append(chunk, static_cast<size_t>(n));
    }
    req->body = buffer->substr(0, length);
    buffer->erase(0, length);
    return true;
  }

  void SendAll(int fd, const char* data, size_t n) {
    while (n > 0) {
      ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
      if (w <= 0) return;
      data += w;
      n -= static_cast<size_t>(w);
    }
  }

  // Sleeps in small steps so that a stopping server never waits for a long delay.
  bool Pause(std::chrono::milliseconds d) {
    auto until = std::chrono::steady_clock::now() + d;
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return !stopping_;
  }

  void Serve(int fd) {
    std::string buffer;
    Received req;
    while (ReadRequest(fd, &buffer, &req)) {
      requests_++;
      int now = ++concurrent_;
      int seen = max_concurrent_.load();
      while (now > seen && !max_concurrent_.compare_exchange_weak(seen, now)) {
      }
      Reply reply = handler_(req);
      bool keep = Answer(fd, req, reply);
      --concurrent_;
      if (!keep) break;
      req = Received();
    }
    ::close(fd);
  }

  // False when the connection must close.
  bool Answer(int fd, const Received& req, const Reply& reply) {
    if (reply.hang) {
      Pause(std::chrono::hours(1));
      return false;
    }
    if (!Pause(reply.delay)) return false;
    if (reply.reset) {
      linger l{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      return false;
    }
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " X\r\n";
    bool has_length = false;
    for (const auto& [k, v] : reply.headers) {
      head += k + ": " + v + "\r\n";
      if (k == "Content-Length") has_length = true;
    }
    if (!has_length) head += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    head += "\r\n";
    SendAll(fd, head.data(), head.size());
    if (req.method == "HEAD") return true;
    size_t n = reply.cut_after.value_or(reply.body.size());
    SendAll(fd, reply.body.data(), std::min(n, reply.body.size()));
    return !reply.cut_after.has_value();
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0}, concurrent_{0}, max_concurrent_{0}, accepted_{0};
  std::mutex mu_;
  std::vector<std::thread> connections_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace sluice::testing
