// Kernels for the backend's "code no test ran" bookkeeping (test_coverage.cpp): a launcher that dispatches on
// a parameter to one template instance per value, as Labs 05-07 do, and a kernel nothing launches.
#include "coverage_kernels.hpp"

namespace emutest {

template <int B>
__global__ void scale_by_kernel(float* x, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= static_cast<float>(B);
}

// Compiled (the file defines it) but launched by nothing.
__global__ void orphan_kernel(float* x) { x[0] = 0.0f; }

void scale_by(int factor, float* x, int n) {
  const unsigned blocks = static_cast<unsigned>((n + 63) / 64);
  switch (factor) {
    case 2: scale_by_kernel<2><<<blocks, 64>>>(x, n); break;
    case 3: scale_by_kernel<3><<<blocks, 64>>>(x, n); break;
    default: scale_by_kernel<1><<<blocks, 64>>>(x, n); break;
  }
}

}  // namespace emutest
