// <cuda_pipeline_primitives.h> for a .cu file compiled by the CPU backend: the toolkit's needs nvcc (inline
// PTX). __pipeline_memcpy_async / __pipeline_commit / __pipeline_wait_prior with the toolkit's signatures,
// as the backend's asynchronous copies (rooflab/emu/async_copy.hpp): a thread's copies form batches at each
// commit, and a batch's bytes land at the __pipeline_wait_prior that covers it. The same batches serve
// cuda::pipeline<thread_scope_thread>, as cp.async groups do on a GPU. __pipeline_arrive_on (an mbarrier
// of <cuda_awbarrier.h>) is not emulated: a compile error.
#pragma once

#if !defined(ROOFLAB_EMU)
#error "this <cuda_pipeline_primitives.h> is the CPU backend's; nvcc builds use the toolkit's"
#endif

#include <rooflab/emu/async_copy.hpp>
#include <rooflab/emu/runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

// size_and_align is 4, 8 or 16 bytes, both pointers aligned to it; the last src_size..size_and_align bytes
// are zeros (zfill, written src_size in CUDA's documentation).
inline void __pipeline_memcpy_async(void* __restrict__ dst_shared, const void* __restrict__ src_global,
                                    std::size_t size_and_align, std::size_t zfill = 0,
                                    const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  const auto misaligned = [size_and_align](const void* p) {
    return (reinterpret_cast<std::uintptr_t>(p) & (size_and_align - 1)) != 0;
  };
  if ((size_and_align != 4 && size_and_align != 8 && size_and_align != 16) || zfill > size_and_align ||
      misaligned(dst_shared) || misaligned(src_global)) {
    throw rooflab::emu::KernelError(
        "__pipeline_memcpy_async at " + std::string(file) + ":" + std::to_string(line) + " with size_and_align " +
        std::to_string(size_and_align) + " and zfill " + std::to_string(zfill) +
        ": the size must be 4, 8 or 16, zfill at most the size, and both pointers aligned to the size (a GPU traps)");
  }
  rooflab::emu::async::issue(dst_shared, src_global, size_and_align, zfill, file, line);
}

inline void __pipeline_commit() { rooflab::emu::async::commit(); }

// Waits for every committed batch but the `prior` newest.
inline void __pipeline_wait_prior(std::size_t prior, const char* file = __builtin_FILE(),
                                  unsigned line = __builtin_LINE()) {
  rooflab::emu::async::wait_prior(prior, file, line);
}

template <typename Barrier>
void __pipeline_arrive_on(Barrier*) {
  static_assert(sizeof(Barrier) == 0,
                "__pipeline_arrive_on (an mbarrier of <cuda_awbarrier.h>) is not supported by rooflab's CPU backend "
                "(docs/cpu-mode.md lists the subset; cuda::pipeline_producer_commit with a cuda::barrier is)");
}
