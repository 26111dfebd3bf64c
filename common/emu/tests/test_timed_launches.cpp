// rooflab::ptx::timed_launches, the performance model's grids at a lab's timed size, in a lab half written.
// The prelude first (it must precede the CUDA headers that static_capture.hpp brings in).
#include <rooflab/emu/runtime.hpp>

#include "coverage_kernels.hpp"

#include <rooflab/emu/pretend_gpu.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

// A lab half written: in a timed_launches body, a launcher that is still the stub (it throws NotImplemented) is
// skipped by rooflab::ptx::timed and named in the note, and the launchers after it still give their grids. Before,
// the first stub threw out of the whole body and no kernel of the lab had a grid.
TEST(EmuCoverage, ALauncherStillTheStubLeavesTheOthersGrids) {
  rooflab::GpuSpec pretend;
  pretend.id = rooflab::emu::pretend_gpu().id;
  pretend.name = "the pretend GPU";
  pretend.sms = rooflab::emu::pretend_gpu().sms;
  float* x = nullptr;
  constexpr int n = 200;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)), cudaSuccess);
  const auto timed = rooflab::ptx::timed_launches(pretend, [&] {
    rooflab::ptx::timed([] { rooflab::not_implemented("demo.first.launch"); });
    rooflab::ptx::timed([&] { emutest::scale_by(2, x, n); });
    rooflab::ptx::timed([] { rooflab::not_implemented("demo.last.launch"); });
  });
  ASSERT_EQ(timed.launches.size(), 1u) << timed.note;
  EXPECT_NE(timed.launches[0].kernel.find("scale_by_kernel<2>"), std::string::npos) << timed.launches[0].kernel;
  EXPECT_EQ(timed.launches[0].blocks, 4u);
  EXPECT_NE(timed.note.find("demo.first.launch, demo.last.launch still the stub"), std::string::npos) << timed.note;
  // Anything else a launcher throws still ends the recording, saying why.
  const auto failed = rooflab::ptx::timed_launches(pretend, [&] {
    rooflab::ptx::timed([] { throw std::runtime_error("a launcher's own error"); });
  });
  EXPECT_TRUE(failed.launches.empty());
  EXPECT_NE(failed.note.find("a launcher's own error"), std::string::npos) << failed.note;
  cudaFree(x);
}

}  // namespace
