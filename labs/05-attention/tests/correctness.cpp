// Lab 05 graders: the softmax, the naive path and both Flash kernels against a double-precision reference,
// on the GPU ("gpu") or the CPU backend ("emu", under three thread schedules). Lengths 1, 7, 64, 100 and
// 257 everywhere (not multiples of any tile), 1024 on the GPU; head dims 64 and 128; causal on and off;
// several heads per launch; a head dim neither supports must throw. Scores of magnitude 1000 must give no inf
// or NaN. The memory test runs the tensor-core kernel at a length whose score matrix does not fit (GPU) or
// would show (CPU backend) and checks that its extra device memory is O(L).
#include "kernels.hpp"
#include "naive.hpp"

#include <rooflab/testing/accumulation.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_memory.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/half.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using rooflab::grading::all_close;

using rooflab::to_float;
using rooflab::to_half;

struct Case {
  int heads, len, head_dim;
  bool causal;
};
std::string describe(const Case& c, float scale) {
  return fmt::format("{} heads, L = {}, head dim {}, {}, scale {:.4g}; Q, K, V and O are [head][L][head dim]", c.heads,
                     c.len, c.head_dim, c.causal ? "causal" : "not causal", scale);
}

// The shapes every kernel test covers: every length at both head dims, the mask on and off, more than one
// head. The CPU backend runs the small lengths (a CUDA thread costs about a microsecond there), the GPU all.
std::vector<Case> cases() {
  std::vector<Case> out;
#if defined(ROOFLAB_EMU)
  out = {{2, 1, 64, false}, {3, 7, 128, true}, {2, 64, 64, true}, {2, 100, 128, false}, {2, 257, 64, true},
         {1, 257, 128, false}, {2, 100, 64, false}, {1, 64, 128, true}};
#else
  for (const int len : {1, 7, 64, 100, 257, 1024}) {
    for (const int d : {64, 128}) {
      for (const bool causal : {false, true}) out.push_back({3, len, d, causal});
    }
  }
#endif
  return out;
}

// Random Q, K and V (FP16-representable, so both versions see the same numbers) and the reference output
// and log-sum-exp, in double, head by head.
struct Problem {
  Problem(const Case& c, float s, std::uint64_t seed) : shape(c), scale(s) {
    const std::size_t n = static_cast<std::size_t>(c.heads) * c.len * c.head_dim;
    q = to_float(to_half(rooflab::random_floats(n, seed)));
    k = to_float(to_half(rooflab::random_floats(n, seed + 1)));
    v = to_float(to_half(rooflab::random_floats(n, seed + 2)));
    o.resize(n);
    lse.resize(static_cast<std::size_t>(c.heads) * c.len);
    std::vector<double> ho(static_cast<std::size_t>(c.len) * c.head_dim), hl(static_cast<std::size_t>(c.len));
    for (int h = 0; h < c.heads; ++h) {
      const std::size_t at = static_cast<std::size_t>(h) * c.len * c.head_dim;
      lab05::attention_ref(q.data() + at, k.data() + at, v.data() + at, c.len, c.head_dim, scale, c.causal, ho.data(),
                           hl.data());
      for (std::size_t i = 0; i < ho.size(); ++i) o[at + i] = static_cast<float>(ho[i]);
      for (int i = 0; i < c.len; ++i) lse[static_cast<std::size_t>(h) * c.len + i] = static_cast<float>(hl[i]);
    }
  }
  Case shape;
  float scale;
  std::vector<float> q, k, v, o, lse;
};

// How close a flash kernel must come to the reference: output, log-sum-exp.
struct Tolerances {
  rooflab::Tolerance o, lse;
};
// Scores of magnitude 1000 carry FP32 rounding of about 1e-4 x 1000 into the exponent: the output is
// that much less well conditioned, whatever the kernel (the test is about inf and NaN, and the right row).
constexpr Tolerances kLargeLogits{{5e-3, 1e-2}, {1e-2, 1e-5}};

// Flash v1 (FP32) on one case: O and the log-sum-exp. FP32 sums of up to 1024 terms, exp() of the
// hardware's accuracy.
::testing::AssertionResult check_fp32(const Problem& p, Tolerances tol = {{2e-5, 2e-4}, {1e-4, 1e-5}}) {
  const Case& c = p.shape;
  rooflab::DeviceBuffer<float> q{std::span<const float>(p.q)}, k{std::span<const float>(p.k)},
      v{std::span<const float>(p.v)}, o(p.o.size()), lse(p.lse.size());
  o.poison();
  lse.poison();
  const rooflab::KernelWatch watch;
  lab05::flash_attention_fp32(q.data(), k.data(), v.data(), o.data(), lse.data(), c.heads, c.len, c.head_dim, p.scale,
                              c.causal, nullptr);
  rooflab::synchronize_given(nullptr);
  if (auto ran = watch.kernels_did_the_work("flash_attention_fp32"); !ran) return ran;
  auto r = all_close<float, float>(o.download(), p.o, tol.o);
  if (!r) return r << " (flash v1 output, " << describe(c, p.scale) << ")";
  r = all_close<float, float>(lse.download(), p.lse, tol.lse);
  if (!r) r << " (flash v1 log-sum-exp, [head][L], " << describe(c, p.scale) << ")";
  return r;
}

// Flash v2 (FP16 in and out, FP32 accumulation) on one case: FP16 output (11 significant bits) of P rounded
// to FP16 times V, accumulated in FP32.
::testing::AssertionResult check_fp16(const Problem& p, Tolerances tol = {{2e-3, 1e-2}, {1e-3, 1e-4}}) {
  const Case& c = p.shape;
  const auto hq = to_half(p.q), hk = to_half(p.k), hv = to_half(p.v);
  rooflab::DeviceBuffer<__half> q{std::span<const __half>(hq)}, k{std::span<const __half>(hk)},
      v{std::span<const __half>(hv)}, o(p.o.size());
  rooflab::DeviceBuffer<float> lse(p.lse.size());
  o.poison();
  lse.poison();
  const rooflab::KernelWatch watch;
  lab05::flash_attention_fp16(q.data(), k.data(), v.data(), o.data(), lse.data(), c.heads, c.len, c.head_dim, p.scale,
                              c.causal, nullptr);
  rooflab::synchronize_given(nullptr);
  if (auto ran = watch.kernels_did_the_work("flash_attention_fp16"); !ran) return ran;
  auto r = all_close<float, float>(to_float(o.download()), p.o, tol.o);
  if (!r) return r << " (flash v2 output, " << describe(c, p.scale) << ")";
  r = all_close<float, float>(lse.download(), p.lse, tol.lse);
  if (!r) r << " (flash v2 log-sum-exp, [head][L], " << describe(c, p.scale) << ")";
  return r;
}

float default_scale(int head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

// A head dim the flash kernels do not support (64 and 128 only; 100 is a multiple of neither the tensor cores'
// 16 nor a warp's 32 columns): kernels.hpp and the handout ("throw std::invalid_argument for a head dim you do not
// support") promise the exception.
template <typename T, typename Launch>
void expect_unsupported_head_dim_throws(const char* name, Launch launch) {
  constexpr int kHeads = 1, kLen = 4, kHeadDim = 100;
  constexpr std::size_t n = std::size_t{kHeads} * kLen * kHeadDim;
  rooflab::DeviceBuffer<T> q(n), k(n), v(n), o(n);
  rooflab::DeviceBuffer<float> lse(std::size_t{kHeads} * kLen);
  EXPECT_THROW(launch(q.data(), k.data(), v.data(), o.data(), lse.data(), kHeads, kLen, kHeadDim, default_scale(kHeadDim),
                      false, nullptr),
               std::invalid_argument)
      << name << " at head dim " << kHeadDim << " (64 or 128 only): kernels.hpp says it throws std::invalid_argument";
}

// ---- the softmax's error bound (rooflab/testing/accumulation.hpp) ----
// The relative error FP32 allows in p_j = exp(x_j - m) / l, for a row of `seen` scores with |scale s| <= reach:
// each exp (a fast exp is off by 2 + 1.2 |x| ulps), its argument's roundings (3 ulps of values up to 2 reach),
// the sum l (gamma_seen, the same two per term, and its rescales as the running max grows: 3 ulps each and
// 1.2 ulps per unit the max rises), and the division. About FP16's own rounding at worst, and far below what
// an FP16 running sum loses.
double softmax_relative_error(std::size_t seen, double reach) {
  const double ulp = rooflab::kFp32Accumulation, n = static_cast<double>(seen);
  const double per_term = (2 + 2.4 * reach) * ulp + 6 * reach * ulp;
  const double sum = rooflab::gamma_k(n, ulp) + per_term + (3 * n + 2.4 * reach) * ulp;
  return per_term + sum + 2 * rooflab::kUnitFp32;
}

// Scores 0 (one sentinel magnitude) means this row kind: rows whose first eighth scores in [0, 1/4) and the rest
// in [-7, -6.5): every exp is positive, and once a running sum holds the head, each later exp is under half
// an FP16 ulp of it, so an FP16 sum drops a fifth of the row's mass while FP32 keeps it.
constexpr float kDecaying = 0.0f;
std::vector<float> decaying_scores(std::size_t n, int len) {
  auto s = rooflab::random_floats(n, rooflab::test_seed() + 5150, -7.0f, -6.5f);
  const auto head = rooflab::random_floats(n, rooflab::test_seed() + 5151, 0.0f, 0.25f, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(len)) < len / 8) s[i] = head[i];
  }
  return s;
}

// Scores of magnitude about 1000: exp() of one without the running max subtracted is inf in FP32.
float large_logit_scale(int head_dim) { return 1000.0f / std::sqrt(static_cast<float>(head_dim)); }

}  // namespace

ROOFLAB_TEST(Lab05Kernels, StableSoftmax) {
  ROOFLAB_REQUIRE_GPU();
  // Rows of scores: short and ragged rows (scalar path), multiples of 8 (16-byte path), the mask on and off,
  // and rows whose scores reach +-1000 (scale 1: exp(1000) overflows FP32, so the max must be subtracted).
  // Rows of a multiple of 8 past 4096 (a few of them, `count`: every head's len rows would be 16 M scores): the
  // reference holds rows of up to 4096 in registers, so these are the longer rows' 16-byte path.
  struct Rows {
    int heads, len;
    bool causal;
    float scale, magnitude;
    int count = 0;  // rows, when not heads x len
  };
  const std::vector<Rows> all{{3, 1, false, 0.125f, 8}, {2, 7, true, 0.125f, 8},  {2, 100, false, 0.3f, 8},
                              {2, 64, true, 0.25f, 8},  {1, 257, true, 1.0f, 4},  {2, 1024, false, 0.125f, 30},
                              {2, 200, false, 1.0f, 1000}, {1, 128, true, 1.0f, 1000}, {1, 2048, false, 1.0f, kDecaying},
                              {1, 4104, false, 0.125f, 8, 8}};
  for (const auto& r : all) {
    const int rows = r.count > 0 ? r.count : r.heads * r.len;
    const std::size_t n = static_cast<std::size_t>(rows) * r.len;
    const auto s = to_half(r.magnitude == kDecaying ? decaying_scores(n, r.len)
                                                    : rooflab::random_floats(n, rooflab::test_seed() + static_cast<std::uint64_t>(r.len),
                                                                             -r.magnitude, r.magnitude));
    std::vector<float> want(n);
    std::vector<double> allowed(n);
    for (std::size_t row = 0; row < n / r.len; ++row) {
      const std::size_t seen = r.causal ? row % r.len + 1 : static_cast<std::size_t>(r.len);
      double m = -INFINITY, sum = 0, reach = 0;
      for (std::size_t j = 0; j < seen; ++j) m = std::max(m, static_cast<double>(r.scale) * __half2float(s[row * r.len + j]));
      for (std::size_t j = 0; j < seen; ++j) sum += std::exp(static_cast<double>(r.scale) * __half2float(s[row * r.len + j]) - m);
      for (std::size_t j = 0; j < seen; ++j) reach = std::max(reach, std::abs(static_cast<double>(r.scale) * __half2float(s[row * r.len + j])));
      const double rel = softmax_relative_error(seen, reach);
      for (std::size_t j = 0; j < static_cast<std::size_t>(r.len); ++j) {
        const double pj = j < seen ? std::exp(static_cast<double>(r.scale) * __half2float(s[row * r.len + j]) - m) / sum : 0.0;
        want[row * r.len + j] = static_cast<float>(pj);
        allowed[row * r.len + j] = rooflab::accumulation_bound(0, 0, pj, 0, rooflab::kUnitFp16, 0x1p-25) + rel * pj * (1 + rooflab::kUnitFp16);
      }
    }
    // In place for the ragged rows (naive.hpp's use), into a separate buffer for the others.
    const bool in_place = r.len % 8 != 0;
    rooflab::DeviceBuffer<__half> ds{std::span<const __half>(s)}, dp(n);
    dp.poison();
    __half* out = in_place ? ds.data() : dp.data();
    const rooflab::KernelWatch watch;
    lab05::softmax_rows(ds.data(), out, rows, r.len, r.scale, r.causal, nullptr);
    rooflab::synchronize_given(nullptr);
    EXPECT_TRUE(watch.kernels_did_the_work("softmax_rows"));
    const auto got = to_float((in_place ? ds : dp).download());
    EXPECT_TRUE((rooflab::all_within<float, float>(got, want, allowed)))
        << "softmax of " << rows << " rows of " << r.len << (r.causal ? ", causal" : "") << ", scale "
        << r.scale << ", scores up to " << r.magnitude << (in_place ? ", in place" : "") << " (row r is query r % len)";
  }
}

ROOFLAB_TEST(Lab05Kernels, NaivePathMatchesTheReference) {
  ROOFLAB_REQUIRE_GPU();
  // The whole naive path (naive.hpp: cuBLAS, your softmax in place over the scores, cuBLAS) at FP16.
  const rooflab::CublasHandle handle;
  for (const Case& c : std::vector<Case>{{2, 7, 64, true}, {2, 100, 128, false}, {1, 257, 64, true}}) {
    const Problem p(c, default_scale(c.head_dim), rooflab::test_seed() + 40 + static_cast<std::uint64_t>(c.len));
    const auto hq = to_half(p.q), hk = to_half(p.k), hv = to_half(p.v);
    rooflab::DeviceBuffer<__half> q{std::span<const __half>(hq)}, k{std::span<const __half>(hk)},
        v{std::span<const __half>(hv)}, o(p.o.size()), scores(lab05::naive_scores_bytes(c.heads, c.len) / sizeof(__half));
    o.poison();
    const rooflab::KernelWatch watch;
    lab05::naive_attention(handle.get(), q.data(), k.data(), v.data(), scores.data(), o.data(), c.heads, c.len,
                           c.head_dim, p.scale, c.causal, nullptr);
    rooflab::synchronize_given(nullptr);
    EXPECT_TRUE(watch.kernels_did_the_work("the naive path's softmax"));
    // S and P are rounded to FP16 on the way: a little looser than flash v2.
    EXPECT_TRUE((all_close<float, float>(to_float(o.download()), p.o, {4e-3, 2e-2}))) << "naive path, " << describe(c, p.scale);
  }
}

ROOFLAB_TEST(Lab05Kernels, FlashFp32) {
  ROOFLAB_REQUIRE_GPU();
  for (const Case& c : cases()) {
    EXPECT_TRUE(check_fp32(Problem(c, default_scale(c.head_dim), rooflab::test_seed() + static_cast<std::uint64_t>(c.len))));
  }
  expect_unsupported_head_dim_throws<float>("flash_attention_fp32", lab05::flash_attention_fp32);
}

ROOFLAB_TEST(Lab05Kernels, FlashFp16TensorCores) {
  ROOFLAB_REQUIRE_GPU();
  for (const Case& c : cases()) {
    EXPECT_TRUE(check_fp16(Problem(c, default_scale(c.head_dim), rooflab::test_seed() + 7 + static_cast<std::uint64_t>(c.len))));
  }
  expect_unsupported_head_dim_throws<__half>("flash_attention_fp16", lab05::flash_attention_fp16);
}

ROOFLAB_TEST(Lab05Kernels, LargeLogitsStayFinite) {
  ROOFLAB_REQUIRE_GPU();
  // all_close fails on any inf or NaN, and on any output that is not the reference's.
  for (const Case& c : std::vector<Case>{{2, 100, 64, false}, {1, 70, 128, true}}) {
    const Problem p(c, large_logit_scale(c.head_dim), rooflab::test_seed() + 90 + static_cast<std::uint64_t>(c.len));
    EXPECT_TRUE(check_fp32(p, kLargeLogits)) << "scores reach about 1000: subtract the running max before exp()";
    EXPECT_TRUE(check_fp16(p, kLargeLogits)) << "scores reach about 1000: subtract the running max before exp()";
  }
}

ROOFLAB_TEST(Lab05Kernels, FlashMemoryIsLinearInLength) {
  ROOFLAB_REQUIRE_GPU();
  // One head, head dim 64, causal. On a GPU: the smallest power of two from 131072 up whose FP16 score
  // matrix (L x L x 2 bytes) is larger than the GPU's memory, so a kernel that keeps the scores cannot run
  // at all. On the CPU backend: L = 2048, where an L x L FP16 matrix (8 MiB) is well above the allowance.
  // The allowance is O(L): 1 MiB plus 2 x the bytes of Q, K, V and O together, 3 MiB at L = 2048 (with 8 x,
  // 9 MiB, a kernel that kept FP16 scores passed here); DeviceMemoryWatch measures the peak of what the
  // launcher allocates (rooflab/testing/device_memory.hpp says how).
  constexpr int kHeadDim = 64;
#if defined(ROOFLAB_EMU)
  const int len = 2048;
#else
  std::size_t free_bytes = 0, total = 0;
  ROOFLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  int len = 131072;
  while (static_cast<double>(len) * len * 2 <= static_cast<double>(total)) len *= 2;
#endif
  const std::size_t n = static_cast<std::size_t>(len) * kHeadDim;
  const auto hq = to_half(rooflab::random_floats(n, rooflab::test_seed() + 100));
  const auto hk = to_half(rooflab::random_floats(n, rooflab::test_seed() + 101));
  const auto hv = to_half(rooflab::random_floats(n, rooflab::test_seed() + 102));
  rooflab::DeviceBuffer<__half> q{std::span<const __half>(hq)}, k{std::span<const __half>(hk)},
      v{std::span<const __half>(hv)}, o(n);
  rooflab::DeviceBuffer<float> lse(static_cast<std::size_t>(len));
  o.poison();
  const float scale = default_scale(kHeadDim);
  const double allowance = 1024.0 * 1024.0 + 2.0 * 4.0 * static_cast<double>(n) * sizeof(__half);
  const double scores = static_cast<double>(len) * len * sizeof(__half);
  std::size_t extra = 0;
  {
    rooflab::DeviceMemoryWatch watch;
    lab05::flash_attention_fp16(q.data(), k.data(), v.data(), o.data(), lse.data(), 1, len, kHeadDim, scale, true, nullptr);
    rooflab::synchronize_given(nullptr);
    extra = watch.peak_extra_bytes();
  }
  rooflab::grading::note(fmt::format("flash v2 at L = {}: {:.2f} MiB of extra device memory (allowance {:.2f} MiB; "
                                     "an L x L FP16 score matrix is {:.1f} MiB)",
                                     len, static_cast<double>(extra) / (1 << 20), allowance / (1 << 20), scores / (1 << 20)));
  EXPECT_LE(static_cast<double>(extra), allowance)
      << "flash v2 at L = " << len << " took " << extra << " bytes of device memory beyond its inputs and outputs: "
      << "the scores must stay in shared memory and registers (an L x L FP16 matrix is " << scores << " bytes)";
  // The output is right: a few rows, first, middle and last (the reference costs L x 64 per row).
  const auto got_o = to_float(o.download());
  const auto got_lse = lse.download();
  const auto qf = to_float(hq), kf = to_float(hk), vf = to_float(hv);
  std::vector<float> want_o, want_lse, sel_o, sel_lse;
  for (const std::size_t row : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(len) / 2 + 3,
                                static_cast<std::size_t>(len) - 1}) {
    std::vector<double> ro(kHeadDim), rl(1);
    lab05::attention_ref(qf.data(), kf.data(), vf.data(), static_cast<std::size_t>(len), kHeadDim, scale, true, ro.data(),
                         rl.data(), row, 1);
    for (int d = 0; d < kHeadDim; ++d) {
      want_o.push_back(static_cast<float>(ro[static_cast<std::size_t>(d)]));
      sel_o.push_back(got_o[row * kHeadDim + static_cast<std::size_t>(d)]);
    }
    want_lse.push_back(static_cast<float>(rl[0]));
    sel_lse.push_back(got_lse[row]);
  }
  EXPECT_TRUE((all_close<float, float>(sel_o, want_o, {2e-3, 1e-2}))) << "flash v2 at L = " << len << ": rows 0, 1, L/2 + 3, L - 1";
  EXPECT_TRUE((all_close<float, float>(sel_lse, want_lse, {1e-3, 1e-4}))) << "flash v2 at L = " << len << ": log-sum-exp";
}
