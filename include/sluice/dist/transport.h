// Transport: how the ranks of a distributed job talk. MPI moves the bytes of a real job
// (dist/mpi_transport.h, a separate library so that only the programs that need MPI link
// it); InProcessGroup runs N ranks as threads of one process (tests) and a single process
// without MPI is InProcessGroup(1).
//
// Point-to-point messages carry the coordinator's protocol (task_runner.h); collectives carry
// the keyed exchanges (exchange.h). Every rank calls the collectives in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/bytes.h"
#include "sluice/base/status.h"
#include "sluice/dist/task.h"

namespace sluice::dist {

struct Message {
  Rank source = 0;
  int tag = 0;
  std::string data;
};

// Threading: one thread uses a Transport (the thread that opened it: MPI is initialised
// with MPI_THREAD_FUNNELED). Errors of the transport itself are IoError naming the call.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Rank rank() const = 0;
  virtual int size() const = 0;
  // This rank's node (its host name), for locality and for error messages.
  virtual const std::string& host() const = 0;

  // Sends `data` to `dest` (which may be this rank itself only in InProcessGroup). Never
  // waits for the receiver (the transport keeps a copy until it is delivered), so a frozen
  // rank cannot block its sender; messages from one rank to another arrive in order.
  virtual Status Send(Rank dest, int tag, ByteView data) = 0;
  // The next message that has arrived from any rank, or nullopt; never blocks.
  virtual Result<std::optional<Message>> TryReceive() = 0;

  virtual Status Barrier() = 0;
  // `data` of rank `root`, on every rank.
  virtual Result<std::string> Broadcast(std::string data, Rank root) = 0;
  // Every rank's `mine`, indexed by rank.
  virtual Result<std::vector<std::string>> AllGather(ByteView mine) = 0;
  // outgoing[d] goes to rank d; returns incoming[s], what rank s sent here (MPI_Alltoallv).
  virtual Result<std::vector<std::string>> AllToAll(const std::vector<std::string>& outgoing) = 0;
  // outgoing[d] goes to rank d; returns incoming[s] (MPI_Alltoall of one number each).
  virtual Result<std::vector<uint64_t>> AllToAllCounts(const std::vector<uint64_t>& outgoing) = 0;
  // Element-wise sum over the ranks of `values` (same length on every rank).
  virtual Result<std::vector<uint64_t>> AllReduceSum(const std::vector<uint64_t>& values) = 0;

  // Ends every rank of the job now with `exit_code` (MPI_Abort): for an error one rank meets
  // alone, when the others may wait for it in a collective. Does not return under MPI.
  virtual void Abort(int exit_code) = 0;
};

// N ranks in one process, one Transport each, to be used from N threads (a single process
// without MPI: InProcessGroup(1)). `hosts[r]` is rank r's host name (default: this machine's
// name for every rank). After Abort on any rank, pending and later calls on every rank fail
// with Cancelled.
std::vector<std::unique_ptr<Transport>> InProcessGroup(int ranks,
                                                       std::vector<std::string> hosts = {});

// This machine's host name.
std::string HostName();

}  // namespace sluice::dist
