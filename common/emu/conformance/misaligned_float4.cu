// Vector loads through float4, read member by member (the idiom of vectorized kernels). A float4 load needs
// a 16-byte aligned address: with the input offset by one float a GPU stops the kernel with
// cudaErrorMisalignedAddress, whatever the host compiler would make of the same load. Three ways to make the
// float4 pointer: a reinterpret_cast indexed where it is made (sum4_kernel), one kept in a variable and used
// later, after a loop that runs zero times for a misaligned head (llm.c's packs, SGEMM's float4 tiles:
// sum4_held_kernel), and a C-style cast (sum4_c_cast_kernel). Run without arguments: aligned input, each kernel
// checked against a host loop (exit 0 when all match). Run with `--misaligned [held|c-cast]`: the input starts
// one float late, and the CPU backend must report the misaligned address with the kernel, block, thread,
// alignment and the access's line (the program does not get to print "no error").
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

// The same sum through a float4 pointer kept in a variable. Made before it is known to be needed: for n4 == 0
// no thread reads through it, which is no error on a GPU however the pointer is aligned.
__global__ void sum4_held_kernel(const float* in, float* out, int n4) {
  const float4* in4 = reinterpret_cast<const float4*>(in);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = i; k < n4; k += gridDim.x * blockDim.x) {
    const float4 v = in4[k];
    out[k] = v.x + v.y + v.z + v.w;
  }
}

// The same sum through a C-style cast, member by member straight from memory.
__global__ void sum4_c_cast_kernel(const float* in, float* out, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4* p = (const float4*)in + i;
    out[i] = p->x + p->y + p->z + p->w;
  }
}

// Runs one kernel on the input `offset` floats into d_in and checks it against the host; 0 when it matches.
int run(const char* name, void (*kernel)(const float*, float*, int), const std::vector<float>& h, const float* d_in,
        float* d_out, int n4, int offset) {
  kernel<<<n4 / 128 + 1, 128>>>(d_in + offset, d_out, n4);  // one block at least, also for n4 == 0
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("%s: %s\n", name, cudaGetErrorString(err));
    return 1;
  }
  std::vector<float> got(n4);
  cudaMemcpy(got.data(), d_out, n4 * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < n4; ++i) {
    const float want = h[offset + 4 * i] + h[offset + 4 * i + 1] + h[offset + 4 * i + 2] + h[offset + 4 * i + 3];
    if (got[i] != want && ++bad <= 5) std::printf("%s: element %d is %g, want %g\n", name, i, got[i], want);
  }
  std::printf("%s (%s input): %s\n", name, offset != 0 ? "misaligned" : "aligned",
              bad == 0 ? "matches the host reference" : "MISMATCH");
  return bad == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const bool misaligned = argc > 1 && std::strcmp(argv[1], "--misaligned") == 0;
  const char* which = misaligned && argc > 2 ? argv[2] : "";
  const int n4 = 300;
  std::vector<float> h(4 * n4 + 4);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7) % 13) - 6.0f;
  float *d_in = nullptr, *d_out = nullptr;
  cudaMalloc(&d_in, h.size() * sizeof(float));
  cudaMalloc(&d_out, n4 * sizeof(float));
  cudaMemcpy(d_in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
  const int offset = misaligned ? 1 : 0;  // one float: 4 bytes past a 16-byte boundary
  int failed = 0;
  // A misaligned pointer that no thread reads through: no error, under any schedule.
  failed += run("sum4_held_kernel", sum4_held_kernel, h, d_in, d_out, 0, 1);
  if (!misaligned || which[0] == '\0') failed += run("sum4_kernel", sum4_kernel, h, d_in, d_out, n4, offset);
  if (!misaligned || std::strcmp(which, "held") == 0) {
    failed += run("sum4_held_kernel", sum4_held_kernel, h, d_in, d_out, n4, offset);
  }
  if (!misaligned || std::strcmp(which, "c-cast") == 0) {
    failed += run("sum4_c_cast_kernel", sum4_c_cast_kernel, h, d_in, d_out, n4, offset);
  }
  cudaFree(d_in);
  cudaFree(d_out);
  return failed == 0 ? 0 : 1;
}
