// The RecordSource of shard files: one format::ShardReader per shard, all sharing one index
// block cache. Per shard it holds two open files (shard and index) and the index's sparse
// directory, never the whole index (unless the shard has no index file and it was built).
#include <algorithm>

#include "sluice/base/thread_pool.h"
#include "sluice/format/shard_index.h"
#include "sluice/io/listed_file_system.h"
#include "sluice/pipeline/source.h"

namespace sluice::pipeline {
namespace {

// The index directories of a dataset's shards share this budget per table kind (frames,
// records), split evenly between the shards, so that their memory does not grow with the
// dataset: shards of ~4 MB of small records keep a checkpoint per block up to ~40 shards.
constexpr uint64_t kDatasetIndexDirectoryBytes = uint64_t{512} << 10;
// ... but never less than this per table (42 checkpoints), so that a lookup missing the
// cache walks at most 1/41 of its table: past ~500 shards the directories grow again, by
// 1 KiB per shard and table, next to the shard's two open files.
constexpr uint64_t kMinIndexDirectoryBytes = uint64_t{1} << 10;

class ShardSource final : public RecordSource {
 public:
  // `deferred`: problems found at open that the iterator's policy decides on (as damage).
  // `listed_fs`: the file system the readers were opened through, when it is one of this
  // source's own (they keep it for re-indexing).
  ShardSource(std::shared_ptr<io::FileSystem> listed_fs,
              std::vector<std::unique_ptr<format::ShardReader>> readers,
              std::vector<SourceDamage> deferred, bool merges_ranges, bool remote)
      : listed_fs_(std::move(listed_fs)),
        readers_(std::move(readers)),
        damage_(std::move(deferred)),
        merges_ranges_(merges_ranges),
        remote_(remote) {
    std::vector<ShardIdentity> identity;
    uint64_t bytes = 0;
    uint64_t records = 0;
    for (const auto& r : readers_) {
      if (r->damage()) {
        damage_.push_back({static_cast<uint32_t>(counts_.size()),
                           DataLoss(r->damage()->Describe(r->num_records())),
                           r->damage()->records_lost});
      }
      counts_.push_back(r->num_records());
      names_.push_back(r->path());
      identity.push_back(ShardIdentity{std::string(io::Basename(r->path())), r->file().size(),
                                       r->index_checksum(), r->num_records()});
      bytes += r->file().size();
      records += r->num_records();
    }
    identity_ =
        SnapshotIdentity{SnapshotFingerprint(identity), DescribeShards(names_, bytes, records)};
    std::stable_sort(
        damage_.begin(), damage_.end(),
        [](const SourceDamage& a, const SourceDamage& b) { return a.shard < b.shard; });
  }
  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::vector<SourceDamage>& damage() const override { return damage_; }
  const std::string& shard_name(uint32_t shard) const override { return names_[shard]; }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string* scratch) const override {
    if (shard >= readers_.size()) {
      return OutOfRange("shard " + std::to_string(shard) + " of " +
                        std::to_string(readers_.size()));
    }
    SLUICE_RETURN_IF_ERROR(readers_[shard]->Read(index, scratch));
    return ByteView(*scratch);
  }
  SnapshotIdentity snapshot() const override { return identity_; }
  bool reads_by_chunk() const override { return true; }
  const std::vector<format::ShardChunk>& chunks(uint32_t shard) const override {
    return readers_.at(shard)->chunks();
  }
  void FetchChunk(uint32_t shard, const format::ShardChunk& chunk, io::ReadCallback done,
                  const io::IoContext& context) const override {
    readers_.at(shard)->file().ReadAsync(chunk.file_offset, chunk.file_bytes, std::move(done),
                                         context);
  }
  bool fetches_now() const override { return !remote_; }
  Result<std::string> FetchChunkNow(uint32_t shard, const format::ShardChunk& chunk,
                                    std::string buffer) const override {
    // Bytes past the end are not asked for: the decode then names the shard as shorter.
    return readers_.at(shard)->file().ReadInto(chunk.file_offset, chunk.file_bytes,
                                               std::move(buffer));
  }
  // Shards on S3: an unshuffled read's chunks of one shard in one GET of up to 8 MiB (AWS's
  // recommended range size) rather than a GET per ~1 MiB chunk; each request costs the
  // server about a millisecond of CPU (RGW, bench/s3). Local files gain nothing from it, and
  // the node-local cache fetches the chunks it was planned, each once.
  uint64_t fetch_group_bytes() const override { return merges_ranges_ ? uint64_t{8} << 20 : 0; }
  // Local files: 32 MiB, dozens of chunks for the decodes to work on (an unshuffled read of
  // 200 MB admitted all of it ahead, 115 MB of fresh memory touched in its first pass).
  uint64_t read_ahead_bytes() const override { return remote_ ? 0 : uint64_t{32} << 20; }
  void FetchChunks(uint32_t shard, const std::vector<format::ShardChunk>& chunks,
                   io::RangesCallback done, const io::IoContext& context) const override {
    std::vector<io::ByteRange> ranges;
    ranges.reserve(chunks.size());
    for (const auto& c : chunks) ranges.push_back({c.file_offset, c.file_bytes});
    readers_.at(shard)->file().ReadRangesAsync(std::move(ranges), std::move(done), context);
  }
  Status DecodeChunk(uint32_t shard, const format::ShardChunk& chunk, std::string fetched,
                     format::DecodedChunk* out) const override {
    return readers_.at(shard)->DecodeChunk(chunk, std::move(fetched), out);
  }
  Result<ByteView> ReadInChunk(uint32_t shard, uint64_t index, const format::ShardChunk& chunk,
                               const format::DecodedChunk& decoded,
                               std::string* scratch) const override {
    return readers_.at(shard)->RecordInChunk(index, chunk, decoded, scratch);
  }

 private:
  std::shared_ptr<io::FileSystem> listed_fs_;  // outlives readers_
  std::vector<std::unique_ptr<format::ShardReader>> readers_;
  std::vector<uint64_t> counts_;
  std::vector<std::string> names_;
  std::vector<SourceDamage> damage_;
  SnapshotIdentity identity_;
  bool merges_ranges_;
  bool remote_;
};

// Opens a reader per path. A shard's open is a few requests in a row on remote storage
// (its size, its index's footer and tables: 4 round trips on S3), so remote shards are
// opened kMaxParallelOpens at a time; local ones, a few system calls each, one by one.
std::vector<Result<std::unique_ptr<format::ShardReader>>> OpenReaders(
    io::FileSystem* fs, const std::vector<std::string>& paths,
    const format::ShardReaderOptions& options) {
  constexpr size_t kMaxParallelOpens = 64;
  std::vector<Result<std::unique_ptr<format::ShardReader>>> out;
  out.reserve(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) out.emplace_back(Internal("not opened"));
  if (!fs->is_remote() || paths.size() == 1) {
    for (size_t i = 0; i < paths.size(); ++i)
      out[i] = format::ShardReader::Open(fs, paths[i], options);
    return out;
  }
  ThreadPool pool(std::min(kMaxParallelOpens, paths.size()));
  for (size_t i = 0; i < paths.size(); ++i) {
    pool.Submit([&, i] { out[i] = format::ShardReader::Open(fs, paths[i], options); });
  }
  return out;  // ~ThreadPool ran every task
}

}  // namespace

Result<std::shared_ptr<RecordSource>> OpenShardSource(io::FileSystem* fs,
                                                      const std::vector<std::string>& paths,
                                                      const format::ShardReaderOptions& options,
                                                      const ShardCheck& check,
                                                      const std::vector<io::FileInfo>& listed) {
  if (paths.empty()) return InvalidArgument("read: no shard files");
  const bool merges_ranges = fs->merges_ranges();
  const bool remote = fs->is_remote();
  std::shared_ptr<io::FileSystem> listed_fs;
  if (!listed.empty()) {
    listed_fs = std::make_shared<io::ListedFileSystem>(fs, listed);
    fs = listed_fs.get();
  }
  // One index block cache for all shards: memory for indexes stays bounded however many
  // shards and records the dataset has (docs/pipeline.md, "Memory budget").
  format::ShardReaderOptions shared = options;
  if (shared.index_cache == nullptr) shared.index_cache = format::NewIndexBlockCache();
  shared.index_directory_bytes =
      std::min(shared.index_directory_bytes,
               std::max(kMinIndexDirectoryBytes, kDatasetIndexDirectoryBytes / paths.size()));
  std::vector<Result<std::unique_ptr<format::ShardReader>>> opened = OpenReaders(fs, paths, shared);
  std::vector<std::unique_ptr<format::ShardReader>> readers;
  std::vector<SourceDamage> deferred;
  for (auto& open : opened) {  // in path order: the first failing shard's error is returned
    SLUICE_ASSIGN_OR_RETURN(auto reader, std::move(open));
    Status checked = check ? check(readers.size(), *reader) : Status::OK();
    if (!checked.ok()) {
      // Under recovery a shard that fails its check is damage for the iterator's policy to
      // decide on (a recovered shard already reports why it is short).
      if (checked.code() != StatusCode::kDataLoss ||
          options.on_damage != format::ShardDamagePolicy::kRecover) {
        return checked;
      }
      if (!reader->damage()) {
        deferred.push_back({static_cast<uint32_t>(readers.size()), std::move(checked), 0});
      }
    }
    readers.push_back(std::move(reader));
  }
  return std::shared_ptr<RecordSource>(std::make_shared<ShardSource>(
      std::move(listed_fs), std::move(readers), std::move(deferred), merges_ranges, remote));
}

}  // namespace sluice::pipeline
