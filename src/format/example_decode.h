// Internal: the decoding walk shared by ExampleView, SequenceExampleView and ExampleParser,
// so the three agree on every byte. Field numbers are TensorFlow's (docs/example.md).
//
// Merge rules are protobuf's: a repeated list field appends; a Feature whose kind appears
// twice merges the lists, while a different kind replaces the earlier one (oneof); a map
// entry whose key was already seen replaces the earlier value ("last wins"); inside one map
// entry the last key wins and repeated values merge.
#pragma once

#include <iterator>
#include <string>
#include <vector>

#include "format/proto_wire.h"
#include "sluice/format/example.h"

namespace sluice::format::internal {

// Field numbers of example.proto / feature.proto.
inline constexpr uint32_t kExampleFeatures = 1;       // Example.features
inline constexpr uint32_t kSequenceContext = 1;       // SequenceExample.context
inline constexpr uint32_t kSequenceFeatureLists = 2;  // SequenceExample.feature_lists
inline constexpr uint32_t kMapField = 1;              // Features.feature, FeatureLists.feature_list
inline constexpr uint32_t kMapKey = 1;                // map entry key
inline constexpr uint32_t kMapValue = 2;              // map entry value
inline constexpr uint32_t kFeatureBytesList = 1;      // Feature.bytes_list
inline constexpr uint32_t kFeatureFloatList = 2;      // Feature.float_list
inline constexpr uint32_t kFeatureInt64List = 3;      // Feature.int64_list
inline constexpr uint32_t kListValue = 1;             // {Bytes,Float,Int64}List.value
inline constexpr uint32_t kFeatureListFeature = 1;    // FeatureList.feature

// Decodes the Feature message `payload` into *out, merging with what *out holds.
bool DecodeFeature(wire::WireReader* r, ByteView payload, FeatureView* out);
// Decodes the FeatureList message `payload`, appending one FeatureView per time step.
bool DecodeFeatureList(wire::WireReader* r, ByteView payload, std::vector<FeatureView>* out);

inline void ResetValue(FeatureView* v) { v->Clear(); }
inline void ResetValue(std::vector<FeatureView>* v) { v->clear(); }
inline bool DecodeValue(wire::WireReader* r, ByteView payload, FeatureView* out) {
  return DecodeFeature(r, payload, out);
}
inline bool DecodeValue(wire::WireReader* r, ByteView payload, std::vector<FeatureView>* out) {
  return DecodeFeatureList(r, payload, out);
}

// One map entry's framing: the last key and the value payload(s).
struct MapEntry {
  ByteView entry;        // the whole entry message
  ByteView key;          // empty when absent
  ByteView first_value;  // empty when absent
  size_t values = 0;     // how many value fields the entry holds (almost always 1)
};
bool ReadMapEntry(wire::WireReader* r, ByteView entry, MapEntry* out);
// Calls fn(payload) for each value field of the entry, in order.
template <typename Fn>
bool ForEachMapValue(wire::WireReader* r, const MapEntry& e, Fn&& fn) {
  if (e.values <= 1) return e.values == 0 || fn(e.first_value);
  // Rare: a value split over several fields.
  return wire::ForEachField(r, e.entry, [&](uint32_t field, wire::WireType type) {
    if (field != kMapValue || type != wire::WireType::kLengthDelimited) {
      return r->SkipField(field, type);
    }
    ByteView payload;
    return r->ReadLengthDelimited(&payload) && fn(payload);
  });
}

// Walks a map message (Features or FeatureLists): for each entry, `target(key)` returns
// where its value goes (nullptr: not wanted, the value is framed but not decoded); the
// target is reset, then the entry's values are decoded into it.
template <typename Target>
bool DecodeMap(wire::WireReader* r, ByteView message, Target&& target) {
  return wire::ForEachField(r, message, [&](uint32_t field, wire::WireType type) {
    if (field != kMapField) return r->SkipField(field, type);
    ByteView entry_bytes;
    MapEntry entry;
    if (!r->ReadLengthDelimited(type, "wrong wire type for map field", &entry_bytes) ||
        !ReadMapEntry(r, entry_bytes, &entry)) {
      return false;
    }
    auto* value = target(entry.key);
    if (value == nullptr) return true;
    ResetValue(value);
    return ForEachMapValue(r, entry,
                           [&](ByteView payload) { return DecodeValue(r, payload, value); });
  });
}

// Walks a serialized Example, handing its Features message(s) to DecodeMap.
template <typename Target>
bool DecodeExample(wire::WireReader* r, Target&& target) {
  return wire::ForEachField(r, [&](uint32_t field, wire::WireType type) {
    if (field != kExampleFeatures) return r->SkipField(field, type);
    ByteView features;
    return r->ReadLengthDelimited(type, "wrong wire type for Example.features", &features) &&
           DecodeMap(r, features, target);
  });
}

// Map node reuse: parsing into a std::map keeps its nodes (key strings and FeatureView
// vectors with their capacity) in a spare list instead of freeing them, so re-parsing
// records of the same shape allocates nothing.
// Nodes are stacked last name first, so records whose features arrive in name order (as
// every deterministic writer emits them) get each name's own node, capacity and all, back.
template <typename Map>
void RecycleNodes(Map* map, std::vector<typename Map::node_type>* spare) {
  while (!map->empty()) spare->push_back(map->extract(std::prev(map->end())));
}
template <typename Map>
typename Map::mapped_type* FindOrInsert(Map* map, std::vector<typename Map::node_type>* spare,
                                        ByteView key) {
  auto it = map->lower_bound(key);
  if (it != map->end() && it->first == key) return &it->second;
  if (spare->empty()) {
    return &map->emplace_hint(it, std::string(key), typename Map::mapped_type{})->second;
  }
  typename Map::node_type node = std::move(spare->back());
  spare->pop_back();
  node.key().assign(key.data(), key.size());
  ResetValue(&node.mapped());
  return &map->insert(it, std::move(node))->second;
}

}  // namespace sluice::format::internal
