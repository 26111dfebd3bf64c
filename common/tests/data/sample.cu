// The source of sample.sm_80.ptx and sample.sm_80.ptxas.txt (nvcc 13.0, -arch=sm_80): fixtures for test_ptx.cpp.
__global__ void vec_kernel(const float4* __restrict__ b, float4* __restrict__ a, unsigned long n) {
  unsigned long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float4 v = b[i]; a[i] = make_float4(v.x*2, v.y, v.z, v.w); }
}
__global__ void smem_kernel(const float* in, float* out) {
  __shared__ float tile[256];
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[255 - threadIdx.x] * 3.0f + 1.0f;
}
