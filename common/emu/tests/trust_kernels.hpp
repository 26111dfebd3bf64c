// Launchers of the kernels that check what the CPU backend trusts (trust_kernels.cu): canaries between
// allocations, misaligned vector accesses, element sizes in out-of-bounds reports.
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

namespace emutest {
// out[i] = in[i] for i <= n: one element past both ends (bug: should be i < n).
void copy_inclusive(const float* in, float* out, int n);
// Copies n floats as ceil(n / 4) float4s: the last vector runs 1-3 floats past both ends when n % 4 != 0.
void copy_float4_rounded_up(const float* in, float* out, int n);
// out[0 .. count) = the bytes of `in` from byte `from` on (which may lie past the end of its allocation).
void peek_bytes(const unsigned char* in, int from, int count, unsigned char* out);
// Reads float4s from in + 1 (4 bytes past a 16-byte boundary) into out: misaligned on a GPU.
void misaligned_float4(const float* in, float* out);
// The same through a C-style cast.
void misaligned_float4_cast(const float* in, float* out);
// out[i] = 1 for i <= n halves (bug: should be i < n).
void half_off_by_one(__half* out, int n);
}  // namespace emutest
