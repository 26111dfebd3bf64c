// Lab @LAB_ID@ static checks: facts of the compiled kernels, read from the PTX and the ptxas report the build
// captured for each architecture in ROOFLAB_STATIC_ARCHS. No device needed; worth no points (hints).
// fill in: the facts your lab teaches (vector widths, shared memory, tensor-core instructions, no spills).
#include "kernels.hpp"

#include <rooflab/inspect.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

// `lab@LAB_ID@_static --rooflab-inspect` (what `rooflab inspect @LAB_ID@` runs) prints the table for these kernels.
ROOFLAB_INSPECT_KERNELS(@LAB_NS@::kKernelDecls);

// The scale kernel moves one float per thread per iteration: it loads global memory and stores 32 bits at a
// time, without shared memory.
ROOFLAB_TEST(@LAB_SUITE@Static, ScaleMoves32BitsPerAccess) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto f = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, "@LAB_NS@::scale_kernel"));
    EXPECT_GE(f.global_loads, 1) << arch << ": scale_kernel loads nothing";
    EXPECT_EQ(f.widest_global_store_bits, 32) << arch << ": scale_kernel";
    EXPECT_FALSE(f.uses_shared) << arch << ": scale_kernel needs no shared memory";
  }
}
