// A table writer process for tests/python/test_table_concurrency.py and bench/table:
//   table_append_tool ROOT --commits N [--records R] [--writer ID] [--txn APP]
//                          [--checkpoint-interval K]
// Appends N commits to the table at ROOT (created by the first commit if absent), each a new
// shard of R records "w<ID>-c<i>-r<j>", through sluice::table (TableWriter + Table::Append).
// After each commit it prints, flushed, one line:
//   committed VERSION ATTEMPTS PATH RECORDS
// so that a test that kills it with SIGKILL knows exactly which commits completed. With
// --txn APP, commit i carries txn (APP, i): a rerun of the same writer commits nothing twice.
// Exit 1 with "error: ..." on stderr on failure.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "sluice/table/table.h"
#include "sluice/table/table_writer.h"

namespace {

using namespace sluice;         // NOLINT
using namespace sluice::table;  // NOLINT

struct Args {
  std::string root;
  int commits = 1;
  int records = 10;
  std::string writer = "0";
  std::string txn;
  int64_t checkpoint_interval = 100;
};

bool Parse(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->root = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--commits") {
      a->commits = std::atoi(value.c_str());
    } else if (flag == "--records") {
      a->records = std::atoi(value.c_str());
    } else if (flag == "--writer") {
      a->writer = value;
    } else if (flag == "--txn") {
      a->txn = value;
    } else if (flag == "--checkpoint-interval") {
      a->checkpoint_interval = std::atoll(value.c_str());
    } else {
      return false;
    }
  }
  return true;
}

// `table`: the table as of this writer's previous commit (empty before its first), so that a
// commit reads only the commits made since, as a long-lived writer does.
Status AppendOne(const Args& a, int commit, std::optional<Table>* table) {
  std::string local;
  SLUICE_ASSIGN_OR_RETURN(io::FileSystem * fs, io::FileSystemFor(a.root, &local));
  TableWriterOptions wo;
  wo.record.zstd_frame_bytes = 4096;
  SLUICE_ASSIGN_OR_RETURN(auto writer, TableWriter::Open(fs, local, wo));
  for (int j = 0; j < a.records; ++j) {
    std::string record = "w" + a.writer + "-c" + std::to_string(commit) + "-r" + std::to_string(j);
    SLUICE_RETURN_IF_ERROR(writer->Write(record));
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<DataFile> files, writer->Finish());
  CommitOptions o;
  o.checkpoint_interval = a.checkpoint_interval;
  if (!a.txn.empty()) o.txn = TxnId{a.txn, commit};
  Result<CommitResult> r =
      table->has_value() ? (*table)->AppendFiles(files, o) : Table::Append(fs, local, files, o);
  if (!r.ok()) {
    writer->Abort();
    return r.status();
  }
  if (!table->has_value()) {
    SLUICE_ASSIGN_OR_RETURN(Table t, Table::Open(fs, local));
    table->emplace(std::move(t));
  }
  std::printf("committed %lld %d %s %d%s\n", static_cast<long long>(r->version), r->attempts,
              files[0].path.c_str(), a.records, r->duplicate ? " duplicate" : "");
  std::fflush(stdout);
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: table_append_tool ROOT --commits N [--records R] [--writer ID] "
                 "[--txn APP] [--checkpoint-interval K]\n");
    return 2;
  }
  std::optional<Table> table;
  for (int i = 0; i < a.commits; ++i) {
    Status s = AppendOne(a, i, &table);
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
