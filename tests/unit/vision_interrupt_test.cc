// Ctrl-C while images decode (issue 13, item 10): the decoders poll DecodeOptions::interrupt
// while they work, and a pipeline's consumer thread that decodes a chunk itself (it helps
// when it waits) polls its wait check there, so an interrupt arrives within one poll, not
// after the whole chunk (2.6-8.3 s for 81-megapixel photos before).
#include <gtest/gtest.h>

#include <climits>

#include "sluice/pipeline/dataset.h"
#include "sluice/pipeline/wait_check.h"
#include "sluice/vision/decode.h"
#include "sluice/vision/decode_image.h"
#include "unit/image_test_util.h"

namespace sluice::vision {
namespace {

using testing::MakeJpeg;
using testing::MakePng;

// A check that fails from its `fail_at`-th call on.
struct CountingCheck {
  int calls = 0;
  int fail_at = INT_MAX;
  static Status Run(const void* arg) {
    auto* self = const_cast<CountingCheck*>(static_cast<const CountingCheck*>(arg));
    return ++self->calls >= self->fail_at ? Cancelled("interrupted") : Status::OK();
  }
  static Status RunMutable(void* arg) { return Run(arg); }
};

void ExpectDecodePolls(const std::string& encoded) {
  CountingCheck check;
  DecodeOptions options;
  options.interrupt = DecodeInterrupt{&CountingCheck::Run, &check};
  ImageDecoder decoder(options);
  DecodedImage image;
  ASSERT_TRUE(decoder.DecodeAll(encoded, &image).ok());
  const int polls = check.calls;
  EXPECT_GE(polls, 20) << "polled every few rows of a 1024-row image";
  check.calls = 0;
  check.fail_at = polls / 2;
  Status s = decoder.DecodeAll(encoded, &image);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_EQ(check.calls, polls / 2) << "stopped at the failing poll, mid-image";
  check.fail_at = INT_MAX;
  EXPECT_TRUE(decoder.DecodeAll(encoded, &image).ok()) << "the decoder stays usable";
}

TEST(DecodeInterrupt, JpegDecodeStopsMidImage) { ExpectDecodePolls(MakeJpeg(640, 1024)); }

TEST(DecodeInterrupt, PngDecodeStopsMidImage) {
  ExpectDecodePolls(MakePng(640, 1024, PNG_FORMAT_RGB));
}

// The consumer decodes every chunk itself (parallelism 0). The first batch is made without
// a check, which also reads all records; during the second, the consumer's wait check fails
// at its second run: the first is before the chunk's first element, the second inside the
// first image's decode. Next returns that failure and no batch (before: the consumer decoded
// the whole chunk without running the check once, and delivered the batch).
TEST(DecodeInterrupt, ConsumerDecodingAChunkSeesCtrlCWithinAnImage) {
  std::vector<std::string> images;
  for (int i = 0; i < 8; ++i) images.push_back(MakeJpeg(512, 1024));
  auto ds = pipeline::Dataset::FromSource(pipeline::NewMemorySource({images}));
  DecodeImageOptions o;
  o.input = "record";
  o.ops = {Resize{0, 32, 32}};
  o.transform.dct_scaling = false;  // a full-size decode per image
  o.parallelism = 0;
  o.chunk_elements = 4;
  auto decoded = DecodeImage(ds, o);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  pipeline::PipelineOptions po;
  po.threads = 1;
  auto it = decoded->Batch(4).MakeIterator(po);
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  pipeline::Element batch;
  ASSERT_TRUE(*(*it)->Next(&batch));
  CountingCheck check;
  check.fail_at = 2;
  Result<bool> more = false;
  {
    pipeline::ScopedWaitCheck scope(&CountingCheck::RunMutable, &check,
                                    std::chrono::milliseconds(0));
    more = (*it)->Next(&batch);
  }
  ASSERT_FALSE(more.ok()) << "a batch of 4 images was delivered: the check never ran";
  EXPECT_EQ(more.status().code(), StatusCode::kCancelled) << more.status().ToString();
  EXPECT_GE(check.calls, 2);
}

}  // namespace
}  // namespace sluice::vision
