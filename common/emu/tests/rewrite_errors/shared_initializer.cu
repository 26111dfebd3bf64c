// __shared__ variables cannot have initializers.
__global__ void k(int* out) {
  __shared__ int count = 0;
  out[0] = count;
}
