// Vectorized elementwise kernels in a header found through an include directory: a kernel template launched
// without template arguments, with float4 loads.
#pragma once

// y = a * x over n elements, four at a time through float4 (x and y 16-byte aligned), then the tail.
template <typename T>
__global__ void scale4_kernel(const T* x, T* y, T a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (4 * i + 3 < n) {
    const float4 v = reinterpret_cast<const float4*>(x)[i];
    reinterpret_cast<float4*>(y)[i] = make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
  } else {
    for (int k = 4 * i; k < n; ++k) y[k] = a * x[k];
  }
}
