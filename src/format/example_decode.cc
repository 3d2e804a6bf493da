#include "format/example_decode.h"

#include <bit>
#include <cstring>

namespace sluice::format::internal {
namespace {

using wire::WireReader;
using wire::WireType;

bool DecodeBytesList(WireReader* r, ByteView list, FeatureView* out) {
  return ForEachField(r, list, [&](uint32_t field, WireType type) {
    if (field != kListValue) return r->SkipField(field, type);
    ByteView value;
    if (!r->ReadLengthDelimited(type, "wrong wire type for BytesList.value", &value)) return false;
    out->bytes.push_back(value);  // a view into the record: no copy
    return true;
  });
}

// Appends the little-endian floats of a packed FloatList.value.
void AppendPackedFloats(ByteView packed, std::vector<float>* out) {
  size_t n = packed.size() / 4;
  size_t old = out->size();
  out->resize(old + n);
  for (size_t i = 0; i < n; ++i) {
    (*out)[old + i] = std::bit_cast<float>(DecodeFixed32(packed.data() + 4 * i));
  }
}

bool DecodeFloatList(WireReader* r, ByteView list, FeatureView* out) {
  return ForEachField(r, list, [&](uint32_t field, WireType type) {
    if (field != kListValue) return r->SkipField(field, type);
    if (type == WireType::kLengthDelimited) {  // packed
      ByteView packed;
      if (!r->ReadLengthDelimited(&packed)) return false;
      if (packed.size() % 4 != 0) {
        return r->FailAtKey("packed FloatList.value length is not a multiple of 4");
      }
      AppendPackedFloats(packed, &out->floats);
      return true;
    }
    if (type != WireType::kFixed32) return r->FailAtKey("wrong wire type for FloatList.value");
    uint32_t bits = 0;  // unpacked
    if (!r->ReadFixed32(&bits)) return false;
    out->floats.push_back(std::bit_cast<float>(bits));
    return true;
  });
}

bool DecodeInt64List(WireReader* r, ByteView list, FeatureView* out) {
  // Values are two's complement, as protobuf's int64.
  auto read_value = [&] {
    uint64_t v = 0;
    if (!r->ReadVarint(&v)) return false;
    out->int64s.push_back(static_cast<int64_t>(v));
    return true;
  };
  return ForEachField(r, list, [&](uint32_t field, WireType type) {
    if (field != kListValue) return r->SkipField(field, type);
    if (type == WireType::kLengthDelimited) {  // packed
      ByteView packed;
      if (!r->ReadLengthDelimited(&packed)) return false;
      auto inner = r->Enter(packed);  // a varint crossing the end is "truncated"
      while (!r->AtLimit()) {
        if (!read_value()) return false;
      }
      r->Leave(inner);
      return true;
    }
    if (type != WireType::kVarint) return r->FailAtKey("wrong wire type for Int64List.value");
    return read_value();  // unpacked
  });
}

}  // namespace

bool DecodeFeature(WireReader* r, ByteView payload, FeatureView* out) {
  return ForEachField(r, payload, [&](uint32_t field, WireType type) {
    if (field < kFeatureBytesList || field > kFeatureInt64List) return r->SkipField(field, type);
    ByteView list;
    if (!r->ReadLengthDelimited(type, "wrong wire type for Feature.kind", &list)) return false;
    FeatureType kind = field == kFeatureBytesList   ? FeatureType::kBytes
                       : field == kFeatureFloatList ? FeatureType::kFloat
                                                    : FeatureType::kInt64;
    if (out->type != kind) {  // oneof: another member replaces the earlier one
      out->Clear();
      out->type = kind;
    }
    return kind == FeatureType::kBytes   ? DecodeBytesList(r, list, out)
           : kind == FeatureType::kFloat ? DecodeFloatList(r, list, out)
                                         : DecodeInt64List(r, list, out);
  });
}

bool DecodeFeatureList(WireReader* r, ByteView payload, std::vector<FeatureView>* out) {
  return ForEachField(r, payload, [&](uint32_t field, WireType type) {
    if (field != kFeatureListFeature) return r->SkipField(field, type);
    ByteView feature;
    if (!r->ReadLengthDelimited(type, "wrong wire type for FeatureList.feature", &feature)) {
      return false;
    }
    out->emplace_back();  // repeated message field: each occurrence is a new step
    return DecodeFeature(r, feature, &out->back());
  });
}

bool ReadMapEntry(WireReader* r, ByteView entry, MapEntry* out) {
  *out = MapEntry{};
  out->entry = entry;
  return ForEachField(r, entry, [&](uint32_t field, WireType type) {
    if (field != kMapKey && field != kMapValue) return r->SkipField(field, type);
    ByteView payload;
    if (!r->ReadLengthDelimited(type, "wrong wire type for map entry", &payload)) return false;
    if (field == kMapKey) {
      out->key = payload;  // the last key wins
    } else if (out->values++ == 0) {
      out->first_value = payload;
    }
    return true;
  });
}

}  // namespace sluice::format::internal
