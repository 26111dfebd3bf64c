// rooflab/mma.hpp on the CPU backend against the PTX ISA's fragment maps ("Matrix Fragments for
// mma.m16n8k16 with floating point type" and "Warp-level matrix load instruction: ldmatrix"), written out here
// element by element rather than taken from the header: a map the emulation got wrong (say, A's registers 1 and
// 2 swapped, or B transposed) would still multiply correctly on the CPU, and then fail on a GPU. Kernels in
// mma_kernels.cu; CTest runs the binary under every schedule.
#include "mma_kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using rooflab::DeviceBuffer;

std::uint16_t bits(float x) {
  const __half h = __float2half(x);
  std::uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}
std::uint32_t pair(float lo, float hi) {
  return static_cast<std::uint32_t>(bits(lo)) | static_cast<std::uint32_t>(bits(hi)) << 16;
}

// Small integers: exact in FP16, and their products and sums exact in FP32.
float value(int i) { return static_cast<float>(i % 61 - 30); }

}  // namespace

TEST(Mma, LdmatrixHandsEachLaneRowLaneOver4OfEveryMatrix) {
  // Row r of matrix m holds m * 64 + r * 8 + c in column c (below 256: exact in FP16).
  std::vector<__half> rows(32 * 8);
  for (int i = 0; i < 32 * 8; ++i) rows[i] = __float2half(static_cast<float>(i));
  for (const int stride : {8, 16, 24, 64}) {  // dense rows, and rows padded as bank-conflict-free tiles pad them
    for (const bool trans : {false, true}) {
      DeviceBuffer<__half> in{std::span<const __half>(rows)};
      DeviceBuffer<std::uint32_t> out(32 * 4);
      mmatest::ldmatrix_probe(in.data(), stride, trans, out.data());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto got = out.download();
      for (int l = 0; l < 32; ++l) {
        for (int m = 0; m < 4; ++m) {
          // Not transposed: row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1. Transposed: column l / 4, rows
          // 2 (l % 4) and 2 (l % 4) + 1.
          const int r0 = trans ? 2 * (l % 4) : l / 4, c0 = trans ? l / 4 : 2 * (l % 4);
          const int r1 = trans ? r0 + 1 : r0, c1 = trans ? c0 : c0 + 1;
          const auto at = [&](int r, int c) { return static_cast<float>(m * 64 + r * 8 + c); };
          EXPECT_EQ(got[4 * l + m], pair(at(r0, c0), at(r1, c1)))
              << "lane " << l << ", register " << m << (trans ? " (trans)" : "") << ", rows " << stride
              << " halves apart";
        }
      }
    }
  }
}

TEST(Mma, M16n8k16MultipliesTheIsaFragments) {
  float A[16][16], B[16][8], C[16][8];
  for (int r = 0; r < 16; ++r) {
    for (int k = 0; k < 16; ++k) A[r][k] = value(7 * r + 3 * k + 1);
  }
  for (int k = 0; k < 16; ++k) {
    for (int n = 0; n < 8; ++n) B[k][n] = value(5 * k + 11 * n + 2);
  }
  for (int r = 0; r < 16; ++r) {
    for (int n = 0; n < 8; ++n) C[r][n] = value(13 * r + n) * 0.5f;
  }
  std::vector<std::uint32_t> a(32 * 4), b(32 * 2);
  std::vector<float> c(32 * 4);
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    a[4 * l + 0] = pair(A[g][2 * t], A[g][2 * t + 1]);
    a[4 * l + 1] = pair(A[g + 8][2 * t], A[g + 8][2 * t + 1]);
    a[4 * l + 2] = pair(A[g][2 * t + 8], A[g][2 * t + 9]);
    a[4 * l + 3] = pair(A[g + 8][2 * t + 8], A[g + 8][2 * t + 9]);
    b[2 * l + 0] = pair(B[2 * t][g], B[2 * t + 1][g]);
    b[2 * l + 1] = pair(B[2 * t + 8][g], B[2 * t + 9][g]);
    c[4 * l + 0] = C[g][2 * t];
    c[4 * l + 1] = C[g][2 * t + 1];
    c[4 * l + 2] = C[g + 8][2 * t];
    c[4 * l + 3] = C[g + 8][2 * t + 1];
  }
  for (const bool in_place : {false, true}) {
    DeviceBuffer<std::uint32_t> da{std::span<const std::uint32_t>(a)}, db{std::span<const std::uint32_t>(b)};
    DeviceBuffer<float> dc{std::span<const float>(c)}, dd(32 * 4);
    mmatest::mma_probe(da.data(), db.data(), dc.data(), dd.data(), in_place);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto d = dd.download();
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      for (int e = 0; e < 4; ++e) {
        const int r = g + 8 * (e / 2), n = 2 * t + e % 2;
        float want = C[r][n];
        for (int k = 0; k < 16; ++k) want += A[r][k] * B[k][n];
        EXPECT_EQ(d[4 * l + e], want) << "lane " << l << ", d[" << e << "] = D[" << r << "][" << n << "]"
                                      << (in_place ? " (d is c)" : "");
      }
    }
  }
}
