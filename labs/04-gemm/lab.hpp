// Lab 04: GEMM - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answers.cpp), the tile configurations of the kernel ladder and the kernels'
// declared work for `rooflab inspect`. Launchers are in kernels.hpp; the CPU reference every correctness
// test compares with is rooflab/testing/gemm_reference.hpp. Handout: README.md beside this file.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <cmath>
#include <cstddef>

namespace lab04 {

// C (m x n) = alpha A (m x k) B (k x n) + beta C, row-major.
struct Shape {
  std::size_t m = 0, n = 0, k = 0;
};

// ---- analytic questions (answers.cpp; handout sections "Counting GEMM work" to "Tensor cores") ----
// Counting rules (the handout explains them): a multiply-add is 2 FLOPs; "ideal" bytes read A and B once
// and write C once (beta = 0), at `in_bytes` per input element and `out_bytes` per output element.

double flops(const Shape& s);                                                         // Q1
double ideal_bytes(const Shape& s, std::size_t in_bytes, std::size_t out_bytes);      // Q2
double ideal_intensity(const Shape& s, std::size_t in_bytes, std::size_t out_bytes);  // Q3: FLOP per byte

// Q4: DRAM bytes of a kernel that computes C in BM x BN tiles, each tile reading its whole BM-row strip of A
// and BN-column strip of B from DRAM (no reuse between tiles): every A element is read ceil(N / BN) times,
// every B element ceil(M / BM) times, and C is written once.
double tiled_bytes(const Shape& s, std::size_t bm, std::size_t bn, std::size_t in_bytes, std::size_t out_bytes);
// Q5: the intensity such a kernel really sees: flops / tiled_bytes.
double tiled_intensity(const Shape& s, std::size_t bm, std::size_t bn, std::size_t in_bytes, std::size_t out_bytes);

// Q6: is a kernel of this intensity compute-bound on `gpu` for the math units of `type` (intensity at or
// above the ridge point peak(type) / bandwidth)?
bool compute_bound(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type);
// Q7: the roofline's least time for the shape at its ideal bytes: max(bytes / BW, FLOPs / peak(type)).
double time_floor_s(const Shape& s, std::size_t in_bytes, std::size_t out_bytes, const rooflab::GpuSpec& gpu,
                    rooflab::DType type);

// Q8: shared memory one block needs to stage a BM x BK tile of A and a BK x BN tile of B, `stages` times
// (2 for double buffering), in bytes.
std::size_t smem_per_block(std::size_t bm, std::size_t bn, std::size_t bk, std::size_t in_bytes, int stages);
// Q9: blocks of `threads` threads and `smem_bytes` of shared memory that fit on one SM of `gpu`, counting
// threads and shared memory only (registers: rooflab inspect): the least of
//   gpu.max_threads_per_sm / threads,
//   floor(gpu.smem_per_sm_kb * 1024 / per-block footprint), the footprint being smem_bytes +
//     gpu.reserved_smem_per_block_bytes rounded up to a multiple of gpu.smem_alloc_unit_bytes,
//   gpu.max_blocks_per_sm;
// and 0 when the block cannot launch at all (threads > gpu.max_threads_per_block or smem_bytes above
// gpu.smem_max_per_block_kb * 1024).
int blocks_per_sm(std::size_t smem_bytes, int threads, const rooflab::GpuSpec& gpu);

// Q10: the grid of BM x BN tiles on `gpu` with `blocks_per_sm` resident blocks per SM: the number of tiles,
// the waves they take (ceil(tiles / (SMs x blocks_per_sm))) and the wave efficiency (tiles / (waves x
// SMs x blocks_per_sm): the fraction of the block slots that do work).
struct Waves {
  std::size_t tiles = 0;
  std::size_t waves = 0;
  double efficiency = 0;
};
Waves waves(const Shape& s, std::size_t bm, std::size_t bn, int blocks_per_sm, const rooflab::GpuSpec& gpu);

// Q11: the FLOPs a tensor-core kernel wastes by padding M, N and K up to multiples of `multiple` (16 for
// WMMA's m16n16k16): 2 M'N'K' - 2 MNK.
double padding_waste_flops(const Shape& s, std::size_t multiple);

// ---- the ladder's tile configurations (the solutions' choices; the handout explains each) ----
inline constexpr unsigned kNaiveTile = 32;       // rungs 1-3: 32 x 32 threads, one output each
inline constexpr unsigned kBlockM = 128;         // rungs 4-7: a 128 x 128 tile of C per block
inline constexpr unsigned kBlockN = 128;
inline constexpr unsigned kLadderThreads = 256;  // rungs 4-7: 8 warps per block

// ---- the kernels' declared work (rooflab inspect): n = M = N = K ----
// Bytes follow Q4 with each rung's tile: 1 x 1 for the untiled rungs (every output reads its row of A and
// column of B), 32 x 32 for the shared-memory rung, 128 x 128 above it; FP16 inputs for the WMMA kernel.
namespace detail {
inline double tile_bytes(double n, double tile, double in_bytes, double out_bytes) {
  const double strips = std::ceil(n / tile);
  return 2 * n * n * strips * in_bytes + n * n * out_bytes;
}
}  // namespace detail

inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    {"lab04::sgemm_naive_kernel", "1 naive", kNaiveTile * kNaiveTile, 0, [](double n) { return 2 * n * n * n; },
     [](double n) { return detail::tile_bytes(n, 1, 4, 4); }},
    {"lab04::sgemm_coalesced_kernel", "2 coalesced", kNaiveTile * kNaiveTile, 0,
     [](double n) { return 2 * n * n * n; }, [](double n) { return detail::tile_bytes(n, 1, 4, 4); }},
    {"lab04::sgemm_smem_kernel", "3 smem tiled", kNaiveTile * kNaiveTile, 0, [](double n) { return 2 * n * n * n; },
     [](double n) { return detail::tile_bytes(n, 32, 4, 4); }, rooflab::DType::fp32, {"smem_tiled"}},
    {"lab04::sgemm_blocktile_kernel", "4 2D blocktile", kLadderThreads, 0, [](double n) { return 2 * n * n * n; },
     [](double n) { return detail::tile_bytes(n, 128, 4, 4); }, rooflab::DType::fp32, {"blocktile"}},
    {"lab04::sgemm_vectorized_kernel", "5 vectorized", kLadderThreads, 0, [](double n) { return 2 * n * n * n; },
     [](double n) { return detail::tile_bytes(n, 128, 4, 4); }, rooflab::DType::fp32, {"vectorized"}},
    {"lab04::sgemm_warptile_kernel", "6 warptile", kLadderThreads, 0, [](double n) { return 2 * n * n * n; },
     [](double n) { return detail::tile_bytes(n, 128, 4, 4); }, rooflab::DType::fp32, {"warptile"}},
    {"lab04::hgemm_wmma_kernel", "7 wmma fp16", kLadderThreads, 0, [](double n) { return 2 * n * n * n; },
     [](double n) { return detail::tile_bytes(n, 128, 2, 4); }, rooflab::DType::fp16, {"wmma"}},
};

}  // namespace lab04
