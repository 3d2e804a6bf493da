// FaultInjectionFileSystem: counts the operations that change storage and fails, freezes or
// kills the process at the planned one.
#include "sluice/io/fault_injection_file_system.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <optional>

namespace sluice::io {
namespace {

constexpr std::array<std::string_view, kFaultOpCount> kOpNames = {
    "create", "write", "close", "rename", "put", "delete", "mkdir"};

// Passes every call to the wrapped file, asking the file system first for the changing ones.
class FaultInjectionWritableFile final : public WritableFile {
 public:
  FaultInjectionWritableFile(FaultInjectionFileSystem* fs, std::unique_ptr<WritableFile> base)
      : fs_(fs), base_(std::move(base)) {}

  const std::string& path() const override { return base_->path(); }
  uint64_t bytes_written() const override { return base_->bytes_written(); }
  Status Append(ByteView data) override {
    SLUICE_RETURN_IF_ERROR(fs_->Check(FaultOp::kWrite, base_->path()));
    return base_->Append(data);
  }
  Status Close() override {
    Status s = fs_->Check(FaultOp::kClose, base_->path());
    if (!s.ok()) {
      base_->Abort();
      return s;
    }
    return base_->Close();
  }
  void Abort() override { base_->Abort(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::unique_ptr<WritableFile> base_;
};

}  // namespace

std::string_view FaultOpName(FaultOp op) { return kOpNames[static_cast<size_t>(op)]; }

Result<FaultPlan> FaultPlan::Parse(std::string_view text) {
  FaultPlan plan;
  if (text == "count") return plan;
  auto bad = [&](const std::string& why) {
    return InvalidArgument("fault plan '" + std::string(text) + "': " + why +
                           " (expected count or ACTION:OP:K, e.g. crash:rename:3)");
  };
  size_t first = text.find(':');
  size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos) return bad("not three fields");
  std::string_view action = text.substr(0, first);
  std::string_view op = text.substr(first + 1, second - first - 1);
  std::string at(text.substr(second + 1));
  if (action == "fail") {
    plan.action = Action::kFail;
  } else if (action == "crash") {
    plan.action = Action::kCrash;
  } else if (action == "freeze") {
    plan.action = Action::kFreeze;
  } else {
    return bad("unknown action '" + std::string(action) + "'");
  }
  plan.any_op = op == "any";
  if (!plan.any_op) {
    size_t i = 0;
    while (i < kOpNames.size() && kOpNames[i] != op) ++i;
    if (i == kOpNames.size()) return bad("unknown operation '" + std::string(op) + "'");
    plan.op = static_cast<FaultOp>(i);
  }
  char* end = nullptr;
  unsigned long long k = std::strtoull(at.c_str(), &end, 10);
  if (at.empty() || *end != '\0' || k == 0) return bad("K must be a positive integer");
  plan.at = k;
  return plan;
}

uint64_t FaultInjectionFileSystem::total() const { return any_count_.load(); }

std::string FaultInjectionFileSystem::CountsText() const {
  std::string text;
  for (size_t i = 0; i < kFaultOpCount; ++i) {
    if (!text.empty()) text += ", ";
    text += std::string(kOpNames[i]) + " " + std::to_string(counts_[i].load());
  }
  return text;
}

Status FaultInjectionFileSystem::Check(FaultOp op, const std::string& path) {
  const uint64_t nth_of_kind = counts_[static_cast<size_t>(op)].fetch_add(1) + 1;
  const uint64_t nth = any_count_.fetch_add(1) + 1;
  auto injected = [&](std::string_view what) {
    return IoError("injected " + std::string(what) + ": " + std::string(FaultOpName(op)) + " " +
                   path + " (operation " + std::to_string(nth) + ")");
  };
  if (frozen_.load()) return injected("crash (storage frozen)");
  const bool counted = plan_.any_op || plan_.op == op;
  const uint64_t position = plan_.any_op ? nth : nth_of_kind;
  if (plan_.action == FaultPlan::Action::kNone || !counted || position != plan_.at) {
    return Status::OK();
  }
  switch (plan_.action) {
    case FaultPlan::Action::kCrash:
      std::raise(SIGKILL);  // as `kill -9`: no destructors, no atexit, no flush
      ::_exit(137);         // not reached
    case FaultPlan::Action::kFreeze:
      frozen_.store(true);
      return injected("crash (storage frozen)");
    case FaultPlan::Action::kFail:
      return injected("fault");
    case FaultPlan::Action::kNone:
      break;
  }
  return Status::OK();
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::OpenForWrite(
    const std::string& path, const WriteOptions& options) {
  SLUICE_RETURN_IF_ERROR(Check(FaultOp::kCreate, path));
  SLUICE_ASSIGN_OR_RETURN(auto file, base_->OpenForWrite(path, options));
  return std::unique_ptr<WritableFile>(new FaultInjectionWritableFile(this, std::move(file)));
}

Status FaultInjectionFileSystem::Delete(const std::string& path) {
  SLUICE_RETURN_IF_ERROR(Check(FaultOp::kDelete, path));
  return base_->Delete(path);
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  SLUICE_RETURN_IF_ERROR(Check(FaultOp::kRename, to));
  return base_->Rename(from, to);
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& dir) {
  SLUICE_RETURN_IF_ERROR(Check(FaultOp::kMkdir, dir));
  return base_->CreateDirs(dir);
}

Status FaultInjectionFileSystem::PutIfAbsent(const std::string& path, ByteView data) {
  SLUICE_RETURN_IF_ERROR(Check(FaultOp::kPut, path));
  return base_->PutIfAbsent(path, data);
}

Result<std::optional<FaultPlan>> FaultPlanFromEnvironment() {
  const char* value = std::getenv("SLUICE_FAULT_INJECTION");
  if (value == nullptr || *value == '\0') return std::optional<FaultPlan>();
  auto plan = FaultPlan::Parse(value);
  if (!plan.ok()) return InvalidArgument("SLUICE_FAULT_INJECTION: " + plan.status().message());
  return std::optional<FaultPlan>(*plan);
}

}  // namespace sluice::io
