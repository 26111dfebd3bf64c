// Launchers for the test of the dry run's read accounting (test_timed_reads.cpp): an honest kernel, a
// replay of a kept answer, a kernel that reads a sliver of its input, one that touches a page at a time.
#pragma once

#include <rooflab/cuda.hpp>

namespace timedtest {
// out[i] = 2 * in[i] + 1 (reads every input element).
void scale(const float* in, float* out, int n, cudaStream_t stream);
// out[i] = kept[i]: the replay a cheating launcher does after computing once.
void copy(const float* kept, float* out, int n, cudaStream_t stream);
// out[i] = in[i % stride]: reads only the first `stride` elements.
void sliver(const float* in, float* out, int n, int stride, cudaStream_t stream);
// sink[t] = in[1024 t]: one element of every 4 KiB page of `in` (what a replay does to pass a page-level watch).
void touch_pages(const float* in, float* sink, int n, cudaStream_t stream);
}  // namespace timedtest
