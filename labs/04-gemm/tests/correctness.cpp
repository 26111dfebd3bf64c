// Lab 04 graders: every rung computes C = alpha A B + beta C for shapes that break GEMM code (1 x 1 x 1, odd
// tails of every tile, a single row or column, K = 1, aligned shapes with tails for the float4 and 8-half
// paths, exact multiples of every tile, pointers off 16 bytes one operand at a time),
// against the double-precision reference with the K-dependent tolerance, on the GPU ("gpu") or the CPU
// backend ("emu", sizes scaled down for the CPU). A second pass with beta = 0 on a NaN-poisoned C checks that
// every element is written and that C is not read.
#include "kernels.hpp"

#include <rooflab/testing/accumulation.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/gemm_reference.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>

#include <exception>
#include <string>
#include <vector>

namespace {

using rooflab::grading::all_close;

// The shapes, 1 x 4096 x 512 and 4096 x 1 x 512 scaled down to 1 x 512 x 96 and 512 x 1 x 96 for the
// CPU; 36 x 132 x 20 and 132 x 68 x 36 take the float4 paths (N and K multiples of 4, not of 8) with tails in
// all three dimensions, kVecShape the float4 and the 8-half paths (multiples of 8) with tails in all three;
// 128 x 128 x 32 is an exact multiple of every tile (32 x 32, 128 x 128, BK 8, 16 and 32, WMMA's 16): no tail.
constexpr lab04::Shape kVecShape{36, 136, 40};
constexpr lab04::Shape kShapes[] = {{1, 1, 1},     {17, 33, 65},  {127, 129, 131}, {1, 512, 96}, {512, 1, 96},
                                    {33, 17, 1},   {36, 132, 20}, {132, 68, 36},   kVecShape,    {128, 128, 32}};
constexpr float kAlpha = 0.75f, kBeta = -0.5f;

template <typename In>
std::vector<In> convert(const std::vector<float>& v) {
  std::vector<In> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<In>(v[i]);
  return out;
}

// The shape where an FP16 or BF16 accumulator loses visible bits (rooflab/testing/accumulation.hpp): positive A
// whose rows start with an eighth of large values, positive B, a long K.
constexpr lab04::Shape kSameSigned{48, 40, 1024};

// Pointers one element past a 16-byte boundary: the float4 and 8-half paths must fall back, as a GPU faults on
// a misaligned vector access (so does the CPU backend, whose aligned SSE moves fault). Each operand on its
// own, so that every one of the launcher's alignment checks is the one that sends it to the fallback.
struct Offsets {
  bool a = false, b = false, c = false;
  bool any() const { return a || b || c; }
  std::string describe() const {  // "A, B, C one element past a 16-byte boundary"
    std::string who;
    if (a) who += "A";
    if (b) who += who.empty() ? "B" : ", B";
    if (c) who += who.empty() ? "C" : ", C";
    return who + " one element past a 16-byte boundary";
  }
};
template <typename T>
struct Offset {
  rooflab::DeviceBuffer<T> buffer;
  std::size_t at;
  T* data() { return buffer.data() + at; }
};
template <typename T>
Offset<T> place(const std::vector<T>& host, bool offset) {
  std::vector<T> padded(offset ? 1 : 0);
  padded.insert(padded.end(), host.begin(), host.end());
  return {rooflab::DeviceBuffer<T>(std::span<const T>(padded)), offset ? std::size_t{1} : std::size_t{0}};
}

template <typename In, typename Launch>
::testing::AssertionResult check(const char* name, Launch launch, const lab04::Shape& s, bool beta_zero,
                                 bool same_signed = false, Offsets offset = {}) {
  const std::size_t m = s.m, n = s.n, k = s.k;
  const auto seed = rooflab::test_seed() + m * 7919 + n * 31 + k;
  const auto a = convert<In>(same_signed ? rooflab::decaying_positive_rows(m, k, seed, k / 8)
                                         : rooflab::random_floats(m * k, seed));
  const auto b = convert<In>(same_signed ? rooflab::random_floats(k * n, seed + 1, 0.5f, 1.0f)
                                         : rooflab::random_floats(k * n, seed + 1));
  const auto c0 = rooflab::random_floats(m * n, seed + 2);
  auto da = place(a, offset.a), db = place(b, offset.b);
  const float beta = beta_zero ? 0.0f : kBeta;
  auto dc = place(c0, offset.c);
  if (beta_zero) {
    dc.buffer.poison();  // NaN: an element left unwritten, or C read although beta is 0, fails
  }
  const std::string where = fmt::format("{} at {} x {} x {}, alpha {}, beta {}{}", name, m, n, k, kAlpha, beta,
                                        offset.any() ? ", " + offset.describe() : "");
  const rooflab::KernelWatch watch;
  try {  // a misaligned vector access faults (an exception here): say at which shape and offsets, and go on
    launch(static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), kAlpha, da.data(), db.data(), beta, dc.data());
    rooflab::synchronize_given(nullptr);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << where << ": " << e.what();
  }
  if (auto ran = watch.kernels_did_the_work(where); !ran) return ran;
  const auto want = rooflab::gemm_reference<float>(m, n, k, kAlpha, std::span<const In>(a), std::span<const In>(b),
                                                   beta, std::span<const float>(c0));
  // FP32 accumulation's bound per element (rooflab/testing/accumulation.hpp): gamma_(K+2) times the sum of the
  // terms' magnitudes, |alpha| |A| |B| + |beta| |C|, which the reference computes as a GEMM of magnitudes.
  const auto magnitude = [](const auto& v) {
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = std::abs(static_cast<float>(v[i]));
    return out;
  };
  const auto abs_a = magnitude(a), abs_b = magnitude(b), abs_c = magnitude(c0);
  const auto abs_sums = rooflab::gemm_reference<double>(m, n, k, std::abs(kAlpha), std::span<const float>(abs_a),
                                                        std::span<const float>(abs_b), std::abs(beta),
                                                        std::span<const float>(abs_c));
  const std::vector<double> want_d(want.begin(), want.end());
  const auto allowed = rooflab::accumulation_bounds(abs_sums, want_d, static_cast<double>(k + 2), rooflab::kFp32Accumulation,
                                                    rooflab::kUnitFp32);
  auto got = dc.buffer.download();
  got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(dc.at));
  auto r = rooflab::all_within<float, float>(got, want, allowed);
  if (!r) r << " (" << where << (same_signed ? ", positive inputs" : "") << ")";
  return r;
}

template <typename In, typename Launch>
void check_all(const char* name, Launch launch) {
  for (const auto& s : kShapes) {
    for (bool beta_zero : {false, true}) EXPECT_TRUE(check<In>(name, launch, s, beta_zero));
  }
  EXPECT_TRUE(check<In>(name, launch, kSameSigned, true, true));
  // A shape whose N and K would take the vector paths, with every pointer offset by one element, then only B
  // (A aligned), then only C (A and B aligned; rung 7 reads C element by element whatever its alignment), the
  // last with beta = 0 on a poisoned C: the fallback's stores must not read it either.
  EXPECT_TRUE(check<In>(name, launch, kVecShape, false, false, {.a = true, .b = true, .c = true}));
  EXPECT_TRUE(check<In>(name, launch, kVecShape, false, false, {.b = true}));
  EXPECT_TRUE(check<In>(name, launch, kVecShape, true, false, {.c = true}));
}

void check_rung(std::string_view id) {
  for (const auto& r : lab04::kSimtRungs) {
    if (r.id != id) continue;
    check_all<float>(std::string(r.id).c_str(), [&](int m, int n, int k, float alpha, const float* a, const float* b,
                                                   float beta, float* c) { r.launch(m, n, k, alpha, a, b, beta, c, nullptr); });
    return;
  }
  FAIL() << "no rung " << id << " in kSimtRungs";
}

}  // namespace

ROOFLAB_TEST(Lab04Kernels, Naive) {
  ROOFLAB_REQUIRE_GPU();
  check_rung("naive");
}
ROOFLAB_TEST(Lab04Kernels, Coalesced) {
  ROOFLAB_REQUIRE_GPU();
  check_rung("coalesced");
}
ROOFLAB_TEST(Lab04Kernels, SmemTiled) {
  ROOFLAB_REQUIRE_GPU();
  check_rung("smem");
}
ROOFLAB_TEST(Lab04Kernels, Blocktile2d) {
  ROOFLAB_REQUIRE_GPU();
  check_rung("blocktile");
}
ROOFLAB_TEST(Lab04Kernels, Vectorized) {
  ROOFLAB_REQUIRE_GPU();
  check_rung("vectorized");
}
ROOFLAB_TEST(Lab04Kernels, Warptile) {
  ROOFLAB_REQUIRE_GPU();
  check_rung("warptile");
}
ROOFLAB_TEST(Lab04Kernels, WmmaFp16) {
  ROOFLAB_REQUIRE_GPU();
  check_all<__half>("wmma", [](int m, int n, int k, float alpha, const __half* a, const __half* b, float beta, float* c) {
    lab04::hgemm_wmma(m, n, k, alpha, a, b, beta, c, nullptr);
  });
}
