// Roofline arithmetic on REFERENCE.md's exercises.
#include <rooflab/roofline.hpp>
#include <rooflab/specs.hpp>

#include <gtest/gtest.h>

using namespace rooflab::roofline;

TEST(Roofline, A100Fp16RidgeAndGemm) {
  // Exercise 1: A100 312 TFLOP/s FP16, 2 TB/s: ridge 156 FLOP/byte.
  const double p = tflops(312), b = gbps(2000);
  EXPECT_DOUBLE_EQ(ridge_point(p, b), 156.0);
  // Exercise 4: a 4096^3 FP16 GEMM: 2n^3 FLOPs over 3n^2 x 2 bytes = n/3 = 1365 FLOP/byte: compute-bound.
  const double n = 4096;
  const double i = intensity(2 * n * n * n, 3 * n * n * 2);
  EXPECT_NEAR(i, n / 3, 1e-9);
  EXPECT_FALSE(memory_bound(i, p, b));
  EXPECT_DOUBLE_EQ(attainable(i, p, b), p);
}

TEST(Roofline, DecodeAtBatchOneIsMemoryBound) {
  // Exercise 3/5: H100 989 TFLOP/s FP16, 3.35 TB/s; decode at intensity ~1 reaches ~0.34% of peak.
  const auto& h = rooflab::gpu("h100-sxm");
  const double p = *rooflab::peak_flops(h, rooflab::DType::fp16), b = gbps(h.bandwidth_gbps);
  EXPECT_NEAR(ridge_point(p, b), 295.3, 0.1);
  EXPECT_TRUE(memory_bound(1.0, p, b));
  EXPECT_NEAR(fraction_of_peak(1.0, p, b), 3350e9 / 989.4e12, 1e-12);
  // 70B parameters in FP16 = 140 GB of weights: at least 41.8 ms per token at batch 1.
  EXPECT_NEAR(time_floor_s(2 * 70e9, 140e9, p, b), 140e9 / 3350e9, 1e-12);
  // 4x the intensity: 4x the attainable FLOP/s while still under the ridge.
  EXPECT_DOUBLE_EQ(attainable(4.0, p, b), 4 * attainable(1.0, p, b));
}

TEST(Roofline, PeakByDataType) {
  const auto& t4 = rooflab::gpu("t4");
  EXPECT_FALSE(rooflab::peak_flops(t4, rooflab::DType::bf16).has_value());  // Turing: no BF16 tensor cores
  EXPECT_DOUBLE_EQ(*rooflab::peak_flops(t4, rooflab::DType::fp32), 8.1e12);
}
