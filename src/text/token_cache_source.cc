// The token cache as a pipeline source: a RecordSource of one shard whose record i is the
// stored bytes of document i (zero copy from the mapping), and a small map that widens them
// to an int32 `tokens` tensor. Shuffle, shard and resume are the read stage's own.
#include <cstring>

#include "sluice/text/stages.h"
#include "sluice/text/token_cache.h"

namespace sluice::text {
namespace {

using pipeline::DType;
using pipeline::Element;
using pipeline::MapContext;
using pipeline::Shape;

class TokenCacheSource final : public pipeline::RecordSource {
 public:
  TokenCacheSource(std::unique_ptr<TokenCacheReader> reader, std::string name)
      : reader_(std::move(reader)), counts_{reader_->size()}, name_(std::move(name)) {}

  const std::vector<uint64_t>& shard_records() const override { return counts_; }
  const std::string& shard_name(uint32_t) const override { return name_; }
  Result<ByteView> Read(uint32_t shard, uint64_t index, std::string*) const override {
    if (shard != 0 || index >= counts_[0]) {
      return OutOfRange(name_ + ": document " + std::to_string(index) + " of shard " +
                        std::to_string(shard) + " does not exist (" + std::to_string(counts_[0]) +
                        " documents)");
    }
    return reader_->Visit(index, [](auto ids) {
      return ByteView(reinterpret_cast<const char*>(ids.data()), ids.size_bytes());
    });
  }
  TokenWidth width() const { return reader_->width(); }

 private:
  std::unique_ptr<TokenCacheReader> reader_;
  std::vector<uint64_t> counts_;
  std::string name_;
};

// Widens the stored ids of the `record` tensor into an int32 tensor.
template <typename T>
void Widen(ByteView stored, pipeline::Tensor* out, pipeline::BufferPool* pool) {
  size_t n = stored.size() / sizeof(T);
  out->ResizeDense(DType::kInt32, Shape{static_cast<int64_t>(n)}, pool);
  int32_t* dst = out->data<int32_t>();
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, stored.data() + i * sizeof(T), sizeof(T));
    dst[i] = static_cast<int32_t>(v);
  }
}

}  // namespace

Result<std::shared_ptr<pipeline::RecordSource>> OpenTokenCacheSource(io::FileSystem* fs,
                                                                     const std::string& prefix) {
  SLUICE_ASSIGN_OR_RETURN(auto reader, TokenCacheReader::Open(fs, prefix));
  return std::shared_ptr<pipeline::RecordSource>(
      std::make_shared<TokenCacheSource>(std::move(reader), TokenCacheDataPath(prefix)));
}

pipeline::Dataset DecodeTokenCacheRecords(const pipeline::Dataset& source, TokenWidth width,
                                          const std::string& output) {
  pipeline::MapOptions mo;
  mo.name = "token_cache";
  mo.parallelism = 0;  // a widening copy: cheaper than a hand-off to the pool
  mo.output_schema = pipeline::Schema({{output, DType::kInt32, Shape{-1}}});
  return source.Map(
      [width](Element* e, const MapContext& ctx) {
        pipeline::Tensor& t = e->tensors[0];
        ByteView stored = t.string(0);
        pipeline::Tensor ids;
        if (width == TokenWidth::k16) {
          Widen<uint16_t>(stored, &ids, ctx.pool());
        } else {
          Widen<uint32_t>(stored, &ids, ctx.pool());
        }
        t = std::move(ids);
        return Status::OK();
      },
      mo);
}

Result<TokenWidth> TokenCacheWidth(io::FileSystem* fs, const std::string& prefix) {
  SLUICE_ASSIGN_OR_RETURN(auto reader, TokenCacheReader::Open(fs, prefix));
  return reader->width();
}

Result<pipeline::Dataset> ReadTokenCache(const std::string& prefix,
                                         const TokenCacheDatasetOptions& options) {
  io::FileSystem* fs = options.fs ? options.fs : io::LocalFileSystem();
  SLUICE_ASSIGN_OR_RETURN(auto source, OpenTokenCacheSource(fs, prefix));
  const TokenWidth width = static_cast<const TokenCacheSource&>(*source).width();
  pipeline::Dataset ds = pipeline::Dataset::FromSource(source, options.read);
  if (options.shuffle) ds = ds.Shuffle(*options.shuffle);
  if (options.world_size > 1) ds = ds.Shard(options.rank, options.world_size);
  ds = DecodeTokenCacheRecords(ds, width, options.output);
  SLUICE_RETURN_IF_ERROR(ds.status());
  return ds;
}

}  // namespace sluice::text
