// Malformed Example / SequenceExample encodings: each test is named after the fault it
// plants and checks the DataLoss message names the byte offset inside the record.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/format/example.h"
#include "unit/example_test_util.h"

namespace sluice::format {
namespace {

using namespace testing;  // NOLINT: wire helpers

// Parses `serialized` with ExampleView and with an ExampleParser that wants feature "x";
// both must fail with exactly `message`.
void ExpectExampleDataLoss(const std::string& serialized, const std::string& message) {
  ExampleView view;
  Status s = view.Parse(serialized);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(s.message(), message);
  std::vector<FeatureView> out;
  Status p = ExampleParser({"x"}).Parse(serialized, &out);
  EXPECT_EQ(p, s) << "ExampleParser: " << p.ToString();
}

std::string IntsX(std::string_view list) { return ExampleOf(Entry("x", Int64Feature(list))); }

TEST(ExampleMalformed, TruncatedVarint) {
  ExpectExampleDataLoss(Hex("0a80"), "tf.train.Example: offset 1: truncated varint");
  ExpectExampleDataLoss(Hex("8a"), "tf.train.Example: offset 0: truncated varint");
  // Inside a packed Int64List the varint may not run on into the bytes after the list.
  std::string record = IntsX(Field(1, Hex("ff")) + VarintField(2, 1));
  ExpectExampleDataLoss(record, "tf.train.Example: offset 13: truncated varint");
}

TEST(ExampleMalformed, LengthPastEnd) {
  ExpectExampleDataLoss(Hex("0a0500"),
                        "tf.train.Example: offset 1: length-delimited field runs past the end of "
                        "its message");
  // A nested length is bounded by its enclosing message, not by the record.
  std::string record = Field(1, Hex("0a05") + "abc") + "trailing";
  ExpectExampleDataLoss(record,
                        "tf.train.Example: offset 3: length-delimited field runs past the end of "
                        "its message");
}

TEST(ExampleMalformed, OverlongVarint) {
  ExpectExampleDataLoss(IntsX(Field(1, std::string(10, '\x80') + "\x01")),
                        "tf.train.Example: offset 13: varint longer than 10 bytes");
  ExpectExampleDataLoss(std::string(11, '\xff'),
                        "tf.train.Example: offset 0: varint longer than 10 bytes");
}

TEST(ExampleMalformed, WrongWireType) {
  ExpectExampleDataLoss(VarintField(1, 3),
                        "tf.train.Example: offset 0: wrong wire type for Example.features");
  ExpectExampleDataLoss(Field(1, VarintField(1, 3)),
                        "tf.train.Example: offset 2: wrong wire type for map field");
  ExpectExampleDataLoss(Field(1, Field(1, VarintField(1, 3))),
                        "tf.train.Example: offset 4: wrong wire type for map entry");
  ExpectExampleDataLoss(ExampleOf(Entry("x", Fixed32Field(3, 0))),
                        "tf.train.Example: offset 9: wrong wire type for Feature.kind");
  ExpectExampleDataLoss(ExampleOf(Entry("x", BytesFeature(VarintField(1, 0)))),
                        "tf.train.Example: offset 11: wrong wire type for BytesList.value");
  ExpectExampleDataLoss(ExampleOf(Entry("x", FloatFeature(VarintField(1, 0)))),
                        "tf.train.Example: offset 11: wrong wire type for FloatList.value");
  ExpectExampleDataLoss(IntsX(Fixed32Field(1, 0)),
                        "tf.train.Example: offset 11: wrong wire type for Int64List.value");
}

TEST(ExampleMalformed, PackedFloatLengthNotMultipleOf4) {
  ExpectExampleDataLoss(ExampleOf(Entry("x", FloatFeature(Field(1, "abcdef")))),
                        "tf.train.Example: offset 11: packed FloatList.value length is not a "
                        "multiple of 4");
}

TEST(ExampleMalformed, TruncatedFixedWidth) {
  ExpectExampleDataLoss(ExampleOf(Entry("x", FloatFeature(Key(1, WireType::kFixed32) + "ab"))),
                        "tf.train.Example: offset 12: truncated fixed32");
  ExpectExampleDataLoss(Key(7, WireType::kFixed64) + "1234567",
                        "tf.train.Example: offset 1: truncated fixed64");
}

TEST(ExampleMalformed, BadKeys) {
  ExpectExampleDataLoss(Hex("0000"), "tf.train.Example: offset 0: field number 0");
  ExpectExampleDataLoss(Hex("0e"), "tf.train.Example: offset 0: invalid wire type 6 or 7");
  ExpectExampleDataLoss(Hex("0f"), "tf.train.Example: offset 0: invalid wire type 6 or 7");
  ExpectExampleDataLoss(Varint(uint64_t{1} << 33) + Hex("00"),
                        "tf.train.Example: offset 0: field key exceeds 32 bits");
}

TEST(ExampleMalformed, BrokenGroups) {
  ExpectExampleDataLoss(Key(5, WireType::kEndGroup),
                        "tf.train.Example: offset 0: end-group key without a matching start-group");
  ExpectExampleDataLoss(Key(5, WireType::kStartGroup) + VarintField(1, 1),
                        "tf.train.Example: offset 3: group not closed before the end of its "
                        "message");
  ExpectExampleDataLoss(Key(5, WireType::kStartGroup) + Key(6, WireType::kEndGroup),
                        "tf.train.Example: offset 1: end-group key does not match its group");
  // A group may not swallow the end of its enclosing message.
  ExpectExampleDataLoss(ExampleOf(Key(5, WireType::kStartGroup)) + Key(5, WireType::kEndGroup),
                        "tf.train.Example: offset 3: group not closed before the end of its "
                        "message");
}

TEST(ExampleMalformed, GroupsNestedTooDeeply) {
  std::string nested;
  for (int i = 0; i < 101; ++i) nested += Key(5, WireType::kStartGroup);
  for (int i = 0; i < 101; ++i) nested += Key(5, WireType::kEndGroup);
  ExpectExampleDataLoss(nested, "tf.train.Example: offset 100: groups nested too deeply");
  std::string ok;
  for (int i = 0; i < 100; ++i) ok += Key(5, WireType::kStartGroup);
  for (int i = 0; i < 100; ++i) ok += Key(5, WireType::kEndGroup);
  ExampleView e;
  EXPECT_TRUE(e.Parse(ok).ok());
}

TEST(SequenceExampleMalformed, WrongWireTypeAndTruncation) {
  SequenceExampleView s;
  Status st = s.Parse(VarintField(2, 1));
  EXPECT_EQ(st.message(),
            "tf.train.SequenceExample: offset 0: wrong wire type for SequenceExample field");
  st = s.Parse(Field(2, Entry("l", VarintField(1, 1))));
  EXPECT_EQ(st.message(),
            "tf.train.SequenceExample: offset 9: wrong wire type for FeatureList.feature");
  st = s.Parse(Field(1, Entry("c", Int64Feature(Field(1, Hex("80"))))));
  EXPECT_EQ(st.message(), "tf.train.SequenceExample: offset 13: truncated varint");
  EXPECT_TRUE(s.context().features().empty());
}

// Cutting a valid record anywhere but between top-level fields must fail, since every
// nested message is length-prefixed (Example has one top-level field, SequenceExample two).
// Flipping any byte may produce a valid record or DataLoss, never a crash (ASan/UBSan runs make
// that check sharp).
TEST(ExampleMalformed, EveryTruncationFailsAndNoByteFlipCrashes) {
  SequenceExampleBuilder seq;
  seq.context().AddInt64s("i", {-1, 2}).AddFloats("f", {0.5f}).AddBytes("b", {"xy", ""});
  seq.AddStepInt64s("l", {3}).AddStepBytes("l", {"z"});
  std::string example = ExampleBuilder().AddInt64s("i", {-1, 2}).AddFloats("f", {0.5f}).Serialize();
  std::string sequence = seq.Serialize();
  SequenceExampleBuilder context_only;
  context_only.context() = seq.context();
  size_t context_end = context_only.Serialize().size();
  ExampleView e;
  SequenceExampleView s;
  std::vector<FeatureView> out;
  ExampleParser parser({"i", "f", "b"});
  for (size_t n = 1; n < example.size(); ++n) {
    EXPECT_EQ(e.Parse(example.substr(0, n)).code(), StatusCode::kDataLoss) << n;
    EXPECT_EQ(parser.Parse(example.substr(0, n), &out).code(), StatusCode::kDataLoss) << n;
  }
  for (size_t n = 1; n < sequence.size(); ++n) {
    if (n == context_end) continue;
    EXPECT_EQ(s.Parse(sequence.substr(0, n)).code(), StatusCode::kDataLoss) << n;
  }
  for (const std::string& record : {example, sequence}) {
    for (size_t i = 0; i < record.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string bad = record;
        bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
        for (Status st : {e.Parse(bad), s.Parse(bad), parser.Parse(bad, &out)}) {
          EXPECT_TRUE(st.ok() || st.code() == StatusCode::kDataLoss) << st.ToString();
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice::format
