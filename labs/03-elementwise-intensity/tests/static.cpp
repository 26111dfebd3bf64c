// Lab 03 static checks (hints; CI requires them of the solutions): no spills, and the sweep really does
// its FMAs in a loop (fma.rn.f32 in the PTX).
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>



ROOFLAB_INSPECT_KERNELS(lab03::kKernels);

ROOFLAB_TEST(Lab03Static, NoSpillsAndTheSweepFmas) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"))) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
    }
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto sweep = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, "lab03::sweep_kernel"));
    EXPECT_GE(sweep.fma_f32, 1) << arch << ": the sweep kernel has no fma.rn.f32";
    const auto fused = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, "lab03::fused_chain_kernel<float>"));
    EXPECT_EQ(fused.global_stores, 1) << arch << ": the fused chain should store only y";
  }
}
