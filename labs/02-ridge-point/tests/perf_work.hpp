// Lab 02: the shapes and the work the perf tests time, in one place, so that tests/dryrun.cpp can check
// them against the kernel registry for a real GPU's shape. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <cstddef>

namespace lab02::perf {

// Enough resident warps everywhere, several waves: 8 blocks of 256 per SM, 4 waves.
inline std::size_t threads(int sms) { return static_cast<std::size_t>(sms) * 8 * 4 * kBlock; }

// FMA iterations per chain: kPerfIterations on a GPU, scaled down on a dry run.
inline int iterations() { return static_cast<int>(rooflab::scaled(kPerfIterations, 4)); }

// One FMA is 2 FLOPs; a half2 FMA is two of them. Only FLOPs are declared: the kernels are compute-bound
// and percent_of() then compares FLOP/s.
inline rooflab::Work fma_fp32_work(std::size_t n_threads, int iters) {
  return {.flops = 2.0 * kChains * iters * static_cast<double>(n_threads)};
}
inline rooflab::Work fma_half2_work(std::size_t n_threads, int iters) {
  return {.flops = 4.0 * kChains * iters * static_cast<double>(n_threads)};
}

// The tensor GEMM's size: 8192^3 on a GPU, scaled on a dry run.
inline int gemm_n() { return rooflab::scaled_gemm_n(8192); }

}  // namespace lab02::perf
