// Lab 06 static checks (hints; CI requires them of the solutions): no spills in any kernel, and the append
// moves its rows in 128-bit loads and stores.
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>

ROOFLAB_INSPECT_KERNELS(lab06::kKernels);

ROOFLAB_TEST(Lab06Static, NoSpillsAndWideAppend) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"))) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
    }
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto append = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, "lab06::paged_kv_append_kernel"));
    EXPECT_EQ(append.widest_global_load_bits, 128) << arch << ": the append should load its rows 16 bytes at a time";
    EXPECT_EQ(append.widest_global_store_bits, 128) << arch << ": the append should store its rows 16 bytes at a time";
  }
}
