// Self-tests of what the CPU backend must not let through, so that a grader can trust a pass: a copy one
// element past the end (distinct canaries per allocation), a float4 overrun, host code touching device
// memory (it faults, as on a GPU), a misaligned float4, element counts in the access's element size, and
// the activity counters that tell a test the kernel under test did the work.
#include "kernels.hpp"
#include "kernel_error.hpp"
#include "trust_kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using rooflab::DeviceBuffer;
constexpr auto npos = std::string::npos;

using emutest::kernel_error;

// Runs this test binary again with one test selected and an extra environment variable; returns its exit
// status and output.
int run_self(const std::string& filter, const std::string& env, std::string* output) {
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) return -1;
  const std::string command = env + " '" + self + "' --gtest_filter=" + filter + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) *output += buf;
  return pclose(pipe);
}

}  // namespace

// ---- canaries: a value read past one allocation's end and written past another's ----

// in[n] lies in in's padding and out[n] in out's (n % 4 != 0: no guard page is touched). With one canary
// for every allocation the copy moved canary onto identical canary and nothing showed.
TEST(EmuCanary, CopyToIEqualsNIsReported) {
  for (const int n : {1, 5, 6, 7, 30, 1001}) {
    const auto x = rooflab::random_floats(static_cast<std::size_t>(n), 40 + static_cast<std::uint64_t>(n));
    DeviceBuffer<float> in{std::span<const float>(x)};
    DeviceBuffer<float> out(static_cast<std::size_t>(n));
    const std::string e = kernel_error([&] { emutest::copy_inclusive(in.data(), out.data(), n); });
    const std::string bytes = std::to_string(4 * n);
    EXPECT_NE(e.find("kernel emutest::copy_inclusive_kernel(float const*, float*, int): "), npos) << "n = " << n;
    EXPECT_NE(e.find("wrote up to 4 bytes past the end of a " + bytes + "-byte cudaMalloc allocation (byte offsets " +
                     bytes + " to " + std::to_string(4 * n + 3) + ")"),
              npos)
        << "n = " << n << ": " << e;
    EXPECT_NE(e.find(" made at "), npos) << e;
    // The canary was restored: the same buffers run a correct kernel clean.
    EXPECT_EQ(kernel_error([&] { emutest::copy(in.data(), out.data(), n); }), "") << "n = " << n;
  }
}

// A float4 copy of ceil(n / 4) vectors: the last one reads and writes 4 - n % 4 floats past the ends.
TEST(EmuCanary, Float4OverrunOfOneToThreeFloatsIsReported) {
  for (const int n : {9, 10, 11, 1023}) {
    const auto x = rooflab::random_floats(static_cast<std::size_t>(n), 50 + static_cast<std::uint64_t>(n));
    DeviceBuffer<float> in{std::span<const float>(x)};
    DeviceBuffer<float> out(static_cast<std::size_t>(n));
    const std::string e = kernel_error([&] { emutest::copy_float4_rounded_up(in.data(), out.data(), n); });
    const int over = 4 - n % 4;
    EXPECT_NE(e.find("kernel emutest::copy_float4_rounded_up_kernel(float4 const*, float4*, int): "), npos) << e;
    EXPECT_NE(e.find("wrote up to " + std::to_string(4 * over) + " bytes past the end of a " + std::to_string(4 * n) +
                     "-byte cudaMalloc allocation"),
              npos)
        << "n = " << n << ": " << e;
  }
}

// What a kernel reads from the padding is a finite, unremarkable-looking number in every view (float,
// double, __half), never NaN, Inf, 0 or a small integer, and two allocations' padding differ.
TEST(EmuCanary, PaddingReadsAsFiniteNumbersThatDifferPerAllocation) {
  DeviceBuffer<unsigned char> a(17), b(17), peek(15);
  std::vector<unsigned char> seen[2];
  for (int k = 0; k < 2; ++k) {
    emutest::peek_bytes(k == 0 ? a.data() : b.data(), 17, 15, peek.data());
    seen[k] = peek.download();
  }
  // Bytes 17..31 of each allocation: view them at their own alignment (address % 16 = 1..15).
  for (int k = 0; k < 2; ++k) {
    const unsigned char* p = seen[k].data() - 17;  // p[17 .. 31] are the padding
    for (int at = 18; at < 32; at += 2) {
      __half h;
      std::memcpy(&h, p + at, 2);
      const float v = __half2float(h);
      EXPECT_TRUE(std::isfinite(v) && std::abs(v) >= 2.0f && v != std::round(v)) << "half at " << at << ": " << v;
    }
    for (int at = 20; at < 32; at += 4) {
      float v;
      std::memcpy(&v, p + at, 4);
      EXPECT_TRUE(std::isfinite(v) && std::abs(v) >= 2.0f && v != std::round(v)) << "float at " << at << ": " << v;
    }
    double d;
    std::memcpy(&d, p + 24, 8);
    EXPECT_TRUE(std::isfinite(d) && std::abs(d) >= 2.0) << "double: " << d;
  }
  for (std::size_t i = 0; i < 15; ++i) EXPECT_NE(seen[0][i], seen[1][i]) << "padding byte " << 17 + i;
}

// ---- host code must not touch device memory ----

TEST(EmuHostAccessDeathTest, HostReadOfDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> d(16);
        d.poison();
        const volatile float* p = d.data();
        std::printf("%f\n", static_cast<double>(p[3]));
      },
      "host code read byte offset 12 of a 64-byte cudaMalloc allocation.*made at .*On a GPU this faults: device "
      "memory is not host memory. Copy it with cudaMemcpy");
}

TEST(EmuHostAccessDeathTest, HostWriteToDeviceMemoryFaultsEvenAfterAKernelRan) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<float> in(64);
        DeviceBuffer<float> out(64);
        in.poison();
        emutest::copy(in.data(), out.data(), 64);  // memory is open during the launch, closed after it
        volatile float* p = out.data();
        p[0] = 1.0f;
      },
      "host code wrote to byte offset 0 of a 256-byte cudaMalloc allocation");
}

// Copies, memsets and kernels still reach device memory; pinned host memory stays host memory.
TEST(EmuHostAccess, RuntimeCallsAndKernelsStillWork) {
  const auto x = rooflab::random_floats(100, 61);
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<float> out(100);
  out.poison();
  emutest::copy(in.data(), out.data(), 100);
  EXPECT_EQ(out.download(), x);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 100 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pinned, out.data(), 100 * sizeof(float), cudaMemcpyDefault), cudaSuccess);
  pinned[0] += 1.0f;  // host code may touch pinned host memory
  EXPECT_EQ(pinned[1], x[1]);
  ASSERT_EQ(cudaMemcpy(out.data(), in.data(), 100 * sizeof(float), cudaMemcpyDeviceToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), out.data(), 100 * sizeof(float), cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(out.download(), x);
}

// ROOFLAB_EMU_OPEN_DEVICE_MEMORY=1 leaves device memory open to host code (for a legitimate path that
// cannot go through the runtime): checked in a child process, since the setting is read once.
TEST(EmuHostAccess, TheSwitchLeavesDeviceMemoryOpen) {
  if (std::getenv("ROOFLAB_EMU_OPEN_DEVICE_MEMORY") != nullptr) {
    DeviceBuffer<float> d(4);
    d.data()[2] = 3.0f;
    EXPECT_EQ(d.download()[2], 3.0f);
    return;
  }
  std::string output;
  const int status = run_self("EmuHostAccess.TheSwitchLeavesDeviceMemoryOpen", "ROOFLAB_EMU_OPEN_DEVICE_MEMORY=1",
                              &output);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), npos) << output;
}

// ---- misaligned vector accesses ----

// reinterpret_cast<const float4*>(in + 1): reported where the kernel makes the pointer, whatever loads the
// host compiler emits for it.
TEST(EmuBugs, MisalignedFloat4IsAMisalignedAddress) {
  DeviceBuffer<float> in(64);
  DeviceBuffer<float> out(64);
  in.poison();
  const std::string report = kernel_error([&] { emutest::misaligned_float4(in.data(), out.data()); });
  const std::regex want(
      "kernel emutest::misaligned_float4_kernel\\(float const\\*, float\\*\\), block \\(0,0,0\\), thread "
      "\\(0,0,0\\): misaligned address 0x[0-9a-f]+ \\(4 bytes past a 16-byte boundary\\): "
      "reinterpret_cast<const float4\\*> at [^ ]*trust_kernels.cu:32; .*byte offset 4 of a 256-byte cudaMalloc "
      "allocation");
  EXPECT_TRUE(std::regex_search(report, want)) << report;
}

// The same through a C-style cast, which the rewriter does not see: the alignment check that every kernel file
// is compiled with reports it at the access, with its line. The launch fails with the report; where the
// compiler copied the float4 with an aligned SSE load, the CPU faults right after the check and the process
// ends, printing the same report. Either way: a failed run whose output is the report.
TEST(EmuBugsDeathTest, MisalignedFloat4CastIsAMisalignedAddress) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto failed = [](int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; };
  EXPECT_EXIT(
      {
        DeviceBuffer<float> in(64);
        DeviceBuffer<float> out(64);
        in.poison();
        std::fprintf(stderr, "%s\n", kernel_error([&] { emutest::misaligned_float4_cast(in.data(), out.data()); }).c_str());
        std::_Exit(1);
      },
      failed,
      "kernel emutest::misaligned_float4_cast_kernel\\(float const\\*, float\\*\\), block \\(0,0,0\\), thread "
      "\\(0,0,0\\): misaligned address 0x[0-9a-f]+ \\(4 bytes past a 16-byte boundary\\): (a load of|an access to) "
      "const float4 at [^ ]*trust_kernels.cu:39:[0-9]+; .*byte offset 4 of a 256-byte cudaMalloc allocation");
}

// ---- element counts in the access's element size ----

TEST(EmuBugsDeathTest, HalfOverrunCountsTwoByteElements) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeviceBuffer<__half> out(2048);
        emutest::half_off_by_one(out.data(), 2048);
      },
      "out-of-bounds access in kernel emutest::half_off_by_one_kernel.*0 bytes past the end of a 4096-byte "
      "cudaMalloc allocation \\(element 2048 of the kernel's array of 2048 __half elements of 2 bytes\\)");
}

// ---- activity: the kernel under test must run ----

TEST(EmuActivity, CountsLaunchesThreadsAndCopiesByDirection) {
  using rooflab::emu::activity;
  const rooflab::emu::Activity before = activity();
  const auto x = rooflab::random_floats(300, 62);
  DeviceBuffer<float> in{std::span<const float>(x)};  // 1 copy to the device, 1200 bytes
  DeviceBuffer<float> out(300);
  out.poison();                                        // 1 memset
  emutest::copy(in.data(), out.data(), 300);           // 3 blocks of 128 threads
  (void)kernel_error([&] { emutest::copy_with_block(in.data(), out.data(), 300, 2048); });  // not run
  std::vector<float> back = out.download();            // 1 copy to the host
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 16), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pinned, in.data(), 16, cudaMemcpyDefault), cudaSuccess);        // to the host
  ASSERT_EQ(cudaMemcpy(out.data(), in.data(), 8, cudaMemcpyDefault), cudaSuccess);     // device to device
  ASSERT_EQ(cudaMemcpyAsync(in.data(), pinned, 4, cudaMemcpyHostToDevice, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pinned, pinned + 2, 4, cudaMemcpyDefault), cudaSuccess);        // host to host: not counted
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  const rooflab::emu::Activity after = activity();
  EXPECT_EQ(after.launches - before.launches, 1u);
  EXPECT_EQ(after.threads - before.threads, 384u);
  EXPECT_EQ(after.memcpy_to_device - before.memcpy_to_device, 2u);
  EXPECT_EQ(after.bytes_to_device - before.bytes_to_device, 1204u);
  EXPECT_EQ(after.memcpy_to_host - before.memcpy_to_host, 2u);
  EXPECT_EQ(after.bytes_to_host - before.bytes_to_host, 1216u);
  EXPECT_EQ(after.memcpy_device_to_device - before.memcpy_device_to_device, 1u);
  EXPECT_EQ(after.bytes_device_to_device - before.bytes_device_to_device, 8u);
  EXPECT_EQ(after.memsets - before.memsets, 1u);
}

// KernelWatch's stricter questions (Lab 08's GEMVs): exactly one launch, and no device memory kept.
TEST(EmuActivity, KernelWatchSeesExtraLaunchesAndMemoryKept) {
  const auto x = rooflab::random_floats(300, 63);
  DeviceBuffer<float> in{std::span<const float>(x)};
  DeviceBuffer<float> out(300);
  {
    const rooflab::KernelWatch watch;
    emutest::copy(in.data(), out.data(), 300);
    EXPECT_TRUE(watch.launched_exactly("one copy", 1));
    EXPECT_TRUE(watch.kept_no_device_memory("one copy"));
  }
  const rooflab::KernelWatch watch;
  emutest::copy(in.data(), out.data(), 300);
  emutest::copy(out.data(), in.data(), 300);
  const auto twice = watch.launched_exactly("two copies", 1);
  EXPECT_FALSE(twice);
  EXPECT_NE(std::string(twice.message()).find("launched 2 kernels"), npos) << twice.message();
  DeviceBuffer<float> kept(1024);
  const auto holds = watch.kept_no_device_memory("a launcher that keeps a buffer");
  EXPECT_FALSE(holds);
  EXPECT_NE(std::string(holds.message()).find("4096 bytes"), npos) << holds.message();
}

TEST(EmuActivity, KernelsLaunchedListsEachKernelOnceInOrder) {
  DeviceBuffer<float> in(64), out(64);
  in.poison();
  emutest::copy(in.data(), out.data(), 64);
  emutest::copy_float4_rounded_up(in.data(), out.data(), 64);
  emutest::copy(in.data(), out.data(), 64);
  const std::vector<std::string> names = rooflab::emu::kernels_launched();
  const auto at = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  const auto copy = at("emutest::copy_kernel(float const*, float*, int)");
  const auto vec = at("emutest::copy_float4_rounded_up_kernel(float4 const*, float4*, int)");
  ASSERT_LT(copy, static_cast<long>(names.size()));
  ASSERT_LT(vec, static_cast<long>(names.size()));
  EXPECT_EQ(std::count(names.begin(), names.end(), names[static_cast<std::size_t>(copy)]), 1);
  // copy_kernel may have run in an earlier test: it comes first either way.
  EXPECT_LT(copy, vec);
}
