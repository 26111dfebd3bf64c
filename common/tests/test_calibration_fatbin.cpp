// The calibration kernels as a student copy of the course runs them (./rooflab release): loaded from a
// fatbinary by calibration_loader.cpp, here the one this build makes from calibration_kernels.cu with the
// release's recipe (common/calibration_fatbin.cmake). Each kernel's output is checked against the host: the
// copy must equal its input bit for bit, the FMA sums must equal a double-precision recomputation within the
// rounding of float arithmetic. Needs a GPU. Without one, the other half runs: the load fails, and its error
// must say which toolkit made the kernels and what to do. Each half skips itself where the other runs; exit
// code 77 when all that ran skipped (CTest: skipped).
#include "calibration_kernels.hpp"

#include <rooflab/check.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

// A device buffer for this test alone (the harness's DeviceBuffer lives in rooflab::cuda, which this test
// must not link: it holds the kernels compiled from source, under the same names as the loader's).
template <typename T>
struct Device {
  explicit Device(std::size_t n) : count(n) { ROOFLAB_CUDA_CHECK(cudaMalloc(&ptr, n * sizeof(T))); }
  ~Device() { ROOFLAB_CUDA_WARN(cudaFree(ptr)); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  T* ptr = nullptr;
  std::size_t count;
};

bool have_gpu() {
  int devices = 0;
  const bool found = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();  // no device is not an error for what follows
  return found;
}

int sm_count() {
  int device = 0;
  int sms = 0;
  ROOFLAB_CUDA_CHECK(cudaGetDevice(&device));
  ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

TEST(CalibrationFatbin, OnGpuCopyEqualsItsInput) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  // A ragged size, several grid-stride trips on a small grid, and data that is never zero.
  const std::size_t n4 = (std::size_t{1} << 20) + 3;
  std::vector<float4> host(n4);
  std::uint32_t state = 2727;
  for (auto& v : host) {
    auto next = [&] { return static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) + 1.0f; };
    v = float4{next(), next(), next(), next()};
  }
  Device<float4> in(n4), out(n4);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(in.ptr, host.data(), n4 * sizeof(float4), cudaMemcpyHostToDevice));
  ROOFLAB_CUDA_CHECK(cudaMemset(out.ptr, 0xff, n4 * sizeof(float4)));  // NaNs: an unwritten element fails
  rooflab::calib::copy_vec4(in.ptr, out.ptr, n4, sm_count(), nullptr);
  std::vector<float4> got(n4);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(got.data(), out.ptr, n4 * sizeof(float4), cudaMemcpyDeviceToHost));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n4; ++i) {
    if (std::memcmp(&got[i], &host[i], sizeof(float4)) != 0 && wrong++ < 5) {
      ADD_FAILURE() << "float4 " << i << ": got " << got[i].x << " " << got[i].y << " " << got[i].z << " "
                    << got[i].w << ", want " << host[i].x << " " << host[i].y << " " << host[i].z << " " << host[i].w;
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << n4 << " float4s";
}

// What thread t of a block stores: the sum of FMA_CHAINS chains started at t + c, each `iterations` FMAs.
double fma_sum(unsigned t, float a, float b, int iterations) {
  double sum = 0.0;
  for (int c = 0; c < rooflab::calib::FMA_CHAINS; ++c) {
    double x = static_cast<double>(t + static_cast<unsigned>(c));
    for (int i = 0; i < iterations; ++i) x = x * a + b;
    sum += x;
  }
  return sum;
}

TEST(CalibrationFatbin, OnGpuFmaSumsMatchTheHost) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  // a well away from 1, so that one FMA more or fewer per chain moves the result by 0.1%, far outside the
  // tolerance; it grows to about e^1 over the iterations, nowhere near float's range.
  const float a = 1.001f, b = 0.5f;
  const int iterations = 1000;
  const unsigned blocks = 3, threads = 160;
  Device<float> out(static_cast<std::size_t>(blocks) * threads);
  ROOFLAB_CUDA_CHECK(cudaMemset(out.ptr, 0xff, out.count * sizeof(float)));
  const double flops = rooflab::calib::fma_peak(a, b, iterations, out.ptr, blocks, threads, nullptr);
  EXPECT_EQ(flops, 2.0 * rooflab::calib::FMA_CHAINS * iterations * blocks * threads);
  std::vector<float> got(out.count);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(got.data(), out.ptr, out.count * sizeof(float), cudaMemcpyDeviceToHost));
  // Each FMA and each add of the sum rounds once, by at most half a float ulp (2^-24 relative) of a value no
  // larger than the result: the errors add up to at most (steps) x 2^-24 x |want|.
  const double steps = iterations + rooflab::calib::FMA_CHAINS;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = fma_sum(static_cast<unsigned>(i % threads), a, b, iterations);
    const double tolerance = steps * std::ldexp(1.0, -24) * std::fabs(want);
    if (!(std::fabs(got[i] - want) <= tolerance) && wrong++ < 5) {
      ADD_FAILURE() << "thread " << i << ": got " << got[i] << ", want " << want << " within " << tolerance;
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << got.size() << " threads";
}

// What a student whose driver cannot load the kernels reads: the toolkit that made them, their driver and GPU,
// and what to do. Without a GPU the load fails too (no driver, or no device), which shows the message here.
TEST(CalibrationFatbin, WithoutGpuLoadErrorSaysWhatToDo) {
  if (have_gpu()) GTEST_SKIP() << "a GPU loads the kernels";
  try {
    rooflab::calib::copy_vec4(nullptr, nullptr, 0, 1, nullptr);
    FAIL() << "the calibration kernels loaded without a GPU";
  } catch (const rooflab::CudaError& e) {
    const std::string what = e.what();
    std::printf("the load error a student reads:\n%s\n", what.c_str());
    for (const char* part : {"CUDA toolkit " ROOFLAB_CALIB_TOOLKIT, "driver", "sm " ROOFLAB_CALIB_ARCHS,
                             "update the GPU driver", "older CUDA toolkit", "docs/instructor-guide.md"}) {
      EXPECT_NE(what.find(part), std::string::npos) << "no \"" << part << "\" in: " << what;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  // Only skips: what this test checks needs the other kind of machine (CTest: skipped, never passed).
  if (rc == 0 && unit->successful_test_count() == 0 && unit->skipped_test_count() > 0) return 77;
  return rc;
}
