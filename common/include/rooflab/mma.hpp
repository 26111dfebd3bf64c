// Tensor cores below WMMA: one m16n8k16 FP16 multiply-accumulate (mma.sync), and ldmatrix, which loads 8x8
// tiles of 16-bit elements from shared memory straight into the registers mma.sync reads; with them pack_half2
// (two floats into one FP16 fragment register) and fast_exp2 (one ex2 instruction). For .cu files (nvcc or the CPU
// backend); used by the kernels that keep their tiles in registers (Lab 05's Flash attention).
//
// Why not WMMA: a WMMA fragment's element-to-lane map is unspecified, so code that must touch single elements of
// an accumulator (a softmax over a tile of scores, a per-row rescale) has to store the fragment to shared memory
// and load it back. mma.sync's fragments are specified by the PTX ISA ("Matrix Fragments for mma.m16n8k16"), so
// a lane knows which rows and columns it holds and can work on them in registers. With g = lane / 4 (the group)
// and t = lane % 4 (the thread in the group):
//
//   A (16 x 16, row-major), 4 registers of two halves:  a[0] = row g,     columns 2t, 2t + 1
//                                                        a[1] = row g + 8, columns 2t, 2t + 1
//                                                        a[2] = row g,     columns 2t + 8, 2t + 9
//                                                        a[3] = row g + 8, columns 2t + 8, 2t + 9
//   B (16 x 8, K x N), 2 registers of two halves:        b[0] = rows 2t, 2t + 1 of column g
//                                                        b[1] = rows 2t + 8, 2t + 9 of column g
//   C, D (16 x 8, FP32), 4 floats:                       c[0], c[1] = row g,     columns 2t, 2t + 1
//                                                        c[2], c[3] = row g + 8, columns 2t, 2t + 1
//
// Two accumulator tiles side by side (columns 0-7 and 8-15 of a 16 x 16 block), converted to FP16 pairs, are
// exactly an A fragment of that block (a[0] = the first tile's c[0], c[1]; a[1] its c[2], c[3]; a[2], a[3] the
// second tile's): the scores of one product are the next product's left operand without leaving registers.
//
// ldmatrix_x4: each lane names one row of 16 bytes (8 halves) in shared memory: lanes 8i .. 8i + 7 the 8 rows of
// matrix i (i = 0..3). Lane l receives register i = row l / 4 of matrix i, halves 2 (l % 4) and 2 (l % 4) + 1: an
// mma.sync fragment register. ldmatrix_x4_trans hands out each matrix transposed: register i = halves 2 (l % 4)
// and 2 (l % 4) + 1 of column l / 4, i.e. the B fragment of a matrix stored K-major. The 32 rows are read
// together, 4 wavefronts when no two rows of one matrix share banks (rows 16 bytes apart modulo 128 bytes).
//
// sm_75 runs mma.sync's m16n8k16 as two m16n8k8 (the shape arrived with sm_80). On the CPU backend every lane
// reads its own row (so the traffic model and race mode see the real accesses) and a warp collective hands the
// registers out; the product is computed once per warp in FP32.
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

namespace rooflab {

// Two floats rounded to FP16 and packed as one register of an A or B fragment (`lo` in the low half: the lower
// column or row).
__host__ __device__ inline std::uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  std::uint32_t r;
  memcpy(&r, &h, sizeof r);
  return r;
}

// (a & mask) | bits as one instruction: a LOP3 with one of the constants in a register. For unpacking packed
// weights, a bit field put under constant bits (an int4 nibble under the exponent of the FP16 number 1024). Written
// in C++ with two literals, nvcc emits an AND and an OR, each with its immediate: twice the instructions.
__host__ __device__ inline std::uint32_t and_or(std::uint32_t a, std::uint32_t mask, std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  std::uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(a), "r"(mask), "r"(bits));  // 0xEA: (a & b) | c
  return r;
#else
  return (a & mask) | bits;
#endif
}

#if defined(ROOFLAB_EMU)

// 2^x as the special-function unit computes it (ex2.approx.ftz: about 2 ulp, results below 2^-126 flushed to 0), in
// one instruction where exp2f costs four (a compare and two predicated multiplies that keep subnormal results). For a
// softmax over tiles held in registers, where exp2f's would be over a quarter of the loop's instructions.
__device__ inline float fast_exp2(float x) {
  const float r = exp2f(x);
  return r < 0x1p-126f ? 0.0f : r;
}

namespace mma_detail {
struct LdmatrixLane {
  std::uint32_t row[4];  // the 16 bytes this lane's address named
  std::uint32_t* out;    // its 4 registers
};
template <bool Trans>
void ldmatrix_hand_out(void* const* lane_args, int lanes) {
  LdmatrixLane* lane[32];
  for (int l = 0; l < lanes; ++l) lane[l] = static_cast<LdmatrixLane*>(lane_args[l]);
  std::uint32_t out[32][4];
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 4; ++i) {
      if (!Trans) {
        out[l][i] = lane[8 * i + l / 4]->row[l % 4];
      } else {  // halves 2 (l % 4) and 2 (l % 4) + 1 of column l / 4
        std::uint16_t lo, hi;
        memcpy(&lo, reinterpret_cast<const char*>(lane[8 * i + 2 * (l % 4)]->row) + 2 * (l / 4), 2);
        memcpy(&hi, reinterpret_cast<const char*>(lane[8 * i + 2 * (l % 4) + 1]->row) + 2 * (l / 4), 2);
        out[l][i] = static_cast<std::uint32_t>(lo) | static_cast<std::uint32_t>(hi) << 16;
      }
    }
  }
  for (int l = 0; l < 32; ++l) memcpy(lane[l]->out, out[l], sizeof out[l]);
}

struct MmaLane {
  const std::uint32_t* a;
  const std::uint32_t* b;
  const float* c;
  float* d;
};
inline float half_at(std::uint32_t reg, int which) {
  __half h;
  const std::uint16_t bits = static_cast<std::uint16_t>(which == 0 ? reg : reg >> 16);
  memcpy(static_cast<void*>(&h), &bits, sizeof bits);
  return __half2float(h);
}
inline void mma_once(void* const* lane_args, int /*lanes: 32*/) {
  float a[16][16], b[16][8], c[16][8];
  for (int l = 0; l < 32; ++l) {
    const auto* x = static_cast<const MmaLane*>(lane_args[l]);
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 2; ++e) {
      a[g][2 * t + e] = half_at(x->a[0], e);
      a[g + 8][2 * t + e] = half_at(x->a[1], e);
      a[g][2 * t + 8 + e] = half_at(x->a[2], e);
      a[g + 8][2 * t + 8 + e] = half_at(x->a[3], e);
      b[2 * t + e][g] = half_at(x->b[0], e);
      b[2 * t + 8 + e][g] = half_at(x->b[1], e);
      c[g][2 * t + e] = x->c[e];
      c[g + 8][2 * t + e] = x->c[2 + e];
    }
  }
  for (int l = 0; l < 32; ++l) {  // every input is read before any output is written: d may be c
    auto* x = static_cast<const MmaLane*>(lane_args[l]);
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 4; ++e) {
      const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
      const float* a_row = a[row];
      float sum = c[row][col];
      for (int k = 0; k < 16; ++k) sum += a_row[k] * b[k][col];
      x->d[e] = sum;
    }
  }
}
}  // namespace mma_detail

namespace mma_detail {
template <bool Trans>
void ldmatrix(std::uint32_t (&r)[4], const void* row, const char* file, unsigned line) {
  LdmatrixLane me{{}, r};
  const uint4 mine = *static_cast<const uint4*>(row);  // this lane's row, one 16-byte read as the GPU makes it
  memcpy(me.row, &mine, sizeof mine);
  rooflab::emu::detail::warp_call(0xffffffffu, &ldmatrix_hand_out<Trans>, &me, file, line);
}
}  // namespace mma_detail

__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* row, const char* file = __builtin_FILE(),
                                   unsigned line = __builtin_LINE()) {
  mma_detail::ldmatrix<false>(r, row, file, line);
}
__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row, const char* file = __builtin_FILE(),
                                         unsigned line = __builtin_LINE()) {
  mma_detail::ldmatrix<true>(r, row, file, line);
}
// d = a b + c over the warp (d may be c).
__device__ inline void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                    const float (&c)[4], const char* file = __builtin_FILE(),
                                    unsigned line = __builtin_LINE()) {
  mma_detail::MmaLane me{a, b, c, d};
  rooflab::emu::detail::warp_call(0xffffffffu, &mma_detail::mma_once, &me, file, line);
}

#elif defined(__CUDACC__)

// 2^x (see above).
__device__ inline float fast_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
#else
  return x;
#endif
}

__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__)
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  (void)r, (void)row;
#endif
}

__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__)
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  (void)r, (void)row;
#endif
}

// d = a b + c over the warp (d may be c).
__device__ inline void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                    const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#elif defined(__CUDA_ARCH__)
  // sm_75: columns 0-7 of A with rows 0-7 of B, then columns 8-15 with rows 8-15.
  float e[4];
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};\n"
               : "=f"(e[0]), "=f"(e[1]), "=f"(e[2]), "=f"(e[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[2]), "r"(a[3]), "r"(b[1]), "f"(e[0]), "f"(e[1]), "f"(e[2]), "f"(e[3]));
#else
  (void)d, (void)a, (void)b, (void)c;
#endif
}

#endif

}  // namespace rooflab
