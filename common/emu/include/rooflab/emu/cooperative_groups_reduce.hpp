// cooperative_groups::reduce, inclusive_scan and exclusive_scan on the CPU backend (what
// <cooperative_groups/reduce.h> and <cooperative_groups/scan.h> give a .cu file compiled for the CPU). Every lane of a tile gets op applied over the values of all the tile's lanes.
//
// The reduction is a butterfly of shfl_xor steps (distance Size/2, Size/4, ... 1), the order CUDA uses for
// types without a hardware reduction, so a float sum has the same rounding as on a GPU; integer results
// are order-independent anyway. Only tiles reduce, as on a GPU: a thread_block is a compile error. A tile of
// more than one warp (64 ... 1024 threads) reduces each warp in that order, then the warps' results, and
// scans likewise per warp, then across warps, as the toolkit does (values of up to 8 bytes).
#pragma once

#include <rooflab/emu/cooperative_groups.hpp>

#include <type_traits>
#include <utility>

namespace cooperative_groups {

// ---- the operators (in <cooperative_groups/reduce.h> on a GPU too, not in <cooperative_groups.h>) ----

template <typename Ty>
struct plus {
  Ty operator()(Ty a, Ty b) const { return a + b; }
};
// less and greater pick the smaller / larger argument (the reduction is a minimum / maximum).
template <typename Ty>
struct less {
  Ty operator()(Ty a, Ty b) const { return (b < a) ? b : a; }
};
template <typename Ty>
struct greater {
  Ty operator()(Ty a, Ty b) const { return (a < b) ? b : a; }
};
template <typename Ty>
struct bit_and {
  Ty operator()(Ty a, Ty b) const { return a & b; }
};
template <typename Ty>
struct bit_or {
  Ty operator()(Ty a, Ty b) const { return a | b; }
};
template <typename Ty>
struct bit_xor {
  Ty operator()(Ty a, Ty b) const { return a ^ b; }
};

}  // namespace cooperative_groups

namespace rooflab::emu::cg_detail {

// What a butterfly of shfl_xor steps (distance count/2 ... 1) leaves in lane 0 of `count` lanes: the
// order a warp reduces in, so that a float sum of a multi-warp tile rounds as the toolkit's does.
template <typename T, typename F>
T butterfly(const T* in, unsigned count, F& op) {
  T v[32];
  for (unsigned l = 0; l < count; ++l) v[l] = in[l];
  for (unsigned distance = count / 2; distance > 0; distance /= 2) {
    T next[32];
    for (unsigned l = 0; l < count; ++l) next[l] = op(v[l], v[l ^ distance]);
    for (unsigned l = 0; l < count; ++l) v[l] = next[l];
  }
  return v[0];
}

// Hillis-Steele over `count` lanes (log2(count) shfl_up steps), as a warp scans.
template <typename T, typename F>
void warp_scan(const T* in, T* out, unsigned count, F& op) {
  for (unsigned l = 0; l < count; ++l) out[l] = in[l];
  for (unsigned distance = 1; distance < count; distance *= 2) {
    T next[32];
    for (unsigned l = 0; l < count; ++l) next[l] = l >= distance ? op(out[l - distance], out[l]) : out[l];
    for (unsigned l = 0; l < count; ++l) out[l] = next[l];
  }
}

// A tile of more than one warp reduces each warp, then the warps' results (the toolkit's two levels).
template <unsigned Size, typename T, typename F>
T multi_warp_reduce(const T& value, F& op, const char* file, unsigned line) {
  return multi_warp_collective<Size>(
      value,
      [&op](const T* v, T* out) {
        T warps[Size / 32];
        for (unsigned w = 0; w < Size / 32; ++w) warps[w] = butterfly(v + 32 * w, 32, op);
        const T total = butterfly(warps, Size / 32, op);
        for (unsigned r = 0; r < Size; ++r) out[r] = total;
      },
      file, line);
}

// Inclusive scan of a multi-warp tile: each warp scans, the warps' totals are scanned, and each warp after
// the first combines the total of the warps before it with its own scan.
template <unsigned Size, typename T, typename F>
T multi_warp_inclusive_scan(const T& value, F& op, const char* file, unsigned line) {
  return multi_warp_collective<Size>(
      value,
      [&op](const T* v, T* out) {
        T totals[Size / 32];
        for (unsigned w = 0; w < Size / 32; ++w) {
          warp_scan(v + 32 * w, out + 32 * w, 32, op);
          totals[w] = out[32 * w + 31];
        }
        T before[Size / 32];
        warp_scan(totals, before, Size / 32, op);
        for (unsigned w = 1; w < Size / 32; ++w) {
          for (unsigned l = 0; l < 32; ++l) out[32 * w + l] = op(before[w - 1], out[32 * w + l]);
        }
      },
      file, line);
}

template <typename TyGroup>
inline constexpr bool multi_warp_tile = std::is_base_of_v<tile_tag, TyGroup> && (TyGroup::num_threads() > 32);

}  // namespace rooflab::emu::cg_detail

namespace cooperative_groups {

template <typename TyGroup, typename TyVal, typename TyFn>
auto reduce(const TyGroup& group, TyVal&& value, TyFn&& op, const char* file = __builtin_FILE(),
            unsigned line = __builtin_LINE()) -> decltype(op(value, value)) {
  static_assert(std::is_base_of_v<rooflab::emu::cg_detail::tile_tag, TyGroup>,
                "cooperative_groups::reduce takes a thread_block_tile (on a GPU too: a thread_block or "
                "thread_group is not a tile; reduce per warp tile, then combine the warps through shared memory)");
  using Value = std::remove_cv_t<std::remove_reference_t<TyVal>>;  // (C++17: no remove_cvref_t)
  static_assert(std::is_same_v<Value, std::remove_cv_t<std::remove_reference_t<decltype(op(value, value))>>>,
                "cooperative_groups::reduce: the operator's result type differs from the value's type");
  if constexpr (rooflab::emu::cg_detail::multi_warp_tile<TyGroup>) {
    return rooflab::emu::cg_detail::multi_warp_reduce<TyGroup::num_threads()>(static_cast<Value>(value), op, file, line);
  } else {
    Value out = value;
    for (unsigned distance = TyGroup::num_threads() / 2; distance > 0; distance /= 2) {
      out = op(out, group.shfl_xor(out, distance, file, line));
    }
    return out;
  }
}

// ---- scans over a tile: inclusive_scan and exclusive_scan (<cooperative_groups/scan.h>) ----
//
// Hillis-Steele: log2(Size) shfl_up steps; lane r combines, in lane order, the values of lanes 0 .. r
// (op(earlier, later), so an operator need not commute). exclusive_scan gives lane r the combination of lanes
// 0 .. r-1, and lane 0 a value-initialized T (0 for arithmetic types).
template <typename TyGroup, typename TyVal, typename TyFn = plus<std::remove_cv_t<std::remove_reference_t<TyVal>>>>
auto inclusive_scan(const TyGroup& group, TyVal&& value, TyFn&& op = TyFn{}, const char* file = __builtin_FILE(),
                    unsigned line = __builtin_LINE()) -> std::remove_cv_t<std::remove_reference_t<TyVal>> {
  static_assert(std::is_base_of_v<rooflab::emu::cg_detail::tile_tag, TyGroup>,
                "cooperative_groups scans take a thread_block_tile (on a GPU too: a thread_block or thread_group "
                "is not a tile)");
  auto out = static_cast<std::remove_cv_t<std::remove_reference_t<TyVal>>>(value);
  if constexpr (rooflab::emu::cg_detail::multi_warp_tile<TyGroup>) {
    return rooflab::emu::cg_detail::multi_warp_inclusive_scan<TyGroup::num_threads()>(out, op, file, line);
  } else {
    const unsigned rank = group.thread_rank();
    for (unsigned distance = 1; distance < TyGroup::num_threads(); distance *= 2) {
      const auto earlier = group.shfl_up(out, distance, file, line);
      if (rank >= distance) out = op(earlier, out);
    }
    return out;
  }
}

template <typename TyGroup, typename TyVal, typename TyFn = plus<std::remove_cv_t<std::remove_reference_t<TyVal>>>>
auto exclusive_scan(const TyGroup& group, TyVal&& value, TyFn&& op = TyFn{}, const char* file = __builtin_FILE(),
                    unsigned line = __builtin_LINE()) -> std::remove_cv_t<std::remove_reference_t<TyVal>> {
  using Value = std::remove_cv_t<std::remove_reference_t<TyVal>>;
  const Value inclusive = inclusive_scan(group, value, op, file, line);
  if constexpr (rooflab::emu::cg_detail::multi_warp_tile<TyGroup>) {
    // the rank before's inclusive result (a multi-warp tile has no shfl_up)
    return rooflab::emu::cg_detail::multi_warp_collective<TyGroup::num_threads()>(
        inclusive,
        [](const Value* v, Value* out) {
          out[0] = Value{};
          for (unsigned r = 1; r < TyGroup::num_threads(); ++r) out[r] = v[r - 1];
        },
        file, line);
  } else {
    const Value before = group.shfl_up(inclusive, 1, file, line);
    return group.thread_rank() == 0 ? Value{} : before;
  }
}

template <typename... T>
void reduce_update_async(T&&...) {
  static_assert(rooflab::emu::cg_detail::unsupported<T...>, ROOFLAB_EMU_CG_UNSUPPORTED_("reduce_update_async()"));
}
template <typename... T>
void reduce_store_async(T&&...) {
  static_assert(rooflab::emu::cg_detail::unsupported<T...>, ROOFLAB_EMU_CG_UNSUPPORTED_("reduce_store_async()"));
}

}  // namespace cooperative_groups
