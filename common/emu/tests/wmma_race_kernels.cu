// Kernels for race mode's test of WMMA staging (wmma_race.hpp): the two __syncwarp a staging tile needs, each
// left out by one planted bug. The output is right either way on the CPU backend; only race mode sees them.
#include "wmma_race.hpp"

#include <rooflab/check.hpp>

#include <mma.h>

namespace emutest {

__global__ void wmma_staged_transpose_kernel(const __half* a, const __half* b, float* out, WmmaStaging staging) {
  namespace wmma = nvcuda::wmma;
  __shared__ __align__(32) float tile[16 * 16];
  const int lane = static_cast<int>(threadIdx.x % 32);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= 2.0f;  // elementwise: right whatever the mapping
      // The other lanes may still be reading the first tile.
      if (staging != WmmaStaging::no_sync_before_next_store) __syncwarp();
    }
    wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
    // The other lanes' shares are stored before this lane reads them.
    if (staging != WmmaStaging::no_sync_after_store) __syncwarp();
    for (int e = lane; e < 16 * 16; e += 32) out[pass * 256 + (e % 16) * 16 + e / 16] = tile[e];
  }
}

void wmma_staged_transpose(const __half* a, const __half* b, float* out, WmmaStaging staging) {
  wmma_staged_transpose_kernel<<<1, 32>>>(a, b, out, staging);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace emutest
