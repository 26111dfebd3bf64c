// Lab @LAB_ID@: @LAB_TITLE@ - the kernels' launchers and the registry of kernels.  PROVIDED: do not modify.
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

namespace @LAB_NS@ {

// ---- student launchers (kernels.cu) ----
// y[i] = a * x[i] for i < n.
void scale(const float* x, float* y, float a, std::size_t n, cudaStream_t stream);

// ---- the registry ----

// Every kernel of the lab, once: what the tests, `rooflab inspect` and the static checks iterate over. n in
// the declared work is elements (FP32); bytes are DRAM traffic. graded_by names the rule in thresholds.json
// of the perf test that grades the kernel. fill in: one entry per kernel of your lab.
struct Kernel {
  rooflab::inspect::KernelDecl decl;  // symbol, launch, declared work, data type, threshold
  std::string_view idea;              // one line
  constexpr std::string_view id() const { return decl.variant; }
};

inline constexpr Kernel kKernels[] = {
    {{"@LAB_NS@::scale_kernel", "scale", kBlock, 0, [](double n) { return n; }, [](double n) { return 8 * n; },
      rooflab::DType::fp32, {"scale"}},
     "y = a * x, one load and one store per element"},
};

// The kernel of an id; throws std::invalid_argument for an unknown one.
inline const Kernel& kernel(std::string_view id) {
  for (const auto& k : kKernels) {
    if (k.id() == id) return k;
  }
  throw std::invalid_argument("no Lab @LAB_ID@ kernel " + std::string(id));
}

// The declarations alone, for `rooflab inspect` and the static checks.
inline constexpr auto kKernelDecls = [] {
  std::array<rooflab::inspect::KernelDecl, std::extent_v<decltype(kKernels)>> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = kKernels[i].decl;
  return out;
}();

}  // namespace @LAB_NS@
