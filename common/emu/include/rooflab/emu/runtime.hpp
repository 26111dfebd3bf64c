// The CPU backend's prelude: included before any CUDA header when a .cu file is compiled by the host
// compiler (cmake/RooflabEmu.cmake generates a wrapper that includes this, then the .cu file).
//
// What it does: defines the CUDA keywords (before the toolkit headers can), includes the toolkit's host
// headers for the real types (dim3, float4, __half, cudaError_t ...), declares threadIdx/blockIdx/
// blockDim/gridDim as real thread_local variables that the scheduler sets for the running CUDA thread, and
// provides the device intrinsics the host headers lack. The runtime API (cudaMalloc ...) is defined by
// the backend against the toolkit's own declarations; libcudart is never linked, so an API the backend
// does not emulate fails at link time, not at run time. See docs/cpu-mode.md.
#pragma once

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
#error "rooflab/emu/runtime.hpp is for the host compiler only"
#endif

// ---- keywords (must precede the CUDA headers, which keep an earlier definition) ----
#define __global__
#define __device__
#define __host__
// One copy per worker thread = per running block: the threads of a block run as fibers on one OS thread.
#define __shared__ static thread_local
#define __constant__
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <rooflab/emu/launch.hpp>
#include <rooflab/emu/wmma.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

// ---- built-in variables: set by the scheduler before a CUDA thread runs ----
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

namespace rooflab::emu::detail {
// Block barrier with a predicate reduction (0: plain, 1: count, 2: and, 3: or); returns the reduction.
int syncthreads(int predicate, int mode, const char* file, unsigned line);
// Warp collective: `bytes` bytes of `value` in, the result for this lane out (op: see scheduler.cpp).
void warp_collective(int op, unsigned mask, const void* value, std::size_t bytes, int arg, int width, void* result,
                     const char* file, unsigned line);
unsigned active_mask();
enum WarpOp : int { kShflIdx = 1, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll, kSyncWarp, kReduceAdd, kReduceMin,
                    kReduceMax, kReduceAnd, kReduceOr, kReduceXor, kWarpCall };

template <typename T>
T shuffle(int op, unsigned mask, const T& value, int arg, int width, const char* file, unsigned line) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16, "warp shuffles move up to 16 bytes");
  T out;
  warp_collective(op, mask, &value, sizeof(T), arg, width, &out, file, line);
  return out;
}
}  // namespace rooflab::emu::detail

// ---- barriers and fences ----
inline void __syncthreads(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  rooflab::emu::detail::syncthreads(0, 0, file, line);
}
inline int __syncthreads_count(int p, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::syncthreads(p, 1, file, line);
}
inline int __syncthreads_and(int p, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::syncthreads(p, 2, file, line);
}
inline int __syncthreads_or(int p, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::syncthreads(p, 3, file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  rooflab::emu::detail::warp_collective(rooflab::emu::detail::kSyncWarp, mask, nullptr, 0, 0, 32, nullptr, file, line);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned __activemask() { return rooflab::emu::detail::active_mask(); }

// ---- warp collectives ----
template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32, const char* file = __builtin_FILE(),
              unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::shuffle(rooflab::emu::detail::kShflIdx, mask, var, src_lane, width, file, line);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32, const char* file = __builtin_FILE(),
                 unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::shuffle(rooflab::emu::detail::kShflUp, mask, var, static_cast<int>(delta), width, file, line);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32, const char* file = __builtin_FILE(),
                   unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::shuffle(rooflab::emu::detail::kShflDown, mask, var, static_cast<int>(delta), width, file,
                                       line);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32, const char* file = __builtin_FILE(),
                  unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::shuffle(rooflab::emu::detail::kShflXor, mask, var, lane_mask, width, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return rooflab::emu::detail::shuffle(rooflab::emu::detail::kBallot, mask, pred, 0, 32, file, line);
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return static_cast<int>(rooflab::emu::detail::shuffle(rooflab::emu::detail::kAny, mask, pred, 0, 32, file, line));
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return static_cast<int>(rooflab::emu::detail::shuffle(rooflab::emu::detail::kAll, mask, pred, 0, 32, file, line));
}
#define ROOFLAB_EMU_REDUCE_(name, op, T)                                                                      \
  inline T name(unsigned mask, T value, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) { \
    return rooflab::emu::detail::shuffle(rooflab::emu::detail::op, mask, value, std::is_signed_v<T> ? 1 : 0, 32, file, \
                                         line);                                                                \
  }
ROOFLAB_EMU_REDUCE_(__reduce_add_sync, kReduceAdd, unsigned)
ROOFLAB_EMU_REDUCE_(__reduce_add_sync, kReduceAdd, int)
ROOFLAB_EMU_REDUCE_(__reduce_min_sync, kReduceMin, unsigned)
ROOFLAB_EMU_REDUCE_(__reduce_min_sync, kReduceMin, int)
ROOFLAB_EMU_REDUCE_(__reduce_max_sync, kReduceMax, unsigned)
ROOFLAB_EMU_REDUCE_(__reduce_max_sync, kReduceMax, int)
ROOFLAB_EMU_REDUCE_(__reduce_and_sync, kReduceAnd, unsigned)
ROOFLAB_EMU_REDUCE_(__reduce_or_sync, kReduceOr, unsigned)
ROOFLAB_EMU_REDUCE_(__reduce_xor_sync, kReduceXor, unsigned)
#undef ROOFLAB_EMU_REDUCE_

// ---- atomics: real atomics, since blocks run on several OS threads ----
#define ROOFLAB_EMU_ATOMIC_RMW_(name, T, expr)                        \
  inline T name(T* address, T val) {                                  \
    std::atomic_ref<T> ref(*address);                                 \
    T old = ref.load();                                               \
    while (!ref.compare_exchange_weak(old, (expr))) {                 \
    }                                                                 \
    return old;                                                       \
  }
#define ROOFLAB_EMU_ATOMIC_INT_(T)                                                              \
  inline T atomicAdd(T* a, T v) { return std::atomic_ref<T>(*a).fetch_add(v); }                 \
  inline T atomicSub(T* a, T v) { return std::atomic_ref<T>(*a).fetch_sub(v); }                 \
  inline T atomicExch(T* a, T v) { return std::atomic_ref<T>(*a).exchange(v); }                 \
  inline T atomicAnd(T* a, T v) { return std::atomic_ref<T>(*a).fetch_and(v); }                 \
  inline T atomicOr(T* a, T v) { return std::atomic_ref<T>(*a).fetch_or(v); }                   \
  inline T atomicXor(T* a, T v) { return std::atomic_ref<T>(*a).fetch_xor(v); }                 \
  inline T atomicCAS(T* a, T compare, T v) {                                                    \
    std::atomic_ref<T>(*a).compare_exchange_strong(compare, v);                                 \
    return compare;                                                                             \
  }                                                                                             \
  ROOFLAB_EMU_ATOMIC_RMW_(atomicMin, T, std::min(old, val))                                     \
  ROOFLAB_EMU_ATOMIC_RMW_(atomicMax, T, std::max(old, val))
ROOFLAB_EMU_ATOMIC_INT_(int)
ROOFLAB_EMU_ATOMIC_INT_(unsigned)
ROOFLAB_EMU_ATOMIC_INT_(unsigned long long)
ROOFLAB_EMU_ATOMIC_INT_(long long)
inline float atomicAdd(float* a, float v) { return std::atomic_ref<float>(*a).fetch_add(v); }
inline double atomicAdd(double* a, double v) { return std::atomic_ref<double>(*a).fetch_add(v); }
inline float atomicExch(float* a, float v) { return std::atomic_ref<float>(*a).exchange(v); }
ROOFLAB_EMU_ATOMIC_RMW_(atomicInc, unsigned, (old >= val) ? 0u : old + 1u)
ROOFLAB_EMU_ATOMIC_RMW_(atomicDec, unsigned, (old == 0u || old > val) ? val : old - 1u)
#undef ROOFLAB_EMU_ATOMIC_INT_
#undef ROOFLAB_EMU_ATOMIC_RMW_

// ---- integer and bit intrinsics ----
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long both = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((both >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) c += static_cast<signed char>(a >> (8 * i)) * static_cast<signed char>(b >> (8 * i));
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xff) * ((b >> (8 * i)) & 0xff);
  return c;
}
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline long long __double_as_longlong(double d) { return std::bit_cast<long long>(d); }
inline double __longlong_as_double(long long l) { return std::bit_cast<double>(l); }
template <typename T>
T __ldg(const T* p) {
  return *p;
}

// ---- fast-math intrinsics: computed exactly on the CPU (compare with tolerances) ----
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __saturatef(float x) { return x != x ? 0.0f : std::clamp(x, 0.0f, 1.0f); }
inline float __tanhf(float x) { return std::tanh(x); }

// ---- min / max overloads of CUDA's device library ----
inline int min(int a, int b) { return std::min(a, b); }
inline int max(int a, int b) { return std::max(a, b); }
inline unsigned min(unsigned a, unsigned b) { return std::min(a, b); }
inline unsigned max(unsigned a, unsigned b) { return std::max(a, b); }
inline long long min(long long a, long long b) { return std::min(a, b); }
inline long long max(long long a, long long b) { return std::max(a, b); }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return std::min(a, b); }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return std::max(a, b); }
inline unsigned long min(unsigned long a, unsigned long b) { return std::min(a, b); }
inline unsigned long max(unsigned long a, unsigned long b) { return std::max(a, b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// ---- half precision intrinsics the host headers lack (computed in float/double, rounded once) ----
inline __half __hfma(__half a, __half b, __half c) {
  return __double2half(static_cast<double>(__half2float(a)) * __half2float(b) + __half2float(c));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
inline __half hexp(__half x) { return __float2half(std::exp(__half2float(x))); }
inline __half hsqrt(__half x) { return __float2half(std::sqrt(__half2float(x))); }
inline __half hrsqrt(__half x) { return __float2half(1.0f / std::sqrt(__half2float(x))); }
inline __half hlog(__half x) { return __float2half(std::log(__half2float(x))); }
inline __half hrcp(__half x) { return __float2half(1.0f / __half2float(x)); }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __double2bfloat16(static_cast<double>(__bfloat162float(a)) * __bfloat162float(b) + __bfloat162float(c));
}
