// Launchers of coverage_kernels.cu: which kernel instances a binary holds and which of them ran.
#pragma once

namespace emutest {
// x[i] *= factor for i < n, through scale_by_kernel<factor> (factor 2 or 3; anything else: 1).
void scale_by(int factor, float* x, int n);
}  // namespace emutest
