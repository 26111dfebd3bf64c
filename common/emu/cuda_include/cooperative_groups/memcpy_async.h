// <cooperative_groups/memcpy_async.h> for the CPU backend (see ../cooperative_groups.h): the toolkit's
// signatures over the backend's asynchronous copies (rooflab/emu/async_copy.hpp), as the toolkit builds them
// on __pipeline_memcpy_async. memcpy_async(group, dst, src, bytes | cuda::aligned_size_t) and
// memcpy_async(group, dst, dst_count, src, src_count) (counts in elements: the smaller one is copied) issue
// each thread's share of the copy and commit it as one batch; wait(group) and wait_prior<N>(group) wait for
// the calling thread's batches, then sync the group, so that every thread sees every share. The deprecated
// forms with an nvcuda::experimental::pipeline are not emulated.
#pragma once

#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda_pipeline_primitives.h>

#include <algorithm>
#include <cstddef>

namespace rooflab::emu::cg_async {

template <typename Group>
void copy_share(const Group& group, void* dst, const void* src, std::size_t bytes, const char* file, unsigned line) {
  std::size_t begin = 0, count = 0;
  rooflab::emu::cccl::group_share(group, bytes, &begin, &count);
  if (count > 0) {
    rooflab::emu::async::issue(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, count, 0, file,
                               line);
  }
  rooflab::emu::async::commit();  // one batch per call, as the toolkit's __pipeline_commit after each
}

template <typename Count>
std::size_t count_of(const Count& count) {
  return static_cast<std::size_t>(count);
}

}  // namespace rooflab::emu::cg_async

namespace cooperative_groups {

// `bytes`: a byte count (size_t or cuda::aligned_size_t<N>).
template <class TyGroup, typename TyElem, typename TySizeT>
void memcpy_async(const TyGroup& group, TyElem* __restrict__ dst, const TyElem* __restrict__ src, const TySizeT& bytes,
                  const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  rooflab::emu::cg_async::copy_share(group, dst, src, rooflab::emu::cg_async::count_of(bytes), file, line);
}

// Element counts: min(dst_count, src_count) elements are copied.
template <class TyGroup, class TyElem, typename DstLayout, typename SrcLayout>
void memcpy_async(const TyGroup& group, TyElem* __restrict__ dst, const DstLayout& dst_count,
                  const TyElem* __restrict__ src, const SrcLayout& src_count, const char* file = __builtin_FILE(),
                  unsigned line = __builtin_LINE()) {
  const std::size_t n = std::min(rooflab::emu::cg_async::count_of(dst_count), rooflab::emu::cg_async::count_of(src_count));
  rooflab::emu::cg_async::copy_share(group, dst, src, n * sizeof(TyElem), file, line);
}

// Every batch of the calling thread but the Stage newest, then the group's sync.
template <unsigned int Stage, class TyGroup>
void wait_prior(const TyGroup& group, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  __pipeline_wait_prior(Stage, file, line);
  group.sync(file, line);
}

template <class TyGroup>
void wait(const TyGroup& group, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  __pipeline_wait_prior(0, file, line);
  group.sync(file, line);
}

}  // namespace cooperative_groups
