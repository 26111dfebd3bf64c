// Cooperative groups beyond one warp on the CPU backend, with kernels built so that a wrong implementation
// fails (cg_beyond_warp_kernels.cu): tiles of several warps sync only themselves, grid.sync() orders the
// phases of a cooperative launch (and leaving it out reads stale block sums under the forward order), and
// what a GPU rejects or leaves undefined is reported. CTest runs these under every schedule.
#include "cg_beyond_warp_kernels.hpp"
#include "kernel_error.hpp"

#include <rooflab/emu/launch.hpp>
#include <rooflab/testing/buffer.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

using emutest::kernel_error;
using rooflab::DeviceBuffer;

std::vector<int> ramp(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i * 37) % 101 - 40;
  return v;
}

}  // namespace

TEST(CgBeyondWarp, TilesOfSeveralWarpsSyncOnlyThemselves) {
  DeviceBuffer<int> out(256);
  cgbeyond::divergent_tiles(out.data());
  const auto got = out.download();
  for (int t = 0; t < 256; ++t) {
    const int tile = t / 128;
    EXPECT_EQ(got[t], 128 * 127 / 2 + 128 * 128 * tile) << "thread " << t;
  }
}

TEST(CgBeyondWarp, GridSyncOrdersTheTwoPhases) {
  const int n = 1000;
  const auto h = ramp(n);
  DeviceBuffer<int> in{std::span<const int>(h)}, sums(4), total(1);
  ASSERT_EQ(cgbeyond::two_phase_sum(in.data(), sums.data(), total.data(), n, 4, true), cudaSuccess);
  EXPECT_EQ(total.download()[0], std::accumulate(h.begin(), h.end(), 0));
}

// Without grid.sync(), the forward order runs block 0 to its end before block 1 has written its sum.
TEST(CgBeyondWarp, MissingGridSyncReadsStaleBlockSums) {
  const auto saved = rooflab::emu::schedule();
  rooflab::emu::set_schedule(rooflab::emu::Schedule::forward);
  const int n = 1000;
  const auto h = ramp(n);
  DeviceBuffer<int> in{std::span<const int>(h)}, sums(4), total(1);
  const cudaError_t err = cgbeyond::two_phase_sum(in.data(), sums.data(), total.data(), n, 4, false);
  const int got = total.download()[0];
  ASSERT_EQ(cgbeyond::two_phase_sum(in.data(), sums.data(), total.data(), n, 4, true), cudaSuccess);
  const int with_sync = total.download()[0];
  rooflab::emu::set_schedule(saved);
  ASSERT_EQ(err, cudaSuccess);
  EXPECT_NE(got, std::accumulate(h.begin(), h.end(), 0)) << "block 0 read block sums not yet written";
  EXPECT_EQ(with_sync, std::accumulate(h.begin(), h.end(), 0));
}

TEST(CgBeyondWarp, GridSyncOutsideACooperativeLaunchIsReported) {
  const auto h = ramp(256);
  DeviceBuffer<int> in{std::span<const int>(h)}, sums(4), total(1);
  const std::string e =
      kernel_error([&] { cgbeyond::two_phase_sum_plain_launch(in.data(), sums.data(), total.data(), 256, 4); });
  EXPECT_NE(e.find("two_phase_sum_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("grid.sync() at "), std::string::npos) << e;
  EXPECT_NE(e.find("cg_beyond_warp_kernels.cu:"), std::string::npos) << e;
  EXPECT_NE(e.find("not launched with cudaLaunchCooperativeKernel"), std::string::npos) << e;
}

TEST(CgBeyondWarp, ACooperativeGridLargerThanTheDeviceHoldsIsRefused) {
  int sms = 0, per_sm = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  int cooperative = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0), cudaSuccess);
  EXPECT_EQ(cooperative, 1);
  // 64 threads, no dynamic shared memory: 32 blocks per SM (2048 threads, and the 32-block limit).
  per_sm = 32;
  const unsigned blocks = static_cast<unsigned>(sms * per_sm + 1);
  const auto h = ramp(64);
  DeviceBuffer<int> in{std::span<const int>(h)}, sums(blocks), total(1);
  EXPECT_EQ(cgbeyond::two_phase_sum(in.data(), sums.data(), total.data(), 64, blocks, true),
            cudaErrorCooperativeLaunchTooLarge);
  cudaGetLastError();
}

TEST(CgBeyondWarp, TypeErasedGroupsAndRunTimePartitions) {
  for (unsigned threads : {128u, 40u}) {  // 40: the last 16-thread tile holds 8 threads, the last warp 8
    DeviceBuffer<cgbeyond::GroupFacts> out(threads);
    cgbeyond::group_facts(out.data(), threads);
    const auto got = out.download();
    for (unsigned t = 0; t < threads; ++t) {
      const std::string where = std::to_string(threads) + " threads, thread " + std::to_string(t);
      const auto& f = got[t];
      EXPECT_EQ(f.grid_valid, 0) << where;
      EXPECT_EQ(f.warp_rank, t % 32) << where;
      EXPECT_EQ(f.warp_size, 32u) << where;
      EXPECT_EQ(f.eight_rank, t % 8) << where;
      EXPECT_EQ(f.eight_size, 8u) << where;
      EXPECT_EQ(f.alone, 100u) << where;
      EXPECT_EQ(f.sixteen_size, t / 16 * 16 + 16 <= threads ? 16u : threads % 16) << where;
      if (threads % 64 == 0) {
        EXPECT_EQ(f.exclusive, static_cast<int>(t % 64)) << where;
        EXPECT_EQ(f.largest, static_cast<int>(t / 64 * 64 + 63)) << where;
      }
    }
  }
}

TEST(CgBeyondWarp, ATileLargerThanTheBlockIsReported) {
  DeviceBuffer<int> out(64);
  const std::string e = kernel_error([&] { cgbeyond::tile_larger_than_block(out.data()); });
  EXPECT_NE(e.find("thread_block_tile<128> of a block of 64 threads"), std::string::npos) << e;
}

TEST(CgBeyondWarp, ATileWhoseThreadExitedBeforeItsSyncIsReported) {
  DeviceBuffer<int> out(256);
  const std::string e = kernel_error([&] { cgbeyond::tile_member_exits(out.data()); });
  EXPECT_NE(e.find("128-thread tile at "), std::string::npos) << e;
  EXPECT_NE(e.find("can never complete: thread (130,0,0) of the same tile has exited"), std::string::npos) << e;
}
