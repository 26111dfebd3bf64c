// nvcuda::wmma on the CPU backend: 16x16x16 fragments of half or bfloat16 inputs with float or half
// accumulators. (The toolkit's <mma.h> declares nothing for the host compiler, so this is the API there.)
//
// Every lane's fragment holds the whole tile, in row-major order, so elementwise code over
// `frag.x[0 .. num_elements)` stays correct (it touches every element of the tile in every lane).
// load and fill work lane by lane; mma_sync and store_matrix_sync are warp collectives done once per warp
// from lane 0's fragments (the product is handed to every lane; computing it in all 32 would cost 32x).
//
// Race mode (ROOFLAB_EMU_TSAN) differs where a collective would hide a bug: a GPU's store_matrix_sync is each
// lane storing its own share of the tile, with no ordering between lanes, so a lane that reads what another
// lane stored (a staging tile in shared memory) needs a __syncwarp in between, and so does a store over a tile
// other lanes are still reading. There each lane stores its share (the sm_80 accumulator layout) with no
// synchronization, and ThreadSanitizer reports the missing __syncwarp. load_matrix_sync is already per lane
// (each lane reads the whole tile, a superset of its share: what another lane wrote must be ordered before it).
// mma_sync stays a collective (it orders the lanes, which a GPU's does not: a race across one is not seen).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <type_traits>

namespace rooflab::emu::detail {
// Runs `fn(args of all participating lanes, lane count)` once per warp when every lane of `mask` arrived.
void warp_call(unsigned mask, void (*fn)(void* const* lane_args, int lanes), void* arg, const char* file, unsigned line);
// The calling CUDA thread's lane in its warp.
unsigned lane_id();
}  // namespace rooflab::emu::detail

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <typename Use, int M, int N, int K>
struct shape;
template <int M, int N, int K>
struct shape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct shape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct shape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};
// `p` with the CPU build's alignment check (cmake/RooflabEmu.cmake) done once for a whole tile rather than at
// each of its elements (a tenth of Lab 05's CPU time): every element is p plus a multiple of sizeof(T), aligned
// when p is.
template <typename T>
T* aligned_tile(T* p) {
  [[maybe_unused]] T& first = *p;  // the one check (a reference binding: no memory is read)
  return static_cast<T*>(__builtin_assume_aligned(p, alignof(T)));
}

template <typename T>
float to_float(T v) {
  return static_cast<float>(v);
}
template <typename T>
T from_float(float v) {
  return static_cast<T>(v);
}
}  // namespace detail

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
class fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the CPU backend emulates the m16n16k16 shape");

 public:
  static constexpr int rows = detail::shape<Use, M, N, K>::rows;
  static constexpr int cols = detail::shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  using element_type = T;
  T x[num_elements];
};

template <typename Use, int M, int N, int K, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& value) {
  for (auto& e : f.x) e = static_cast<T>(value);
}

// matrix_a / matrix_b: the layout is part of the fragment's type.
template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* tile, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  const T* const p = detail::aligned_tile(tile);
  for (int r = 0; r < F::rows; ++r) {
    for (int c = 0; c < F::cols; ++c) {
      f.x[r * F::cols + c] = std::is_same_v<Layout, col_major> ? p[c * ldm + r] : p[r * ldm + c];
    }
  }
}

// accumulator: the layout is an argument.
template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* tile, unsigned ldm, layout_t layout) {
  const T* const p = detail::aligned_tile(tile);
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) f.x[r * N + c] = layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c];
  }
}

namespace detail {
template <typename F, typename T>
struct StoreArgs {
  T* p;
  const F* f;
  unsigned ldm;
  layout_t layout;
};
// Once per warp, from lane 0's fragment (32 lanes storing the same tile would race with each other).
template <typename F, typename T>
void store_once(void* const* lane_args, int /*lanes*/) {
  const auto* s = static_cast<const StoreArgs<F, T>*>(lane_args[0]);
  T* const p = aligned_tile(s->p);
  const F f = *s->f;  // a local copy: its elements need no alignment check
  for (int r = 0; r < F::rows; ++r) {
    for (int c = 0; c < F::cols; ++c) {
      (s->layout == mem_col_major ? p[c * s->ldm + r] : p[r * s->ldm + c]) = f.x[r * F::cols + c];
    }
  }
}
}  // namespace detail

#if defined(ROOFLAB_EMU_TSAN)
// Race mode: this lane's share only, and no collective (see the top of the file). Lane 4g + t of the warp
// holds rows g and g + 8, columns 2t, 2t + 1, 2t + 8 and 2t + 9, as sm_80's m16n16k16 float accumulator does;
// any fixed partition would do, since code that is right on a GPU cannot depend on it.
template <int M, int N, int K, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout,
                       const char* = __builtin_FILE(), unsigned = __builtin_LINE()) {
  const int lane = static_cast<int>(rooflab::emu::detail::lane_id()), g = lane / 4, t = lane % 4;
  for (const int r : {g, g + 8}) {
    for (const int c : {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9}) {
      (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * N + c];
    }
  }
}
#else
template <int M, int N, int K, typename T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout,
                       const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  using F = fragment<accumulator, M, N, K, T>;
  detail::StoreArgs<F, T> args{p, &f, ldm, layout};
  rooflab::emu::detail::warp_call(0xffffffffu, &detail::store_once<F, T>, &args, file, line);
}
#endif

namespace detail {
template <typename A, typename B, typename C, typename D>
struct MmaArgs {
  D* d;
  const A* a;
  const B* b;
  const C* c;
};

// D = A x B + C in float, rounded once to D's type; then every lane gets the product.
template <typename A, typename B, typename C, typename D>
void mma_once(void* const* lane_args, int lanes) {
  const auto* first = static_cast<const MmaArgs<A, B, C, D>*>(lane_args[0]);
  // Local copies: the loops then read local arrays, which the CPU build's alignment check (cmake/
  // RooflabEmu.cmake) leaves alone, instead of checking the fragment pointers at every element (a tenth of
  // Lab 05's CPU time).
  const A a = *first->a;
  const B b = *first->b;
  const C c = *first->c;
  D result;
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      float acc = to_float(c.x[m * 16 + n]);
      for (int k = 0; k < 16; ++k) acc += to_float(a.x[m * 16 + k]) * to_float(b.x[k * 16 + n]);
      result.x[m * 16 + n] = from_float<typename D::element_type>(acc);
    }
  }
  for (int l = 0; l < lanes; ++l) *static_cast<const MmaArgs<A, B, C, D>*>(lane_args[l])->d = result;
}
}  // namespace detail

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c,
              const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  using A = fragment<matrix_a, M, N, K, TA, LA>;
  using B = fragment<matrix_b, M, N, K, TB, LB>;
  using C = fragment<accumulator, M, N, K, TC>;
  detail::MmaArgs<A, B, C, C> args{&d, &a, &b, &c};
  rooflab::emu::detail::warp_call(0xffffffffu, &detail::mma_once<A, B, C, C>, &args, file, line);
}

}  // namespace nvcuda::wmma
