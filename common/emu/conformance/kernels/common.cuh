// Helpers shared by the kernel headers, in the style of a repository's common header: a macro and device
// functions, nothing the CPU backend has to rewrite (so this header is used as it is).
#pragma once

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__device__ __forceinline__ float fma_acc(float acc, float a, float b) { return acc + a * b; }
