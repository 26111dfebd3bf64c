// Lab 02 static checks (hints for students; CI requires them of the solutions): the FMA kernel keeps its
// chains in registers (no spills) and its loop really holds kChains FMAs per iteration (fma.rn.f32 in
// the PTX), so the compiler neither deleted nor serialized the work.
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>



ROOFLAB_INSPECT_KERNELS(lab02::kKernels);

ROOFLAB_TEST(Lab02Static, FmaChainsInThePtx) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto f = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, "lab02::fma_fp32_kernel"));
    EXPECT_GE(f.fma_f32, lab02::kChains) << arch << ": the FMA loop should hold at least " << lab02::kChains
                                         << " fma.rn.f32 (one per chain); the compiler may have removed work";
    EXPECT_GE(f.global_stores, 1) << arch << ": no store: the compiler can delete every FMA";
    const auto h = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, "lab02::fma_half2_kernel"));
    EXPECT_GE(h.count("fma.rn.f16x2"), lab02::kChains) << arch << ": the half2 loop should hold fma.rn.f16x2";
  }
}

ROOFLAB_TEST(Lab02Static, NoSpills) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"))) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
    }
  }
}
