// Namespace-scope static shared memory.
__shared__ float table[32];
