// A launch hidden in a macro.
__global__ void k() {}
#define LAUNCH_K k<<<1, 1>>>()
void f() { LAUNCH_K; }
