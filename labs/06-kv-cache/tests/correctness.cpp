// Lab 06 graders: the paged append and decode attention are right for scattered blocks, lengths that are
// not multiples of the block size, mixed batches and GQA ratios 1, 2, 4 and 8, on the GPU ("gpu") or the CPU
// backend ("emu"); the launcher throws on a GQA ratio or head dim it has no instance for. The reference is
// built from a contiguous cache, so a kernel that reads the logical block where the physical one is meant,
// or stops at the last full block, cannot match it.
#include "kernels.hpp"

#include <rooflab/testing/accumulation.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/half.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using rooflab::grading::all_close;

using rooflab::to_float;
using rooflab::to_half;

std::string describe(const std::vector<int>& lengths) { return fmt::format("lengths {}", fmt::join(lengths, " ")); }

// A batch of sequences in a paged cache: block tables that hand out the pool's blocks in a shuffled order
// (with spare blocks nobody owns), and random FP16 contents everywhere, owned or not.
struct Cache {
  // `positive`: K and V in (0, 1), the same-signed shape where cheaper accumulation loses most.
  Cache(const std::vector<int>& lens, int kv_heads, int head_dim, std::uint64_t seed, bool positive = false)
      : lengths(lens) {
    layout.kv_heads = kv_heads;
    layout.head_dim = head_dim;
    for (const int len : lengths) layout.max_blocks = std::max(layout.max_blocks, (len + lab06::kBlockTokens - 1) / lab06::kBlockTokens);
    const int batch = static_cast<int>(lengths.size());
    blocks = batch * layout.max_blocks + 3;  // spares: a table entry past a sequence's end points at garbage
    std::vector<int> order(static_cast<std::size_t>(blocks));
    std::iota(order.begin(), order.end(), 0);
    rooflab::Rng rng(seed);
    for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    table = order;
    table.resize(static_cast<std::size_t>(batch) * layout.max_blocks);
    const std::size_t elems = static_cast<std::size_t>(blocks) * lab06::kBlockTokens * kv_heads * head_dim;
    const float lo = positive ? 0.0f : -1.0f;
    k = to_half(rooflab::random_floats(elems, seed + 1, lo, 1.0f));
    v = to_half(rooflab::random_floats(elems, seed + 2, lo, 1.0f));
  }
  int batch() const { return static_cast<int>(lengths.size()); }
  // Sequence b's token p, KV head h: where it lives in the pools.
  std::size_t at(int b, int p, int h) const {
    const int block = table[static_cast<std::size_t>(b) * layout.max_blocks + p / lab06::kBlockTokens];
    return lab06::pool_index(layout, block, p % lab06::kBlockTokens, h, 0);
  }

  std::vector<int> lengths;
  lab06::PagedCacheLayout layout;
  int blocks = 0;
  std::vector<int> table;
  std::vector<__half> k, v;
};

// ---- decode attention's error bound (rooflab/testing/accumulation.hpp) ----
// What FP32 allows in o_d = sum_p e_p v_pd / l, e_p = exp(s_p - m), for one query over `len` cached rows: each
// weight's relative error (its score's dot product over head_dim terms and the scale: gamma times scale
// sum |q k|; a fast exp, 2 + 1.2 |x| ulps; 3 ulps of its argument, up to 2 reach), counted twice (in e_p
// and in l), the sum over len tokens (gamma_len) and its rescales as the running max grows (3 ulps each,
// 1.2 ulps per unit the max rises), and the division; all of it times sum_p e_p |v_pd| / l, plus the FP16
// output's rounding. `allowed` gets head_dim values.
void decode_allowances(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int len,
                       int head_dim, float scale, const std::vector<double>& o, double* allowed) {
  const double ulp = rooflab::kFp32Accumulation;
  std::vector<double> s(static_cast<std::size_t>(len));
  double m = -INFINITY, reach = 0, dot_error = 0;
  for (int p = 0; p < len; ++p) {
    double dot = 0, magnitude = 0;
    for (int d = 0; d < head_dim; ++d) {
      const double t = static_cast<double>(q[d]) * k[static_cast<std::size_t>(p) * head_dim + d];
      dot += t;
      magnitude += std::abs(t);
    }
    s[p] = scale * dot;
    m = std::max(m, s[p]);
    reach = std::max(reach, std::abs(s[p]));
    dot_error = std::max(dot_error, rooflab::gamma_k(head_dim + 2, ulp) * scale * magnitude);
  }
  double l = 0;
  for (int p = 0; p < len; ++p) l += std::exp(s[p] - m);
  const double n = len, per_weight = (2 + 2.4 * reach) * ulp + 6 * reach * ulp + dot_error;
  const double rel = 2 * per_weight + rooflab::gamma_k(n, ulp) + (3 * n + 2.4 * reach) * ulp + 2 * rooflab::kUnitFp32;
  for (int d = 0; d < head_dim; ++d) {
    double weighted = 0;
    for (int p = 0; p < len; ++p) weighted += std::exp(s[p] - m) * std::abs(v[static_cast<std::size_t>(p) * head_dim + d]);
    allowed[d] = rooflab::accumulation_bound(0, 0, o[static_cast<std::size_t>(d)], 0, rooflab::kUnitFp16, 0x1p-25) +
                 rel * weighted / l * (1 + rooflab::kUnitFp16);
  }
}

// Decode attention over a batch against the reference from the contiguous rows the block tables point at.
// `sharp` scores the softmax at scale 40: the largest scores are in the hundreds, so exp() of a score without
// the running maximum subtracted overflows FP32.
// `positive`: positive queries, keys and values (every score and every product of the output's sum the same sign).
// `at`: where every array starts (kernels.hpp promises 16-byte alignment, no more).
::testing::AssertionResult check_decode(const std::vector<int>& lengths, int kv_heads, int group, int head_dim,
                                        bool sharp = false, bool positive = false,
                                        rooflab::Placement at = rooflab::Placement::allocation_start) {
  const Cache c(lengths, kv_heads, head_dim, rooflab::test_seed() + static_cast<std::uint64_t>(group * 131 + head_dim),
                positive);
  const int heads = kv_heads * group, batch = c.batch();
  const int max_len = *std::max_element(lengths.begin(), lengths.end());
  // A scale larger than 1/sqrt(d) makes the softmax peaky, so every wrongly read row shows in the output.
  const float scale = sharp ? 40.0f : 3.0f / std::sqrt(static_cast<float>(head_dim));
  const auto q = to_half(rooflab::random_floats(static_cast<std::size_t>(batch) * heads * head_dim, rooflab::test_seed() + 5,
                                                positive ? 0.0f : -1.0f, 1.0f));
  rooflab::DeviceBuffer<__half> dq{std::span<const __half>(q), at}, dk{std::span<const __half>(c.k), at},
      dv{std::span<const __half>(c.v), at};
  rooflab::DeviceBuffer<int> dtable{std::span<const int>(c.table), at}, dlens{std::span<const int>(lengths), at};
  rooflab::DeviceBuffer<float> workspace(lab06::decode_workspace_bytes(batch, heads, head_dim, max_len) / sizeof(float),
                                         at);
  rooflab::DeviceBuffer<__half> out(q.size(), at);
  out.poison();
  workspace.poison();
  const rooflab::KernelWatch watch;
  lab06::paged_decode_attention(dq.data(), dk.data(), dv.data(), dtable.data(), dlens.data(), batch, heads, max_len,
                                c.layout, scale, workspace.data(), out.data(), nullptr);
  rooflab::synchronize_given(nullptr);
  if (auto ran = watch.kernels_did_the_work("paged_decode_attention"); !ran) return ran;

  std::vector<float> want(q.size());
  std::vector<double> allowed(q.size());
  std::vector<float> qf(static_cast<std::size_t>(head_dim)), kc, vc;
  std::vector<double> o(static_cast<std::size_t>(head_dim));
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      const int kv_head = h / group, len = lengths[static_cast<std::size_t>(b)];
      kc.assign(static_cast<std::size_t>(len) * head_dim, 0.0f);
      vc.assign(kc.size(), 0.0f);
      for (int p = 0; p < len; ++p) {
        for (int d = 0; d < head_dim; ++d) {
          kc[static_cast<std::size_t>(p) * head_dim + d] = __half2float(c.k[c.at(b, p, kv_head) + d]);
          vc[static_cast<std::size_t>(p) * head_dim + d] = __half2float(c.v[c.at(b, p, kv_head) + d]);
        }
      }
      const std::size_t row = (static_cast<std::size_t>(b) * heads + h) * head_dim;
      for (int d = 0; d < head_dim; ++d) qf[d] = __half2float(q[row + d]);
      lab06::attention_ref(qf.data(), kc.data(), vc.data(), len, head_dim, scale, o.data());
      for (int d = 0; d < head_dim; ++d) want[row + d] = static_cast<float>(o[d]);
      decode_allowances(qf, kc, vc, len, head_dim, scale, o, allowed.data() + row);
    }
  }
  // The error FP32 allows per output element, then its FP16 rounding (decode_allowances).
  auto r = rooflab::all_within<float, float>(to_float(out.download()), want, allowed);
  if (!r) {
    r << " (decode attention, " << describe(lengths) << ", " << kv_heads << " KV heads x " << group
      << " query heads each, head dim " << head_dim << (sharp ? ", scale 40" : "") << (positive ? ", positive q, K, V" : "")
      << rooflab::placement_note(at) << "; out is [batch][heads][head_dim])";
  }
  return r;
}

// The lengths every decode test covers: one token, one short of a block, exactly a block, one past it, a
// long sequence of whole chunks (kChunkTokens), and all of them in one batch with a longer sequence whose
// last block and last chunk are partial (both scaled down on the CPU backend).
std::vector<std::vector<int>> decode_batches() {
#if defined(ROOFLAB_EMU)
  const int whole_chunks = 2 * lab06::kChunkTokens, longest = 600;
#else
  const int whole_chunks = 4 * lab06::kChunkTokens, longest = 1000;
#endif
  return {{1}, {15}, {16}, {17}, {whole_chunks}, {17, 1, longest, 16, 15, 40}};
}

// The batch of mixed lengths has every array 16 bytes past a multiple of 32 (aligned as kernels.hpp promises,
// no more); the others start where cudaMalloc puts them. Every kernel instance sees both.
rooflab::Placement mixed_batch_placement(const std::vector<int>& lengths) {
  return lengths.size() > 1 ? rooflab::Placement::aligned_16_not_32 : rooflab::Placement::allocation_start;
}

// The launcher on a group or head dim it does not support must throw std::invalid_argument (kernels.cu's
// TODO for lab06.decode.launch), not launch an instance made for another one. Valid buffers all the same, so
// that a launcher which does launch reads and writes only memory it was given.
::testing::AssertionResult decode_rejects(int kv_heads, int group, int head_dim) {
  const std::vector<int> lengths{17};
  const Cache c(lengths, kv_heads, head_dim, rooflab::test_seed() + 21);
  // q, out and the workspace sized for the widest head dim: room for an instance launched with the wrong D.
  const int heads = kv_heads * group, widest = std::max(head_dim, 128);
  rooflab::DeviceBuffer<__half> dq(static_cast<std::size_t>(heads) * widest), dk{std::span<const __half>(c.k)},
      dv{std::span<const __half>(c.v)}, out(static_cast<std::size_t>(heads) * widest);
  rooflab::DeviceBuffer<int> dtable{std::span<const int>(c.table)}, dlens{std::span<const int>(lengths)};
  rooflab::DeviceBuffer<float> workspace(lab06::decode_workspace_bytes(1, heads, widest, 17) / sizeof(float));
  dq.poison();
  const std::string shape = fmt::format("(decode attention, {} KV heads x {} query heads each, head dim {})", kv_heads,
                                        group, head_dim);
  try {
    lab06::paged_decode_attention(dq.data(), dk.data(), dv.data(), dtable.data(), dlens.data(), 1, heads, 17, c.layout,
                                  1.0f, workspace.data(), out.data(), nullptr);
    rooflab::synchronize_given(nullptr);
  } catch (const std::invalid_argument&) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no std::invalid_argument " << shape
                                       << ": groups other than 1, 2, 4, 8 and head dims other than 64, 128 must throw";
}

}  // namespace

ROOFLAB_TEST(Lab06Kernels, AppendThroughTheBlockTable) {
  ROOFLAB_REQUIRE_GPU();
  // A prefill of whole sequences and a decode step of one token each, into shuffled blocks.
  for (const bool prefill : {true, false}) {
    // 199 prefill tokens: more 16-byte vectors than a grid of 8 blocks per SM has threads on a small GPU,
    // so the grid-stride loop goes round. The decode step's arrays start 16 bytes past a multiple of 32
    // (aligned as kernels.hpp promises, no more).
    const auto at = prefill ? rooflab::Placement::allocation_start : rooflab::Placement::aligned_16_not_32;
    const std::vector<int> lengths{1, 15, 16, 17, 150};
    Cache c(lengths, 2, 64, rooflab::test_seed() + (prefill ? 11 : 12));
    std::vector<int> seq_of, pos_of;
    for (int b = 0; b < c.batch(); ++b) {
      const int len = lengths[static_cast<std::size_t>(b)];
      for (int p = prefill ? 0 : len - 1; p < len; ++p) {
        seq_of.push_back(b);
        pos_of.push_back(p);
      }
    }
    const int tokens = static_cast<int>(seq_of.size());
    const std::size_t row = static_cast<std::size_t>(c.layout.kv_heads) * c.layout.head_dim;
    const auto k_new = to_half(rooflab::random_floats(tokens * row, rooflab::test_seed() + 13));
    const auto v_new = to_half(rooflab::random_floats(tokens * row, rooflab::test_seed() + 14));
    rooflab::DeviceBuffer<__half> dk_new{std::span<const __half>(k_new), at}, dv_new{std::span<const __half>(v_new), at};
    rooflab::DeviceBuffer<__half> dk{std::span<const __half>(c.k), at}, dv{std::span<const __half>(c.v), at};
    rooflab::DeviceBuffer<int> dseq{std::span<const int>(seq_of), at}, dpos{std::span<const int>(pos_of), at},
        dtable{std::span<const int>(c.table), at};
    const rooflab::KernelWatch watch;
    lab06::paged_kv_append(dk_new.data(), dv_new.data(), dseq.data(), dpos.data(), tokens, dk.data(), dv.data(),
                           dtable.data(), c.layout, nullptr);
    rooflab::synchronize_given(nullptr);
    EXPECT_TRUE(watch.kernels_did_the_work("paged_kv_append"));
    // Every slot: the new row where a token went, the old contents everywhere else.
    auto want_k = c.k, want_v = c.v;
    for (int t = 0; t < tokens; ++t) {
      const std::size_t dst = c.at(seq_of[static_cast<std::size_t>(t)], pos_of[static_cast<std::size_t>(t)], 0);
      std::copy_n(k_new.begin() + static_cast<std::ptrdiff_t>(t * row), row, want_k.begin() + static_cast<std::ptrdiff_t>(dst));
      std::copy_n(v_new.begin() + static_cast<std::ptrdiff_t>(t * row), row, want_v.begin() + static_cast<std::ptrdiff_t>(dst));
    }
    const char* what = prefill ? " (append, a prefill of whole sequences: lengths 1 15 16 17 150; pools are [block][slot][kv_head][dim])"
                               : " (append, one decode token per sequence: lengths 1 15 16 17 150, arrays 16 bytes past a "
                                 "multiple of 32; pools are [block][slot][kv_head][dim])";
    EXPECT_TRUE((all_close<float, float>(to_float(dk.download()), to_float(want_k), rooflab::kExactTolerance))) << "K pool" << what;
    EXPECT_TRUE((all_close<float, float>(to_float(dv.download()), to_float(want_v), rooflab::kExactTolerance))) << "V pool" << what;
  }
}

ROOFLAB_TEST(Lab06Kernels, DecodeAttentionOneKvHeadPerQueryHead) {
  ROOFLAB_REQUIRE_GPU();
  // Both head dims the launcher accepts: each is its own kernel instance.
  for (const auto& lengths : decode_batches()) {
    for (const int head_dim : {64, 128}) {
      EXPECT_TRUE(check_decode(lengths, 3, 1, head_dim, false, false, mixed_batch_placement(lengths)));
    }
  }
  EXPECT_TRUE(check_decode({17, 1, 300}, 3, 1, 128, true));
  EXPECT_TRUE(check_decode({17, 1, 300}, 3, 1, 128, false, true));
  EXPECT_TRUE(decode_rejects(3, 1, 96));
}

ROOFLAB_TEST(Lab06Kernels, DecodeAttentionGroupedQueries) {
  ROOFLAB_REQUIRE_GPU();
  // Every group size and head dim the launcher accepts: each pair is its own kernel instance, and an
  // instance no test launches is code no grade checks.
  for (const auto& lengths : decode_batches()) {
    for (const int group : {2, 4, 8}) {
      for (const int head_dim : {64, 128}) {
        EXPECT_TRUE(check_decode(lengths, group == 8 ? 1 : 2, group, head_dim, false, false,
                                 mixed_batch_placement(lengths)));
      }
    }
  }
  EXPECT_TRUE(check_decode({17, 1, 300}, 2, 4, 128, true));
  EXPECT_TRUE(decode_rejects(2, 3, 64));
  EXPECT_TRUE(decode_rejects(1, 16, 128));
}
