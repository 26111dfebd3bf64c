// Launchers of the CPU backend's conformance kernels for rooflab/mma.hpp (mma_kernels.cu): what each lane of one
// warp holds after ldmatrix and after mma.sync, for the tests to hold against the PTX ISA's fragment maps.
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <cstdint>

namespace mmatest {

// One warp: the 32 rows of `rows` (8 halves each, row r = matrix r / 8, row r % 8) are copied to shared memory
// `stride` halves apart (stride >= 8, a multiple of 8); lane l names row l; out[4 l + i] = its register i after
// ldmatrix_x4 (trans: ldmatrix_x4_trans).
void ldmatrix_probe(const __half* rows, int stride, bool trans, std::uint32_t* out);

// One warp: lane l passes a[4 l .. 4 l + 3], b[2 l, 2 l + 1] and c[4 l .. 4 l + 3] to mma_m16n8k16 and writes its d
// to d[4 l .. 4 l + 3] (in_place: the accumulator is both c and d, as kernels use it).
void mma_probe(const std::uint32_t* a, const std::uint32_t* b, const float* c, float* d, bool in_place);

}  // namespace mmatest
