// Conformance tests of the CUDA library idioms on the CPU backend: cooperative groups, cudaFuncSetAttribute
// with a kernel, CUDA's min/max overloads (this file; kernels in cg_kernels.cu) and the cuBLAS subset
// (test_cublas.cpp). Each result is checked against a plain host reference. CTest runs the binary under
// every schedule (ROOFLAB_EMU_SCHEDULE=forward, reverse, random).
#include "cg_kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using rooflab::DeviceBuffer;

constexpr unsigned kTileSizes[] = {32, 16, 8, 4, 2};

std::vector<int> random_ints(std::size_t n, std::uint64_t seed) {
  const auto f = rooflab::random_floats(n, seed, -1000.0f, 1000.0f);
  std::vector<int> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<int>(f[i]);
  return out;
}

}  // namespace

// ---- cooperative groups ----

TEST(CooperativeGroups, BlockReductionThroughWarpTiles) {
  const int n = 1000;  // ragged: the last block is partly empty
  const auto x = rooflab::random_floats(n, 11);
  DeviceBuffer<float> in{std::span<const float>(x)};
  for (unsigned block : {256u, 96u, 32u}) {
    const unsigned blocks = (n + block - 1) / block;
    DeviceBuffer<float> out(blocks);
    cgtest::block_sum(in.data(), out.data(), n, block);
    const auto got = out.download();
    for (unsigned b = 0; b < blocks; ++b) {
      double want = 0;
      for (unsigned i = b * block; i < std::min<unsigned>(n, (b + 1) * block); ++i) want += x[i];
      EXPECT_NEAR(got[b], want, 1e-4) << "block " << b << " of " << block << " threads";
    }
  }
}

TEST(CooperativeGroups, EveryReductionOperatorOnEveryTileSize) {
  const unsigned threads = 96;
  const auto ints = random_ints(threads, 12);
  const auto floats = rooflab::random_floats(threads, 13);
  DeviceBuffer<int> in{std::span<const int>(ints)};
  DeviceBuffer<float> fin{std::span<const float>(floats)};
  for (unsigned size : kTileSizes) {
    DeviceBuffer<cgtest::TileReduceOut> out(threads);
    cgtest::tile_reduce(size, in.data(), fin.data(), out.data(), threads);
    const auto got = out.download();
    for (unsigned t = 0; t < threads; ++t) {
      const unsigned first = t / size * size;
      int sum = 0, lo = ints[first], hi = ints[first];
      unsigned all_bits = ~0u, any_bits = 0, parity = 0;
      double fsum = 0;
      float fmax = floats[first];
      for (unsigned i = first; i < first + size; ++i) {
        sum += ints[i];
        lo = std::min(lo, ints[i]);
        hi = std::max(hi, ints[i]);
        all_bits &= static_cast<unsigned>(ints[i]);
        any_bits |= static_cast<unsigned>(ints[i]);
        parity ^= static_cast<unsigned>(ints[i]);
        fsum += floats[i];
        fmax = std::max(fmax, floats[i]);
      }
      const std::string where = "tile size " + std::to_string(size) + ", thread " + std::to_string(t);
      EXPECT_EQ(got[t].sum, sum) << where;
      EXPECT_EQ(got[t].min, lo) << where;
      EXPECT_EQ(got[t].max, hi) << where;
      EXPECT_EQ(got[t].bit_and, all_bits) << where;
      EXPECT_EQ(got[t].bit_or, any_bits) << where;
      EXPECT_EQ(got[t].bit_xor, parity) << where;
      EXPECT_NEAR(got[t].fsum, fsum, 1e-5) << where;
      EXPECT_EQ(got[t].fmax, fmax) << where;
    }
  }
}

TEST(CooperativeGroups, SoftmaxRowsWithReduceMaxAndSum) {
  for (const auto& [rows, cols] : {std::pair{37, 100}, std::pair{5, 1}, std::pair{9, 33}, std::pair{4, 512}}) {
    auto x = rooflab::random_floats(static_cast<std::size_t>(rows) * cols, 14, -8.0f, 8.0f);
    DeviceBuffer<float> in{std::span<const float>(x)};
    DeviceBuffer<float> out(x.size());
    cgtest::softmax_rows(in.data(), out.data(), rows, cols);
    const auto got = out.download();
    for (int r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * cols + c]));
      for (int c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
      for (int c = 0; c < cols; ++c) {
        const double want = std::exp(x[r * cols + c] - m) / s;
        ASSERT_NEAR(got[r * cols + c], want, 1e-6 + 1e-5 * want) << rows << " x " << cols << " at (" << r << ", " << c << ")";
      }
    }
  }
}

TEST(CooperativeGroups, TileShufflesVotesAndRanksAtEveryWidth) {
  const dim3 block(16, 6);  // 96 threads in 2D: ranks are x-fastest, as lanes are
  const unsigned threads = block.x * block.y;
  for (unsigned size : kTileSizes) {
    DeviceBuffer<cgtest::TileShuffleOut> out(2 * threads);
    cgtest::tile_shuffle(size, out.data(), block);
    const auto got = out.download();
    const unsigned sub = size / 2;
    for (unsigned b = 0; b < 2; ++b) {
      for (unsigned t = 0; t < threads; ++t) {
        const cgtest::TileShuffleOut& o = got[b * threads + t];
        const unsigned r = t % size, first = t - r;
        const std::string where =
            "tile size " + std::to_string(size) + ", block " + std::to_string(b) + ", thread " + std::to_string(t);
        EXPECT_EQ(o.rank, r) << where;
        EXPECT_EQ(o.size, size) << where;
        EXPECT_EQ(o.num_threads, size) << where;
        EXPECT_EQ(o.meta_rank, t / size) << where;
        EXPECT_EQ(o.meta_size, (threads + size - 1) / size) << where;
        EXPECT_EQ(o.from_next, static_cast<int>(first + (r + 1) % size) * 10) << where;
        EXPECT_EQ(o.down, static_cast<int>(r + 1 < size ? t + 1 : t) * 10) << where;
        EXPECT_EQ(o.up, static_cast<int>(r >= 1 ? t - 1 : t) * 10) << where;
        EXPECT_EQ(o.xored, static_cast<int>(t ^ 1u) * 10) << where;
        EXPECT_EQ(o.ballot, 0xaaaaaaaau & static_cast<unsigned>((1ull << size) - 1)) << where;
        EXPECT_EQ(o.any, 1) << where;
        EXPECT_EQ(o.all, 0) << where;
        EXPECT_EQ(o.all_true, 1) << where;
        int tile_sum = 0;
        for (unsigned i = first; i < first + size; ++i) tile_sum += static_cast<int>(i) * 10;
        EXPECT_EQ(o.even_tile_sum, (t / size) % 2 == 0 ? tile_sum : -1) << where;
        EXPECT_EQ(o.sub_rank, r % sub) << where;
        EXPECT_EQ(o.sub_meta_rank, r / sub) << where;
        EXPECT_EQ(o.sub_meta_size, 2u) << where;
        EXPECT_EQ(o.sub_from_first, static_cast<int>(t / sub * sub) * 10) << where;
        EXPECT_EQ(o.block_rank, t) << where;
        EXPECT_EQ(o.block_size, threads) << where;
        EXPECT_EQ(o.thread_index_x, t % block.x) << where;
        EXPECT_EQ(o.thread_index_y, t / block.x) << where;
        EXPECT_EQ(o.dim_x, block.x) << where;
        EXPECT_EQ(o.group_x, b) << where;
        EXPECT_EQ(o.free_rank, r) << where;
        EXPECT_EQ(o.free_size, size) << where;
      }
    }
  }
}

TEST(CooperativeGroups, MetaGroupSizeCountsAPartialLastTile) {
  const unsigned threads = 40;  // tiles of 16: two full ones and one of 8 threads
  DeviceBuffer<unsigned> out(3 * threads);
  cgtest::tile_meta(out.data(), threads);
  const auto got = out.download();
  for (unsigned t = 0; t < threads; ++t) {
    EXPECT_EQ(got[3 * t], t / 16) << "thread " << t;
    EXPECT_EQ(got[3 * t + 1], 3u) << "thread " << t;
    EXPECT_EQ(got[3 * t + 2], t % 16) << "thread " << t;
  }
}

// ---- cudaFuncSetAttribute / cudaFuncGetAttributes with the kernel itself ----

TEST(FuncAttributes, OptInAbove48KiBWithTheKernelItself) {
  const unsigned threads = 64;
  const std::size_t bytes = 100 * 1024;
  DeviceBuffer<float> out(threads);
  EXPECT_EQ(cgtest::big_shared_max_dynamic_bytes(), 48 * 1024);
  try {
    cgtest::big_shared(out.data(), threads, bytes, false);
    ADD_FAILURE() << "100 KiB of dynamic shared memory without the opt-in must be refused";
  } catch (const rooflab::emu::KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos) << e.what();
  }
  cgtest::big_shared(out.data(), threads, bytes, true);
  const auto got = out.download();
  for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(got[t], static_cast<float>(t + bytes / 4)) << "thread " << t;
  EXPECT_EQ(cgtest::big_shared_max_dynamic_bytes(), static_cast<int>(bytes));
}

// ---- min / max ----

TEST(MinMax, CudasMixedSignOverloads) {
  DeviceBuffer<cgtest::MinMaxOut> out(1);
  cgtest::min_max(-1, 5u, -1ll, 5ull, 2.5f, 1.25, out.data());
  const cgtest::MinMaxOut o = out.download()[0];
  // The signed argument converts to unsigned first: -1 becomes the largest value.
  EXPECT_EQ(o.min_int_unsigned, 5u);
  EXPECT_EQ(o.max_int_unsigned, 0xffffffffu);
  EXPECT_EQ(o.min_unsigned_int, 5u);
  EXPECT_EQ(o.max_unsigned_int, 0xffffffffu);
  EXPECT_EQ(o.min_ll_ull, 5ull);
  EXPECT_EQ(o.max_ull_ll, 0xffffffffffffffffull);
  EXPECT_EQ(o.min_ll, -1ll);
  EXPECT_EQ(o.min_float_double, 1.25);
  EXPECT_EQ(o.max_double_float, 2.5);
  EXPECT_EQ(o.min_int, -1);
}
