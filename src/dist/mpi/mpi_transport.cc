// The MPI module, libsluice_mpi.so (dist/mpi_module.h): MPI_COMM_WORLD as a Transport.
#include "dist/mpi_module.h"

// The C API only: the deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <list>
#include <string_view>
#include <type_traits>

namespace sluice::dist {
namespace {

Status MpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int n = 0;
  MPI_Error_string(code, text, &n);
  return IoError(std::string(call) + ": " + std::string(text, n));
}

#define SLUICE_MPI(call)                                               \
  do {                                                                 \
    int _sluice_rc = (call);                                           \
    if (_sluice_rc != MPI_SUCCESS) return MpiError(#call, _sluice_rc); \
  } while (0)

// Byte counts of MPI calls are ints: more than 2 GiB in one message is refused, not wrapped.
Status CheckCount(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    return ResourceExhausted(std::string(what) + ": " + std::to_string(n) +
                             " bytes exceed one MPI message (2 GiB)");
  }
  return Status::OK();
}

class MpiTransport final : public Transport {
 public:
  MpiTransport() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int n = 0;
    MPI_Get_processor_name(name, &n);
    host_.assign(name, n);
  }
  // Every message sent has been received by then (the job's last exchange is EndJob's, after
  // which no rank sends), so the wait for pending sends ends.
  ~MpiTransport() override {
    for (Pending& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    MPI_Finalize();
  }

  Rank rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& host() const override { return host_; }

  // MPI_Isend of a copy kept until delivered: a message larger than MPI's eager limit
  // (a few KiB on shared memory) would otherwise block MPI_Send until the receiver takes it,
  // and a frozen receiver would hold the sender (the coordinator) hostage.
  Status Send(Rank dest, int tag, ByteView data) override {
    SLUICE_RETURN_IF_ERROR(CheckCount(data.size(), "MPI_Isend"));
    SLUICE_RETURN_IF_ERROR(ReapSends());
    Pending& p = pending_.emplace_back();
    p.data.assign(data.data(), data.size());
    int rc = MPI_Isend(p.data.data(), static_cast<int>(p.data.size()), MPI_BYTE, dest, tag,
                       MPI_COMM_WORLD, &p.request);
    if (rc != MPI_SUCCESS) {
      pending_.pop_back();
      return MpiError("MPI_Isend", rc);
    }
    return Status::OK();
  }

  Result<std::optional<Message>> TryReceive() override {
    SLUICE_RETURN_IF_ERROR(ReapSends());
    int flag = 0;
    MPI_Status st;
    SLUICE_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    if (!flag) return std::optional<Message>();
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    Message m{st.MPI_SOURCE, st.MPI_TAG, std::string(n, '\0')};
    SLUICE_MPI(MPI_Recv(m.data.data(), n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    return std::optional<Message>(std::move(m));
  }

  Status Barrier() override {
    SLUICE_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return Status::OK();
  }

  Result<std::string> Broadcast(std::string data, Rank root) override {
    uint64_t n = data.size();
    SLUICE_MPI(MPI_Bcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD));
    SLUICE_RETURN_IF_ERROR(CheckCount(n, "MPI_Bcast"));
    data.resize(n);
    SLUICE_MPI(MPI_Bcast(data.data(), static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD));
    return data;
  }

  Result<std::vector<std::string>> AllGather(ByteView mine) override {
    SLUICE_RETURN_IF_ERROR(CheckCount(mine.size(), "MPI_Allgatherv"));
    int n = static_cast<int>(mine.size());
    std::vector<int> counts(size_), displs(size_);
    SLUICE_MPI(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD));
    SLUICE_ASSIGN_OR_RETURN(size_t total, Displacements(counts, &displs));
    std::string all(total, '\0');
    SLUICE_MPI(MPI_Allgatherv(mine.data(), n, MPI_BYTE, all.data(), counts.data(), displs.data(),
                              MPI_BYTE, MPI_COMM_WORLD));
    return Split(all, counts, displs);
  }

  Result<std::vector<std::string>> AllToAll(const std::vector<std::string>& outgoing) override {
    std::vector<int> send_counts(size_), send_displs(size_), recv_counts(size_), recv_displs(size_);
    std::string send;
    for (int d = 0; d < size_; ++d) {
      SLUICE_RETURN_IF_ERROR(CheckCount(outgoing[d].size(), "MPI_Alltoallv"));
      send_counts[d] = static_cast<int>(outgoing[d].size());
      send += outgoing[d];
    }
    SLUICE_RETURN_IF_ERROR(Displacements(send_counts, &send_displs).status());
    SLUICE_MPI(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT,
                            MPI_COMM_WORLD));
    SLUICE_ASSIGN_OR_RETURN(size_t total, Displacements(recv_counts, &recv_displs));
    std::string recv(total, '\0');
    SLUICE_MPI(MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_BYTE,
                             recv.data(), recv_counts.data(), recv_displs.data(), MPI_BYTE,
                             MPI_COMM_WORLD));
    return Split(recv, recv_counts, recv_displs);
  }

  Result<std::vector<uint64_t>> AllToAllCounts(const std::vector<uint64_t>& outgoing) override {
    std::vector<uint64_t> incoming(size_);
    SLUICE_MPI(MPI_Alltoall(outgoing.data(), 1, MPI_UINT64_T, incoming.data(), 1, MPI_UINT64_T,
                            MPI_COMM_WORLD));
    return incoming;
  }

  Result<std::vector<uint64_t>> AllReduceSum(const std::vector<uint64_t>& values) override {
    std::vector<uint64_t> sum(values.size());
    SLUICE_MPI(MPI_Allreduce(values.data(), sum.data(), static_cast<int>(values.size()),
                             MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    return sum;
  }

  void Abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::string data;  // the bytes MPI reads until the send completes
  };

  // Drops the sends that completed.
  Status ReapSends() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      SLUICE_MPI(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE));
      it = done ? pending_.erase(it) : std::next(it);
    }
    return Status::OK();
  }

  static Result<size_t> Displacements(const std::vector<int>& counts, std::vector<int>* displs) {
    size_t total = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      SLUICE_RETURN_IF_ERROR(CheckCount(total, "MPI displacement"));
      (*displs)[i] = static_cast<int>(total);
      total += static_cast<size_t>(counts[i]);
    }
    return total;
  }
  static std::vector<std::string> Split(const std::string& all, const std::vector<int>& counts,
                                        const std::vector<int>& displs) {
    std::vector<std::string> parts(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) parts[i] = all.substr(displs[i], counts[i]);
    return parts;
  }

  int rank_ = 0, size_ = 1;
  std::string host_;
  std::list<Pending> pending_;  // std::list: a send's buffer never moves
};

Result<std::unique_ptr<Transport>> OpenTransport() {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Init_thread", rc);
  // Errors come back as codes (turned into Status) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::unique_ptr<Transport>(std::make_unique<MpiTransport>());
}

}  // namespace
}  // namespace sluice::dist

// The module's entry point (dist/mpi_module.h), the one symbol it exports: everything else,
// sluice's own code linked into it included, is hidden, so that it cannot stand in for the
// program's.
extern "C" __attribute__((visibility("default"))) void sluice_mpi_open_transport_v1(
    sluice::Result<std::unique_ptr<sluice::dist::Transport>>* out) {
  *out = sluice::dist::OpenTransport();
}
static_assert(
    std::is_same_v<decltype(&sluice_mpi_open_transport_v1), sluice::dist::MpiModuleEntry>);
static_assert(std::string_view(sluice::dist::kMpiModuleEntry) == "sluice_mpi_open_transport_v1");
