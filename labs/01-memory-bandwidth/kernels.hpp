// Lab 01: memory bandwidth - the kernels' launchers and the registry of kernels.  PROVIDED: do not modify.
//
// Every launcher is asynchronous on `stream`, takes device pointers, and handles any n >= 1.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>
#include <rooflab/inspect.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace lab01 {

// ---- student launchers (kernels.cu) ----
void copy(const float* a, float* c, std::size_t n, cudaStream_t stream);
void scale(const float* c, float* b, float scalar, std::size_t n, cudaStream_t stream);
void add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream);
void triad(const float* b, const float* c, float* a, float scalar, std::size_t n, cudaStream_t stream);
// The triad again with 128-bit (float4) loads and stores, for any n and any 4-byte-aligned pointers.
void triad_vec4(const float* b, const float* c, float* a, float scalar, std::size_t n, cudaStream_t stream);
// out[i] = in[i * stride] for i < n_out: the coalescing experiment.
void strided_read(const float* in, float* out, std::size_t n_out, std::size_t stride, cudaStream_t stream);

// ---- the registry ----

// The three STREAM arrays and the scalar, as every STREAM launcher sees them.
struct StreamArrays {
  float* a;
  float* b;
  float* c;
  float scalar;
  std::size_t n;
};

// Every Lab 01 kernel, once: what the tests, benchmarks, plots and `rooflab inspect` iterate over. n in the
// declared work is elements per array (FP32); bytes are DRAM traffic, each array read or written once.
// graded_by names the thresholds.json rule of the perf test that grades the kernel.
struct Kernel {
  rooflab::inspect::KernelDecl decl;  // symbol, launch, declared work, data type, threshold
  std::string_view idea;              // one line
  StreamOp op;                        // what a STREAM kernel computes (the CPU reference)
  void (*run)(const StreamArrays&, cudaStream_t);  // a STREAM kernel's launch; nullptr: it has its own launcher
  constexpr std::string_view id() const { return decl.variant; }  // stable, used in test names and reports
};

inline constexpr Kernel kKernels[] = {
    {{"lab01::copy_kernel", "copy", kBlock, 0, [](double) { return 0.0; }, [](double n) { return 8 * n; },
      rooflab::DType::fp32, {"copy"}},
     "c = a, one load and one store per element", StreamOp::copy,
     [](const StreamArrays& s, cudaStream_t st) { copy(s.a, s.c, s.n, st); }},
    {{"lab01::scale_kernel", "scale", kBlock, 0, [](double n) { return n; }, [](double n) { return 8 * n; },
      rooflab::DType::fp32, {"scale"}},
     "b = scalar * c", StreamOp::scale, [](const StreamArrays& s, cudaStream_t st) { scale(s.c, s.b, s.scalar, s.n, st); }},
    {{"lab01::add_kernel", "add", kBlock, 0, [](double n) { return n; }, [](double n) { return 12 * n; },
      rooflab::DType::fp32, {"add"}},
     "c = a + b, two loads per store", StreamOp::add,
     [](const StreamArrays& s, cudaStream_t st) { add(s.a, s.b, s.c, s.n, st); }},
    {{"lab01::triad_kernel", "triad", kBlock, 0, [](double n) { return 2 * n; }, [](double n) { return 12 * n; },
      rooflab::DType::fp32, {"triad"}},
     "a = b + scalar * c", StreamOp::triad,
     [](const StreamArrays& s, cudaStream_t st) { triad(s.b, s.c, s.a, s.scalar, s.n, st); }},
    {{"lab01::triad_vec4_kernel", "triad_vec4", kBlock, 0, [](double n) { return 2 * n; },
      [](double n) { return 12 * n; }, rooflab::DType::fp32, {"triad_vec4"}},
     "the triad with 128-bit loads and stores, scalar head and tail", StreamOp::triad,
     [](const StreamArrays& s, cudaStream_t st) { triad_vec4(s.b, s.c, s.a, s.scalar, s.n, st); }},
    // Bytes at stride 1 (n = outputs); at stride s >= 8 each 4-byte read costs a 32-byte sector (handout:
    // "Coalescing"). A strided copy: `op` is copy, but it has its own launcher (the stride).
    {{"lab01::strided_read_kernel", "strided_read", kBlock, 0, [](double) { return 0.0; },
      [](double n) { return 8 * n; }, rooflab::DType::fp32, {"strided_ratio_max"}},
     "out[i] = in[i * stride]: the coalescing experiment", StreamOp::copy, nullptr},
};

// The kernel of an id (the registry's); throws std::invalid_argument for an unknown one.
inline const Kernel& kernel(std::string_view id) {
  for (const auto& k : kKernels) {
    if (k.id() == id) return k;
  }
  throw std::invalid_argument("no Lab 01 kernel " + std::string(id));
}

// The declarations alone, for `rooflab inspect` and the static checks (evaluated by the compiler: the static
// binary, which links no kernels, never references the launchers above).
inline constexpr auto kKernelDecls = [] {
  std::array<rooflab::inspect::KernelDecl, std::extent_v<decltype(kKernels)>> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = kKernels[i].decl;
  return out;
}();

}  // namespace lab01
