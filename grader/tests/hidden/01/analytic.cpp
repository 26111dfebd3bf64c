// A hidden test of Lab 01 for the grader's own test: the public StreamBytes test draws elements of 1 to 8
// bytes, so an answer that caps the element size at 8 passes it; this one asks for 16 and 32.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>

ROOFLAB_TEST(Lab01Hidden, StreamBytesOfWideElements) {
  for (const std::size_t elem : {16, 32}) {
    ROOFLAB_EXPECT(rooflab::grading::same(lab01::stream_bytes(lab01::StreamOp::copy, 1000, elem), 2000.0 * elem))
        << "copy, n=1000 elem=" << elem;
    ROOFLAB_EXPECT(rooflab::grading::same(lab01::stream_bytes(lab01::StreamOp::triad, 1000, elem), 3000.0 * elem))
        << "triad, n=1000 elem=" << elem;
  }
}
