// The source of instances.sm_80.ptx and instances.sm_80.ptxas.txt (nvcc 13.0, -arch=sm_80): fixtures for
// test_ptx.cpp. One template kernel, two instances with different code (a VEC flag, as Lab 04's tensor-core rung
// has): a name matches both, and only the launch tells which one ran.
namespace demo {
template <bool VEC>
__global__ void scale_kernel(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if constexpr (VEC) {
    if (4 * i + 3 < n) {
      const float4 v = reinterpret_cast<const float4*>(in)[i];
      reinterpret_cast<float4*>(out)[i] = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
    }
  } else {
    __shared__ float tile[256];
    tile[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = 2 * tile[255 - threadIdx.x];
  }
}
template __global__ void scale_kernel<true>(const float*, float*, unsigned);
template __global__ void scale_kernel<false>(const float*, float*, unsigned);
}  // namespace demo
