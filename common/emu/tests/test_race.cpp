// Race mode (ThreadSanitizer build of the backend). The planted races must be reported with the racing
// source lines even when the output happens to be right; correct kernels must produce no report. CTest
// checks the reports (tests/CMakeLists.txt): these tests only run the kernels.
#include "conformance.hpp"
#include "kernels.hpp"
#include "wmma_race.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

using rooflab::DeviceBuffer;

TEST(RacePlanted, ReductionMissingABarrier) {
  const auto x = rooflab::random_floats(256, 1);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(1);
  emutest::reduce(in.data(), out.data(), 256, true);
}

TEST(RacePlanted, TileReadBeforeTheBarrier) {
  const auto x = rooflab::random_floats(64, 2);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(64);
  emutest::tile_read_before_barrier(in.data(), out.data());
}

// Every block writes every element (the same values): only the missing order between blocks is wrong.
TEST(RacePlanted, BlocksWriteEachOthersElements) {
  DeviceBuffer<float> out(128);
  conform::block_stride(out.data(), 128, 3);
  const auto got = out.download();
  EXPECT_EQ(got[127], 254.0f);
}

// The same after a launch of 1024 threads: its finished threads' TSan fibers are reused by the next launch, and
// nothing they carry orders two blocks of it (scheduler.cpp, FiberPool).
TEST(RacePlanted, BlocksWriteEachOthersElementsOnReusedFibers) {
  const auto x = rooflab::random_floats(1024, 6);
  DeviceBuffer<float> in{std::span<const float>(x)}, partial(4);
  emutest::reduce(in.data(), partial.data(), 1024, false);
  const unsigned long long before = rooflab::emu::race_fibers_reused();
  DeviceBuffer<float> out(128);
  conform::block_stride(out.data(), 128, 3);
  EXPECT_EQ(rooflab::emu::race_fibers_reused() - before, 3u * 64u);  // every thread of the racy launch
}

// WMMA staging through shared memory: race mode stores a fragment lane by lane, unordered (wmma.hpp), so a
// missing __syncwarp on either side of the store is reported with the kernel's line.
namespace {
void staged_transpose(emutest::WmmaStaging staging, std::vector<float>* got = nullptr,
                      std::vector<float>* want = nullptr) {
  const auto a = rooflab::random_floats(256, 11), b = rooflab::random_floats(256, 12);
  std::vector<__half> ha(256), hb(256);
  for (int i = 0; i < 256; ++i) {
    ha[i] = __float2half(a[i]);
    hb[i] = __float2half(b[i]);
  }
  DeviceBuffer<__half> da{std::span<const __half>(ha)}, db{std::span<const __half>(hb)};
  DeviceBuffer<float> out(512);
  emutest::wmma_staged_transpose(da.data(), db.data(), out.data(), staging);
  if (got == nullptr) return;
  *got = out.download();
  want->assign(512, 0.0f);
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) {
      float sum = 0.0f;
      for (int k = 0; k < 16; ++k) sum += __half2float(ha[r * 16 + k]) * __half2float(hb[k * 16 + c]);
      (*want)[c * 16 + r] = sum;
      (*want)[256 + c * 16 + r] = 2.0f * sum;
    }
  }
}
}  // namespace

TEST(RacePlanted, WmmaStagingReadWithoutSyncwarp) { staged_transpose(emutest::WmmaStaging::no_sync_after_store); }

TEST(RacePlanted, WmmaStagingOverwrittenWithoutSyncwarp) {
  staged_transpose(emutest::WmmaStaging::no_sync_before_next_store);
}

// Every lane's share together is the whole tile (the per-lane store misses no element), and the same kernel
// with both __syncwarp reports nothing.
TEST(RaceClean, WmmaStagingWithBothSyncwarps) {
  std::vector<float> got, want;
  staged_transpose(emutest::WmmaStaging::synced, &got, &want);
  for (int i = 0; i < 512; ++i) EXPECT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << i;
  EXPECT_EQ(rooflab::emu::races_reported(), 0);
}

TEST(RaceClean, CorrectKernelsReportNothing) {
  const auto x = rooflab::random_floats(512, 3);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(16);
  emutest::reduce(in.data(), out.data(), 512, false);
  emutest::shuffle_reduce(in.data(), out.data(), 4);
  const int m = 32, n = 32, k = 32;
  const auto a = rooflab::random_floats(m * k, 4), b = rooflab::random_floats(k * n, 5);
  DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)}, dc(m * n);
  emutest::tiled_sgemm(da.data(), db.data(), dc.data(), m, n, k);
  std::vector<__half> ha(a.size()), hb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ha[i] = __float2half(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) hb[i] = __float2half(b[i]);
  DeviceBuffer<__half> dha{std::span<const __half>(ha)}, dhb{std::span<const __half>(hb)};
  emutest::wmma_gemm(dha.data(), dhb.data(), dc.data(), m, n, k);
  DeviceBuffer<float> rev(2 * 64);
  emutest::dynamic_reverse(in.data(), rev.data(), 2, 64);
  DeviceBuffer<int> count(1);
  DeviceBuffer<float> sum(1);
  DeviceBuffer<double> max_value(1);
  ROOFLAB_CUDA_CHECK(cudaMemset(count.data(), 0, 4));
  ROOFLAB_CUDA_CHECK(cudaMemset(sum.data(), 0, 4));
  ROOFLAB_CUDA_CHECK(cudaMemset(max_value.data(), 0, 8));
  emutest::atomics(count.data(), sum.data(), max_value.data(), 4);
  EXPECT_EQ(count.download()[0], 256);
  const auto c = dc.download();
  EXPECT_FALSE(std::isnan(c[0]));
  // Two workers: device memory is opened for the launch before they start and closed after they end.
  DeviceBuffer<float> one_worker(m * n), two_workers(m * n);
  emutest::tiled_sgemm(da.data(), db.data(), one_worker.data(), m, n, k);
  rooflab::emu::set_workers(2);
  emutest::tiled_sgemm(da.data(), db.data(), two_workers.data(), m, n, k);
  rooflab::emu::set_workers(1);
  EXPECT_EQ(two_workers.download(), one_worker.download());
}

// Faults end the process with their report in race mode too, where ThreadSanitizer intercepts signals:
// host code dereferencing device memory, and a kernel's access into a guard page.
TEST(RaceFaultsDeathTest, HostReadOfDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> d(16);
        const volatile float* p = d.data();
        std::printf("%f\n", static_cast<double>(p[1]));
      },
      "host code read byte offset 4 of a 64-byte cudaMalloc allocation");
}

TEST(RaceFaultsDeathTest, KernelWritePastTheEnd) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(256);
        emutest::off_by_one(out.data(), 256);
      },
      "out-of-bounds access in kernel emutest::off_by_one_kernel.*0 bytes past the end of a 1024-byte cudaMalloc "
      "allocation \\(out\\[256\\] through the kernel's parameter out");
}

// The rewriter's shared memory in race mode: storage the next block reuses is not a race.
TEST(RaceClean, RewrittenSharedMemoryAcrossBlocksReportsNothing) {
  const auto x = rooflab::random_floats(4 * 64, 7);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(4 * 64);
  conform::reverse_blocks(in.data(), out.data(), 4);
  DeviceBuffer<unsigned> bits(4 * 64);
  conform::alias_dynamic(in.data(), bits.data(), 4, 64);
  conform::axpy(2.0f, in.data(), out.data(), 4 * 64);
  EXPECT_EQ(out.download()[0], 2.0f * x[0] + x[63]);
  EXPECT_EQ(rooflab::emu::races_reported(), 0);
}
