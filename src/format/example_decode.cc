#include "format/example_decode.h"

#include <bit>
#include <cstring>

namespace sluice::format::internal {
namespace {

using wire::WireReader;
using wire::WireType;

bool DecodeBytesList(WireReader* r, ByteView list, FeatureView* out) {
  auto scope = r->Enter(list);
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    if (!r->ReadTag(&field, &type)) return false;
    if (field != kListValue) {
      if (!r->SkipField(field, type)) return false;
      continue;
    }
    if (type != WireType::kLengthDelimited) {
      return r->FailAtKey("wrong wire type for BytesList.value");
    }
    ByteView value;
    if (!r->ReadLengthDelimited(&value)) return false;
    out->bytes.push_back(value);  // a view into the record: no copy
  }
  r->Leave(scope);
  return true;
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
  auto scope = r->Enter(list);
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    if (!r->ReadTag(&field, &type)) return false;
    if (field != kListValue) {
      if (!r->SkipField(field, type)) return false;
    } else if (type == WireType::kLengthDelimited) {  // packed
      ByteView packed;
      if (!r->ReadLengthDelimited(&packed)) return false;
      if (packed.size() % 4 != 0) {
        return r->FailAtKey("packed FloatList.value length is not a multiple of 4");
      }
      AppendPackedFloats(packed, &out->floats);
    } else if (type == WireType::kFixed32) {  // unpacked
      uint32_t bits = 0;
      if (!r->ReadFixed32(&bits)) return false;
      out->floats.push_back(std::bit_cast<float>(bits));
    } else {
      return r->FailAtKey("wrong wire type for FloatList.value");
    }
  }
  r->Leave(scope);
  return true;
}

bool DecodeInt64List(WireReader* r, ByteView list, FeatureView* out) {
  auto scope = r->Enter(list);
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    uint64_t v = 0;
    if (!r->ReadTag(&field, &type)) return false;
    if (field != kListValue) {
      if (!r->SkipField(field, type)) return false;
    } else if (type == WireType::kLengthDelimited) {  // packed
      ByteView packed;
      if (!r->ReadLengthDelimited(&packed)) return false;
      auto inner = r->Enter(packed);  // a varint crossing the end is "truncated"
      while (!r->AtLimit()) {
        if (!r->ReadVarint(&v)) return false;
        out->int64s.push_back(static_cast<int64_t>(v));
      }
      r->Leave(inner);
    } else if (type == WireType::kVarint) {  // unpacked
      if (!r->ReadVarint(&v)) return false;
      out->int64s.push_back(static_cast<int64_t>(v));  // two's complement, as protobuf
    } else {
      return r->FailAtKey("wrong wire type for Int64List.value");
    }
  }
  r->Leave(scope);
  return true;
}

}  // namespace

bool DecodeFeature(WireReader* r, ByteView payload, FeatureView* out) {
  auto scope = r->Enter(payload);
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    if (!r->ReadTag(&field, &type)) return false;
    if (field < kFeatureBytesList || field > kFeatureInt64List) {
      if (!r->SkipField(field, type)) return false;
      continue;
    }
    if (type != WireType::kLengthDelimited) return r->FailAtKey("wrong wire type for Feature.kind");
    ByteView list;
    if (!r->ReadLengthDelimited(&list)) return false;
    FeatureType kind = field == kFeatureBytesList   ? FeatureType::kBytes
                       : field == kFeatureFloatList ? FeatureType::kFloat
                                                    : FeatureType::kInt64;
    if (out->type != kind) {  // oneof: another member replaces the earlier one
      out->Clear();
      out->type = kind;
    }
    bool ok = kind == FeatureType::kBytes   ? DecodeBytesList(r, list, out)
              : kind == FeatureType::kFloat ? DecodeFloatList(r, list, out)
                                            : DecodeInt64List(r, list, out);
    if (!ok) return false;
  }
  r->Leave(scope);
  return true;
}

bool DecodeFeatureList(WireReader* r, ByteView payload, std::vector<FeatureView>* out) {
  auto scope = r->Enter(payload);
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    if (!r->ReadTag(&field, &type)) return false;
    if (field != kFeatureListFeature) {
      if (!r->SkipField(field, type)) return false;
      continue;
    }
    if (type != WireType::kLengthDelimited) {
      return r->FailAtKey("wrong wire type for FeatureList.feature");
    }
    ByteView feature;
    if (!r->ReadLengthDelimited(&feature)) return false;
    out->emplace_back();  // repeated message field: each occurrence is a new step
    if (!DecodeFeature(r, feature, &out->back())) return false;
  }
  r->Leave(scope);
  return true;
}

bool ReadMapEntry(WireReader* r, ByteView entry, MapEntry* out) {
  *out = MapEntry{};
  out->entry = entry;
  auto scope = r->Enter(entry);
  while (!r->AtLimit()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    if (!r->ReadTag(&field, &type)) return false;
    if (field != kMapKey && field != kMapValue) {
      if (!r->SkipField(field, type)) return false;
      continue;
    }
    if (type != WireType::kLengthDelimited) return r->FailAtKey("wrong wire type for map entry");
    ByteView payload;
    if (!r->ReadLengthDelimited(&payload)) return false;
    if (field == kMapKey) {
      out->key = payload;  // the last key wins
    } else if (out->values++ == 0) {
      out->first_value = payload;
    }
  }
  r->Leave(scope);
  return true;
}

}  // namespace sluice::format::internal
