// The program of the own-project conformance files: runs host_idioms.cu's launchers and checks each against a
// host loop; exit 0 when all match. The C library comes with <cuda_runtime.h> here, as under nvcc (no
// <stdio.h>, <stdlib.h>, <string.h> or <time.h>). --trap runs a kernel that calls __trap().
#include <cuda_runtime.h>

#include "own_project.cuh"

static int bad = 0;

static void expect(bool ok, const char* what, int i, float got, float want) {
  if (!ok && ++bad <= 8) printf("%s [%d] = %g, want %g\n", what, i, got, want);
}

int main(int argc, char** argv) {
  const clock_t started = clock();
  if (argc > 1 && strcmp(argv[1], "--trap") == 0) {
    int* d = NULL;
    cudaMalloc((void**)&d, 32 * sizeof(int));
    trap_launch(d);
    const cudaError_t err = cudaDeviceSynchronize();
    printf("trap_kernel: %s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
  }
  const int n = 300;
  float* h = (float*)malloc(n * sizeof(float));
  float* back = (float*)malloc(n * sizeof(float));
  memset(back, 0, n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = 0.5f * (float)(i % 17) - 2.0f;
  float *x = NULL, *y = NULL;
  cudaMalloc((void**)&x, n * sizeof(float));
  cudaMalloc((void**)&y, n * sizeof(float));

  // A scalar __device__, a scalar and a struct __constant__ set through the variables themselves.
  const Affine affine = {1.5f, -0.25f};
  set_symbols(2.0f, 3, affine);
  const Affine read = read_affine();
  expect(read.mul == affine.mul && read.add == affine.add, "c_affine read back", 0, read.mul, affine.mul);

  // The host function named like its kernel launches the kernel three times: x * 2^3.
  cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
  scale(x, n, 3);
  cudaMemcpy(back, x, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) expect(back[i] == h[i] * 8.0f, "scale", i, back[i], h[i] * 8.0f);

  // NULL and 0 for the bias pointer: y = 0.5 x + 3, x as copied above.
  for (int form = 0; form < 2; ++form) {
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    axpy_without_bias(y, x, n, 0.5f, form == 0);
    cudaMemcpy(back, y, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
      expect(back[i] == 0.5f * h[i] + 3.0f, form == 0 ? "axpy (NULL bias)" : "axpy (0 bias)", i, back[i],
             0.5f * h[i] + 3.0f);
    }
  }

  // A 37 x 5 matrix in pitched memory: zeroed by cudaMemset2D, filled by cudaMemcpy2D, transformed, read back.
  const int width = 37, height = 5;
  float* m = NULL;
  size_t pitch = 0;
  cudaMallocPitch((void**)&m, &pitch, width * sizeof(float), height);
  expect(pitch >= width * sizeof(float) && pitch % 128 == 0, "pitch", 0, (float)pitch, (float)(width * sizeof(float)));
  cudaMemset2D(m, pitch, 0, pitch, height);
  cudaMemcpy2D(m, pitch, h, width * sizeof(float), width * sizeof(float), height, cudaMemcpyHostToDevice);
  affine_pitched(m, pitch, width, height);
  cudaMemcpy2D(back, width * sizeof(float), m, pitch, width * sizeof(float), height, cudaMemcpyDeviceToHost);
  for (int r = 0; r < height; ++r) {
    for (int c = 0; c < width; ++c) {
      const float want = affine.mul * h[r * width + c] + affine.add + (float)r;
      expect(back[r * width + c] == want, "affine_rows", r * width + c, back[r * width + c], want);
    }
  }
  // A row wider than its pitch is refused, as on a GPU.
  if (cudaMemcpy2D(m, 16, h, width * sizeof(float), width * sizeof(float), 1, cudaMemcpyHostToDevice) !=
      cudaErrorInvalidPitchValue) {
    printf("cudaMemcpy2D with a width over the pitch: not cudaErrorInvalidPitchValue\n");
    ++bad;
  }
  cudaGetLastError();

  // cuda::std::array in a kernel.
  cccl_values(y, n);
  cudaMemcpy(back, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  const float table[4] = {1.0f, 0.5f, 0.25f, 0.125f};
  for (int i = 0; i < n; ++i) expect(back[i] == table[i % 4] * (float)i, "cccl_table", i, back[i], table[i % 4] * i);

  // clock64() around a __nanosleep(2000): every thread saw its clock move forward.
  long long* ticks = NULL;
  long long slept[32];
  cudaMalloc((void**)&ticks, sizeof slept);
  sleep_ticks(ticks);
  cudaMemcpy(slept, ticks, sizeof slept, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 32; ++i) expect(slept[i] > 0, "slept_ticks", i, (float)slept[i], 1.0f);
  cudaFree(ticks);

  if (cudaGetLastError() != cudaSuccess) ++bad;
  cudaFree(x);
  cudaFree(y);
  cudaFree(m);
  free(h);
  free(back);
  printf("own project: %s (%.3f s of CPU)\n", bad == 0 ? "all match" : "MISMATCH",
         (double)(clock() - started) / CLOCKS_PER_SEC);
  return bad == 0 ? 0 : 1;
}
