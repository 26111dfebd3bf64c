// Lab 08 graders: the quantizers against the layouts and the error bound (groups of zeros, +-65504, groups
// whose largest magnitude is negative, groups of subnormals), the dequantizers against the layouts, and both
// GEMVs against a double-precision reference of the dequantized weights; on the GPU ("gpu") or the CPU
// backend ("emu").
//
// The packed bytes a quantizer writes are decoded here, on the host, by the layout lab.hpp states, so a
// quantizer and a dequantizer that agree with each other on a wrong layout (nibbles swapped) still fail. The
// GEMVs and dequantizers read weights quantized here by the reference (lab08::quantize_ref), never by the
// student's quantizer, and must launch one kernel and keep no device memory: a GEMV handed the packed
// weights cannot run on an FP16 copy of them.
#include "kernels.hpp"

#include <rooflab/testing/accumulation.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/half.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace {

using rooflab::grading::all_close;
using rooflab::grading::same;
using rooflab::to_float;
using rooflab::to_half;

struct Shape {
  int n, k;
};


// Random FP16 weights in [-1, 1] with the groups that break quantizers: group 0 all zeros, group 1 at the
// ends of FP16's range (+-65504), group 2 all negative (its absmax is a negative weight: a scale taken from
// the max clips it), group 3 tiny: FP16 subnormals, multiples of 2^-24 up to 3 qmax of them, so the scale
// is the subnormal 3 x 2^-24 exactly (a quantizer that flushes it to 0, or treats a tiny absmax as a group of
// zeros, breaks the bound). Groups 4 and 5 are subnormal too, with absmax / qmax off FP16's grid: a half step
// (absmax (qmax - 1) / 2 x 2^-24, whose nearest FP16 scale is 0) and about 1.4 steps (nearest 2^-24, which
// clips the largest weights): only a scale rounded up keeps them within scale / 2 (lab.hpp). In about half
// of the other groups, too, the largest magnitude is negative.
std::vector<float> test_weights(Shape s, int group, int qmax, std::uint64_t seed) {
  auto w = rooflab::random_floats(static_cast<std::size_t>(s.n) * s.k, seed);
  const std::size_t groups = w.size() / static_cast<std::size_t>(group);
  // Group g >= 3: FP16 subnormals, integers times 2^-24 up to `steps[g]` in magnitude (weight 0 at -steps).
  const float steps[] = {0, 0, 0, 3.0f * qmax, (qmax - 1) / 2.0f, qmax + std::floor(qmax * 0.4f)};
  for (std::size_t g = 0; g < groups && g < 6; ++g) {
    for (int i = 0; i < group; ++i) {
      float& v = w[g * group + i];
      if (g == 0) v = 0.0f;
      if (g == 1) v = i % 4 == 0 ? 65504.0f : i % 4 == 1 ? -65504.0f : v * 65504.0f;
      if (g == 2) v = -std::fabs(v);
      if (g >= 3) v = std::ldexp(i == 0 ? -steps[g] : std::nearbyint(v * steps[g]), -24);
    }
  }
  for (auto& v : w) v = lab08::fp16_round(v);
  return w;
}

// Every way a decoded group can break the contract, counted (0 when the quantizer is right): |q| > qmax, a
// weight further than scale / 2 from scale x q (NaN included), a group of zeros with a q other than 0.
double violations(const std::vector<float>& w, const std::vector<int>& q, const std::vector<float>& scales, int group,
                  int qmax, std::string& first) {
  double count = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::size_t g = i / static_cast<std::size_t>(group);
    const double s = scales[g], err = std::fabs(static_cast<double>(w[i]) - s * q[i]);
    std::string why;
    if (q[i] < -qmax || q[i] > qmax) {
      why = "q = " + std::to_string(q[i]) + " is outside [-qmax, qmax]";
    } else if (!(err <= s / 2 * (1 + 1e-6))) {
      why = "|w - scale q| = " + std::to_string(err) + " > scale / 2";
    } else if (s == 0 && q[i] != 0) {
      why = "a group of zeros stores q = " + std::to_string(q[i]) + ", not 0";
    }
    if (why.empty()) continue;
    if (count == 0) {
      first = "weight " + std::to_string(i) + " (group " + std::to_string(g) + ", w = " + std::to_string(w[i]) +
              ", scale " + std::to_string(s) + "): " + why;
    }
    ++count;
  }
  return count;
}

// The launcher under test did its work in one kernel of its own and kept no device memory.
::testing::AssertionResult one_kernel_nothing_kept(const rooflab::KernelWatch& watch, const std::string& what) {
  if (auto r = watch.kernels_did_the_work(what); !r) return r;
  if (auto r = watch.launched_exactly(what, 1); !r) return r;
  return watch.kept_no_device_memory(what);
}

// One quantizer run: the watch's checks, the scales against the reference's, the decoded weights against
// the bound. `bits` is 8 or 4.
::testing::AssertionResult check_quantize(Shape s, int group, int bits,
                                          rooflab::Placement at = rooflab::Placement::allocation_start) {
  const int qmax = bits == 8 ? lab08::kInt8Max : lab08::kInt4Max;
  const auto w =
      test_weights(s, group, qmax, rooflab::test_seed() + static_cast<std::uint64_t>(s.n * 31 + s.k + group));
  const std::size_t count = w.size(), groups = count / static_cast<std::size_t>(group);
  rooflab::DeviceBuffer<__half> dw{std::span<const __half>(to_half(w)), at}, dscales(groups, at);
  rooflab::DeviceBuffer<std::uint8_t> dq(bits == 8 ? count : count / 2, at);
  dq.poison();
  dscales.poison();
  const std::string what = bits == 8 ? "quantize_int8" : "quantize_int4";
  const rooflab::KernelWatch watch;
  if (bits == 8) {
    lab08::quantize_int8(dw.data(), reinterpret_cast<std::int8_t*>(dq.data()), dscales.data(), s.n, s.k, nullptr);
  } else {
    lab08::quantize_int4(dw.data(), dq.data(), dscales.data(), s.n, s.k, group, nullptr);
  }
  rooflab::synchronize_given(nullptr);
  if (auto r = one_kernel_nothing_kept(watch, what); !r) return r;
  const std::string where = " (" + what + ", n = " + std::to_string(s.n) + ", k = " + std::to_string(s.k) +
                            ", group " + std::to_string(group) + rooflab::placement_note(at) + ")";
  std::vector<int> want_q;
  std::vector<float> want_scales;
  lab08::quantize_ref(w, group, qmax, want_q, want_scales);
  const auto got_scales = to_float(dscales.download());
  // One FP16 step of the scale either way (absmax / qmax computed another way can round to its neighbour).
  if (auto r = all_close<float, float>(got_scales, want_scales, {0.0, 1e-3}); !r) return r << " scales" << where;
  const auto bytes = dq.download();
  std::vector<int> q;
  if (bits == 8) {
    for (const std::uint8_t b : bytes) q.push_back(static_cast<std::int8_t>(b));
  } else {
    q = lab08::unpack_int4_ref(bytes);
  }
  std::string first;
  const double bad = violations(w, q, got_scales, group, qmax, first);
  if (auto r = same(bad, 0.0); !r) {
    return ::testing::AssertionFailure() << bad << " weights break the contract" << where << "; the first: " << first
                                         << (bits == 4
                                                 ? " (decoded by the stated layout: weight 2b in the low nibble of "
                                                   "byte b, stored as q + 8)"
                                                 : "");
  }
  return ::testing::AssertionSuccess();
}

// The dequantizer on the reference's packed weights: scale x q, saturated to +-65504, rounded to FP16.
::testing::AssertionResult check_dequantize(Shape s, int group, int bits,
                                            rooflab::Placement at = rooflab::Placement::allocation_start) {
  const int qmax = bits == 8 ? lab08::kInt8Max : lab08::kInt4Max;
  const auto w = test_weights(s, group, qmax, rooflab::test_seed() + 7 + static_cast<std::uint64_t>(s.n + s.k));
  std::vector<int> q;
  std::vector<float> scales;
  lab08::quantize_ref(w, group, qmax, q, scales);
  const auto bytes = lab08::pack_ref(q, bits);
  rooflab::DeviceBuffer<std::uint8_t> dq{std::span<const std::uint8_t>(bytes), at};
  rooflab::DeviceBuffer<__half> dscales{std::span<const __half>(to_half(scales)), at}, dw(w.size(), at);
  dw.poison();
  const std::string what = bits == 8 ? "dequantize_int8" : "dequantize_int4";
  const rooflab::KernelWatch watch;
  if (bits == 8) {
    lab08::dequantize_int8(reinterpret_cast<const std::int8_t*>(dq.data()), dscales.data(), dw.data(), s.n, s.k,
                           nullptr);
  } else {
    lab08::dequantize_int4(dq.data(), dscales.data(), dw.data(), s.n, s.k, group, nullptr);
  }
  rooflab::synchronize_given(nullptr);
  if (auto r = one_kernel_nothing_kept(watch, what); !r) return r;
  std::vector<float> want(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    const float v = scales[i / static_cast<std::size_t>(group)] * static_cast<float>(q[i]);
    want[i] = lab08::fp16_round(std::fmax(std::fmin(v, 65504.0f), -65504.0f));
  }
  auto r = all_close<float, float>(to_float(dw.download()), want, {0.0, 1e-3});
  if (!r) r << " (" << what << ", n = " << s.n << ", k = " << s.k << ", group " << group << rooflab::placement_note(at) << ")";
  return r;
}

// Random signed weights and inputs, or the shape where an FP16 running sum drops whole steps
// (rooflab/testing/accumulation.hpp): positive weights whose first 32nd of each row (a lane's first step) is large
// and the rest so small that a step adds less than half an FP16 ulp of the running sum, positive inputs.
enum class Inputs { random, same_signed };
// Long rows for the same-signed inputs: many steps per lane, each dropped by an FP16 running sum.
constexpr Shape kSameSigned{24, 16384};

// A GEMV on the reference's packed weights against the double-precision GEMV of the dequantized weights.
::testing::AssertionResult check_gemv(Shape s, int group, int bits, Inputs inputs = Inputs::random,
                                      rooflab::Placement at = rooflab::Placement::allocation_start) {
  const int qmax = bits == 8 ? lab08::kInt8Max : lab08::kInt4Max;
  const std::uint64_t seed = rooflab::test_seed() + 101 + static_cast<std::uint64_t>(s.n * 7 + s.k + group);
  const bool same = inputs == Inputs::same_signed;
  auto w = same ? rooflab::decaying_positive_rows(s.n, s.k, seed, s.k / 32, 16.0f, 1.0f / 192)
                : rooflab::random_floats(static_cast<std::size_t>(s.n) * s.k, seed);
  for (int i = 0; i < group && s.n * s.k > group && !same; ++i) w[static_cast<std::size_t>(i)] = 0.0f;  // a group of zeros
  for (auto& v : w) v = lab08::fp16_round(v);
  auto x = same ? rooflab::random_floats(static_cast<std::size_t>(s.k), seed + 1, 0.5f, 1.0f)
                : rooflab::random_floats(static_cast<std::size_t>(s.k), seed + 1);
  for (auto& v : x) v = lab08::fp16_round(v);
  std::vector<int> q;
  std::vector<float> scales;
  lab08::quantize_ref(w, group, qmax, q, scales);
  const auto bytes = lab08::pack_ref(q, bits);
  rooflab::DeviceBuffer<std::uint8_t> dq{std::span<const std::uint8_t>(bytes), at};
  rooflab::DeviceBuffer<__half> dscales{std::span<const __half>(to_half(scales)), at},
      dx{std::span<const __half>(to_half(x)), at};
  rooflab::DeviceBuffer<__half> dy(static_cast<std::size_t>(s.n), at);
  dy.poison();
  const std::string what = bits == 8 ? "gemv_int8" : "gemv_int4";
  const rooflab::KernelWatch watch;
  if (bits == 8) {
    lab08::gemv_int8(reinterpret_cast<const std::int8_t*>(dq.data()), dscales.data(), dx.data(), dy.data(), s.n, s.k,
                     nullptr);
  } else {
    lab08::gemv_int4(dq.data(), dscales.data(), dx.data(), dy.data(), s.n, s.k, group, nullptr);
  }
  rooflab::synchronize_given(nullptr);
  if (auto r = one_kernel_nothing_kept(watch, what); !r) return r;
  std::vector<double> ref(static_cast<std::size_t>(s.n));
  lab08::gemv_ref(q, scales, x, ref.data(), s.n, s.k, group);
  // What FP32 accumulation allows per output (rooflab/testing/accumulation.hpp): gamma of the roundings a term meets
  // (its group's partial sum, one scaled add per step, the warp's sum: under k + 32) times the sum of
  // |scale q x|, plus the FP16 output's rounding.
  std::vector<float> wq(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) wq[i] = scales[i / static_cast<std::size_t>(group)] * static_cast<float>(q[i]);
  const auto allowed = rooflab::accumulation_bounds(rooflab::gemv_abs_sums(wq, x, s.n, s.k, 1), ref, s.k + 32.0,
                                                    rooflab::kFp32Accumulation, rooflab::kUnitFp16, 0x1p-25);
  auto r = rooflab::all_within<float, float>(to_float(dy.download()), std::vector<float>(ref.begin(), ref.end()), allowed);
  if (!r) {
    r << " (" << what << ", n = " << s.n << ", k = " << s.k << ", group " << group << (same ? ", positive inputs" : "")
      << rooflab::placement_note(at) << ")";
  }
  return r;
}

// k a multiple of the group; one row; a k that leaves most lanes idle on the last step; rows that leave the
// last warps of the grid short; a long row. 1030 rows: more than the grid's warps take in one pass (4 rows
// each) on a GPU of 2 SMs (the CPU backend's reverse order), so the grid-stride loop goes round.
constexpr Shape kInt8Shapes[] = {{1, 32}, {7, 64}, {33, 96}, {65, 544}, {1030, 1024}, {3, 4128}};
constexpr Shape kInt4Shapes32[] = {{1, 32}, {7, 64}, {33, 96}, {65, 544}, {1030, 1024}, {3, 4128}};
constexpr Shape kInt4Shapes128[] = {{1, 128}, {7, 256}, {33, 384}, {65, 1152}, {1030, 1024}, {3, 4224}};
// Every other shape has its arrays 16 bytes past a multiple of 32 (aligned as kernels.hpp promises, no more).
using rooflab::alternate_placement;

}  // namespace

ROOFLAB_TEST(Lab08Kernels, QuantizeInt8) {
  ROOFLAB_REQUIRE_GPU();
  // 129 x 1024: 4128 groups (one per thread), more than the grid's 4096 threads on a GPU of 2 SMs (the CPU
  // backend's reverse order), so the grid-stride loop goes round.
  const Shape shapes[] = {{1, 32}, {3, 96}, {129, 1024}};
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    EXPECT_TRUE(check_quantize(shapes[i], lab08::kInt8Group, 8, alternate_placement(i)));
    EXPECT_TRUE(check_dequantize(shapes[i], lab08::kInt8Group, 8, alternate_placement(i)));
  }
}

ROOFLAB_TEST(Lab08Kernels, QuantizeInt4) {
  ROOFLAB_REQUIRE_GPU();
  for (const int group : {32, 128}) {
    const Shape shapes[] = {{1, group}, {5, 2 * group}, {129, 32 * group}};  // 4128 groups, as for int8
    for (std::size_t i = 0; i < std::size(shapes); ++i) {
      EXPECT_TRUE(check_quantize(shapes[i], group, 4, alternate_placement(i)));
      EXPECT_TRUE(check_dequantize(shapes[i], group, 4, alternate_placement(i)));
    }
  }
}

ROOFLAB_TEST(Lab08Kernels, GemvInt8) {
  ROOFLAB_REQUIRE_GPU();
  for (std::size_t i = 0; i < std::size(kInt8Shapes); ++i) {
    EXPECT_TRUE(check_gemv(kInt8Shapes[i], lab08::kInt8Group, 8, Inputs::random, alternate_placement(i)));
  }
  EXPECT_TRUE(check_gemv(kSameSigned, lab08::kInt8Group, 8, Inputs::same_signed));
}

ROOFLAB_TEST(Lab08Kernels, GemvInt4) {
  ROOFLAB_REQUIRE_GPU();
  for (std::size_t i = 0; i < std::size(kInt4Shapes32); ++i) {
    EXPECT_TRUE(check_gemv(kInt4Shapes32[i], 32, 4, Inputs::random, alternate_placement(i)));
    EXPECT_TRUE(check_gemv(kInt4Shapes128[i], 128, 4, Inputs::random, alternate_placement(i)));
  }
  for (const int group : {32, 128}) EXPECT_TRUE(check_gemv(kSameSigned, group, 4, Inputs::same_signed));
}
