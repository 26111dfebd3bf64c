// Kernels for the conformance tests of rooflab/mma.hpp: each lane's registers after ldmatrix and mma.sync.
// Ordinary CUDA: also compiled by nvcc (rooflab_emu_tests_nvcc), so what passes here builds for a GPU.
#include "mma_kernels.hpp"

#include <rooflab/mma.hpp>

namespace mmatest {

__global__ void ldmatrix_probe_kernel(const __half* rows, int stride, bool trans, std::uint32_t* out) {
  __shared__ __align__(16) __half tile[32 * 64];
  const int lane = static_cast<int>(threadIdx.x);
  for (int c = 0; c < 8; ++c) tile[lane * stride + c] = rows[lane * 8 + c];
  __syncwarp();  // every row is in shared memory before any lane reads another's
  std::uint32_t r[4];
  if (trans) {
    rooflab::ldmatrix_x4_trans(r, tile + lane * stride);
  } else {
    rooflab::ldmatrix_x4(r, tile + lane * stride);
  }
  for (int i = 0; i < 4; ++i) out[4 * lane + i] = r[i];
}

__global__ void mma_probe_kernel(const std::uint32_t* a, const std::uint32_t* b, const float* c, float* d,
                                 bool in_place) {
  const int lane = static_cast<int>(threadIdx.x);
  std::uint32_t fa[4], fb[2];
  float fc[4], fd[4];
  for (int i = 0; i < 4; ++i) fa[i] = a[4 * lane + i], fc[i] = c[4 * lane + i];
  for (int i = 0; i < 2; ++i) fb[i] = b[2 * lane + i];
  if (in_place) {
    rooflab::mma_m16n8k16(fc, fa, fb, fc);
    for (int i = 0; i < 4; ++i) d[4 * lane + i] = fc[i];
  } else {
    rooflab::mma_m16n8k16(fd, fa, fb, fc);
    for (int i = 0; i < 4; ++i) d[4 * lane + i] = fd[i];
  }
}

void ldmatrix_probe(const __half* rows, int stride, bool trans, std::uint32_t* out) {
  ldmatrix_probe_kernel<<<1, 32>>>(rows, stride, trans, out);
}

void mma_probe(const std::uint32_t* a, const std::uint32_t* b, const float* c, float* d, bool in_place) {
  mma_probe_kernel<<<1, 32>>>(a, b, c, d, in_place);
}

}  // namespace mmatest
