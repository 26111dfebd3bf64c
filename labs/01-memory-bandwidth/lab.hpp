// Lab 01: memory bandwidth - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answered in answers.cpp) and the CPU references the tests compare kernels with.
// The kernels' launchers are declared in kernels.hpp. Handout: README.md beside this file.
#pragma once

#include <rooflab/specs.hpp>

#include <cstddef>
#include <span>
#include <string_view>

namespace lab01 {

// The four STREAM kernels, defined as BabelStream does (https://github.com/UoB-HPC/BabelStream):
//   copy   c[i] = a[i]
//   scale  b[i] = scalar * c[i]
//   add    c[i] = a[i] + b[i]
//   triad  a[i] = b[i] + scalar * c[i]
enum class StreamOp { copy, scale, add, triad };

inline constexpr StreamOp kStreamOps[] = {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad};

constexpr std::string_view name(StreamOp op) {
  switch (op) {
    case StreamOp::copy: return "copy";
    case StreamOp::scale: return "scale";
    case StreamOp::add: return "add";
    case StreamOp::triad: return "triad";
  }
  return "?";
}

// Threads per block of every Lab 01 kernel: a multiple of the 32-thread warp, small enough that several
// blocks fit on an SM (handout: "Choosing the grid"). The kernels themselves are in kernels.hpp's registry.
inline constexpr unsigned kBlock = 256;

// ---- analytic questions (answers.cpp; handout section "Counting bytes") ----

// Q1. Bytes one STREAM kernel moves to and from DRAM over n elements of elem_bytes each: every array read
//     counts once and every array written counts once (read + write), in bytes.
double stream_bytes(StreamOp op, std::size_t n, std::size_t elem_bytes);

// Q2. Achieved bandwidth in GB/s (decimal: 1 GB = 1e9 bytes) for `bytes` moved in `seconds`.
double achieved_gbps(double bytes, double seconds);

// Q3. The fastest a STREAM kernel over n FP32 elements can run on `gpu`, in seconds: its bytes at the
//     datasheet bandwidth (gpu.bandwidth_gbps). No kernel beats this floor.
double time_floor_s(StreamOp op, std::size_t n, const rooflab::GpuSpec& gpu);

// Q4. Bytes fetched from DRAM when a kernel reads n elements of elem_bytes each at a stride of `stride`
//     elements (element i at byte offset i * stride * elem_bytes, the first one aligned to a sector), when
//     memory moves in whole sectors of sector_bytes (32 on NVIDIA GPUs). Count each sector touched once.
double strided_dram_bytes(std::size_t n, std::size_t elem_bytes, std::size_t stride, std::size_t sector_bytes);

// Q5. Useful fraction of the DRAM traffic of that strided read for large n: bytes the kernel uses divided by
//     bytes fetched (1.0 at stride 1).
double strided_efficiency(std::size_t elem_bytes, std::size_t stride, std::size_t sector_bytes);

// Q6. Unit traps: a datasheet "80 GB" is decimal; nvidia-smi and cudaMemGetInfo print binary units.
double gb_to_gib(double gb);
double gib_to_gb(double gib);

// Q7. The smallest array, in bytes, that a STREAM benchmark should use on `gpu` so that it measures DRAM and
//     not the L2 cache: BabelStream's rule of at least 4x the largest cache (gpu.l2_mb, counted as decimal
//     MB like every size in the data, though NVIDIA's L2 MB are binary in practice: handout, "Which megabytes
//     q7 counts"; an std::optional that is empty where NVIDIA does not publish the size; the tests skip those
//     GPUs).
double min_array_bytes(const rooflab::GpuSpec& gpu);

// Q8. What fraction of `gpu`'s datasheet bandwidth a measured copy reached: the copy moved `bytes_copied`
//     bytes from one array to another in `seconds` (careful: what does the datasheet count?).
double copy_fraction_of_datasheet(double bytes_copied, double seconds, const rooflab::GpuSpec& gpu);

// ---- CPU references (used by every correctness test) ----

inline void reference(StreamOp op, std::span<float> a, std::span<float> b, std::span<float> c, float scalar) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    switch (op) {
      case StreamOp::copy: c[i] = a[i]; break;
      case StreamOp::scale: b[i] = scalar * c[i]; break;
      case StreamOp::add: c[i] = a[i] + b[i]; break;
      case StreamOp::triad: a[i] = b[i] + scalar * c[i]; break;
    }
  }
}

inline void reference_strided(std::span<const float> in, std::span<float> out, std::size_t stride) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = in[i * stride];
}

}  // namespace lab01
