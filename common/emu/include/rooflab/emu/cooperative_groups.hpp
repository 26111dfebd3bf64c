// Cooperative groups on the CPU backend: the subset the labs use, built on the backend's block barrier and
// warp collectives (runtime.hpp), so every group operation is checked like the intrinsic it stands for.
//
// A .cu file compiled for the CPU backend that includes <cooperative_groups.h> gets this header: the
// backend's own include directory (common/emu/cuda_include) comes before the toolkit's on emu targets,
// because the toolkit's header needs nvcc. What is here behaves as on a GPU:
//
//   thread_block          this_thread_block() (or with a block_tile_memory, accepted): sync, thread_rank,
//                         size/num_threads, group_index, thread_index, dim_threads (group_dim)
//   thread_block_tile<N>  tiled_partition<N>(block or a larger tile), N = 1 ... 32: sync, thread_rank,
//                         size/num_threads, meta_group_rank, meta_group_size, shfl, shfl_down, shfl_up,
//                         shfl_xor, any, all, ballot; N = 64 ... 1024 (several warps): sync of the tile's own
//                         threads (the scheduler's tile barrier), thread_rank, size, meta_group_*, shfl, any,
//                         all (the toolkit's set), through a per-block scratch between two tile syncs
//   thread_group          the type-erased group a block, the grid or a tile of up to 32 converts to: sync,
//                         thread_rank, size/num_threads; tiled_partition(group, n) with n known at run time
//   grid_group            this_grid(): sync (needs cudaLaunchCooperativeKernel, else reported), is_valid,
//                         thread_rank, size, block_rank, num_blocks, dim_blocks, block_index, thread_index
//   free functions        sync(g), thread_rank(g), group_size(g)
//   reduce, scans         <cooperative_groups/reduce.h>, <cooperative_groups/scan.h>: over any tile
//
// A tile's collectives use the tile's own lanes as the mask (as CUDA's do), so two tiles of one warp never
// wait for each other; tiles of several warps wait for their own threads only. Everything else of
// cooperative groups (cluster and coalesced groups, invoke_one) is a compile error that names the missing
// piece, never a silent wrong answer. See docs/cpu-mode.md.
#pragma once

#if !defined(ROOFLAB_EMU)
#error "rooflab/emu/cooperative_groups.hpp is the CPU backend's; nvcc builds use the toolkit's <cooperative_groups.h>"
#endif

#include <rooflab/emu/runtime.hpp>

#include <algorithm>
#include <cstring>
#include <string>
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

// ---- the type-erased group: thread_block, grid_group and tiles of up to 32 threads convert to it ----
//
// As in the toolkit, a thread_group knows at run time what it is and dispatches on that. Tiles of more than
// one warp do not convert to it (they do not under nvcc either).
template <unsigned Size, typename ParentT = void>
class thread_block_tile;

class thread_group {
 public:
  unsigned long long size() const;
  unsigned long long num_threads() const { return size(); }
  unsigned long long thread_rank() const;
  void sync(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const;
  unsigned get_type() const { return kind_; }

 protected:
  enum Kind : unsigned { kTile = 1, kBlock = 2, kGrid = 3 };  // the toolkit's coalesced, block and grid ids
  explicit thread_group(unsigned kind) : kind_(kind) {}
  // A tile of one warp: the lanes it holds, and its place among its parent's tiles.
  thread_group(unsigned mask, unsigned meta_rank, unsigned meta_size)
      : kind_(kTile), mask_(mask), meta_rank_(meta_rank), meta_size_(meta_size) {}
  friend thread_group tiled_partition(const thread_group& parent, unsigned tile_size);
  template <unsigned, typename>
  friend class thread_block_tile;

  unsigned kind_;
  unsigned mask_ = 0;
  unsigned meta_rank_ = 0;
  unsigned meta_size_ = 1;
};

// ---- the thread block ----

template <unsigned MaxBlockSize = 1024>
struct block_tile_memory {};  // the toolkit's scratch for multi-warp tiles: the CPU needs none

class thread_block : public thread_group {
 public:
  static void sync(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) { __syncthreads(file, line); }
  static unsigned thread_rank() { return rooflab::emu::cg_detail::block_rank(); }
  static unsigned num_threads() { return blockDim.x * blockDim.y * blockDim.z; }
  static unsigned size() { return num_threads(); }
  static dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  static dim3 dim_threads() { return blockDim; }
  static dim3 group_dim() { return blockDim; }
  // The split barrier: the toolkit's own block version arrives for free and syncs at the wait, as here.
  struct arrival_token {};
  arrival_token barrier_arrive() const { return {}; }
  void barrier_wait(arrival_token&&, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    __syncthreads(file, line);
  }

 private:
  thread_block() : thread_group(kBlock) {}
  friend thread_block this_thread_block();
};

inline thread_block this_thread_block() { return thread_block(); }
// With the toolkit's scratch for tiles of more than one warp (needed before sm_80): accepted, unused.
template <unsigned MaxBlockSize>
thread_block this_thread_block(block_tile_memory<MaxBlockSize>&) {
  return this_thread_block();
}

// ---- the grid: grid.sync() needs a cooperative launch (cudaLaunchCooperativeKernel) ----

class grid_group : public thread_group {
 public:
  // False in a kernel launched with <<<>>>, as on a GPU; grid.sync() there is reported.
  bool is_valid() const { return rooflab::emu::detail::grid_is_cooperative(); }
  void sync(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    rooflab::emu::detail::grid_sync(file, line);
  }
  // The split barrier: every thread waits at barrier_wait until the whole grid is there, a stricter order than
  // a GPU's (which waits for the arrivals only); what a kernel may rely on between the two holds either way.
  using arrival_token = unsigned int;
  arrival_token barrier_arrive() const { return 0; }
  void barrier_wait(arrival_token&&, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    rooflab::emu::detail::grid_sync(file, line);
  }
  static unsigned long long num_blocks() { return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z; }
  static unsigned long long block_rank() {
    return blockIdx.x + static_cast<unsigned long long>(gridDim.x) * (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
  }
  static unsigned long long num_threads() { return num_blocks() * thread_block::num_threads(); }
  static unsigned long long size() { return num_threads(); }
  static unsigned long long thread_rank() { return block_rank() * thread_block::num_threads() + thread_block::thread_rank(); }
  static dim3 dim_blocks() { return dim3(gridDim.x, gridDim.y, gridDim.z); }
  static dim3 block_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static dim3 dim_threads() { return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z); }
  static dim3 group_dim() { return dim_threads(); }
  static dim3 thread_index() {
    return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                blockIdx.z * blockDim.z + threadIdx.z);
  }

 private:
  grid_group() : thread_group(kGrid) {}
  friend grid_group this_grid();
};

inline grid_group this_grid() { return grid_group(); }

inline unsigned long long thread_group::size() const {
  switch (kind_) {
    case kBlock: return thread_block::size();
    case kGrid: return grid_group::size();
    default: return static_cast<unsigned>(__builtin_popcount(mask_));
  }
}
inline unsigned long long thread_group::thread_rank() const {
  switch (kind_) {
    case kBlock: return thread_block::thread_rank();
    case kGrid: return grid_group::thread_rank();
    default: {
      const unsigned lane = rooflab::emu::cg_detail::block_rank() % 32;
      return static_cast<unsigned>(__builtin_popcount(mask_ & ((1u << lane) - 1u)));
    }
  }
}
inline void thread_group::sync(const char* file, unsigned line) const {
  switch (kind_) {
    case kBlock: __syncthreads(file, line); break;
    case kGrid: rooflab::emu::detail::grid_sync(file, line); break;
    default: __syncwarp(mask_, file, line);
  }
}

// tiled_partition(parent, n) with n known at run time: a thread_group of n consecutive threads (the last
// tile of a block short of a multiple of n holds the rest). As in the toolkit, n is a power of two up to 32;
// anything else traps on a GPU and is reported here.
inline thread_group tiled_partition(const thread_group& parent, unsigned tile_size) {
  if (tile_size == 0 || tile_size > 32 || (tile_size & (tile_size - 1)) != 0) {
    throw rooflab::emu::KernelError("cooperative_groups::tiled_partition(group, " + std::to_string(tile_size) +
                                    "): the tile size must be a power of two up to 32 (the kernel traps on a GPU)");
  }
  if (parent.get_type() == 3) {
    throw rooflab::emu::KernelError("cooperative_groups::tiled_partition(grid_group, n): only a thread block or a "
                                    "tile can be partitioned");
  }
  const unsigned lane = rooflab::emu::cg_detail::block_rank() % 32;
  if (parent.get_type() == 1) {  // a tile of a warp: tiles of its own lanes, numbered within it
    const unsigned rank = static_cast<unsigned>(parent.thread_rank());
    const unsigned parent_size = static_cast<unsigned>(parent.size());
    const unsigned base = rank & ~(tile_size - 1);
    const unsigned length = std::min(parent_size - base, tile_size);
    const unsigned mask = ((length == 32 ? 0xffffffffu : (1u << length) - 1u) << (lane - (rank - base)));
    return thread_group(mask, rank / tile_size, (parent_size + tile_size - 1) / tile_size);
  }
  const unsigned rank = thread_block::thread_rank();
  const unsigned base = rank & ~(tile_size - 1);
  const unsigned length = std::min(thread_block::size() - base, tile_size);
  const unsigned mask = (length == 32 ? 0xffffffffu : (1u << length) - 1u) << (lane & ~(tile_size - 1));
  return thread_group(mask, rank / tile_size, (thread_block::size() + tile_size - 1) / tile_size);
}
inline thread_group tiled_partition(const thread_block& parent, unsigned tile_size) {
  return tiled_partition(static_cast<const thread_group&>(parent), tile_size);
}

}  // namespace cooperative_groups

namespace rooflab::emu::cg_detail {

// No base: a tile of more than one warp is not a thread_group (not under nvcc either).
struct not_a_thread_group {};

// Tiles of more than one warp exchange values through the block's tile scratch (32 bytes per thread: 16 in,
// 16 out) between two syncs of the tile. `compute(values, results)` runs once, on the tile's first thread,
// over the tile's values in rank order; each thread gets its own result.
template <unsigned Size, typename T, typename F>
T multi_warp_collective(const T& value, F&& compute, const char* file, unsigned line) {
  static_assert(sizeof(T) <= 8, "Collectives with tiles larger than 32 threads are limited to types of up to 8 "
                                "bytes (in the toolkit too)");
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                "a multi-warp tile collective moves trivially copyable values");
  auto* scratch = static_cast<unsigned char*>(detail::tile_scratch());
  const unsigned me = block_rank(), first = me & ~(Size - 1);
  std::memcpy(scratch + 32 * me, &value, sizeof(T));
  detail::tile_sync(first, Size, file, line);
  if (me == first) {
    T values[Size];
    T results[Size];
    for (unsigned r = 0; r < Size; ++r) std::memcpy(&values[r], scratch + 32 * (first + r), sizeof(T));
    compute(static_cast<const T*>(values), static_cast<T*>(results));
    for (unsigned r = 0; r < Size; ++r) std::memcpy(scratch + 32 * (first + r) + 16, &results[r], sizeof(T));
  }
  detail::tile_sync(first, Size, file, line);
  T out;
  std::memcpy(&out, scratch + 32 * me + 16, sizeof(T));
  return out;
}

// Throws unless the block holds whole tiles of Size threads (a GPU hangs or rejects a larger tile).
template <unsigned Size>
void check_multi_warp_tile(unsigned block_threads) {
  if (Size > block_threads || block_threads % Size != 0) {
    throw KernelError("thread_block_tile<" + std::to_string(Size) + "> of a block of " +
                      std::to_string(block_threads) + " threads: a tile of more than one warp needs a block that "
                      "is a whole number of such tiles (a larger tile than the block cannot exist on a GPU)");
  }
}

}  // namespace rooflab::emu::cg_detail

namespace cooperative_groups {

// The tile type every tile converts to (thread_block_tile<N> in user code); the ParentT forms derive from it.
// Tiles of up to 32 threads use the warp's collectives with the tile's own lanes as the mask; larger tiles
// (up to 1024 threads, as the toolkit allows) sync only their own threads, and have shfl, any, all (the
// toolkit's set for them), reduce and the scans.
template <unsigned Size>
class thread_block_tile<Size, void>
    : public rooflab::emu::cg_detail::tile_tag,
      public std::conditional_t<(Size <= 32), thread_group, rooflab::emu::cg_detail::not_a_thread_group> {
  static_assert((Size & (Size - 1)) == 0 && Size != 0 && Size <= 1024,
                "thread_block_tile: Size must be a power of two up to 1024 (1/2/4/8/16/32, or 64 ... 1024 for a "
                "tile of several warps)");
  static constexpr bool kMultiWarp = Size > 32;
  using Base = std::conditional_t<(Size <= 32), thread_group, rooflab::emu::cg_detail::not_a_thread_group>;

 public:
  thread_block_tile(rooflab::emu::cg_detail::make_tile, unsigned meta_rank, unsigned meta_size)
      : Base(make_base(meta_rank, meta_size)), meta_rank_(meta_rank), meta_size_(meta_size) {}

  static constexpr unsigned num_threads() { return Size; }
  static constexpr unsigned size() { return Size; }
  static unsigned thread_rank() { return rooflab::emu::cg_detail::block_rank() & (Size - 1); }
  unsigned meta_group_rank() const { return meta_rank_; }
  unsigned meta_group_size() const { return meta_size_; }

  static void sync(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    if constexpr (kMultiWarp) {
      rooflab::emu::detail::tile_sync(rooflab::emu::cg_detail::block_rank() & ~(Size - 1), Size, file, line);
    } else {
      __syncwarp(mask(), file, line);
    }
  }

  // Shuffles within the tile: ranks and deltas are the tile's, as __shfl_*_sync with width Size.
  template <typename T>
  T shfl(T value, int src_rank, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    if constexpr (kMultiWarp) {
      const unsigned src = static_cast<unsigned>(src_rank) & (Size - 1);
      auto* scratch = static_cast<unsigned char*>(rooflab::emu::detail::tile_scratch());
      static_assert(sizeof(T) <= 8, "Collectives with tiles larger than 32 threads are limited to types of up to 8 "
                                    "bytes (in the toolkit too)");
      const unsigned first = rooflab::emu::cg_detail::block_rank() & ~(Size - 1);
      std::memcpy(scratch + 32 * rooflab::emu::cg_detail::block_rank(), &value, sizeof(T));
      sync(file, line);
      T out;
      std::memcpy(&out, scratch + 32 * (first + src), sizeof(T));
      sync(file, line);  // nobody overwrites its value before every thread has read
      return out;
    } else {
      return __shfl_sync(mask(), value, src_rank, static_cast<int>(Size), file, line);
    }
  }
  template <typename T>
  T shfl_down(T value, unsigned delta, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    static_assert(!kMultiWarp, "thread_block_tile<N>::shfl_down: a tile of more than 32 threads has only sync, "
                               "shfl, any and all (in the toolkit too)");
    return __shfl_down_sync(mask(), value, delta, static_cast<int>(Size), file, line);
  }
  template <typename T>
  T shfl_up(T value, unsigned delta, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    static_assert(!kMultiWarp, "thread_block_tile<N>::shfl_up: a tile of more than 32 threads has only sync, "
                               "shfl, any and all (in the toolkit too)");
    return __shfl_up_sync(mask(), value, delta, static_cast<int>(Size), file, line);
  }
  template <typename T>
  T shfl_xor(T value, unsigned lane_mask, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    static_assert(!kMultiWarp, "thread_block_tile<N>::shfl_xor: a tile of more than 32 threads has only sync, "
                               "shfl, any and all (in the toolkit too)");
    return __shfl_xor_sync(mask(), value, static_cast<int>(lane_mask), static_cast<int>(Size), file, line);
  }

  int any(int predicate, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    if constexpr (kMultiWarp) {
      return vote(predicate != 0, false, file, line);
    } else {
      return __ballot_sync(mask(), predicate, file, line) != 0;
    }
  }
  int all(int predicate, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    if constexpr (kMultiWarp) {
      return vote(predicate != 0, true, file, line);
    } else {
      return __ballot_sync(mask(), predicate, file, line) == mask();
    }
  }
  // Bit r of the result is the predicate of the tile's rank r (the warp's ballot shifted to the tile).
  unsigned ballot(int predicate, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) const {
    static_assert(!kMultiWarp, "thread_block_tile<N>::ballot: a tile of more than 32 threads has only sync, shfl, "
                               "any and all (in the toolkit too)");
    return __ballot_sync(mask(), predicate, file, line) >> first_lane();
  }

 private:
  static Base make_base([[maybe_unused]] unsigned meta_rank, [[maybe_unused]] unsigned meta_size) {
    if constexpr (Size <= 32) {
      return thread_group(mask(), meta_rank, meta_size);
    } else {
      return Base{};
    }
  }
  static int vote(bool predicate, bool every, const char* file, unsigned line) {
    return rooflab::emu::cg_detail::multi_warp_collective<Size>(
        static_cast<int>(predicate),
        [every](const int* v, int* out) {
          int r = every ? 1 : 0;
          for (unsigned i = 0; i < Size; ++i) r = every ? (r & v[i]) : (r | v[i]);
          for (unsigned i = 0; i < Size; ++i) out[i] = r;
        },
        file, line);
  }
  static unsigned first_lane() { return (rooflab::emu::cg_detail::block_rank() % 32) & ~(Size - 1); }
  // This tile's lanes of the warp: its collectives wait for them only.
  static unsigned mask() {
    if constexpr (Size >= 32) {
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

// Tiles of Size consecutive threads of the block. A tile of more than one warp is made by every thread of
// the block together (the toolkit syncs the block there on sm_80+), and the block must hold whole tiles.
template <unsigned Size>
thread_block_tile<Size, thread_block> tiled_partition(const thread_block& parent, const char* file = __builtin_FILE(),
                                                      unsigned line = __builtin_LINE()) {
  if constexpr (Size > 32) {
    rooflab::emu::cg_detail::check_multi_warp_tile<Size>(parent.size());
    parent.sync(file, line);
  }
  return thread_block_tile<Size, thread_block>(rooflab::emu::cg_detail::make_tile{}, parent.thread_rank() / Size,
                                               (parent.size() + Size - 1) / Size);
}

// Tiles of a tile: meta_group_rank and meta_group_size count within the parent tile.
template <unsigned Size, unsigned ParentSize, typename GrandParentT>
thread_block_tile<Size, thread_block_tile<ParentSize, GrandParentT>> tiled_partition(
    const thread_block_tile<ParentSize, GrandParentT>& parent, const char* file = __builtin_FILE(),
    unsigned line = __builtin_LINE()) {
  static_assert(Size < ParentSize, "tiled_partition: the tile must be smaller than its parent tile");
  if constexpr (Size > 32) parent.sync(file, line);
  return thread_block_tile<Size, thread_block_tile<ParentSize, GrandParentT>>(
      rooflab::emu::cg_detail::make_tile{}, parent.thread_rank() / Size, ParentSize / Size);
}

// The calling thread alone, as a tile of one (meta_group_rank 0 of 1, as in the toolkit).
inline thread_block_tile<1> this_thread() {
  return thread_block_tile<1>(rooflab::emu::cg_detail::make_tile{}, 0, 1);
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
struct unsupported_cluster_group {
  static_assert(rooflab::emu::cg_detail::unsupported<T>, ROOFLAB_EMU_CG_UNSUPPORTED_("cluster_group (this_cluster)"));
};
template <typename T = void>
struct unsupported_coalesced_group {
  static_assert(rooflab::emu::cg_detail::unsupported<T>,
                ROOFLAB_EMU_CG_UNSUPPORTED_("coalesced_group (coalesced_threads, labeled_partition, binary_partition)"));
};

using cluster_group = unsupported_cluster_group<>;
using coalesced_group = unsupported_coalesced_group<>;

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
template <typename GroupT, typename FnT, typename... ArgsT>
void invoke_one(const GroupT&, FnT&&, ArgsT&&...) {
  static_assert(rooflab::emu::cg_detail::unsupported<GroupT>, ROOFLAB_EMU_CG_UNSUPPORTED_("invoke_one()"));
}

}  // namespace cooperative_groups
