// The CPU backend's self-tests: correct kernels run clean under every schedule and worker count; planted
// bugs are caught with a report naming the kernel, the thread and the line.
#include "kernels.hpp"

#include <rooflab/buffer.hpp>
#include <rooflab/random.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

namespace {

using rooflab::DeviceBuffer;
using rooflab::emu::Schedule;

constexpr Schedule kSchedules[] = {Schedule::forward, Schedule::reverse, Schedule::random};

// Restores the default schedule and worker count after a test changes them.
struct ScheduleGuard {
  ~ScheduleGuard() {
    rooflab::emu::set_schedule(Schedule::forward);
    rooflab::emu::set_workers(1);
  }
};

std::vector<float> reduce_on(const std::vector<float>& x, bool buggy) {
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<float> out((x.size() + 255) / 256);
  emutest::reduce(in.data(), out.data(), static_cast<int>(x.size()), buggy);
  return out.download();
}

std::string kernel_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const rooflab::emu::KernelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(EmuCorrect, ReductionUnderEverySchedule) {
  ScheduleGuard guard;
  const auto x = rooflab::random_floats(1000, 1);
  for (int workers : {1, 2}) {
    rooflab::emu::set_workers(workers);
    for (Schedule s : kSchedules) {
      rooflab::emu::set_schedule(s, 7);
      const auto got = reduce_on(x, false);
      for (std::size_t b = 0; b < got.size(); ++b) {
        double want = 0;
        for (std::size_t i = b * 256; i < std::min(x.size(), (b + 1) * 256); ++i) want += x[i];
        EXPECT_NEAR(got[b], want, 1e-4) << "block " << b << ", schedule " << static_cast<int>(s);
      }
    }
  }
}

// A missing __syncthreads shows up as a result that depends on the order of threads.
TEST(EmuBugs, MissingSyncthreadsInReductionChangesTheResult) {
  ScheduleGuard guard;
  const auto x = rooflab::random_floats(256, 2, 0.5f, 1.5f);
  const auto good = reduce_on(x, false);
  int wrong = 0;
  for (Schedule s : kSchedules) {
    rooflab::emu::set_schedule(s, 11);
    const auto got = reduce_on(x, true);
    if (std::abs(got[0] - good[0]) > 1e-3f) ++wrong;
  }
  EXPECT_GE(wrong, 1) << "no schedule exposed the missing barrier";
}

TEST(EmuBugs, ReadingATileBeforeTheBarrier) {
  ScheduleGuard guard;
  const auto x = rooflab::random_floats(64, 3);
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<float> out(64);
  int wrong = 0;
  for (Schedule s : kSchedules) {
    rooflab::emu::set_schedule(s, 5);
    out.poison();
    emutest::tile_read_before_barrier(in.data(), out.data());
    const auto got = out.download();
    for (unsigned t = 0; t < 64; ++t) {
      if (got[t] != x[(t + 1) % 64]) {
        ++wrong;
        break;
      }
    }
  }
  EXPECT_GE(wrong, 1);
}

TEST(EmuBugs, DivergentBarrierNamesBothLines) {
  DeviceBuffer<float> out(32);
  const std::string e = kernel_error([&] { emutest::divergent_barrier(out.data()); });
  EXPECT_NE(e.find("different __syncthreads"), std::string::npos) << e;
  EXPECT_NE(e.find("divergent_barrier_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("kernels.cu:"), std::string::npos) << e;
}

TEST(EmuBugs, HostPointerPassedToAKernel) {
  std::vector<float> host(16, 1.0f);
  DeviceBuffer<float> out(16);
  const std::string e = kernel_error([&] { emutest::copy(host.data(), out.data(), 16); });
  EXPECT_NE(e.find("argument 1 is a host pointer"), std::string::npos) << e;
  EXPECT_NE(e.find("copy_kernel"), std::string::npos) << e;
}

TEST(EmuBugs, ShuffleWithExitedLanes) {
  DeviceBuffer<float> in(32), out(32);
  in.poison();
  const std::string e = kernel_error([&] { emutest::shuffle_exited_lane(in.data(), out.data()); });
  EXPECT_NE(e.find("has exited"), std::string::npos) << e;
}

TEST(EmuBugsDeathTest, OffByOneWriteHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(1024);
        emutest::off_by_one(out.data(), 1024);
      },
      "out-of-bounds access in kernel emutest::off_by_one_kernel.*thread \\(0,0,0\\).*0 bytes past the end of a "
      "4096-byte cudaMalloc allocation");
}

TEST(EmuBugsDeathTest, DynamicSharedMemoryOverrunHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(64);
        emutest::dynamic_overrun(out.data());
      },
      "out-of-bounds access in kernel emutest::dynamic_overrun_kernel.*thread \\(0,0,0\\).*0 bytes past the end of a "
      "256-byte block's dynamic shared memory");
}

TEST(EmuBugs, UninitializedMemoryIsPoisonNotZero) {
  DeviceBuffer<float> never_written(8), out(8);
  emutest::copy(never_written.data(), out.data(), 8);
  const auto got = out.download();
  std::uint32_t bits = 0;
  std::memcpy(&bits, &got[0], sizeof bits);
  EXPECT_EQ(bits, 0xCDCDCDCDu);
}

TEST(EmuRuntime, InvalidConfigurationIsALaunchError) {
  DeviceBuffer<float> in(8), out(8);
  EXPECT_THROW(emutest::copy_with_block(in.data(), out.data(), 8, 2048), rooflab::CudaError);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the launch check read and cleared it
}

TEST(EmuRuntime, MemcpyKindMismatchIsAnError) {
  DeviceBuffer<float> d(4);
  std::vector<float> h(4);
  EXPECT_EQ(cudaMemcpy(d.data(), h.data(), 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);  // past the end
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  (void)cudaGetLastError();
}

TEST(EmuCorrect, ShuffleReduction) {
  ScheduleGuard guard;
  const auto x = rooflab::random_floats(4 * 128, 4);
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<float> out(16);
  for (Schedule s : kSchedules) {
    rooflab::emu::set_schedule(s, 3);
    out.poison();
    emutest::shuffle_reduce(in.data(), out.data(), 4);
    const auto got = out.download();
    for (int w = 0; w < 16; ++w) {
      double want = 0;
      for (int i = 0; i < 32; ++i) want += x[static_cast<std::size_t>(w * 32 + i)];
      EXPECT_NEAR(got[static_cast<std::size_t>(w)], want, 1e-4) << "warp " << w;
    }
  }
}

TEST(EmuCorrect, TiledSgemmOddSizes) {
  ScheduleGuard guard;
  const int m = 96, n = 80, k = 72;
  const auto a = rooflab::random_floats(static_cast<std::size_t>(m * k), 5);
  const auto b = rooflab::random_floats(static_cast<std::size_t>(k * n), 6);
  DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)};
  DeviceBuffer<float> dc(static_cast<std::size_t>(m * n));
  for (Schedule s : kSchedules) {
    for (int workers : {1, 2}) {
      rooflab::emu::set_schedule(s, 9);
      rooflab::emu::set_workers(workers);
      dc.poison();
      emutest::tiled_sgemm(da.data(), db.data(), dc.data(), m, n, k);
      const auto c = dc.download();
      for (int i = 0; i < m; i += 7) {
        for (int j = 0; j < n; j += 5) {
          double want = 0;
          for (int p = 0; p < k; ++p) want += static_cast<double>(a[static_cast<std::size_t>(i * k + p)]) * b[static_cast<std::size_t>(p * n + j)];
          ASSERT_NEAR(c[static_cast<std::size_t>(i * n + j)], want, 1e-4) << i << "," << j;
        }
      }
    }
  }
}

TEST(EmuCorrect, AtomicsFromManyBlocksOnTwoWorkers) {
  ScheduleGuard guard;
  rooflab::emu::set_workers(2);
  DeviceBuffer<int> count(1);
  DeviceBuffer<float> sum(1);
  DeviceBuffer<double> max_value(1);
  ROOFLAB_CUDA_CHECK(cudaMemset(count.data(), 0, 4));
  ROOFLAB_CUDA_CHECK(cudaMemset(sum.data(), 0, 4));
  ROOFLAB_CUDA_CHECK(cudaMemset(max_value.data(), 0, 8));
  emutest::atomics(count.data(), sum.data(), max_value.data(), 100);
  EXPECT_EQ(count.download()[0], 6400);
  EXPECT_EQ(sum.download()[0], 6400.0f);
  EXPECT_EQ(max_value.download()[0], 6399.0);
}

TEST(EmuCorrect, DynamicSharedMemoryAnd3DIndices) {
  const auto x = rooflab::random_floats(3 * 96, 8);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(3 * 96);
  emutest::dynamic_reverse(in.data(), out.data(), 3, 96);
  const auto got = out.download();
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 96; ++t) EXPECT_EQ(got[static_cast<std::size_t>(b * 96 + t)], x[static_cast<std::size_t>(b * 96 + 95 - t)]);
  }
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  DeviceBuffer<unsigned> ids(12 * 24);
  emutest::index3d(ids.data(), grid, block);
  const auto v = ids.download();
  for (unsigned bl = 0; bl < 12; ++bl) {
    for (unsigned t = 0; t < 24; ++t) EXPECT_EQ(v[bl * 24 + t], bl * 1000 + t);
  }
}

TEST(EmuCorrect, BallotAndSyncthreadsCount) {
  std::vector<int> flags(32);
  for (int i = 0; i < 32; ++i) flags[static_cast<std::size_t>(i)] = i % 3 == 0;
  DeviceBuffer<int> d{std::span<const int>(flags)}, out(2);
  emutest::ballot_count(d.data(), out.data());
  const auto got = out.download();
  EXPECT_EQ(got[0], 11);
  EXPECT_EQ(got[1], 11);
}

TEST(EmuCorrect, WmmaGemmComputedOncePerWarp) {
  ScheduleGuard guard;
  const int m = 64, n = 48, k = 32;
  const auto fa = rooflab::random_floats(static_cast<std::size_t>(m * k), 12);
  const auto fb = rooflab::random_floats(static_cast<std::size_t>(k * n), 13);
  std::vector<__half> ha(fa.size()), hb(fb.size());
  for (std::size_t i = 0; i < fa.size(); ++i) ha[i] = __float2half(fa[i]);
  for (std::size_t i = 0; i < fb.size(); ++i) hb[i] = __float2half(fb[i]);
  DeviceBuffer<__half> da{std::span<const __half>(ha)}, db{std::span<const __half>(hb)};
  DeviceBuffer<float> dc(static_cast<std::size_t>(m * n));
  for (Schedule s : kSchedules) {
    rooflab::emu::set_schedule(s, 21);
    dc.poison();
    emutest::wmma_gemm(da.data(), db.data(), dc.data(), m, n, k);
    const auto c = dc.download();
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int p = 0; p < k; ++p) {
          want += static_cast<double>(__half2float(ha[static_cast<std::size_t>(i * k + p)])) *
                  __half2float(hb[static_cast<std::size_t>(p * n + j)]);
        }
        ASSERT_NEAR(c[static_cast<std::size_t>(i * n + j)], 2 * want, 1e-3) << i << "," << j;
      }
    }
  }
}
