#include "protocol_support.h"

#include <algorithm>
#include <array>

namespace sluice::table {
namespace {

constexpr std::array<std::string_view, 2> kReaderFeatures = {"v2Checkpoint", "vacuumProtocolCheck"};
constexpr std::array<std::string_view, 4> kWriterFeatures = {"appendOnly", "invariants",
                                                             "v2Checkpoint", "vacuumProtocolCheck"};

template <size_t N>
Status CheckFeatures(const std::optional<std::vector<std::string>>& listed,
                     const std::array<std::string_view, N>& known, const std::string& what) {
  if (!listed.has_value()) return Status::OK();
  for (const std::string& f : *listed) {
    if (std::find(known.begin(), known.end(), f) == known.end()) {
      std::string supported;
      for (std::string_view k : known)
        supported += (supported.empty() ? "" : ", ") + std::string(k);
      return Unimplemented(what + " uses the table feature '" + f +
                           "', which sluice does not support (it supports " + supported + ")");
    }
  }
  return Status::OK();
}

}  // namespace

Status CheckCanRead(const Protocol& p, const std::string& table) {
  const std::string what = "cannot read " + table + ": it";
  switch (p.min_reader_version) {
    case 1:
      return Status::OK();
    case 2:
      return Unimplemented(what +
                           " needs reader version 2 (column mapping), which sluice does "
                           "not support (it reads versions 1 and 3)");
    case 3:
      return CheckFeatures(p.reader_features, kReaderFeatures, what);
    default:
      return Unimplemented(what + " needs reader version " + std::to_string(p.min_reader_version) +
                           ", newer than sluice knows (1 to 3)");
  }
}

Status CheckCanWrite(const Protocol& p, const Metadata& m, const std::string& table) {
  SLUICE_RETURN_IF_ERROR(CheckCanRead(p, table));
  const std::string what = "cannot write " + table + ": it";
  if (p.min_writer_version >= 3 && p.min_writer_version <= 6) {
    return Unimplemented(what + " needs writer version " + std::to_string(p.min_writer_version) +
                         " (CHECK constraints, change data feed, generated or identity columns, "
                         "column mapping), which sluice does not implement; sluice can read it");
  }
  if (p.min_writer_version > 7) {
    return Unimplemented(what + " needs writer version " + std::to_string(p.min_writer_version) +
                         ", newer than sluice knows");
  }
  if (p.min_writer_version == 7) {
    SLUICE_RETURN_IF_ERROR(CheckFeatures(p.writer_features, kWriterFeatures, what));
  }
  if (m.schema_string.find("delta.invariants") != std::string::npos) {
    return Unimplemented(what + " has column invariants, which sluice cannot evaluate");
  }
  return Status::OK();
}

bool IsAppendOnly(const Metadata& m) {
  auto it = m.configuration.find("delta.appendOnly");
  return it != m.configuration.end() && it->second == "true";
}

}  // namespace sluice::table
