// A launch of something that is not a kernel: the CPU build fails with the backend's own message, on line 6.
struct Settings { int blocks; };
__global__ void fill_kernel(int* x) { x[threadIdx.x] = 1; }
void run(int* x) {
  Settings s{1};
  s.blocks<<<1, 32>>>(x);
}
