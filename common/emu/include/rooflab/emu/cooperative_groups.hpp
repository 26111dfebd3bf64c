// Cooperative groups on the CPU backend: the subset the labs use, built on the backend's block barrier and
// warp collectives (runtime.hpp), so every group operation is checked like the intrinsic it stands for.
//
// A .cu file compiled for the CPU backend that includes <cooperative_groups.h> gets this header: the
// backend's own include directory (common/emu/cuda_include) comes before the toolkit's on emu targets,
// because the toolkit's header needs nvcc. What is here behaves as on a GPU:
//
//   thread_block          this_thread_block(): sync, thread_rank, size/num_threads, group_index,
//                         thread_index, dim_threads (group_dim)
//   thread_block_tile<N>  tiled_partition<N>(block or a larger tile), N = 1, 2, 4, 8, 16, 32: sync,
//                         thread_rank, size/num_threads, meta_group_rank, meta_group_size, shfl, shfl_down,
//                         shfl_up, shfl_xor, any, all, ballot
//   free functions        sync(g), thread_rank(g), group_size(g)
//   reduce                <cooperative_groups/reduce.h>: reduce(tile, value, op) with plus, less, greater,
//                         bit_and, bit_or, bit_xor or any binary functor
//
// A tile's collectives use the tile's own lanes as the mask (as CUDA's do), so two tiles of one warp never
// wait for each other. Everything else of cooperative groups (grid and cluster groups, coalesced and
// type-erased groups, runtime-sized or multi-warp tiles, scans, memcpy_async) is a compile error that names
// the missing piece, never a silent wrong answer. See docs/cpu-mode.md.
#pragma once

#if !defined(ROOFLAB_EMU)
#error "rooflab/emu/cooperative_groups.hpp is the CPU backend's; nvcc builds use the toolkit's <cooperative_groups.h>"
#endif

#include <rooflab/emu/runtime.hpp>

#include <type_traits>

namespace rooflab::emu::cg_detail {

// Makes a static_assert depend on a template parameter, so it fires only when the template is used.
template <typename...>
inline constexpr bool unsupported = false;

#define ROOFLAB_EMU_CG_UNSUPPORTED_(what) \
  "cooperative_groups::" what " is not supported by rooflab's CPU backend (docs/cpu-mode.md lists the subset)"

// The calling thread's rank in its block: x fastest, as CUDA numbers the lanes of a warp.
inline unsigned block_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

struct tile_tag {};  // base of every thread_block_tile: reduce() accepts exactly these
struct make_tile {};  // only tiled_partition constructs tiles, as on a GPU

}  // namespace rooflab::emu::cg_detail

namespace cooperative_groups {

// ---- the thread block ----

class thread_block {
 public:
  static void sync(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) { __syncthreads(file, line); }
  static unsigned thread_rank() { return rooflab::emu::cg_detail::block_rank(); }
  static unsigned num_threads() { return blockDim.x * blockDim.y * blockDim.z; }
  static unsigned size() { return num_threads(); }
  static dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  static dim3 dim_threads() { return blockDim; }
  static dim3 group_dim() { return blockDim; }

 private:
  thread_block() = default;
  friend thread_block this_thread_block();
};

inline thread_block this_thread_block() { return thread_block(); }

// ---- tiles of a warp ----

template <unsigned Size, typename ParentT = void>
class thread_block_tile;

// The tile type every tile converts to (thread_block_tile<N> in user code); the ParentT forms derive from it.
template <unsigned Size>
class thread_block_tile<Size, void> : public rooflab::emu::cg_detail::tile_tag {
  static_assert((Size & (Size - 1)) == 0 && Size != 0, "thread_block_tile: Size must be one of 1/2/4/8/16/32");
  static_assert(Size <= 32, ROOFLAB_EMU_CG_UNSUPPORTED_("thread_block_tile<N> with N > 32 (a multi-warp tile)"));

 public:
  thread_block_tile(rooflab::emu::cg_detail::make_tile, unsigned meta_rank, unsigned meta_size)
      : meta_rank_(meta_rank), meta_size_(meta_size) {}

  static constexpr unsigned num_threads() { return Size; }
  static constexpr unsigned size() { return Size; }
  static unsigned thread_rank() { return rooflab::emu::cg_detail::block_rank() & (Size - 1); }
  unsigned meta_group_rank() const { return meta_rank_; }
  unsigned meta_group_size() const { return meta_size_; }

  static void sync(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    __syncwarp(mask(), file, line);
  }

  // Shuffles within the tile: ranks and deltas are the tile's, as __shfl_*_sync with width Size.
  template <typename T>
  T shfl(T value, int src_rank, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __shfl_sync(mask(), value, src_rank, static_cast<int>(Size), file, line);
  }
  template <typename T>
  T shfl_down(T value, unsigned delta, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __shfl_down_sync(mask(), value, delta, static_cast<int>(Size), file, line);
  }
  template <typename T>
  T shfl_up(T value, unsigned delta, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __shfl_up_sync(mask(), value, delta, static_cast<int>(Size), file, line);
  }
  template <typename T>
  T shfl_xor(T value, unsigned lane_mask, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __shfl_xor_sync(mask(), value, static_cast<int>(lane_mask), static_cast<int>(Size), file, line);
  }

  int any(int predicate, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __ballot_sync(mask(), predicate, file, line) != 0;
  }
  int all(int predicate, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __ballot_sync(mask(), predicate, file, line) == mask();
  }
  // Bit r of the result is the predicate of the tile's rank r (the warp's ballot shifted to the tile).
  unsigned ballot(int predicate, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    return __ballot_sync(mask(), predicate, file, line) >> first_lane();
  }

 private:
  static unsigned first_lane() { return (rooflab::emu::cg_detail::block_rank() % 32) & ~(Size - 1); }
  // This tile's lanes of the warp: its collectives wait for them only.
  static unsigned mask() {
    if constexpr (Size == 32) {
      return 0xffffffffu;
    } else {
      return ((1u << Size) - 1u) << first_lane();
    }
  }

  unsigned meta_rank_;
  unsigned meta_size_;
};

// The type tiled_partition returns; it converts to thread_block_tile<Size> (its base).
template <unsigned Size, typename ParentT>
class thread_block_tile : public thread_block_tile<Size, void> {
 public:
  using thread_block_tile<Size, void>::thread_block_tile;
};

// ---- partitions ----

// Tiles of Size consecutive threads of the block.
template <unsigned Size>
thread_block_tile<Size, thread_block> tiled_partition(const thread_block& parent) {
  return thread_block_tile<Size, thread_block>(rooflab::emu::cg_detail::make_tile{}, parent.thread_rank() / Size,
                                               (parent.size() + Size - 1) / Size);
}

// Tiles of a tile: meta_group_rank and meta_group_size count within the parent tile.
template <unsigned Size, unsigned ParentSize, typename GrandParentT>
thread_block_tile<Size, thread_block_tile<ParentSize, GrandParentT>> tiled_partition(
    const thread_block_tile<ParentSize, GrandParentT>& parent) {
  static_assert(Size < ParentSize, "tiled_partition: the tile must be smaller than its parent tile");
  return thread_block_tile<Size, thread_block_tile<ParentSize, GrandParentT>>(
      rooflab::emu::cg_detail::make_tile{}, parent.thread_rank() / Size, ParentSize / Size);
}

template <typename GroupT>
void sync(const GroupT& group, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  group.sync(file, line);
}
template <typename GroupT>
auto thread_rank(const GroupT& group) -> decltype(group.thread_rank()) {
  return group.thread_rank();
}
template <typename GroupT>
auto group_size(const GroupT& group) -> decltype(group.num_threads()) {
  return group.num_threads();
}

// ---- outside the subset: each is a compile error naming it ----

template <typename T = void>
struct unsupported_grid_group {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("grid_group (this_grid)"));
};
template <typename T = void>
struct unsupported_cluster_group {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("cluster_group (this_cluster)"));
};
template <typename T = void>
struct unsupported_coalesced_group {
  static_assert(rooflab::emu::cg_detail::unsupported<T>,
                ROOFLAB_EMU_CG_UNSUPPORTED_("coalesced_group (coalesced_threads, labeled_partition, binary_partition)"));
};
template <typename T = void>
struct unsupported_thread_group {
  static_assert(rooflab::emu::cg_detail::unsupported<T>,
                ROOFLAB_EMU_CG_UNSUPPORTED_("thread_group (a type-erased group: use thread_block or "
                                            "thread_block_tile<N>, or a template parameter)"));
};
template <unsigned MaxBlockSize, typename T = void>
struct unsupported_block_tile_memory {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("block_tile_memory"));
};

using grid_group = unsupported_grid_group<>;
using cluster_group = unsupported_cluster_group<>;
using coalesced_group = unsupported_coalesced_group<>;
using thread_group = unsupported_thread_group<>;
template <unsigned MaxBlockSize>
using block_tile_memory = unsupported_block_tile_memory<MaxBlockSize>;

template <typename T = void>
unsupported_grid_group<T> this_grid() {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("this_grid() (grid-wide sync)"));
  return {};
}
template <typename T = void>
unsupported_cluster_group<T> this_cluster() {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("this_cluster()"));
  return {};
}
template <typename T = void>
unsupported_coalesced_group<T> coalesced_threads() {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("coalesced_threads()"));
  return {};
}
template <typename GroupT, typename LabelT>
unsupported_coalesced_group<GroupT> labeled_partition(const GroupT&, LabelT) {
  static_assert(rooflab::emu::cg_detail::unsupported<GroupT>, ROOFLAB_EMU_CG_UNSUPPORTED_("labeled_partition()"));
  return {};
}
template <typename GroupT>
unsupported_coalesced_group<GroupT> binary_partition(const GroupT&, bool) {
  static_assert(rooflab::emu::cg_detail::unsupported<GroupT>, ROOFLAB_EMU_CG_UNSUPPORTED_("binary_partition()"));
  return {};
}
// tiled_partition(parent, tile_size): a tile size known only at run time gives a thread_group.
template <typename GroupT>
unsupported_thread_group<GroupT> tiled_partition(const GroupT&, unsigned) {
  static_assert(rooflab::emu::cg_detail::unsupported<GroupT>,
                ROOFLAB_EMU_CG_UNSUPPORTED_("tiled_partition(group, size) with a run-time size (use tiled_partition<N>)"));
  return {};
}
template <unsigned MaxBlockSize>
thread_block this_thread_block(unsupported_block_tile_memory<MaxBlockSize>&) {
  static_assert(rooflab::emu::cg_detail::unsupported<unsupported_block_tile_memory<MaxBlockSize>>,
                ROOFLAB_EMU_CG_UNSUPPORTED_("this_thread_block(block_tile_memory&)"));
  return this_thread_block();
}
template <typename GroupT, typename FnT, typename... ArgsT>
void invoke_one(const GroupT&, FnT&&, ArgsT&&...) {
  static_assert(rooflab::emu::cg_detail::unsupported<GroupT>, ROOFLAB_EMU_CG_UNSUPPORTED_("invoke_one()"));
}

}  // namespace cooperative_groups
