// "Code no test ran": the backend knows every kernel instance compiled into the process and every one
// launched, so a grader can name the instances of a dispatching launcher that no test reached
// (rooflab::emu::kernels_defined / kernels_launched_since / kernels_never_launched, src/kernels.cpp).
#include "coverage_kernels.hpp"

#include <rooflab/emu/launch.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace {

bool holds(const std::vector<std::string>& names, const std::string& needle) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

TEST(EmuCoverage, BaseNameOfAKernelSymbol) {
  using rooflab::emu::detail::kernel_base_name;
  EXPECT_EQ(kernel_base_name("void ns::k<8, (bool)1>(float const*, int)"), "k");
  EXPECT_EQ(kernel_base_name("ns::(anonymous namespace)::copy_kernel(float*)"), "copy_kernel");
  EXPECT_EQ(kernel_base_name("void ns::k<8>(float*)::{lambda(int)#1}::operator()(int) const"), "");
  EXPECT_EQ(kernel_base_name("ns::k(float*) [clone .isra.0]"), "");
}

TEST(EmuCoverage, EveryInstanceDefinedAndWhichOnesRan) {
  const auto defined = rooflab::emu::kernels_defined();
  // Every instance a launch site names is compiled, launched or not; the kernel nothing launches too.
  EXPECT_TRUE(holds(defined, "emutest::scale_by_kernel<1>"));
  EXPECT_TRUE(holds(defined, "emutest::scale_by_kernel<2>"));
  EXPECT_TRUE(holds(defined, "emutest::scale_by_kernel<3>"));
  EXPECT_TRUE(holds(defined, "emutest::orphan_kernel"));
  EXPECT_FALSE(holds(defined, "emutest::scale_by(")) << "a launcher is not a kernel";

  float* x = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), 16 * sizeof(float)), cudaSuccess);
  const unsigned long long before = rooflab::emu::kernel_launch_count();
  emutest::scale_by(2, x, 16);
  const auto started = rooflab::emu::kernels_launched_since(before);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_NE(started[0].find("emutest::scale_by_kernel<2>"), std::string::npos) << started[0];

  const unsigned long long between = rooflab::emu::kernel_launch_count();
  emutest::scale_by(3, x, 16);
  const auto second = rooflab::emu::kernels_launched_since(between);
  EXPECT_FALSE(holds(second, "scale_by_kernel<2>")) << "a window sees only the kernels started in it";
  EXPECT_TRUE(holds(second, "scale_by_kernel<3>"));

  const auto never = rooflab::emu::kernels_never_launched();
  EXPECT_TRUE(holds(never, "emutest::scale_by_kernel<1>")) << "the value no call passed leaves its instance unrun";
  EXPECT_TRUE(holds(never, "emutest::orphan_kernel"));
  EXPECT_FALSE(holds(never, "scale_by_kernel<2>"));
  EXPECT_FALSE(holds(never, "scale_by_kernel<3>"));
  cudaFree(x);
}

// The performance model's grids (rooflab::ptx::timed_launches): while a LaunchShapes lives, launches are recorded
// with their shapes and run no block; after it, they run again.
TEST(EmuCoverage, LaunchShapesAreRecordedAndNotRun) {
  float* x = nullptr;
  constexpr int n = 200;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)), cudaSuccess);
  const std::vector<float> ones(n, 1.0f);
  ASSERT_EQ(cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<rooflab::emu::LaunchShape> shapes;
  unsigned char* quiet = nullptr;  // allocated while recording: not poisoned (no kernel runs to read it)
  {
    const rooflab::emu::LaunchShapes recording;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&quiet), 4096), cudaSuccess);
    emutest::scale_by(2, x, n);
    emutest::scale_by(3, x + 50, n - 50);  // a pointer inside the allocation reaches its last 150 floats
    shapes = recording.taken();
  }
  ASSERT_EQ(shapes.size(), 2u);
  // Each argument's reach, for the performance model's reused data: a pointer's bytes to the end of its
  // allocation, 0 for the length.
  EXPECT_EQ(shapes[0].reach, (std::vector<std::size_t>{n * sizeof(float), 0}));
  EXPECT_EQ(shapes[1].reach, (std::vector<std::size_t>{(n - 50) * sizeof(float), 0}));
  // Each integer argument's value, for the model's trip counts (a loop bounded by the length): nothing for a pointer.
  EXPECT_EQ(shapes[0].scalars, (std::vector<std::optional<long long>>{std::nullopt, n}));
  EXPECT_EQ(shapes[1].scalars, (std::vector<std::optional<long long>>{std::nullopt, n - 50}));
  EXPECT_NE(shapes[0].kernel.find("emutest::scale_by_kernel<2>"), std::string::npos) << shapes[0].kernel;
  EXPECT_NE(shapes[1].kernel.find("emutest::scale_by_kernel<3>"), std::string::npos) << shapes[1].kernel;
  EXPECT_EQ(shapes[0].grid.x, 4u);  // 200 elements in blocks of 64
  EXPECT_EQ(shapes[0].block.x, 64u);
  EXPECT_EQ(shapes[0].dynamic_smem, 0u);
  std::vector<float> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[0], 1.0f) << "a recorded launch ran";
  EXPECT_EQ(back[n - 1], 1.0f) << "a recorded launch ran";
  emutest::scale_by(2, x, n);  // recording over: this one runs
  ASSERT_EQ(cudaMemcpy(back.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[n - 1], 2.0f);
  // Memory allocated while launches were only recorded reads as zeros; after it, new memory is poisoned again.
  unsigned char* poisoned = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&poisoned), 4096), cudaSuccess);
  std::vector<unsigned char> bytes(4096);
  ASSERT_EQ(cudaMemcpy(bytes.data(), quiet, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), 4096);
  ASSERT_EQ(cudaMemcpy(bytes.data(), poisoned, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0xCD), 4096);
  cudaFree(poisoned);
  cudaFree(quiet);
  cudaFree(x);
}

}  // namespace
