// Dynamic shared memory as rows needs the rows' length: only the first bound may be left out.
__global__ void k(float* y) {
  extern __shared__ float rows[][];
  y[0] = rows[0][0];
}
