// The dry-run harness (rooflab::cuda_dryrun): calibration, the timing loop and the problem-size knob run on
// the CPU backend's pretend GPU, chosen from data/gpus.json. CTest runs this twice: with the default pretend
// GPU (an A10, sm_86) and with ROOFLAB_EMU_GPU=t4 (sm_75: no BF16 tensor cores, so calibration skips them).
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/emu/pretend_gpu.hpp>
#include <rooflab/testing/timing.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace {

rooflab::emu::PretendGpu expected_gpu() {
  const char* e = std::getenv("ROOFLAB_EMU_GPU");
  return rooflab::emu::pretend_gpu_from_data(e != nullptr && *e != '\0' ? e : "a10");
}

bool positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

TEST(DryRun, ThePretendGpuIsTheDatasheetsGpu) {
  const auto want = expected_gpu();
  const auto info = rooflab::query_device();
  EXPECT_EQ(info.name, want.name);
  EXPECT_EQ(info.sms, want.sms);
  EXPECT_EQ(info.cc_major, want.cc_major);
  EXPECT_EQ(info.cc_minor, want.cc_minor);
  EXPECT_EQ(info.l2_bytes, want.l2_bytes);
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  EXPECT_EQ(total, want.memory_bytes);
  EXPECT_LE(free_bytes, total);
  const auto t4 = rooflab::emu::pretend_gpu_from_data("Tesla T4");  // by CUDA name, as a GPU reports it
  EXPECT_EQ(t4.id, "t4");
  EXPECT_EQ(t4.sms, 40);
  EXPECT_EQ(t4.cc_major * 10 + t4.cc_minor, 75);
  EXPECT_THROW(rooflab::emu::pretend_gpu_from_data("no-such-gpu"), std::invalid_argument);
}

TEST(DryRun, TheSizeKnobScalesTheFourTimesL2Rule) {
  // On a GPU's scale: 4x the L2, at least 256 MB.
  EXPECT_EQ(rooflab::streaming_bytes(std::size_t{6} << 20, 1.0), std::size_t{256} << 20);
  EXPECT_EQ(rooflab::streaming_bytes(std::size_t{72} << 20, 1.0), std::size_t{288} << 20);
  // A dry run scales it down, never to nothing.
  const double s = rooflab::perf_scale();
  EXPECT_LT(s, 1.0);
  EXPECT_GT(s, 0.0);
  EXPECT_LE(rooflab::streaming_bytes(std::size_t{72} << 20), static_cast<std::size_t>(s * (288 << 20)) + 4096);
  EXPECT_GE(rooflab::streaming_bytes(1), 4096u);
  EXPECT_EQ(rooflab::scaled(4096, 4), std::max<std::size_t>(4, static_cast<std::size_t>(4096 * s)));
  EXPECT_EQ(rooflab::scaled_gemm_n(8192) % 64, 0);
  EXPECT_LT(rooflab::scaled_gemm_n(8192), 8192);
}

TEST(DryRun, TheTimingLoopReadsTheEmulatedEventsOnTheWallClock) {
  const auto m = rooflab::benchmark(
      [](cudaStream_t) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, {.bytes_read = 1e6});
  EXPECT_GE(m.samples, 3);
  EXPECT_GE(m.min_s, 0.002);  // the events around each launch saw the sleep
  EXPECT_LT(m.median_s, 1.0);
  EXPECT_TRUE(positive(m.gbps()));
}

TEST(DryRun, CalibrationMeasuresEveryCeilingAndCachesItAsADryRun) {
  const auto dir = std::filesystem::temp_directory_path() / ("rooflab-dryrun-test-" + std::to_string(::getpid()));
  ::setenv("ROOFLAB_CACHE_DIR", dir.c_str(), 1);
  const rooflab::Ceilings& c = rooflab::ceilings(0, true);
  const auto want = expected_gpu();
  EXPECT_EQ(c.device_name, want.name);
  EXPECT_TRUE(positive(c.copy_gbps));
  EXPECT_TRUE(positive(c.copy_kernel_gbps));
  EXPECT_TRUE(positive(c.memcpy_gbps));
  EXPECT_DOUBLE_EQ(c.copy_gbps, std::max(c.copy_kernel_gbps, c.memcpy_gbps));
  EXPECT_TRUE(positive(c.fp32_fma_flops));
  EXPECT_TRUE(positive(c.sgemm_flops));
  EXPECT_TRUE(positive(c.fp16_tensor_flops));
  if (want.cc_major >= 8) {
    EXPECT_TRUE(positive(c.bf16_tensor_flops));
  } else {
    EXPECT_EQ(c.bf16_tensor_flops, 0.0) << "no BF16 tensor cores before sm_80";
  }
  const auto path = rooflab::ceilings_cache_path(rooflab::query_device());
  EXPECT_EQ(path.parent_path(), dir);
  EXPECT_EQ(path.filename().string().rfind("dryrun-", 0), 0u) << path << ": a dry run's cache must say so";
  EXPECT_TRUE(std::filesystem::exists(path));
  const auto back = rooflab::ceilings_from_json(rooflab::ceilings_to_json(c));
  EXPECT_EQ(back.copy_gbps, c.copy_gbps);
  std::filesystem::remove_all(dir);
}
