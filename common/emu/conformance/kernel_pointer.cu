// Launches through function pointers, as code that picks a kernel at run time writes them: a variable set
// by a conditional, an element of a table of kernels, a struct member, a call that returns the kernel, and
// a template-id. Each result is checked against a host loop; exit status 0 when all match.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

__global__ void add_one_kernel(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

__global__ void times_two_kernel(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2;
}

template <int SHIFT>
__global__ void shift_kernel(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] <<= SHIFT;
}

using Kernel = void (*)(int*, int);

struct Step {
  const char* name;
  Kernel kernel;
};

static Kernel pick(bool doubling) { return doubling ? times_two_kernel : add_one_kernel; }

int main() {
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i - 300;
  int* d = nullptr;
  cudaMalloc(&d, n * sizeof(int));
  cudaMemcpy(d, h.data(), n * sizeof(int), cudaMemcpyHostToDevice);

  const bool flag = n > 10;
  auto chosen = flag ? add_one_kernel : times_two_kernel;  // add one
  chosen<<<blocks, threads>>>(d, n);
  const Kernel table[] = {add_one_kernel, times_two_kernel};
  table[1]<<<blocks, threads>>>(d, n);  // times two
  const Step step{"add", add_one_kernel};
  step.kernel<<<blocks, threads>>>(d, n);  // add one
  pick(true)<<<blocks, threads>>>(d, n);  // times two
  (flag ? times_two_kernel : add_one_kernel)<<<blocks, threads, 0>>>(d, n);  // times two
  Kernel shifter = shift_kernel<3>;
  shifter<<<blocks, threads>>>(d, n);  // times eight
  const cudaError_t err = cudaGetLastError();

  std::vector<int> got(n);
  cudaMemcpy(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost);
  int bad = err == cudaSuccess ? 0 : 1;
  for (int i = 0; i < n; ++i) {
    const int want = ((((h[i] + 1) * 2 + 1) * 2) * 2) * 8;
    if (got[i] != want && ++bad <= 5) std::printf("element %d is %d, want %d\n", i, got[i], want);
  }
  std::printf("launches through function pointers: %s\n", bad == 0 ? "match the host reference" : "MISMATCH");
  cudaFree(d);
  return bad == 0 ? 0 : 1;
}
