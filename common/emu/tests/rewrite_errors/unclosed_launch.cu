// The configuration never closes.
__global__ void k(int) {}
void f(int n) {
  k<<<1, 1(n);
}
