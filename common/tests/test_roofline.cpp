// Roofline arithmetic (roofline.hpp) on the classic exercises (docs/sources.md, "Exercises"), its invariants, and peak_flops() over the
// GPU data.
#include <gtest/gtest.h>

#include <cmath>
#include <rooflab/testing/roofline.hpp>
#include <rooflab/specs.hpp>

namespace {

using namespace rooflab::roofline;

// Exercise 1 as a compile-time fact: the header is constexpr so handouts can static_assert their examples.
static_assert(ridge_point(from_tflops(312), from_gbps(2000)) == 156.0);
static_assert(attainable(1.0, from_tflops(312), from_gbps(2000)) == from_gbps(2000));

// ---- the exercises of docs/sources.md ----

TEST(Roofline, Exercise1And4A100Fp16) {
  // A100: 312 TFLOP/s FP16, 2 TB/s: ridge 156 FLOP/byte.
  const double p = from_tflops(312), b = from_gbps(2000);
  EXPECT_DOUBLE_EQ(ridge_point(p, b), 156.0);
  // A 4096^3 FP16 GEMM: 2n^3 FLOPs over (3 n^2 elements x 2 bytes) = n/3, about 1365 FLOP/byte: compute-bound.
  const double n = 4096;
  const double i = intensity(2 * n * n * n, 3 * n * n * 2);
  EXPECT_NEAR(i, n / 3, 1e-9);
  EXPECT_FALSE(memory_bound(i, p, b));
  EXPECT_DOUBLE_EQ(attainable(i, p, b), p);
  // The same GEMM counted in FP32 elements has half the intensity: n/6 (docs/roofline.md, "GEMM: where intensity comes from").
  EXPECT_NEAR(intensity(2 * n * n * n, 3 * n * n * 4), n / 6, 1e-9);
}

TEST(Roofline, Exercise2LayerNormIsMemoryBound) {
  // LayerNorm over FP16 [B, L, D]: each element read and written once (4 bytes) for under 10 FLOPs.
  const double elements = 8.0 * 2048 * 4096;
  const double i = intensity(8 * elements, 4 * elements);
  EXPECT_DOUBLE_EQ(i, 2.0);
  const auto& a100 = rooflab::gpu("a100-40gb-sxm4");
  EXPECT_TRUE(memory_bound(i, *rooflab::peak_flops(a100, rooflab::DType::fp16), from_gbps(a100.bandwidth_gbps)));
  EXPECT_TRUE(memory_bound(i, *rooflab::peak_flops(a100, rooflab::DType::fp32), from_gbps(a100.bandwidth_gbps)));
}

TEST(Roofline, Exercise3And5And7DecodeOnH100) {
  const auto& h = rooflab::gpu("h100-sxm");
  const double p = *rooflab::peak_flops(h, rooflab::DType::fp16), b = from_gbps(h.bandwidth_gbps);
  // Machine balance 989.4 TFLOP/s / 3.35 TB/s: about 295 FLOP/byte.
  EXPECT_NEAR(ridge_point(p, b), 295.3, 0.1);
  // Decode at intensity ~1 reaches ~0.34% of peak.
  EXPECT_TRUE(memory_bound(1.0, p, b));
  EXPECT_NEAR(fraction_of_peak(1.0, p, b), 3350e9 / 989.4e12, 1e-12);
  // 4x the intensity: 4x the attainable FLOP/s while under the ridge (an INT8 KV cache halves the bytes: 2x).
  EXPECT_DOUBLE_EQ(attainable(4.0, p, b), 4 * attainable(1.0, p, b));
  EXPECT_DOUBLE_EQ(attainable(intensity(1e9, 0.5e9), p, b), 2 * attainable(1.0, p, b));
  // 70B parameters in FP16 = 140 GB of weights: at least 41.8 ms per token at batch 1 ...
  const double weights = 70e9 * 2, flops_per_token = 2 * 70e9;
  EXPECT_NEAR(time_floor_s(flops_per_token, weights, p, b), 0.0418, 0.0001);
  // ... and at batch 32 the same weight read serves 32 tokens: still memory-bound, 32x the throughput.
  EXPECT_TRUE(memory_bound(intensity(32 * flops_per_token, weights), p, b));
  EXPECT_DOUBLE_EQ(time_floor_s(32 * flops_per_token, weights, p, b), time_floor_s(flops_per_token, weights, p, b));
  // Exercise 7: 140 GB model, batch 64: about 1531 tokens/s (weights only).
  EXPECT_NEAR(64 / time_floor_s(64 * flops_per_token, weights, p, b), 1531, 1);
}

TEST(Roofline, Exercise8LinearLayerCrossesTheRidge) {
  // 4096 -> 4096 FP16 linear at batch B: 2 B d^2 FLOPs; weights d^2 plus in and out activations 2 B d, x 2 bytes.
  const double d = 4096, p = from_tflops(312), b = from_gbps(2000);
  auto i_at = [&](double batch) { return intensity(2 * batch * d * d, (d * d + 2 * batch * d) * 2); };
  EXPECT_NEAR(i_at(1), 1.0, 0.001);
  EXPECT_FALSE(memory_bound(i_at(512), p, b));
  // B d / (d + 2B) = 156  =>  B = 156 d / (d - 312) = 168.9: memory-bound at 168, compute-bound at 169.
  EXPECT_TRUE(memory_bound(i_at(168), p, b));
  EXPECT_FALSE(memory_bound(i_at(169), p, b));
}

TEST(Roofline, Exercise10AdamIsMemoryBoundEverywhere) {
  // FP32 Adam: read parameter, gradient, m, v (16 bytes), write parameter, m, v (12 bytes); about 12 FLOPs.
  const double i = intensity(12, 28);
  for (const auto& g : rooflab::gpus()) {
    EXPECT_TRUE(memory_bound(i, g.fp32_tflops * 1e12, from_gbps(g.bandwidth_gbps))) << g.id;
  }
}

// ---- invariants of the model ----

TEST(Roofline, Invariants) {
  const double p = from_tflops(100), b = from_gbps(1000);
  const double ridge = ridge_point(p, b);
  EXPECT_DOUBLE_EQ(ridge, 100.0);
  // The roof is continuous at the ridge, and a kernel exactly there counts as compute-bound.
  EXPECT_DOUBLE_EQ(attainable(ridge, p, b), p);
  EXPECT_FALSE(memory_bound(ridge, p, b));
  EXPECT_TRUE(memory_bound(std::nextafter(ridge, 0.0), p, b));
  for (const double i : {0.01, 0.5, 3.0, 99.0, 100.0, 101.0, 1e4}) {
    const double a = attainable(i, p, b);
    EXPECT_LE(a, p);
    EXPECT_LE(a, i * b * (1 + 1e-12));
    EXPECT_LE(fraction_of_peak(i, p, b), 1.0);
    // The time floor is the work over the roof at its intensity.
    const double flops = 1e12, bytes = flops / i;
    EXPECT_NEAR(time_floor_s(flops, bytes, p, b), flops / a, 1e-12 * flops / a);
  }
  EXPECT_DOUBLE_EQ(fraction_of_peak(1e4, p, b), 1.0);
  EXPECT_DOUBLE_EQ(to_gbps(from_gbps(3350)), 3350);
  EXPECT_DOUBLE_EQ(to_tflops(from_tflops(989.4)), 989.4);
}

// ---- peak_flops over the data ----

TEST(Roofline, PeakFlopsByDataType) {
  for (const auto& g : rooflab::gpus()) {
    SCOPED_TRACE(g.id);
    EXPECT_DOUBLE_EQ(*rooflab::peak_flops(g, rooflab::DType::fp32), g.fp32_tflops * 1e12);
    EXPECT_EQ(rooflab::peak_flops(g, rooflab::DType::bf16).has_value(), g.bf16_tflops.has_value());
    EXPECT_EQ(rooflab::peak_flops(g, rooflab::DType::fp16_nontensor).has_value(), g.fp16_nontensor_tflops.has_value());
    if (g.int8_tops) {
      EXPECT_DOUBLE_EQ(*rooflab::peak_flops(g, rooflab::DType::int8), *g.int8_tops * 1e12);
    }
  }
  // T4 (Turing) has FP16 tensor cores but no BF16 ones (docs/sources.md, "GPU specifications"; data/gpus.json).
  const auto& t4 = rooflab::gpu("t4");
  EXPECT_TRUE(rooflab::peak_flops(t4, rooflab::DType::fp16).has_value());
  EXPECT_FALSE(rooflab::peak_flops(t4, rooflab::DType::bf16).has_value());
  // One kernel, two verdicts (docs/roofline.md, "GEMM: where intensity comes from"): intensity 50 on an A100 is memory-bound for FP16
  // tensor cores (ridge 156) and compute-bound for FP32 CUDA cores (ridge about 12.5).
  const auto& a100 = rooflab::gpu("a100-40gb-sxm4");
  const double b = from_gbps(a100.bandwidth_gbps);
  EXPECT_TRUE(memory_bound(50, *rooflab::peak_flops(a100, rooflab::DType::fp16), b));
  EXPECT_FALSE(memory_bound(50, *rooflab::peak_flops(a100, rooflab::DType::fp32), b));
}

}  // namespace
