// A launch without its arguments.
__global__ void k() {}
void f() { k<<<1, 1>>>; }
