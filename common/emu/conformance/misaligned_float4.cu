// Vector loads through float4, read member by member (the idiom of vectorized kernels). A float4 load needs
// a 16-byte aligned address: with the input offset by one float a GPU stops the kernel with
// cudaErrorMisalignedAddress, whatever the host compiler would make of the same load. Run without
// arguments: aligned input, checked against a host loop (exit 0 when it matches). Run with `--misaligned`:
// the input starts one float late, and the CPU backend must report the misaligned address with the kernel,
// block, thread and alignment (the program does not get to print "no error").
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

// out[i] = the sum of the four floats of in[4i .. 4i+3], loaded as one float4.
__global__ void sum4_kernel(const float* in, float* out, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 v = reinterpret_cast<const float4*>(in)[i];
    out[i] = v.x + v.y + v.z + v.w;
  }
}

int main(int argc, char** argv) {
  const bool misaligned = argc > 1 && std::strcmp(argv[1], "--misaligned") == 0;
  const int n4 = 300;
  std::vector<float> h(4 * n4 + 4);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7) % 13) - 6.0f;
  float *d_in = nullptr, *d_out = nullptr;
  cudaMalloc(&d_in, h.size() * sizeof(float));
  cudaMalloc(&d_out, n4 * sizeof(float));
  cudaMemcpy(d_in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
  const int offset = misaligned ? 1 : 0;  // one float: 4 bytes past a 16-byte boundary
  sum4_kernel<<<(n4 + 127) / 128, 128>>>(d_in + offset, d_out, n4);
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("sum4_kernel: %s\n", cudaGetErrorString(err));
    return 1;
  }
  std::vector<float> got(n4);
  cudaMemcpy(got.data(), d_out, n4 * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < n4; ++i) {
    const float want = h[offset + 4 * i] + h[offset + 4 * i + 1] + h[offset + 4 * i + 2] + h[offset + 4 * i + 3];
    if (got[i] != want && ++bad <= 5) std::printf("element %d is %g, want %g\n", i, got[i], want);
  }
  std::printf("sum4_kernel (%s input): %s\n", misaligned ? "misaligned" : "aligned",
              bad == 0 ? "matches the host reference" : "MISMATCH");
  cudaFree(d_in);
  cudaFree(d_out);
  return bad == 0 ? 0 : 1;
}
