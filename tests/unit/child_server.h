// Runs a test server of tests/tools/ (the WebHDFS server, the fault-injecting proxy) as a
// child process for unit tests: starts it, reads the one JSON line it prints once it listens,
// and stops it in the destructor (SIGTERM, then SIGKILL after a bounded wait; only its own
// pid). The servers also end by themselves after their --lifetime.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sluice/base/status.h"

extern char** environ;

namespace sluice::testing {

// tests/tools/<script>, found from $SLUICE_SOURCE_DIR (set by ctest) or this header's path.
inline std::string ToolPath(const std::string& script) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  std::filesystem::path tools =
      root != nullptr && *root != '\0'
          ? std::filesystem::path(root) / "tests" / "tools"
          : std::filesystem::path(__FILE__).parent_path().parent_path() / "tools";
  return (tools / script).string();
}

class ChildServer {
 public:
  // Runs /usr/bin/python3 tests/tools/<script> args...; fails (naming the script) when it
  // does not print its line within `timeout`.
  static Result<std::unique_ptr<ChildServer>> StartTool(
      const std::string& script, const std::vector<std::string>& args,
      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    std::vector<std::string> argv = {"/usr/bin/python3", ToolPath(script)};
    argv.insert(argv.end(), args.begin(), args.end());
    auto child = std::unique_ptr<ChildServer>(new ChildServer());
    Status s = child->Spawn(argv);
    if (s.ok()) s = child->ReadInfo(timeout);
    if (!s.ok()) return s.WithContext(script);
    return child;
  }

  ~ChildServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 200 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
        if (i == 199) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
        }
      }
    }
    if (out_ >= 0) ::close(out_);
  }

  const nlohmann::json& info() const { return info_; }
  pid_t pid() const { return pid_; }

 private:
  ChildServer() = default;

  Status Spawn(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe", argv[1], errno);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int err = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = fds[0];
    if (err != 0) {
      pid_ = -1;
      return ErrnoStatus("spawn", argv[0], err);
    }
    return Status::OK();
  }

  Status ReadInfo(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string line;
    while (line.empty() || line.back() != '\n') {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{out_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return IoError("did not start within " + std::to_string(timeout.count()) + " ms");
      }
      char c;
      if (::read(out_, &c, 1) != 1) return IoError("exited before listening");
      line += c;
    }
    info_ = nlohmann::json::parse(line, nullptr, false);
    if (info_.is_discarded()) return IoError("printed no JSON: " + line);
    return Status::OK();
  }

  pid_t pid_ = -1;
  int out_ = -1;
  nlohmann::json info_;
};

}  // namespace sluice::testing
