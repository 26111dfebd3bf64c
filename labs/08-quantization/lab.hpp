// Lab 08: weight-only quantization - the lab API.  PROVIDED: do not modify.
//
// The byte layouts the kernels read and write, the analytic questions (answers.cpp) with their exact
// contracts, and the CPU references every correctness test compares with. Launchers are in kernels.hpp.
// Handout: README.md beside this file.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace lab08 {

// ---- the byte layouts (handout: "Block formats and their bytes") ----
//
// W is n x k, row-major, quantized in groups of consecutive weights along a row (k a multiple of the group).
// Group g of row j is global group j x (k / group) + g, and its weights are w[j k + g group ...]: the groups
// of the whole matrix follow one another in memory, and group G's scale is scales[G].
//
// int8 ("Q8_0-like"): group 32, symmetric, q in [-127, 127].
//   q:      int8_t[n x k], q[j k + i] is weight (j, i)
//   scales: __half[n x k / 32]
//   llama.cpp's Q8_0 stores each group as one 34-byte block (scale, then 32 quants); here the quants and the
//   scales are two arrays, so that every row of quants starts on a 16-byte boundary and a lane can read 16
//   of them in one 128-bit load. The bytes per weight are the same: 34 per 32.
// int4: group 32 or 128, symmetric, q in [-7, 7], two weights per byte.
//   q:      uint8_t[n x k / 2]; byte b of row j (q[j k / 2 + b]) holds weight 2b in its low nibble (bits 0-3)
//           and weight 2b + 1 in its high nibble (bits 4-7), each stored as q + 8 (so 1 to 15; 8 is zero).
//           (llama.cpp's Q4_0 orders nibbles differently: weights 0-15 of a block in the low nibbles, 16-31
//           in the high ones. The order is part of the format: say which one you read.)
//   scales: __half[n x k / group]
// Quantizing a group: scale = absmax / qmax rounded UP to FP16 (__float2half_ru: the smallest FP16 value s
// with qmax s >= absmax), absmax the largest |w| of the group; q = the nearest integer to w / scale (float
// division, ties to even), clamped to [-qmax, qmax]. A group of zeros has scale 0 and every q = 0 (no division
// by zero); any other group has a scale of at least 2^-24, FP16's smallest subnormal. Dequantizing:
// w' = scale x q, rounded to FP16. For every weight |w - w'| <= scale / 2 before that last rounding.
// (Rounding the scale to nearest meets the bound too while absmax / qmax is a normal FP16 number, but not
// below 2^-14, where FP16's steps are 2^-24 apart: there the nearest scale can be far below absmax / qmax,
// or 0, and the group's largest weights clip. The tests hold such groups.)
inline constexpr int kInt8Group = 32;
inline constexpr int kInt8Max = 127;
inline constexpr int kInt4Max = 7;
inline constexpr int kInt4Zero = 8;  // the nibble that stores q = 0

// Bytes of each layout for an n x k matrix (quants, then scales): what the kernels read.
inline double int8_bytes(double n, double k) { return n * k + 2.0 * n * k / kInt8Group; }
inline double int4_bytes(double n, double k, int group) { return n * k / 2 + 2.0 * n * k / group; }
inline double fp16_bytes(double n, double k) { return 2.0 * n * k; }

// ---- analytic questions (answers.cpp; handout sections "Data types", "Block formats and their bytes",
// "Group-wise quantization and its error" and "Why decode speeds up") ----

// A block format: `group` weights of `weight_bits` each, plus per group one scale of `scale_bits` and one zero
// point of `zero_bits` (0 for symmetric formats). FP16 itself is {1, 16, 0, 0}.
struct BlockFormat {
  std::string_view name;
  int group;
  int weight_bits;
  int scale_bits;
  int zero_bits;
};
inline constexpr BlockFormat kFp16{"FP16", 1, 16, 0, 0};
inline constexpr BlockFormat kQ8_0{"Q8_0 (int8, group 32, FP16 scale)", kInt8Group, 8, 16, 0};
inline constexpr BlockFormat kQ4_0{"Q4_0 (int4, group 32, FP16 scale)", 32, 4, 16, 0};
inline constexpr BlockFormat kQ4_1{"Q4_1 (int4, group 32, FP16 scale and FP16 minimum)", 32, 4, 16, 16};
inline constexpr BlockFormat kInt4G128{"int4, group 128, FP16 scale", 128, 4, 16, 0};
inline constexpr BlockFormat kGptq4G128{"GPTQ-style int4, group 128, FP16 scale and 4-bit zero", 128, 4, 16, 4};
inline constexpr BlockFormat kFormats[] = {kFp16, kQ8_0, kQ4_0, kQ4_1, kInt4G128, kGptq4G128};

// Q1: bits per weight of a format, scales and zero points included.
double bits_per_weight(const BlockFormat& f);
// Q2: bytes of a model's weights in a format: params_b x 10^9 weights at Q1's bits (every weight quantized).
double model_bytes(const rooflab::ModelSpec& m, const BlockFormat& f);
// Q3: the least time of one decode step at batch 1: the weights' bytes (Q2) over the GPU's datasheet
// bandwidth (GB/s = 10^9 bytes per second). Weights only: no KV cache.
double decode_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, const BlockFormat& f);
// Q4: how many times faster that floor is than FP16's for the same model on the same GPU.
double decode_speedup_vs_fp16(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, const BlockFormat& f);
// Q5: the largest |w - scale x q| over one group quantized symmetrically with `qmax` (scale = absmax / qmax in
// double, not rounded to FP16; q = w / scale rounded to the nearest integer, halves away from zero); 0 for a
// group of zeros.
double group_max_error(std::span<const float> group, int qmax);

// An FP8 format: 1 sign bit, `exponent_bits`, `mantissa_bits`, exponent bias 2^(exponent_bits - 1) - 1.
// `ieee_specials`: the all-ones exponent is reserved for infinities and NaNs, as in IEEE 754 (E5M2). Without
// it (E4M3, the OCP FP8 convention) only the all-ones exponent with an all-ones mantissa is NaN, and every
// other all-ones-exponent pattern is a finite number.
struct Fp8Format {
  std::string_view name;
  int exponent_bits;
  int mantissa_bits;
  bool ieee_specials;
};
inline constexpr Fp8Format kE4M3{"FP8 E4M3", 4, 3, false};
inline constexpr Fp8Format kE5M2{"FP8 E5M2", 5, 2, true};

// Q6: the largest finite value of the format.
double fp8_max(const Fp8Format& f);
// Q7: the spacing between adjacent representable values at magnitude `x` (0 < x <= fp8_max): the gap from
// the largest representable value <= x to the next one up, i.e. 2^(e - mantissa_bits) for x in [2^e, 2^(e+1)),
// and the subnormal spacing 2^(1 - bias - mantissa_bits) below the smallest normal 2^(1 - bias).
double fp8_spacing(const Fp8Format& f, double x);
// Q8: the ridge point of the GPU's INT8 tensor cores: dense int8 OP/s (rooflab::peak_flops(gpu, int8)) over the
// datasheet bandwidth in bytes/s; 0 when the GPU publishes no int8 tensor figure.
double int8_ridge(const rooflab::GpuSpec& gpu);

// ---- CPU references ----

// x rounded to the nearest FP16 value (ties to even; +-infinity past 65504 + 16): what __float2half does, on
// the host without CUDA.
inline float fp16_round(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 65520.0) return std::copysign(INFINITY, x);
  int e = 0;
  std::frexp(a, &e);                                   // a = f x 2^e, f in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(e - 1, -14) - 10);  // 10 mantissa bits; subnormals below 2^-14
  return static_cast<float>(std::copysign(std::nearbyint(a / ulp) * ulp, static_cast<double>(x)));
}

// x >= 0 rounded up to an FP16 value (toward +infinity): what __float2half_ru does, on the host.
inline float fp16_round_up(float x) {
  const float r = fp16_round(x);
  if (!(r < x)) return r;
  if (r == 0.0f) return std::ldexp(1.0f, -24);  // the smallest subnormal
  int e = 0;
  std::frexp(static_cast<double>(r), &e);  // r = f x 2^e, f in [0.5, 1): the step above r is its binade's
  return static_cast<float>(r + std::ldexp(1.0, std::max(e - 1, -14) - 10));
}

// Quantizes `count` weights (a multiple of `group`) group by group as the layouts above say: q (one int per
// weight, in [-qmax, qmax]) and one scale per group (an FP16 value, as float).
inline void quantize_ref(std::span<const float> w, int group, int qmax, std::vector<int>& q, std::vector<float>& scales) {
  q.assign(w.size(), 0);
  scales.assign(w.size() / static_cast<std::size_t>(group), 0.0f);
  for (std::size_t g = 0; g < scales.size(); ++g) {
    const float* v = w.data() + g * static_cast<std::size_t>(group);
    float absmax = 0.0f;
    for (int i = 0; i < group; ++i) absmax = std::max(absmax, std::fabs(v[i]));
    const float scale = fp16_round_up(absmax / static_cast<float>(qmax));
    scales[g] = scale;
    if (scale == 0.0f) continue;
    for (int i = 0; i < group; ++i) {
      const float r = std::nearbyint(v[i] / scale);
      q[g * static_cast<std::size_t>(group) + static_cast<std::size_t>(i)] =
          static_cast<int>(std::clamp(r, -static_cast<float>(qmax), static_cast<float>(qmax)));
    }
  }
}

// The int4 layout's bytes from q in [-7, 7] (one int per weight, an even count), and back.
inline std::vector<std::uint8_t> pack_int4_ref(std::span<const int> q) {
  std::vector<std::uint8_t> out(q.size() / 2);
  for (std::size_t b = 0; b < out.size(); ++b) {
    out[b] = static_cast<std::uint8_t>((q[2 * b] + kInt4Zero) | ((q[2 * b + 1] + kInt4Zero) << 4));
  }
  return out;
}
// The bytes a GEMV of `bits` (8 or 4) reads for q: one two's-complement byte per int8 weight, or int4 pairs.
inline std::vector<std::uint8_t> pack_ref(std::span<const int> q, int bits) {
  if (bits == 4) return pack_int4_ref(q);
  std::vector<std::uint8_t> out(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) out[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q[i]));
  return out;
}
inline std::vector<int> unpack_int4_ref(std::span<const std::uint8_t> bytes) {
  std::vector<int> q(bytes.size() * 2);
  for (std::size_t b = 0; b < bytes.size(); ++b) {
    q[2 * b] = (bytes[b] & 0xF) - kInt4Zero;
    q[2 * b + 1] = (bytes[b] >> 4) - kInt4Zero;
  }
  return q;
}

// y[j] = sum_i scale(j, i) q(j, i) x[i] in double: the GEMV of the dequantized weights (not rounded to FP16,
// as the kernels use them). q is n x k, one int per weight; scales n x k / group.
inline void gemv_ref(std::span<const int> q, std::span<const float> scales, std::span<const float> x, double* y, int n,
                     int k, int group) {
  for (int j = 0; j < n; ++j) {
    double acc = 0;
    for (int i = 0; i < k; ++i) {
      const std::size_t at = static_cast<std::size_t>(j) * k + i;
      acc += static_cast<double>(scales[at / static_cast<std::size_t>(group)]) * q[at] * x[i];
    }
    y[j] = acc;
  }
}

// ---- the kernels' declared work (rooflab inspect): n = weights (N x K); each GEMV reads its packed
// weights and scales once (the activations and outputs, K + N halves, are negligible beside them) and does
// 2 FLOPs per weight. The quantizers read FP16 weights and write the layout; the dequantizers the reverse.
inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    {"lab08::gemv_int8_kernel", "gemv int8 (group 32)", 256, 0, [](double n) { return 2 * n; },
     [](double n) { return int8_bytes(1, n); }, rooflab::DType::fp32, {"int8_gemv"}},
    {"lab08::gemv_int4_kernel", "gemv int4 (group 128)", 256, 0, [](double n) { return 2 * n; },
     [](double n) { return int4_bytes(1, n, 128); }, rooflab::DType::fp32, {"int4_gemv"}},
    {"lab08::quantize_int8_kernel", "quantize int8", 256, 0, [](double n) { return 2 * n; },
     [](double n) { return fp16_bytes(1, n) + int8_bytes(1, n); }, rooflab::DType::fp32, {}},
    {"lab08::quantize_int4_kernel", "quantize int4", 256, 0, [](double n) { return 2 * n; },
     [](double n) { return fp16_bytes(1, n) + int4_bytes(1, n, 128); }, rooflab::DType::fp32, {}},
    {"lab08::dequantize_int8_kernel", "dequantize int8", 256, 0, [](double n) { return n; },
     [](double n) { return int8_bytes(1, n) + fp16_bytes(1, n); }, rooflab::DType::fp32, {}},
    {"lab08::dequantize_int4_kernel", "dequantize int4", 256, 0, [](double n) { return n; },
     [](double n) { return int4_bytes(1, n, 128) + fp16_bytes(1, n); }, rooflab::DType::fp32, {}},
};

}  // namespace lab08
