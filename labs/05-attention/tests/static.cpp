// Lab 05 static checks (hints; CI requires them of the solutions): no spills in any kernel on any captured
// architecture (sm_80 and sm_90), shared memory within the 48 KB a block gets without opting in, and the
// tensor-core instructions in flash v2's PTX. `rooflab inspect 05` shows the same facts with occupancy.
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>

ROOFLAB_INSPECT_KERNELS(lab05::kKernels);

ROOFLAB_TEST(Lab05Static, NoSpillsAndSharedMemoryWithinLimits) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"))) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
      EXPECT_LE(r.smem_bytes, 48 * 1024) << arch << ": " << r.name << " uses " << r.smem_bytes
                                          << " bytes of static shared memory, more than a block gets";
    }
  }
}

ROOFLAB_TEST(Lab05Static, FlashV2UsesTheTensorCores) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const char* name : {"lab05::flash_wmma_kernel<64, 64>", "lab05::flash_wmma_kernel<128, 32>"}) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, name));
      EXPECT_TRUE(f.uses_tensor_cores) << arch << ": no wmma.mma / mma.sync in " << name;
      EXPECT_GE(f.count("wmma.mma") + f.count("mma.sync"), 1) << arch << ": " << name;
    }
  }
}
