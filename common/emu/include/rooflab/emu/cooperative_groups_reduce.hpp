// cooperative_groups::reduce, inclusive_scan and exclusive_scan on the CPU backend (what
// <cooperative_groups/reduce.h> and <cooperative_groups/scan.h> give a .cu file compiled for the CPU). Every lane of a tile gets op applied over the values of all the tile's lanes.
//
// The reduction is a butterfly of shfl_xor steps (distance Size/2, Size/4, ... 1), the order CUDA uses for
// types without a hardware reduction, so a float sum has the same rounding as on a GPU; integer results
// are order-independent anyway. Only tiles reduce, as on a GPU: a thread_block is a compile error.
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

template <typename TyGroup, typename TyVal, typename TyFn>
auto reduce(const TyGroup& group, TyVal&& value, TyFn&& op, const char* file = __builtin_FILE(),
            unsigned line = __builtin_LINE()) -> decltype(op(value, value)) {
  static_assert(std::is_base_of_v<rooflab::emu::cg_detail::tile_tag, TyGroup>,
                "cooperative_groups::reduce takes a thread_block_tile (on a GPU too: a thread_block or "
                "thread_group is not a tile; reduce per warp tile, then combine the warps through shared memory)");
  using Value = std::remove_cv_t<std::remove_reference_t<TyVal>>;  // (C++17: no remove_cvref_t)
  static_assert(std::is_same_v<Value, std::remove_cv_t<std::remove_reference_t<decltype(op(value, value))>>>,
                "cooperative_groups::reduce: the operator's result type differs from the value's type");
  Value out = value;
  for (unsigned distance = TyGroup::num_threads() / 2; distance > 0; distance /= 2) {
    out = op(out, group.shfl_xor(out, distance, file, line));
  }
  return out;
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
                "cooperative_groups scans on the CPU backend take a thread_block_tile of up to 32 threads");
  auto out = static_cast<std::remove_cv_t<std::remove_reference_t<TyVal>>>(value);
  const unsigned rank = group.thread_rank();
  for (unsigned distance = 1; distance < TyGroup::num_threads(); distance *= 2) {
    const auto earlier = group.shfl_up(out, distance, file, line);
    if (rank >= distance) out = op(earlier, out);
  }
  return out;
}

template <typename TyGroup, typename TyVal, typename TyFn = plus<std::remove_cv_t<std::remove_reference_t<TyVal>>>>
auto exclusive_scan(const TyGroup& group, TyVal&& value, TyFn&& op = TyFn{}, const char* file = __builtin_FILE(),
                    unsigned line = __builtin_LINE()) -> std::remove_cv_t<std::remove_reference_t<TyVal>> {
  using Value = std::remove_cv_t<std::remove_reference_t<TyVal>>;
  const Value inclusive = inclusive_scan(group, value, op, file, line);
  const Value before = group.shfl_up(inclusive, 1, file, line);
  return group.thread_rank() == 0 ? Value{} : before;
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
