// Lab 02 static checks (hints for students; CI requires them of the solutions): the FMA kernel keeps its
// chains in registers (no spills) and its loop really holds kChains FMAs per iteration (fma.rn.f32 in
// the PTX), so the compiler neither deleted nor serialized the work.
#include "kernels.hpp"
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <cuda_fp16.h>

ROOFLAB_INSPECT_KERNELS(lab02::kKernels);

// Asked of the kernels the two launchers start (one block, a few iterations, on the CPU backend), not of any
// kernel in the file.
ROOFLAB_TEST(Lab02Static, FmaChainsInThePtx) {
  auto out = rooflab::ptx::device_zeros<float>(lab02::kBlock);
  auto out2 = rooflab::ptx::device_zeros<__half2>(lab02::kBlock);
  const auto by_fp32 = rooflab::ptx::launched_by("lab02::fma_fp32", [&] {
    lab02::fma_fp32(1.0f, 0.5f, 4, out.data(), lab02::kBlock, nullptr);
  });
  const auto by_half2 = rooflab::ptx::launched_by("lab02::fma_half2", [&] {
    lab02::fma_half2(__float2half2_rn(1.0f), __float2half2_rn(0.5f), 4, out2.data(), lab02::kBlock, nullptr);
  });
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab02::fma_fp32_kernel", by_fp32));
    EXPECT_GE(f.fma_f32, lab02::kChains) << arch << ": the FMA loop should hold at least " << lab02::kChains
                                         << " fma.rn.f32 (one per chain); the compiler may have removed work";
    EXPECT_GE(f.global_stores, 1) << arch << ": no store: the compiler can delete every FMA";
    const auto h = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab02::fma_half2_kernel", by_half2));
    EXPECT_GE(h.count("fma.rn.f16x2"), lab02::kChains) << arch << ": the half2 loop should hold fma.rn.f16x2";
  }
}

ROOFLAB_TEST(Lab02Static, NoSpills) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch);
  }
}
