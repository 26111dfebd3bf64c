// Lab 01: memory bandwidth - the kernels' launchers and the registry of variants.  PROVIDED: do not modify.
//
// Every launcher is asynchronous on `stream`, takes device pointers, and handles any n >= 1.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cstddef>
#include <string_view>

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

// ---- the registry: tests, benchmarks and plots iterate over this one list ----

// The three STREAM arrays and the scalar, as every STREAM launcher sees them.
struct StreamArrays {
  float* a;
  float* b;
  float* c;
  float scalar;
  std::size_t n;
};

struct Variant {
  std::string_view id;    // stable, used in test names and reports
  std::string_view idea;  // one line
  StreamOp op;            // what it computes (the CPU reference)
  void (*run)(const StreamArrays&, cudaStream_t);
};

inline constexpr Variant kVariants[] = {
    {"copy", "c = a, one load and one store per element", StreamOp::copy,
     [](const StreamArrays& s, cudaStream_t st) { copy(s.a, s.c, s.n, st); }},
    {"scale", "b = scalar * c", StreamOp::scale,
     [](const StreamArrays& s, cudaStream_t st) { scale(s.c, s.b, s.scalar, s.n, st); }},
    {"add", "c = a + b, two loads per store", StreamOp::add,
     [](const StreamArrays& s, cudaStream_t st) { add(s.a, s.b, s.c, s.n, st); }},
    {"triad", "a = b + scalar * c", StreamOp::triad,
     [](const StreamArrays& s, cudaStream_t st) { triad(s.b, s.c, s.a, s.scalar, s.n, st); }},
    {"triad_vec4", "the triad with 128-bit loads and stores, scalar head and tail", StreamOp::triad,
     [](const StreamArrays& s, cudaStream_t st) { triad_vec4(s.b, s.c, s.a, s.scalar, s.n, st); }},
};

}  // namespace lab01
