// Lab @LAB_ID@ static checks: facts of the compiled kernels, read from the PTX and the ptxas report the build
// captured for each architecture in ROOFLAB_STATIC_ARCHS. No device needed; worth no points (hints).
// fill in: the facts your lab teaches (vector widths, shared memory, tensor-core instructions, no spills).
#include "kernels.hpp"

#include <rooflab/inspect.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>
#include <rooflab/testing/timing.hpp>

#include <cstddef>

// `lab@LAB_ID@_static --rooflab-inspect` (what `rooflab inspect @LAB_ID@` runs) prints the table for these kernels,
// with the floor and the prediction at the size the perf tests time (256 MB of FP32 on a GPU whose L2 is 64 MB or
// less: tests/perf.cpp).
ROOFLAB_INSPECT_KERNELS(@LAB_NS@::kKernelDecls);
ROOFLAB_INSPECT_TIMED_SIZE(double(1u << 26));

namespace {
// The launchers the perf tests time, at their size on `gpu` (its L2), called on the CPU backend with nothing run:
// the grids `rooflab inspect` counts waves of, and the launches the check below holds to every GPU. fill in: every
// launcher tests/perf.cpp times, at its size.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const std::size_t n = rooflab::streaming_bytes(rooflab::emu::pretend_gpu().l2_bytes, 1.0) / sizeof(float);
    const rooflab::ptx::TimedBuffer<float> x(n), y(n);
    @LAB_NS@::scale(x.data(), y.data(), 2.0f, n, nullptr);
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

// Every kernel the perf tests time launches on every GPU data/gpus.json names (threads, shared memory with the
// opt-in, registers), and no kernel spills registers to local memory on any captured architecture.
ROOFLAB_TEST(@LAB_SUITE@Static, NoSpills) {
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  for (const auto& arch : rooflab::ptx::captured_archs()) rooflab::ptx::expect_no_spills(arch);
}

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
