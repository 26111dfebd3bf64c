// Conformance of the CPU backend's source rewriter: standard CUDA launches and shared-memory declarations
// (conformance_kernels.cu) give the host reference's results, and the shared-memory bugs they can hide are
// caught. CTest runs this binary once per schedule (ROOFLAB_EMU_SCHEDULE), so no test here sets one.
#include "conformance.hpp"
#include "kernel_error.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

using rooflab::DeviceBuffer;

using emutest::kernel_error;

std::uint32_t bits_of(float f) {
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

TEST(RewriteLaunch, TwoThreeAndFourConfigurationArguments) {
  const unsigned blocks = 3, threads = 40;
  DeviceBuffer<int> out(blocks * threads);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (int form = 2; form <= 4; ++form) {
    out.poison();
    const int base = 100 * form;
    if (form == 2) conform::iota_two(out.data(), blocks, threads, base);
    if (form == 3) conform::iota_three(out.data(), blocks, threads, base);
    if (form == 4) conform::iota_four(out.data(), blocks, threads, base, stream);
    const auto got = out.download();
    for (unsigned i = 0; i < blocks * threads; ++i) {
      ASSERT_EQ(got[i], base + static_cast<int>(i)) << "element " << i << ", <<<>>> with " << form << " arguments";
    }
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(RewriteLaunch, EachThreadGetsItsOwnCopyOfTheArguments) {
  DeviceBuffer<int> out(32);
  conform::own_copy(out.data(), 1000);
  const auto got = out.download();
  for (int t = 0; t < 32; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], 1000 + t) << "thread " << t;
}

TEST(RewriteLaunch, QualifiedKernelNames) {
  const auto x = rooflab::random_floats(100, 1);
  DeviceBuffer<float> d{std::span<const float>(x)};
  conform::scale_qualified(d.data(), 3.0f, 100);
  const auto got = d.download();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(got[i], x[i] * 9.0f) << i;
}

TEST(RewriteLaunch, TemplateIdWithNestedTemplateArguments) {
  DeviceBuffer<float> out(32);
  conform::pair_fill(out.data());
  const auto got = out.download();
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(got[t], static_cast<float>(sizeof(std::pair<float, int>) * 3 + t));
}

TEST(RewriteLaunch, TemplateArgumentsDeducedFromTheArguments) {
  const int n = 300;
  const auto x = rooflab::random_floats(n, 2), y = rooflab::random_floats(n, 3);
  DeviceBuffer<float> dx{std::span<const float>(x)}, dy{std::span<const float>(y)};
  conform::axpy(2.5f, dx.data(), dy.data(), n);
  const auto got = dy.download();
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    EXPECT_FLOAT_EQ(got[k], 2.5f * x[k] + y[k]) << i;
  }
  std::vector<double> xd(x.begin(), x.end()), yd(y.begin(), y.end());
  DeviceBuffer<double> ddx{std::span<const double>(xd)}, ddy{std::span<const double>(yd)};
  conform::axpy(-0.5, ddx.data(), ddy.data(), n);
  const auto gotd = ddy.download();
  for (std::size_t i = 0; i < xd.size(); ++i) EXPECT_DOUBLE_EQ(gotd[i], -0.5 * xd[i] + yd[i]) << i;
}

// A deduced kernel has no single address: reports name it by the arguments that deduce it.
TEST(RewriteLaunch, DeducedKernelIsNamedInReports) {
  std::vector<float> host(8, 1.0f);
  DeviceBuffer<float> y(8);
  const std::string e = kernel_error([&] { conform::axpy(1.0f, host.data(), y.data(), 8); });
  EXPECT_NE(e.find("host pointer passed to kernel axpy_kernel<...>(float, float const*, float*, int), argument 2"),
            std::string::npos)
      << e;
}

TEST(RewriteShared, StaticSharedArrayPerTemplateInstantiation) {
  const int blocks = 3;
  const auto x = rooflab::random_floats(blocks * 64, 4);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(blocks * 64);
  conform::reverse_blocks(in.data(), out.data(), blocks);
  std::vector<double> xd(x.begin(), x.end());
  DeviceBuffer<double> ind{std::span<const double>(xd)}, outd(blocks * 64);
  conform::reverse_blocks(ind.data(), outd.data(), blocks);  // T[64] is twice as big: its own storage
  const auto got = out.download();
  const auto gotd = outd.download();
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < 64; ++t) {
      const auto i = static_cast<std::size_t>(b * 64 + t), j = static_cast<std::size_t>(b * 64 + 63 - t);
      ASSERT_EQ(got[i], x[j]) << "float, block " << b << ", thread " << t;
      ASSERT_EQ(gotd[i], xd[j]) << "double, block " << b << ", thread " << t;
    }
  }
}

TEST(RewriteShared, ExternSharedOfTwoTypesAliasOneBuffer) {
  const int blocks = 2;
  const unsigned threads = 96;
  const auto x = rooflab::random_floats(blocks * threads, 5);
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<unsigned> bits(blocks * threads);
  conform::alias_dynamic(in.data(), bits.data(), blocks, threads);
  const auto got = bits.download();
  for (unsigned b = 0; b < static_cast<unsigned>(blocks); ++b) {
    for (unsigned t = 0; t < threads; ++t) {
      ASSERT_EQ(got[b * threads + t], bits_of(x[b * threads + threads - 1 - t])) << "block " << b << ", thread " << t;
    }
  }
}

// 32 KiB static + 16 KiB dynamic is exactly the default 48 KiB; 20 KiB dynamic is too much until the kernel
// opts in with cudaFuncSetAttribute.
TEST(RewriteShared, StaticPlusDynamicLimit) {
  DeviceBuffer<float> out(64);
  conform::big_static_plus_dynamic(out.data(), 16 * 1024);
  const std::string e = kernel_error([&] { conform::big_static_plus_dynamic(out.data(), 20 * 1024); });
  EXPECT_NE(e.find("too much shared memory for one block"), std::string::npos) << e;
  EXPECT_NE(e.find("32768 bytes static (big: 32768 bytes at conformance_kernels.cu:"), std::string::npos) << e;
  EXPECT_NE(e.find("20480 bytes dynamic"), std::string::npos) << e;
  EXPECT_NE(e.find("big_static_kernel"), std::string::npos) << e;
  conform::opt_in_big_static(20 * 1024);
  out.poison();
  conform::big_static_plus_dynamic(out.data(), 20 * 1024);
  const auto got = out.download();
  for (float v : got) ASSERT_EQ(v, 3.0f);
}

// Every block stores the same data, so storage that kept the previous block's values would give the right
// answer in every block but the first. Poisoned at every block start, the read of an element not yet
// stored shows in every block, under every schedule (some thread of each block runs first).
TEST(RewriteSharedBugs, MissingSyncthreadsWithIdenticalDataInEveryBlock) {
  const int blocks = 4;
  const auto x = rooflab::random_floats(64, 6);
  DeviceBuffer<float> in{std::span<const float>(x)}, out(blocks * 64);
  conform::neighbour_missing_sync(in.data(), out.data(), blocks);
  const auto got = out.download();
  for (int b = 0; b < blocks; ++b) {
    int poisoned = 0;
    for (int t = 0; t < 64; ++t) poisoned += bits_of(got[static_cast<std::size_t>(b * 64 + t)]) == 0xCDCDCDCDu;
    EXPECT_GE(poisoned, 1) << "block " << b << " read no poison: stale shared memory hid the missing barrier";
  }
}

TEST(RewriteSharedBugs, WriteIntoTheAlignmentPaddingOfASharedArray) {
  DeviceBuffer<float> out(33);
  const std::string e = kernel_error([&] { conform::static_padding_write(out.data()); });
  EXPECT_NE(e.find("static_padding_write_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("wrote past the end of the 132-byte __shared__ variable s ("), std::string::npos) << e;
  EXPECT_NE(e.find("conformance_kernels.cu:103), at byte offset 132"), std::string::npos) << e;
}

TEST(RewriteSharedBugsDeathTest, StaticSharedOverrunHitsTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(64);
        conform::static_overrun(out.data());
      },
      "out-of-bounds access in kernel conform::static_overrun_kernel\\(float\\*\\), block \\(0,0,0\\), thread "
      "\\(63,0,0\\): address 0 bytes past the end of a 256-byte __shared__ variable s \\([^)]*conformance_kernels.cu:96\\)");
}

// The file's own conditionals on nvcc's macros take the branches nvcc takes (its host pass, and its device pass
// in a kernel's body): the CPU backend runs the program the GPU runs, not one hidden behind
// #if defined(__CUDACC__) (conformance.hpp lists the bits).
TEST(RewriteDirectives, TheBranchesNvccTakes) { EXPECT_EQ(conform::nvcc_host_pass_branches(), 251 + 512 + 1024); }
