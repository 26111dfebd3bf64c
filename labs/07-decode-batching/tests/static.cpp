// Lab 07 static checks (hints; CI requires them of the solutions): no spills, and both kernels read W in
// 128-bit loads (a GEMV that walks W a column at a time, or a half at a time, shows up here first); the
// kernel for batches past 8 runs on the tensor cores.
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>

ROOFLAB_INSPECT_KERNELS(lab07::kKernels);

ROOFLAB_TEST(Lab07Static, NoSpillsAndWideLoads) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"))) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
    }
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const char* name : {"lab07::gemv_kernel", "lab07::batched_kernel<8>"}) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, name));
      EXPECT_EQ(f.widest_global_load_bits, 128) << arch << ": " << name << " should read W 16 bytes at a time";
    }
    const auto tc = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, "lab07::batched_tc_kernel"));
    EXPECT_TRUE(tc.uses_tensor_cores) << arch << ": the batched kernel for batches past 8 should use the tensor cores";
    EXPECT_EQ(tc.widest_global_load_bits, 128) << arch << ": the tensor-core kernel should stage W 16 bytes at a time";
  }
}
