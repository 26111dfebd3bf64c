// Race mode's test of WMMA staging (wmma_race_kernels.cu, test_race.cpp): a GPU's store_matrix_sync is each
// lane storing its share of the tile, unordered with the other lanes, so a staging tile in shared memory needs
// a __syncwarp between the store and reads by other lanes, and between those reads and the next store.
#pragma once

#include <cuda_fp16.h>

namespace emutest {

enum class WmmaStaging { synced, no_sync_after_store, no_sync_before_next_store };

// One warp: C = A x B (16 x 16 x 16, half in, float out) staged in shared memory, then out[0..256) = C^T and
// out[256..512) = 2 C^T, read by lanes that did not store the elements they read. `staging` leaves out one
// __syncwarp (bugs planted on purpose) or none.
void wmma_staged_transpose(const __half* a, const __half* b, float* out, WmmaStaging staging);

}  // namespace emutest
