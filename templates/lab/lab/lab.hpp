// Lab @LAB_ID@: @LAB_TITLE@ - the lab API.  PROVIDED: do not modify.
//
// fill in: what this lab teaches, in two lines, and where the handout explains it (README.md beside this
// file). The analytic questions (answers.cpp) and the CPU reference every correctness test compares with.
#pragma once

#include <rooflab/specs.hpp>

#include <cstddef>
#include <span>

namespace @LAB_NS@ {

// Threads per block of every kernel of the lab: a multiple of the 32-thread warp.
inline constexpr unsigned kBlock = 256;

// ---- analytic questions (answers.cpp; handout section "Counting bytes") ----
// fill in: your lab's questions, each with its exact contract (units, rounding, what is counted).

// Q1: DRAM bytes the scale kernel moves for n floats: x read once, y written once.
double scale_bytes(std::size_t n);
// Q2: the least time the scale kernel can take on `gpu` for n floats: its bytes at gpu.bandwidth_gbps
// (decimal GB/s), in seconds.
double time_floor_s(std::size_t n, const rooflab::GpuSpec& gpu);

// ---- the CPU reference ----

// y[i] = a * x[i]: what every correctness test compares the kernel with.
inline void reference_scale(std::span<const float> x, std::span<float> y, float a) {
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = a * x[i];
}

}  // namespace @LAB_NS@
