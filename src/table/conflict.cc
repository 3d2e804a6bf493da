// Conflict detection between a transaction and a commit that won the race (docs/table.md,
// "Concurrent writers"), following Delta's rules: blind appends never conflict; a metaData
// change conflicts with everything; a removal of a file the transaction removes or depends
// on conflicts; a data-changing add conflicts with an overwrite, delete or restore whose
// predicate covers it.
#include <set>

#include "commit.h"
#include "protocol_support.h"

namespace sluice::table {

std::string_view ConflictKindName(ConflictKind kind) {
  switch (kind) {
    case ConflictKind::kTableExists:
      return "table exists";
    case ConflictKind::kMetadataChanged:
      return "metadata changed";
    case ConflictKind::kProtocolChanged:
      return "protocol changed";
    case ConflictKind::kConcurrentAppend:
      return "concurrent append";
    case ConflictKind::kConcurrentDeleteDelete:
      return "concurrent delete-delete";
    case ConflictKind::kConcurrentDeleteRead:
      return "concurrent delete-read";
    case ConflictKind::kConcurrentTransaction:
      return "concurrent transaction";
  }
  return "unknown";
}

std::optional<Conflict> FindConflict(const Transaction& txn, const ParsedLogFile& winner,
                                     const std::string& source) {
  std::set<std::string> removes, app_ids;
  for (const Action& a : txn.actions) {
    if (auto* r = std::get_if<RemoveFile>(&a)) removes.insert(r->path);
    if (auto* t = std::get_if<Txn>(&a)) app_ids.insert(t->app_id);
  }
  const bool creates = txn.read_version < 0;
  for (const Action& a : winner.actions) {
    if (creates && (std::holds_alternative<Metadata>(a) || std::holds_alternative<Protocol>(a))) {
      return Conflict{ConflictKind::kTableExists,
                      source + " created the table first (this write meant to create it)"};
    }
    if (std::holds_alternative<Metadata>(a)) {
      return Conflict{ConflictKind::kMetadataChanged,
                      source +
                          " changed the table's metaData (schema, partitioning or "
                          "properties) after version " +
                          std::to_string(txn.read_version) + ", which this write planned on"};
    }
    if (auto* p = std::get_if<Protocol>(&a)) {
      Status can = CheckCanWrite(*p, Metadata{}, source);
      if (!can.ok()) return Conflict{ConflictKind::kProtocolChanged, can.message()};
    }
    if (auto* t = std::get_if<Txn>(&a); t != nullptr && app_ids.count(t->app_id)) {
      return Conflict{ConflictKind::kConcurrentTransaction,
                      source + " committed txn appId '" + t->app_id + "' (version " +
                          std::to_string(t->version) + ") concurrently"};
    }
    if (auto* r = std::get_if<RemoveFile>(&a)) {
      if (removes.count(r->path)) {
        return Conflict{ConflictKind::kConcurrentDeleteDelete,
                        source + " removed " + r->path + ", which this write also removes"};
      }
      if (txn.read_files.count(r->path)) {
        return Conflict{ConflictKind::kConcurrentDeleteRead,
                        source + " removed " + r->path + ", which this write depends on"};
      }
    }
    if (auto* add = std::get_if<AddFile>(&a)) {
      if (add->data_change && txn.conflicting_appends.has_value() &&
          txn.conflicting_appends->Matches(add->partition_values)) {
        return Conflict{ConflictKind::kConcurrentAppend,
                        source + " added " + add->path + ", which matches this write's " +
                            "predicate " + txn.conflicting_appends->ToString() +
                            " (it would survive the write unseen)"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace sluice::table
