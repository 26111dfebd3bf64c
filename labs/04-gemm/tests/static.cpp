// Lab 04 static checks (hints; CI requires them of the solutions): no spills and shared memory within the
// 48 KB a block gets without opting in; the 128-bit global and shared loads of rungs 5 and 6; the tensor-core
// instructions of rung 7. `rooflab inspect 04` shows the same facts per rung, with occupancy.
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>

ROOFLAB_INSPECT_KERNELS(lab04::kKernels);

ROOFLAB_TEST(Lab04Static, NoSpillsAndSharedMemoryWithinLimits) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto report = rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"));
    for (const auto& r : report) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
    }
    for (const auto& k : lab04::kKernels) {
      const auto& r = rooflab::ptx::find_resources(report, k.kernel);
      EXPECT_LE(r.smem_bytes, 48 * 1024) << arch << ": " << k.variant << " uses " << r.smem_bytes
                                          << " bytes of static shared memory, more than a block gets";
    }
  }
}

ROOFLAB_TEST(Lab04Static, VectorizedRungsLoad128Bits) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const char* name : {"lab04::sgemm_vectorized_kernel", "lab04::sgemm_warptile_kernel"}) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, name));
      EXPECT_EQ(f.widest_global_load_bits, 128) << arch << ": " << name << " has no 128-bit global load";
      EXPECT_GE(f.count("ld.shared.v4"), 1) << arch << ": " << name << " has no 128-bit shared load";
    }
  }
}

ROOFLAB_TEST(Lab04Static, WmmaUsesTheTensorCores) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto f = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, "lab04::hgemm_wmma_kernel"));
    EXPECT_TRUE(f.uses_tensor_cores) << arch << ": no wmma.mma / mma.sync in the WMMA kernel";
    EXPECT_GE(f.count("wmma.mma") + f.count("mma.sync"), 1) << arch;
  }
}
