// The CPU backend's self-tests: correct kernels run clean under every schedule and worker count; planted
// bugs are caught with a report naming the kernel, the thread and the line.
#include "kernels.hpp"
#include "kernel_error.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device_memory.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

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

// Runs `body` under every schedule (forward, reverse, seeded random) with 1 and 2 workers.
void for_each_configuration(const std::function<void(const std::string& where)>& body) {
  ScheduleGuard guard;
  for (int workers : {1, 2}) {
    for (Schedule s : kSchedules) {
      rooflab::emu::set_workers(workers);
      rooflab::emu::set_schedule(s, 20261122);
      body(std::string("schedule ") + (s == Schedule::forward ? "forward" : s == Schedule::reverse ? "reverse" : "random") +
           ", " + std::to_string(workers) + " worker(s)");
    }
  }
}

using emutest::kernel_error;

}  // namespace

TEST(EmuCorrect, ReductionUnderEverySchedule) {
  const auto x = rooflab::random_floats(1000, 1);
  for_each_configuration([&](const std::string& where) {
    const auto got = reduce_on(x, false);
    for (std::size_t b = 0; b < got.size(); ++b) {
      double want = 0;
      for (std::size_t i = b * 256; i < std::min(x.size(), (b + 1) * 256); ++i) want += x[i];
      EXPECT_NEAR(got[b], want, 1e-4) << "block " << b << ", " << where;
    }
  });
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
  EXPECT_NE(e.find("undefined behaviour"), std::string::npos) << e;  // and why the backend refuses it
  EXPECT_NE(e.find("divergent_barrier_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("kernels.cu:"), std::string::npos) << e;
}

TEST(EmuBugs, HostPointerPassedToAKernel) {
  std::vector<float> host(16, 1.0f);
  DeviceBuffer<float> out(16);
  const std::string e = kernel_error([&] { emutest::copy(host.data(), out.data(), 16); });
  EXPECT_NE(e.find("host pointer passed to kernel emutest::copy_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("argument 1 (in)"), std::string::npos) << e;
  EXPECT_NE(e.find("copy_kernel"), std::string::npos) << e;
}

TEST(EmuBugs, ShuffleWithExitedLanes) {
  DeviceBuffer<float> in(32), out(32);
  in.poison();
  const std::string e = kernel_error([&] { emutest::shuffle_exited_lane(in.data(), out.data()); });
  EXPECT_NE(e.find("reads the value of lane 16"), std::string::npos) << e;
  EXPECT_NE(e.find("has exited"), std::string::npos) << e;
  EXPECT_NE(e.find("shuffle_exited_lane_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("__shfl_sync at "), std::string::npos) << e;
  EXPECT_NE(e.find("kernels.cu:"), std::string::npos) << e;
}

TEST(EmuBugsDeathTest, OffByOneWriteHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(1024);
        emutest::off_by_one(out.data(), 1024);
      },
      "out-of-bounds access in kernel emutest::off_by_one_kernel.*thread \\(0,0,0\\).*0 bytes past the end of a "
      "4096-byte cudaMalloc allocation \\(out\\[1024\\] through the kernel's parameter out, an array of 1024 float "
      "elements of 4 bytes\\)");
}

// An FP16 array is counted in 2-byte elements, and named by the kernel's parameter.
TEST(EmuBugsDeathTest, HalfOffByOneCountsTwoByteElements) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<__half> values(1000);
        emutest::half_overrun(values.data(), 1000);
      },
      "out-of-bounds access in kernel emutest::half_overrun_kernel.*0 bytes past the end of a 2000-byte cudaMalloc "
      "allocation \\(values\\[1000\\] through the kernel's parameter values, an array of 1000 __half elements of 2 "
      "bytes\\)");
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

TEST(EmuRuntime, InvalidConfigurationIsAKernelError) {
  DeviceBuffer<float> in(8), out(8);
  const std::string e = kernel_error([&] { emutest::copy_with_block(in.data(), out.data(), 8, 2048); });
  EXPECT_NE(e.find("copy_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("cudaErrorInvalidConfiguration"), std::string::npos) << e;
  EXPECT_NE(e.find("2048 threads"), std::string::npos) << e;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  emutest::copy_with_block(in.data(), out.data(), 8, 8);  // a good launch afterwards is not blamed
}

// A kernel declared __launch_bounds__(N, ...) does not launch on a GPU with blocks of more than N threads; the
// backend, to which the macro is empty, fails such a launch too, before any block runs, naming the bound,
// whether N is a constant or a template's parameter (the rewriter has each kernel register its bound).
TEST(EmuRuntime, ABlockBeyondTheLaunchBoundsIsAKernelError) {
  DeviceBuffer<float> in(256), out(256);
  emutest::bounded_copy(in.data(), out.data(), 256, 64);
  emutest::bounded_warps_copy(in.data(), out.data(), 64, dim3(32, 2));
  out.poison(0xAB);
  std::string e = kernel_error([&] { emutest::bounded_copy(in.data(), out.data(), 256, 128); });
  EXPECT_NE(e.find("bounded_copy_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("a block of 128 threads"), std::string::npos) << e;
  EXPECT_NE(e.find("__launch_bounds__ allow (64)"), std::string::npos) << e;
  EXPECT_EQ(e.find("thread ("), std::string::npos) << "failed in a thread, not at the launch: " << e;
  std::uint32_t bits = 0;
  const auto untouched = out.download();
  std::memcpy(&bits, &untouched[0], sizeof bits);
  EXPECT_EQ(bits, 0xABABABABu) << "a block ran before the launch failed";
  e = kernel_error([&] { emutest::bounded_warps_copy(in.data(), out.data(), 64, dim3(32, 3)); });
  EXPECT_NE(e.find("bounded_warps_copy_kernel<2>"), std::string::npos) << e;
  EXPECT_NE(e.find("a block of 96 threads (32,3,1)"), std::string::npos) << e;
  EXPECT_NE(e.find("(64)"), std::string::npos) << e;
  EXPECT_EQ(e.find("thread ("), std::string::npos) << "failed in a thread, not at the launch: " << e;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  emutest::bounded_copy(in.data(), out.data(), 256, 32);  // a good launch afterwards is not blamed
}

// What a launcher that sizes its blocks from the runtime learns of a bounded kernel, a template's instance too:
// maxThreadsPerBlock is the bound (cudaFuncGetAttributes), a block past it has no resident block per SM, and
// cudaOccupancyMaxPotentialBlockSize (the toolkit's template, over both) suggests a block within it.
TEST(EmuRuntime, TheRuntimeReportsALaunchBoundAsTheKernelsMaxThreads) {
  for (const auto& [what, of] : {std::pair{"bounded_copy_kernel", &emutest::bounded_copy_attributes},
                                 std::pair{"bounded_warps_copy_kernel<2>", &emutest::bounded_warps_copy_attributes}}) {
    SCOPED_TRACE(what);
    const auto bounded = of(128);
    EXPECT_EQ(bounded.max_threads, 64);
    EXPECT_EQ(bounded.blocks_per_sm, 0);
    EXPECT_GT(bounded.potential_block, 0);
    EXPECT_LE(bounded.potential_block, 64);
    EXPECT_GT(of(64).blocks_per_sm, 0);
  }
  EXPECT_EQ(emutest::unbounded_max_threads(), 1024);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(EmuRuntime, MemcpyKindMismatchIsAnError) {
  DeviceBuffer<float> d(4);
  std::vector<float> h(4);
  EXPECT_EQ(cudaMemcpy(d.data(), h.data(), 16, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d.data(), h.data(), 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);  // past the end
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  (void)cudaGetLastError();
}

TEST(EmuCorrect, ShuffleReduction) {
  const auto x = rooflab::random_floats(4 * 128, 4);
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<float> out(16);
  for_each_configuration([&](const std::string& where) {
    out.poison();
    emutest::shuffle_reduce(in.data(), out.data(), 4);
    const auto got = out.download();
    for (int w = 0; w < 16; ++w) {
      double want = 0;
      for (int i = 0; i < 32; ++i) want += x[static_cast<std::size_t>(w * 32 + i)];
      EXPECT_NEAR(got[static_cast<std::size_t>(w)], want, 1e-4) << "warp " << w << ", " << where;
    }
  });
}

TEST(EmuCorrect, ShufflesOfEveryValueType) {
  DeviceBuffer<emutest::ShuffleOut> out(64);
  for_each_configuration([&](const std::string& where) {
    out.poison();
    emutest::shuffle_types(out.data());
    const auto got = out.download();
    for (unsigned t = 0; t < 64; ++t) {
      const unsigned lane = t % 32, src = (lane + 1) % 32;
      const auto& o = got[t];
      SCOPED_TRACE("thread " + std::to_string(t) + ", " + where);
      EXPECT_EQ(o.f, 1.5f * static_cast<float>(src));
      EXPECT_EQ(o.d, 0.25 * (lane == 31 ? 31 : lane + 1));
      EXPECT_EQ(o.ll, (1ll << 40) + (lane == 0 ? 0 : lane - 1));
      EXPECT_EQ(o.h, static_cast<float>(lane ^ 1u));
      EXPECT_EQ(o.h2_lo, static_cast<float>(src));
      EXPECT_EQ(o.h2_hi, -static_cast<float>(src));
      EXPECT_EQ(o.b, static_cast<float>(src));
      EXPECT_EQ(o.sum, 496u);
      EXPECT_EQ(o.max, 24);
      EXPECT_EQ(o.any, 1);
      EXPECT_EQ(o.all, 0);
      EXPECT_EQ(o.seg, static_cast<int>(lane / 8 * 8));
    }
  });
}

namespace {
void check_sgemm(int m, int n, int k, int stride) {
  const auto a = rooflab::random_floats(static_cast<std::size_t>(m) * k, 5);
  const auto b = rooflab::random_floats(static_cast<std::size_t>(k) * n, 6);
  DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)};
  DeviceBuffer<float> dc(static_cast<std::size_t>(m) * n);
  for_each_configuration([&](const std::string& where) {
    dc.poison();
    emutest::tiled_sgemm(da.data(), db.data(), dc.data(), m, n, k);
    const auto c = dc.download();
    for (int i = 0; i < m; i += stride) {
      for (int j = 0; j < n; j += (stride == 1 ? 1 : stride - 2)) {
        double want = 0;
        for (int p = 0; p < k; ++p) {
          want += static_cast<double>(a[static_cast<std::size_t>(i) * k + p]) * b[static_cast<std::size_t>(p) * n + j];
        }
        ASSERT_NEAR(c[static_cast<std::size_t>(i) * n + j], want, 1e-4 * (1 + std::abs(want))) << i << "," << j << ", "
                                                                                               << where;
      }
    }
  });
}
}  // namespace

TEST(EmuCorrect, TiledSgemmOddSizes) { check_sgemm(96, 80, 72, 1); }

TEST(EmuCorrect, TiledSgemm256) { check_sgemm(256, 256, 256, 7); }

TEST(EmuCorrect, AtomicsFromManyBlocks) {
  DeviceBuffer<int> count(1);
  DeviceBuffer<float> sum(1);
  DeviceBuffer<double> max_value(1);
  for_each_configuration([&](const std::string& where) {
    ROOFLAB_CUDA_CHECK(cudaMemset(count.data(), 0, 4));
    ROOFLAB_CUDA_CHECK(cudaMemset(sum.data(), 0, 4));
    ROOFLAB_CUDA_CHECK(cudaMemset(max_value.data(), 0, 8));
    emutest::atomics(count.data(), sum.data(), max_value.data(), 100);
    EXPECT_EQ(count.download()[0], 6400) << where;
    EXPECT_EQ(sum.download()[0], 6400.0f) << where;
    EXPECT_EQ(max_value.download()[0], 6399.0) << where;
  });
}

TEST(EmuCorrect, DynamicSharedMemoryAnd3DIndices) {
  const auto x = rooflab::random_floats(3 * 96, 8);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(3 * 96);
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  DeviceBuffer<unsigned> ids(12 * 24);
  for_each_configuration([&](const std::string& where) {
    out.poison();
    emutest::dynamic_reverse(in.data(), out.data(), 3, 96);
    const auto got = out.download();
    for (int b = 0; b < 3; ++b) {
      for (int t = 0; t < 96; ++t) {
        ASSERT_EQ(got[static_cast<std::size_t>(b * 96 + t)], x[static_cast<std::size_t>(b * 96 + 95 - t)]) << where;
      }
    }
    ids.poison();
    emutest::index3d(ids.data(), grid, block);
    const auto v = ids.download();
    for (unsigned bl = 0; bl < 12; ++bl) {
      for (unsigned t = 0; t < 24; ++t) ASSERT_EQ(v[bl * 24 + t], bl * 1000 + t) << where;
    }
  });
}

TEST(EmuCorrect, BallotAndSyncthreadsCount) {
  std::vector<int> flags(32);
  for (int i = 0; i < 32; ++i) flags[static_cast<std::size_t>(i)] = i % 3 == 0;
  DeviceBuffer<int> d{std::span<const int>(flags)}, out(2);
  for_each_configuration([&](const std::string& where) {
    emutest::ballot_count(d.data(), out.data());
    const auto got = out.download();
    EXPECT_EQ(got[0], 11) << where;
    EXPECT_EQ(got[1], 11) << where;
  });
}

TEST(EmuCorrect, ConstantMemoryThroughMemcpyToSymbol) {
  const float scale[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const auto x = rooflab::random_floats(100, 9);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(100);
  emutest::constant_scale(scale, in.data(), out.data(), 100);
  const auto got = out.download();
  for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(got[i], x[i] * scale[i % 4]);
}

namespace {
std::vector<__half> to_half(const std::vector<float>& v) {
  std::vector<__half> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = __float2half(v[i]);
  return h;
}
}  // namespace

// 64x64x64, half in, float out, against a CPU reference from the same (rounded) inputs.
TEST(EmuCorrect, WmmaGemmComputedOncePerWarp) {
  const int m = 64, n = 64, k = 64;
  const auto ha = to_half(rooflab::random_floats(static_cast<std::size_t>(m * k), 12));
  const auto hb = to_half(rooflab::random_floats(static_cast<std::size_t>(k * n), 13));
  DeviceBuffer<__half> da{std::span<const __half>(ha)}, db{std::span<const __half>(hb)};
  DeviceBuffer<float> dc(static_cast<std::size_t>(m * n));
  for_each_configuration([&](const std::string& where) {
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
        ASSERT_NEAR(c[static_cast<std::size_t>(i * n + j)], 2 * want, 1e-3) << i << "," << j << ", " << where;
      }
    }
  });
}

TEST(EmuCorrect, WmmaHalfAccumulatorColumnMajorB) {
  const int m = 32, n = 48, k = 32;
  const auto ha = to_half(rooflab::random_floats(static_cast<std::size_t>(m * k), 14));
  const auto hb = to_half(rooflab::random_floats(static_cast<std::size_t>(k * n), 15));  // column-major k x n
  DeviceBuffer<__half> da{std::span<const __half>(ha)}, db{std::span<const __half>(hb)}, dc(static_cast<std::size_t>(m * n));
  emutest::wmma_half_acc(da.data(), db.data(), dc.data(), m, n, k);
  const auto c = dc.download();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < k; ++p) {
        want += static_cast<double>(__half2float(ha[static_cast<std::size_t>(i * k + p)])) *
                __half2float(hb[static_cast<std::size_t>(j * k + p)]);
      }
      ASSERT_NEAR(__half2float(c[static_cast<std::size_t>(i * n + j)]), want, 2e-2 * (1 + std::abs(want))) << i << "," << j;
    }
  }
}

TEST(EmuCorrect, WmmaBf16TwoWarpsPerBlockColumnMajorC) {
  const int m = 32, n = 64, k = 48;
  const auto fa = rooflab::random_floats(static_cast<std::size_t>(m * k), 16);
  const auto fb = rooflab::random_floats(static_cast<std::size_t>(k * n), 17);
  std::vector<__nv_bfloat16> ba(fa.size()), bb(fb.size());
  for (std::size_t i = 0; i < fa.size(); ++i) ba[i] = __float2bfloat16(fa[i]);
  for (std::size_t i = 0; i < fb.size(); ++i) bb[i] = __float2bfloat16(fb[i]);
  DeviceBuffer<__nv_bfloat16> da{std::span<const __nv_bfloat16>(ba)}, db{std::span<const __nv_bfloat16>(bb)};
  DeviceBuffer<float> dc(static_cast<std::size_t>(m * n));
  for_each_configuration([&](const std::string& where) {
    dc.poison();
    emutest::wmma_bf16(da.data(), db.data(), dc.data(), m, n, k);
    const auto c = dc.download();
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int p = 0; p < k; ++p) {
          want += static_cast<double>(__bfloat162float(ba[static_cast<std::size_t>(i * k + p)])) *
                  __bfloat162float(bb[static_cast<std::size_t>(p * n + j)]);
        }
        ASSERT_NEAR(c[static_cast<std::size_t>(j * m + i)], want, 1e-3) << i << "," << j << ", " << where;
      }
    }
  });
}

// ---- more planted bugs ----

TEST(EmuBugs, LanesAtDifferentCollectives) {
  DeviceBuffer<int> out(32);
  const std::string e = kernel_error([&] { emutest::mismatched_collectives(out.data()); });
  EXPECT_NE(e.find("mismatched_collectives_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("different warp collectives"), std::string::npos) << e;
  EXPECT_NE(e.find("__ballot_sync"), std::string::npos) << e;
  EXPECT_NE(e.find("__shfl_sync"), std::string::npos) << e;
  EXPECT_NE(e.find("more_kernels.cu:"), std::string::npos) << e;
}

TEST(EmuBugsDeathTest, WriteBeforeTheStartHitsTheFrontGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(1024);
        emutest::write_before_start(out.data(), 1024);
      },
      "out-of-bounds access in kernel emutest::write_before_start_kernel.*block \\(0,0,0\\), thread \\(0,0,0\\).*4 "
      "bytes before the start of a 4096-byte cudaMalloc allocation \\(element -1 of the kernel's array of 1024 float "
      "elements of 4 bytes\\) made at ");
}

// 5 floats are 20 bytes: the allocation is padded to 32 before its guard page, so out[5] lands in the
// padding. The canary there is checked after the launch.
TEST(EmuBugs, WriteIntoTheAlignmentPaddingIsFoundAfterTheLaunch) {
  DeviceBuffer<float> out(5);
  const std::string e = kernel_error([&] { emutest::off_by_one(out.data(), 5); });
  EXPECT_NE(e.find("off_by_one_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("wrote up to 4 bytes past the end of a 20-byte cudaMalloc allocation (byte offsets 20 to 23)"), std::string::npos) << e;
  emutest::copy(out.data(), out.data(), 5);  // the padding was restored: the next launch is clean
}

// 1000 floats end against the guard page and start 96 bytes into their first page: out[-1] lands in that
// slack, which is checked after the launch like the padding.
TEST(EmuBugs, WriteJustBeforeTheStartIsFoundAfterTheLaunch) {
  DeviceBuffer<float> out(1000);
  const std::string e = kernel_error([&] { emutest::write_before_start(out.data(), 1000); });
  EXPECT_NE(e.find("write_before_start_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("wrote up to 4 bytes before the start of a 4000-byte cudaMalloc allocation (byte offsets -4 to -1)"), std::string::npos) << e;
}

TEST(EmuRuntime, PinnedHostMemoryCopiesBothWays) {
  float* pinned = nullptr;
  ROOFLAB_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned), 16));
  DeviceBuffer<float> d(4);
  for (int i = 0; i < 4; ++i) pinned[i] = static_cast<float>(i);
  EXPECT_EQ(cudaMemcpy(d.data(), pinned, 16, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(pinned, d.data(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(pinned, d.data(), 16, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

TEST(EmuRuntime, DeviceQueriesAreCoherent) {
  int count = 0, sms = 0, optin = 0;
  ROOFLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
  EXPECT_EQ(count, 1);
  ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  cudaDeviceProp prop{};
  ROOFLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_EQ(prop.multiProcessorCount, sms);
  EXPECT_EQ(prop.major, 8);
  EXPECT_EQ(prop.warpSize, warpSize);
  EXPECT_EQ(prop.sharedMemPerBlockOptin, static_cast<std::size_t>(optin));
  std::size_t free_before = 0, free_after = 0, total = 0;
  ROOFLAB_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  {
    DeviceBuffer<float> d(1 << 20);
    ROOFLAB_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  }
  EXPECT_EQ(free_before - free_after, std::size_t{4} << 20);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
}

// The peak of live device memory counts an allocation freed before anyone looks (Lab 05's memory test: a
// kernel that allocates an L x L scratch and frees it must not pass as O(L)).
TEST(EmuRuntime, DeviceMemoryWatchSeesAnAllocationFreedBeforeTheEnd) {
  DeviceBuffer<float> held(1 << 10);
  rooflab::DeviceMemoryWatch watch;
  { DeviceBuffer<float> scratch(1 << 20); }
  { DeviceBuffer<float> smaller(1 << 18); }
  EXPECT_EQ(watch.peak_extra_bytes(), std::size_t{4} << 20);
  rooflab::DeviceMemoryWatch after;
  EXPECT_EQ(after.peak_extra_bytes(), 0u) << "a new watch starts from what is live now";
}

// ---- kernels that only the CPU backend can compile (device code cannot throw) ----

namespace {
std::atomic<int> g_destroyed{0};
struct CountsDestruction {
  ~CountsDestruction() { ++g_destroyed; }
};

// Thread 5 throws while the other threads wait at the barrier: the launch aborts, and the waiting
// threads' stacks are unwound (their locals destroyed).
__global__ void throwing_kernel(int* out) {
  CountsDestruction local;
  if (threadIdx.x == 5) throw std::runtime_error("thread 5 gives up");
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void deep_stack_kernel(int* out) {
  volatile char big[512 * 1024];
  for (long i = static_cast<long>(sizeof big) - 1; i >= 0; i -= 1024) big[i] = 1;
  out[threadIdx.x] = big[0];
}

void dynamic_smem_kernel_body(float* out) {
  auto* s = static_cast<float*>(rooflab::emu::dynamic_shared_memory());
  s[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
__global__ void big_dynamic_smem_kernel(float* out) { dynamic_smem_kernel_body(out); }
}  // namespace

TEST(EmuBugs, AnExceptionInAThreadAbortsTheLaunchAndUnwindsTheOthers) {
  DeviceBuffer<int> out(64);
  g_destroyed = 0;
  const std::string e =
      kernel_error([&] { rooflab::emu::launch(throwing_kernel, dim3(1), dim3(64), 0, nullptr, out.data()); });
  EXPECT_NE(e.find("throwing_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("thread (5,0,0)"), std::string::npos) << e;
  EXPECT_NE(e.find("thread 5 gives up"), std::string::npos) << e;
  // Forward order: threads 0-4 wait at the barrier when thread 5 throws; threads 6-63 never start. The five
  // parked threads were unwound (their locals destroyed), and so was the thrower.
  EXPECT_EQ(g_destroyed.load(), 6);
}

TEST(EmuBugsDeathTest, FiberStackOverflowIsNamed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(32);
        rooflab::emu::launch(deep_stack_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
      },
      "deep_stack_kernel.*fiber stack overflow");
}

TEST(EmuRuntime, DynamicSharedMemoryLimitAndOptIn) {
  DeviceBuffer<float> out(256);
  const std::size_t bytes = 100 * 1024;  // over the default 48 KiB
  const std::string e = kernel_error(
      [&] { rooflab::emu::launch(big_dynamic_smem_kernel, dim3(1), dim3(256), bytes, nullptr, out.data()); });
  EXPECT_NE(e.find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos) << e;
  ROOFLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&big_dynamic_smem_kernel),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  rooflab::emu::launch(big_dynamic_smem_kernel, dim3(1), dim3(256), bytes, nullptr, out.data());
  const auto got = out.download();
  EXPECT_EQ(got[0], 255.0f);
  EXPECT_EQ(cudaFuncSetAttribute(reinterpret_cast<const void*>(&big_dynamic_smem_kernel),
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024),
            cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

// ---- the streams' order (src/ordering.cpp): work runs when issued; what a GPU would order is kept ----
namespace {

std::vector<float> copy_back(const float* device, int n) {
  std::vector<float> host(static_cast<std::size_t>(n));
  EXPECT_EQ(cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

struct Streams {
  cudaStream_t blocking = nullptr, non_blocking = nullptr, timer = nullptr;
  Streams() {
    EXPECT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamCreate(&timer), cudaSuccess);
  }
  ~Streams() {
    cudaDeviceSynchronize();
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(non_blocking);
    cudaStreamDestroy(timer);
  }
};

}  // namespace

// A synchronous copy on the legacy default stream is not ordered after a kernel on a cudaStreamNonBlocking
// stream: it gives the poison, as a GPU could give the bytes from before the kernel; synchronized, the values.
TEST(EmuStreams, ACopyNotOrderedAfterANonBlockingKernelGetsPoison) {
  Streams s;
  DeviceBuffer<float> out(300);
  out.poison();
  emutest::fill_on(out.data(), 2.0f, 300, s.non_blocking);
  std::vector<float> early = copy_back(out.data(), 300);
  unsigned bits = 0;
  std::memcpy(&bits, &early[7], sizeof bits);
  EXPECT_EQ(bits, 0xCDCDCDCDu) << "an unordered copy must not see the kernel's values";
  ASSERT_EQ(cudaStreamSynchronize(s.non_blocking), cudaSuccess);
  EXPECT_EQ(copy_back(out.data(), 300)[7], 2.0f);
}

// An asynchronous copy into pinned host memory lands when the host knows it finished (its stream synchronized,
// an event after it, the device, a synchronous copy the legacy stream orders after it); before that the memory
// reads 0xCD, as a GPU could still be copying; cudaMemcpy2DAsync and cudaMemcpyFromSymbolAsync alike. Into
// pageable memory the call returns after the copy. A pinned buffer freed with a copy still pending is not written
// after it is freed.
TEST(EmuStreams, AnAsyncCopyIntoPinnedMemoryLandsWhenTheHostKnowsItFinished) {
  Streams s;
  DeviceBuffer<float> out(300);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 300 * sizeof(float)), cudaSuccess);
  const auto bits = [](float f) {
    unsigned b = 0;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  emutest::fill_on(out.data(), 2.0f, 300, s.non_blocking);
  ASSERT_EQ(cudaMemcpyAsync(pinned, out.data(), 300 * sizeof(float), cudaMemcpyDeviceToHost, s.non_blocking), cudaSuccess);
  EXPECT_EQ(bits(pinned[7]), 0xCDCDCDCDu) << "read before the host knows the copy finished";
  ASSERT_EQ(cudaStreamSynchronize(s.blocking), cudaSuccess);
  EXPECT_EQ(bits(pinned[7]), 0xCDCDCDCDu) << "another stream's synchronization says nothing of this copy";
  ASSERT_EQ(cudaStreamSynchronize(s.non_blocking), cudaSuccess);
  EXPECT_EQ(pinned[7], 2.0f);

  cudaEvent_t copied = nullptr;
  ASSERT_EQ(cudaEventCreate(&copied), cudaSuccess);
  emutest::fill_on(out.data(), 3.0f, 300, s.blocking);
  ASSERT_EQ(cudaMemcpyAsync(pinned, out.data(), 300 * sizeof(float), cudaMemcpyDeviceToHost, s.blocking), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(copied, s.blocking), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(copied), cudaSuccess);
  EXPECT_EQ(pinned[299], 3.0f);
  cudaEventDestroy(copied);

  // The legacy default stream waits for a blocking stream: a synchronous copy after it lands the async one.
  emutest::fill_on(out.data(), 4.0f, 300, s.blocking);
  ASSERT_EQ(cudaMemcpyAsync(pinned, out.data(), 300 * sizeof(float), cudaMemcpyDeviceToHost, s.blocking), cudaSuccess);
  std::vector<float> pageable = copy_back(out.data(), 300);
  EXPECT_EQ(pinned[0], 4.0f);

  ASSERT_EQ(cudaMemcpyAsync(pageable.data(), out.data(), 300 * sizeof(float), cudaMemcpyDeviceToHost, s.non_blocking),
            cudaSuccess);
  EXPECT_EQ(pageable[5], 4.0f) << "into pageable memory the call returns after the copy";

  // The other asynchronous copies to the host land the same way: cudaMemcpy2DAsync (each row) and
  // cudaMemcpyFromSymbolAsync.
  std::fill(pinned, pinned + 300, 0.0f);
  ASSERT_EQ(cudaMemcpy2DAsync(pinned, 8 * sizeof(float), out.data(), 4 * sizeof(float), 4 * sizeof(float), 3,
                              cudaMemcpyDeviceToHost, s.non_blocking),
            cudaSuccess);
  EXPECT_EQ(bits(pinned[8]), 0xCDCDCDCDu) << "a 2D copy's row, read before the copy finished";
  EXPECT_EQ(pinned[4], 0.0f) << "between the rows: not the copy's";
  ASSERT_EQ(cudaStreamSynchronize(s.non_blocking), cudaSuccess);
  EXPECT_EQ(pinned[16], 4.0f);
  EXPECT_EQ(pinned[4], 0.0f);
  const float scale[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  DeviceBuffer<float> scaled(4);
  emutest::constant_scale(scale, out.data(), scaled.data(), 4);
  emutest::constant_scale_back_async(pinned, s.non_blocking);
  EXPECT_EQ(bits(pinned[3]), 0xCDCDCDCDu) << "a symbol copied back, read before the copy finished";
  ASSERT_EQ(cudaStreamQuery(s.non_blocking), cudaSuccess);
  EXPECT_EQ(pinned[3], 4.0f);
  float pageable_scale[4] = {};
  emutest::constant_scale_back_async(pageable_scale, s.non_blocking);
  EXPECT_EQ(pageable_scale[2], 3.0f) << "into pageable memory the call returns after the copy";

  ASSERT_EQ(cudaMemcpyAsync(pinned, out.data(), 300 * sizeof(float), cudaMemcpyDeviceToHost, s.non_blocking), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // nothing lands in the freed buffer
}

// The legacy default stream waits for blocking streams; an event the legacy stream waits for orders a
// non-blocking one: both copies see the values.
TEST(EmuStreams, ImplicitAndEventOrderReachTheCopy) {
  Streams s;
  DeviceBuffer<float> out(64);
  emutest::fill_on(out.data(), 3.0f, 64, s.blocking);
  EXPECT_EQ(copy_back(out.data(), 64)[63], 3.0f);
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  emutest::fill_on(out.data(), 4.0f, 64, s.non_blocking);
  ASSERT_EQ(cudaEventRecord(done, s.non_blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(nullptr, done, 0), cudaSuccess);
  EXPECT_EQ(copy_back(out.data(), 64)[0], 4.0f);
  cudaEventDestroy(done);
}

// Two kernels on streams that nothing orders, one writing what the other reads: a race between streams (on a
// GPU they may run at once), reported with both kernels and their streams. Ordered by an event, or both only
// reading, they are not.
TEST(EmuStreams, UnorderedKernelsOnOneAllocationAreReported) {
  Streams s;
  DeviceBuffer<float> a(256), b(256), c(256);
  const std::string before = rooflab::emu::last_unordered_pair();
  cudaEvent_t filled = nullptr;
  ASSERT_EQ(cudaEventCreate(&filled), cudaSuccess);
  emutest::fill_on(a.data(), 1.0f, 256, s.blocking);
  ASSERT_EQ(cudaEventRecord(filled, s.blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s.non_blocking, filled, 0), cudaSuccess);
  emutest::copy_on(a.data(), b.data(), 256, s.non_blocking);  // ordered after the fill by the event
  emutest::copy_on(a.data(), c.data(), 256, s.blocking);      // reads a beside the other copy: both only read it
  EXPECT_EQ(rooflab::emu::last_unordered_pair(), before) << "ordered, or both reading: no race";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  emutest::fill_on(a.data(), 2.0f, 256, s.non_blocking);
  emutest::copy_on(a.data(), b.data(), 256, s.blocking);  // nothing orders it after the fill
  const std::string race = rooflab::emu::last_unordered_pair();
  EXPECT_NE(race.find("kernel emutest::copy_on_kernel(float const*, float*, int) on stream #"), std::string::npos) << race;
  EXPECT_NE(race.find("reads memory that kernel emutest::fill_kernel(float*, float, int)"), std::string::npos) << race;
  EXPECT_NE(race.find("(cudaStreamNonBlocking) may still be writing"), std::string::npos) << race;
  cudaEventDestroy(filled);
}

// Streams that work on different parts of one allocation are no race: a copy or memset names its bytes, and a
// launch that work on another stream could overlap runs watched, holding the pages it touched. The chunked
// pattern of CUDA's stream samples (each chunk copied in, computed and copied out on a stream of its own) is not
// reported, nor a synchronous copy of a part no stream touches; two streams on one page are, naming the bytes.
TEST(EmuStreams, StreamsOnDifferentPagesOfOneAllocationAreNoRace) {
  const int page = static_cast<int>(sysconf(_SC_PAGESIZE) / sizeof(float));
  constexpr int kChunks = 4;
  const int chunk = 3 * page;  // floats
  DeviceBuffer<float> data((kChunks + 1) * chunk);  // a whole number of pages: it starts on a page; one chunk spare
  float* host = nullptr;
  ASSERT_EQ(cudaMallocHost(&host, kChunks * chunk * sizeof(float)), cudaSuccess);
  for (int i = 0; i < kChunks * chunk; ++i) host[i] = static_cast<float>(i % 7);
  cudaStream_t streams[kChunks] = {};
  for (cudaStream_t& stream : streams) ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const std::string before = rooflab::emu::last_unordered_pair();
  for (int i = 0; i < kChunks; ++i) {
    float* d = data.data() + i * chunk;
    const std::size_t bytes = chunk * sizeof(float);
    ASSERT_EQ(cudaMemcpyAsync(d, host + i * chunk, bytes, cudaMemcpyHostToDevice, streams[i]), cudaSuccess);
    emutest::fill_on(d, static_cast<float>(10 + i), chunk, streams[i]);
    ASSERT_EQ(cudaMemcpyAsync(host + i * chunk, d, bytes, cudaMemcpyDeviceToHost, streams[i]), cudaSuccess);
  }
  EXPECT_EQ(rooflab::emu::last_unordered_pair(), before) << "each stream on its own pages";
  ASSERT_EQ(cudaMemset(data.data() + kChunks * chunk, 0, chunk * sizeof(float)), cudaSuccess);
  const std::vector<float> spare = copy_back(data.data() + kChunks * chunk, chunk);
  EXPECT_EQ(spare[0], 0.0f) << "a part no stream touches: no poison";
  EXPECT_EQ(rooflab::emu::last_unordered_pair(), before);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int i = 0; i < kChunks; ++i) EXPECT_EQ(host[i * chunk + chunk - 1], static_cast<float>(10 + i)) << i;

  // Two streams on one page, even on different elements: reported (pages are the watch's unit), with the bytes.
  emutest::fill_on(data.data(), 1.0f, 16, streams[0]);
  emutest::fill_on(data.data() + 16, 2.0f, 16, streams[1]);
  const std::string race = rooflab::emu::last_unordered_pair();
  EXPECT_NE(race.find("on stream #"), std::string::npos) << race;
  EXPECT_NE(race.find("may still be writing on a GPU (bytes 0 to " + std::to_string(page * sizeof(float) - 1) + " of a " +
                      std::to_string((kChunks + 1) * chunk * sizeof(float)) + "-byte allocation)"),
            std::string::npos)
      << race;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  // Two streams reading one page through pointers to non-const: what the launches did counts (the page fault
  // says read or write), not the pointer's type: no race. A write on one of them is one.
  const std::string quiet = rooflab::emu::last_unordered_pair();
  emutest::copy_mutable_on(data.data(), data.data() + chunk, 16, streams[0]);
  emutest::copy_mutable_on(data.data(), data.data() + 2 * chunk, 16, streams[1]);
  EXPECT_EQ(rooflab::emu::last_unordered_pair(), quiet) << "both only read the first page";
  emutest::fill_on(data.data() + 8, 5.0f, 1, streams[2]);
  const std::string write_read = rooflab::emu::last_unordered_pair();
  EXPECT_NE(write_read.find("kernel emutest::fill_kernel(float*, float, int) on stream #"), std::string::npos) << write_read;
  EXPECT_NE(write_read.find("may write memory that kernel emutest::copy_mutable_kernel(float*, float*, int)"),
            std::string::npos)
      << write_read;
  EXPECT_NE(write_read.find("may still be reading on a GPU (bytes 0 to "), std::string::npos) << write_read;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  emutest::fill_on(data.data(), 1.0f, 16, streams[0]);

  // A synchronous copy of what one of them wrote is not ordered after it: poison, and its report names the bytes.
  float first = 0.0f;
  std::uint32_t poison = 0;
  first = copy_back(data.data(), 1)[0];
  std::memcpy(&poison, &first, sizeof poison);
  EXPECT_EQ(poison, 0xCDCDCDCDu);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (cudaStream_t stream : streams) cudaStreamDestroy(stream);
  cudaFreeHost(host);
}

// An interval timed on one stream covers work on that stream, on the legacy default stream (which a blocking
// stream waits for) and on another stream ordered back by an event; not work left on another stream.
TEST(EmuStreams, WorkNotCoveredByTheStopEventIsNamed) {
  Streams s;
  DeviceBuffer<float> out(256);
  cudaEvent_t start = nullptr, stop = nullptr, back = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&back), cudaSuccess);
  const auto timed = [&](const std::function<void()>& work) {
    EXPECT_EQ(cudaEventRecord(start, s.timer), cudaSuccess);
    work();
    EXPECT_EQ(cudaEventRecord(stop, s.timer), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    return rooflab::emu::work_not_covered(start, stop);
  };
  EXPECT_EQ(timed([&] { emutest::fill_on(out.data(), 1.0f, 256, s.timer); }), "");
  EXPECT_EQ(timed([&] { emutest::fill_on(out.data(), 1.0f, 256, nullptr); }), "");
  EXPECT_EQ(timed([&] {
              emutest::fill_on(out.data(), 1.0f, 256, s.blocking);
              cudaEventRecord(back, s.blocking);
              cudaStreamWaitEvent(s.timer, back, 0);
            }),
            "");
  const std::string left = timed([&] { emutest::fill_on(out.data(), 1.0f, 256, s.blocking); });
  EXPECT_NE(left.find("kernel emutest::fill_kernel(float*, float, int)"), std::string::npos) << left;
  EXPECT_NE(left.find("(blocking) between the two events"), std::string::npos) << left;
  EXPECT_NE(timed([&] { emutest::fill_on(out.data(), 1.0f, 256, s.non_blocking); }).find("cudaStreamNonBlocking"),
            std::string::npos);
  // The host waiting for the other stream before the stop event is recorded covers it too.
  EXPECT_EQ(timed([&] {
              emutest::fill_on(out.data(), 1.0f, 256, s.blocking);
              cudaStreamSynchronize(s.blocking);
            }),
            "");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaEventDestroy(back);
}
