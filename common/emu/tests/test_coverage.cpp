// "Code no test ran": the backend knows every kernel instance compiled into the process and every one
// launched, so a grader can name the instances of a dispatching launcher that no test reached
// (rooflab::emu::kernels_defined / kernels_launched_since / kernels_never_launched, src/kernels.cpp).
#include "coverage_kernels.hpp"

#include <rooflab/emu/launch.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
