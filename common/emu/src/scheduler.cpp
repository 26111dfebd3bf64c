// The CPU backend's scheduler: each CUDA thread of a block is a fiber (Boost.Context) on the worker's OS
// thread, so __syncthreads and warp collectives can suspend a thread and let the others run.
//
// A block runs in rounds. In each round every runnable thread runs, in the schedule's order (forward,
// reverse or seeded random), until it finishes, waits at __syncthreads or waits at a warp collective.
// Warp collectives whose lanes have all arrived are completed first; when every live thread waits at a
// __syncthreads, the barrier is released (threads that exited are allowed, as on sm_70+). Anything else
// is a bug in the kernel, reported with the kernel, block, threads and source lines:
//   - threads waiting at different __syncthreads (divergent barrier),
//   - a warp collective whose mask names a lane that exited or waits at a block barrier,
//   - an exception escaping a CUDA thread.
// Blocks are handed to the worker threads from an atomic counter; fibers never move between OS threads.
// Two more waits: the sync of a tile of several warps (released when the tile's live threads all wait at it,
// whatever the rest of the block does) and grid.sync() in a cooperative launch, which runs every block on the
// calling thread, interleaved, each until all its threads wait at grid.sync() (run_cooperative).
// GCC 12 reports a false -Wrestrict inside std::string's operator+ at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <rooflab/emu/async_copy.hpp>
#include <rooflab/emu/runtime.hpp>

#include "internal.hpp"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <map>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace rooflab::emu {

namespace ctx = boost::context;

namespace {

// ---- race mode (ThreadSanitizer) ----
// Built with ROOFLAB_EMU_TSAN, every CUDA thread is a TSan fiber of its own. Switching between fibers
// creates no happens-before edge; edges exist only where CUDA has them: a __syncthreads (release before
// waiting, acquire after, on an object that alternates between barriers), a warp collective (the same per
// warp), the start of the launch (a new fiber starts after what the host did before it) and its end (the
// host acquires what every thread released). Nothing orders two blocks, not even consecutive blocks on one
// worker: a block that writes what another block reads or writes, without atomics, is a race. (So the
// barrier objects are allocated per block, since TSan keys them by address, and shared memory is mapped
// anew for each block: shared_memory.cpp.) Two CUDA threads touching the same address with a write between
// two barriers is then a data race that TSan reports with both source lines, even when the output happens
// to be right. The backend's own bookkeeping runs with TSan's checks off (IgnoreScope, internal.hpp).

// ---- configuration (environment, overridable by tests) ----

struct Config {
  Schedule schedule = Schedule::forward;
  std::uint64_t seed = 20261122;
  int workers = 1;
  std::size_t dynamic_smem_limit = 48 * 1024;
};

Config& config() {
  static Config c = [] {
    Config x;
    if (const char* s = std::getenv("ROOFLAB_EMU_SCHEDULE"); s != nullptr && *s != '\0') {
      const std::string v = s;
      if (v == "forward") {
        x.schedule = Schedule::forward;
      } else if (v == "reverse") {
        x.schedule = Schedule::reverse;
      } else if (v.rfind("random", 0) == 0) {
        x.schedule = Schedule::random;
        if (v.size() > 7 && v[6] == ':') x.seed = std::strtoull(v.c_str() + 7, nullptr, 0);
      } else {
        std::fprintf(stderr, "rooflab emu: ROOFLAB_EMU_SCHEDULE=%s is not forward, reverse or random[:SEED]; using forward\n", s);
      }
    }
    if (const char* w = std::getenv("ROOFLAB_EMU_WORKERS"); w != nullptr && *w != '\0') {
      x.workers = std::max(1, std::atoi(w));
    }
    if (const char* l = std::getenv("ROOFLAB_EMU_DYNAMIC_SMEM_LIMIT"); l != nullptr && *l != '\0') {
      x.dynamic_smem_limit = std::strtoull(l, nullptr, 0);
    }
    return x;
  }();
  return c;
}

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::forward: return "forward";
    case Schedule::reverse: return "reverse";
    case Schedule::random: return "random";
  }
  return "?";
}

void banner() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* race = std::getenv("ROOFLAB_EMU_RACE");
    [[maybe_unused]] const bool race_asked = race != nullptr && *race != '\0' && *race != '0';
#if defined(ROOFLAB_EMU_TSAN)
    const char* mode = "race mode: ThreadSanitizer, a fiber per CUDA thread";
#else
    const char* mode = "";
    if (race_asked) {
      std::fprintf(stderr, "rooflab emu: ROOFLAB_EMU_RACE=1 needs a binary built against the ThreadSanitizer backend "
                           "(rooflab_emu_add_cu(<target> RACE ...), CMake option ROOFLAB_EMU_TSAN=ON); this one runs "
                           "without race checks\n");
    }
#endif
    const char* quiet = std::getenv("ROOFLAB_EMU_QUIET");
    if (quiet != nullptr && *quiet == '1') return;
    const Config& c = config();
    std::fprintf(stderr,
                 "rooflab: CPU backend (schedule %s%s, %d worker%s%s%s): kernels run on the CPU to check correctness; "
                 "timings from the CPU backend say nothing about a GPU.\n",
                 schedule_name(c.schedule), c.schedule == Schedule::random ? (":" + std::to_string(c.seed)).c_str() : "",
                 c.workers, c.workers == 1 ? "" : "s", *mode != '\0' ? ", " : "", mode);
  });
}

// ---- fiber stacks: guarded (an overflow faults instead of corrupting), pooled per worker ----

constexpr std::size_t kStackBytes = 128 * 1024;

// Guard pages of the fiber stacks, for the fault handler ("a fiber stack overflow" instead of a wild
// access). A fixed table it can read without locks.
constexpr int kStackRecords = 16384;
std::atomic<std::uintptr_t> g_stack_guards[kStackRecords];

std::size_t os_page() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
void note_stack(const ctx::stack_context& s, bool live) {
  const auto guard = reinterpret_cast<std::uintptr_t>(s.sp) - s.size;  // the lowest page is PROT_NONE
  // Open addressing from the guard's page number: a stack is noted and forgotten in a step or two, where a
  // scan from slot 0 made thousands of live fibers (a cooperative grid keeps one per thread) quadratic.
  const std::size_t start = (guard / os_page()) % kStackRecords;
  for (std::size_t k = 0; k < kStackRecords; ++k) {
    std::uintptr_t expected = live ? 0 : guard;
    if (g_stack_guards[(start + k) % kStackRecords].compare_exchange_strong(expected, live ? guard : 0)) return;
  }
}
ctx::stack_context new_stack() {
  ctx::stack_context s = ctx::protected_fixedsize_stack(kStackBytes).allocate();
  note_stack(s, true);
  return s;
}
void delete_stack(ctx::stack_context& s) {
  note_stack(s, false);
  ctx::protected_fixedsize_stack(kStackBytes).deallocate(s);
}

class StackPool {
 public:
  ~StackPool() {
    for (auto& s : free_) delete_stack(s);
  }
  ctx::stack_context take() {
    if (free_.empty()) return new_stack();
    ctx::stack_context s = free_.back();
    free_.pop_back();
    return s;
  }
  void give(ctx::stack_context s) { free_.push_back(s); }

 private:
  std::vector<ctx::stack_context> free_;
};

thread_local StackPool tl_stacks;

// The allocator a fiber uses: hands out and takes back pooled stacks.
struct PooledStack {
#if defined(ROOFLAB_EMU_TSAN)
  // Race mode: a fresh stack per fiber, so TSan never sees one fiber's stack reused by another.
  ctx::stack_context allocate() { return new_stack(); }
  void deallocate(ctx::stack_context& s) noexcept { delete_stack(s); }
#else
  ctx::stack_context allocate() { return tl_stacks.take(); }
  void deallocate(ctx::stack_context& s) noexcept { tl_stacks.give(s); }
#endif
};

// ---- race mode: the TSan fibers of finished CUDA threads, reused by later launches ----
//
// Creating a TSan fiber costs about half a millisecond (the runtime zeroes some 800 KB of state for it): half of
// a race binary's time where each CUDA thread had a new one. A fiber reused keeps its clock, so the thread that
// takes it is ordered after everything the fiber's earlier threads did. That is true already, and only, across
// launches: the host acquires what every thread of a launch released (done_sync) before the next launch
// starts. So a fiber whose thread finished is retired to its launch, joins the pool when the launch has ended,
// and is never reused within the launch that retired it (two blocks, or two threads, of one launch stay
// unordered). A failed launch's fibers are destroyed: its unfinished threads released nothing. The stacks stay
// new per thread (PooledStack): a stack's memory is not ordered by the fiber's clock alone. At most
// kFiberPoolSize fibers are kept: measured on Lab 01's race binary, it halves its CPU time, and its peak memory
// is no higher than with a new fiber per thread (TSan reuses what a destroyed fiber held).
#if defined(ROOFLAB_EMU_TSAN)
constexpr std::size_t kFiberPoolSize = 2048;

class FiberPool {
 public:
  void* take() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        void* f = free_.back();
        free_.pop_back();
        ++reused_;
        return f;
      }
    }
    return __tsan_create_fiber(0);
  }
  unsigned long long reused() {
    std::lock_guard lock(mutex_);
    return reused_;
  }
  // The fibers `retired` by a launch that has ended: kept up to the pool's size, the rest destroyed.
  void release(std::vector<void*>& retired) {
    std::lock_guard lock(mutex_);
    for (void* f : retired) {
      if (free_.size() < kFiberPoolSize) {
        free_.push_back(f);
      } else {
        __tsan_destroy_fiber(f);
      }
    }
    retired.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<void*> free_;
  unsigned long long reused_ = 0;
};

FiberPool& fiber_pool() {
  static auto* pool = new FiberPool;  // never destroyed: a launch may end during static destruction
  return *pool;
}
#endif

// ---- per-thread and per-block state ----

enum class State : std::uint8_t { not_started, runnable, at_barrier, at_warp, at_tile, at_grid, at_wait, done };

struct CudaThread {
  uint3 idx{};
  unsigned linear = 0;
  State state = State::not_started;
  // (Small fields here fill what was padding before `fiber`: records scanned per collective stay as short.)
  std::uint8_t tile_syncs = 0;  // parity of the race-mode tile object
  std::uint8_t grid_syncs = 0;  // parity of the race-mode grid object
  // the sync of a tile of more than one warp: its threads [tile_first, tile_first + tile_count) of the block
  std::uint16_t tile_first = 0;
  std::uint16_t tile_count = 0;
  ctx::fiber fiber;  // the thread's context while it is suspended
  ctx::fiber sched;  // the scheduler's context while the thread runs
  const char* file = "";
  unsigned line = 0;
  // __syncthreads_count/and/or: 0 plain, 1 count, 2 and, 3 or
  int barrier_mode = 0;
  int predicate = 0;
  int barrier_result = 0;
  // warp collectives
  int op = 0;
  unsigned mask = 0;
  unsigned char value[16] = {};
  std::size_t bytes = 0;
  int arg = 0;
  int width = 32;
  unsigned char result[16] = {};
  // at_wait (detail::wait_until: cuda::barrier, block-scope pipelines): runnable again once ready(arg)
  bool (*ready)(const void*) = nullptr;
  const void* ready_arg = nullptr;
  const char* wait_what = "";
  unsigned barriers_passed = 0;  // parity of the race-mode barrier object
  unsigned collectives = 0;      // parity of the race-mode warp object
  void* tsan_fiber = nullptr;
};

struct Launch {
  const void* kernel = nullptr;
  std::string name;
  dim3 grid;
  dim3 block;
  std::size_t dynamic_smem = 0;
  std::size_t shared_limit = 0;  // static + dynamic shared bytes one block may use
  const detail::ThreadBody* body = nullptr;
  std::atomic<unsigned long long> next_block{0};
  std::atomic<bool> failed{false};
  char done_sync = 0;  // race mode: every thread releases here when it ends; the host acquires after the grid
  bool cooperative = false;  // cudaLaunchCooperativeKernel: every block resident, grid.sync() allowed
  char grid_sync[2] = {};    // race mode: grid.sync()'s objects, by parity
  std::mutex retire_mutex;           // race mode: the TSan fibers of this launch's finished threads,
  std::vector<void*> retired_fibers;  // reused once it has ended (FiberPool)
  std::mutex error_mutex;
  std::string error;
  void fail(const std::string& message) {
    std::lock_guard lock(error_mutex);
    if (error.empty()) error = message;
    failed = true;
  }
#if defined(ROOFLAB_EMU_TSAN)
  ~Launch() {
    for (void* f : retired_fibers) __tsan_destroy_fiber(f);  // a failed launch's, or one left by an exception
  }
#endif
};

struct BlockRun {
  Launch* launch = nullptr;
  uint3 idx{};
  std::vector<CudaThread> threads;
  int alive = 0;
  int waiting_warp = 0;  // threads waiting at a warp collective
  int waiting_tile = 0;  // threads waiting at the sync of a tile of more than one warp
  int waiting_grid = 0;  // threads waiting at grid.sync()
  unsigned long long linear = 0;  // the block's rank in the grid
  std::size_t next_start = 0;     // round 0: threads started so far
  std::uint64_t round = 0;
  std::vector<unsigned char> tile_scratch;  // multi-warp tile collectives: 16 bytes in, 16 out per thread
  std::unique_ptr<char[]> tile_sync;        // race mode: two objects (parities) per thread rank
  void* shared_state = nullptr;             // a cooperative launch's own shared memory for this block
  void* dynamic_smem = nullptr;            // guarded, poisoned (shared_memory.cpp)
  // Race mode: one object per barrier parity, and per warp per collective parity. On the heap and new for
  // each block: TSan keys sync objects by address, and one left at the same address would order the next
  // block after this one.
  std::unique_ptr<char[]> barrier_sync;
  std::vector<std::array<char, 2>> warp_sync;
  void* scheduler_fiber = nullptr;         // race mode: the worker's own TSan context
};

thread_local BlockRun* tl_block = nullptr;
thread_local CudaThread* tl_thread = nullptr;
thread_local const Launch* tl_launch = nullptr;  // for the fault handler's report

std::string dim_str(dim3 d) { return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")"; }

std::string where(const BlockRun& b, const CudaThread& t) {
  return "kernel " + b.launch->name + ", block " + dim_str(b.idx) + ", thread " + dim_str(t.idx);
}

// Suspends the running CUDA thread and returns to the scheduler.
void suspend() {
  IgnoreScope ignore;  // on the CUDA thread's fiber: its record is the backend's, not the kernel's
  CudaThread* t = tl_thread;
#if defined(ROOFLAB_EMU_TSAN)
  __tsan_switch_to_fiber(tl_block->scheduler_fiber, __tsan_switch_to_fiber_no_sync);
#endif
  t->sched = std::move(t->sched).resume();
}

// ---- running threads ----

// Runs one CUDA thread's kernel body to its end (suspending at barriers on the way) and marks it done.
// Exceptions other than Boost's own unwinding become the launch's error.
void run_thread_body(BlockRun& b, CudaThread& t) {
  try {
    (*b.launch->body)();
  } catch (const ctx::detail::forced_unwind&) {
    throw;  // the launch is being torn down: let Boost unwind this stack
  } catch (const std::exception& e) {
    b.launch->fail(where(b, t) + ": " + e.what());
  } catch (...) {
    b.launch->fail(where(b, t) + ": an exception escaped the kernel");
  }
  IgnoreScope ignore;
  t.state = State::done;
  --b.alive;
}

void resume(BlockRun& b, CudaThread& t) {
  tl_thread = &t;
  threadIdx = t.idx;
  [[maybe_unused]] unsigned switch_flags = 0;
  if (t.state == State::not_started) {
    t.state = State::runnable;
#if defined(ROOFLAB_EMU_TSAN)
    // A new thread starts after everything the launch did before it (a synchronizing switch); later
    // switches do not synchronize.
    t.tsan_fiber = fiber_pool().take();
    const std::string name = "CUDA block " + dim_str(b.idx) + " thread " + dim_str(t.idx);
    __tsan_set_fiber_name(t.tsan_fiber, name.c_str());
#endif
    t.fiber = ctx::fiber(std::allocator_arg, PooledStack{}, [&b, &t](ctx::fiber&& sched) {
      {
        IgnoreScope ignore;  // this fiber's own scope: the record is the backend's
        t.sched = std::move(sched);
      }
      run_thread_body(b, t);
      // Last: after the release this fiber touches nothing the next block may reuse (b lives on the
      // worker's stack), so take what the switch needs first.
      ctx::fiber back;
      [[maybe_unused]] void* scheduler_fiber = nullptr;
      {
        IgnoreScope ignore;
        back = std::move(t.sched);
        scheduler_fiber = b.scheduler_fiber;
      }
      tsan_release(&b.launch->done_sync);
#if defined(ROOFLAB_EMU_TSAN)
      __tsan_switch_to_fiber(scheduler_fiber, __tsan_switch_to_fiber_no_sync);
#endif
      return back;
    });
  } else {
    t.state = State::runnable;
    switch_flags = 1;
  }
#if defined(ROOFLAB_EMU_TSAN)
  __tsan_switch_to_fiber(t.tsan_fiber, switch_flags != 0 ? __tsan_switch_to_fiber_no_sync : 0);
#endif
  t.fiber = std::move(t.fiber).resume();
  tl_thread = nullptr;
}

// The schedule's order of n threads, into `order` (a reused buffer: no allocation per block or round).
const std::vector<unsigned>& make_order(std::size_t n, std::uint64_t salt, std::vector<unsigned>& order) {
  order.resize(n);
  std::iota(order.begin(), order.end(), 0u);
  switch (config().schedule) {
    case Schedule::forward: break;
    case Schedule::reverse: std::reverse(order.begin(), order.end()); break;
    case Schedule::random: {
      std::mt19937_64 rng(config().seed ^ (salt * 0x9E3779B97F4A7C15ull));
      for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
      break;
    }
  }
  return order;
}

// ---- warp collectives ----

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

const char* op_name(int op) {
  switch (op) {
    case detail::kShflIdx: return "__shfl_sync";
    case detail::kShflUp: return "__shfl_up_sync";
    case detail::kShflDown: return "__shfl_down_sync";
    case detail::kShflXor: return "__shfl_xor_sync";
    case detail::kBallot: return "__ballot_sync";
    case detail::kAny: return "__any_sync";
    case detail::kAll: return "__all_sync";
    case detail::kSyncWarp: return "__syncwarp";
    case detail::kReduceAdd: return "__reduce_add_sync";
    case detail::kReduceMin: return "__reduce_min_sync";
    case detail::kReduceMax: return "__reduce_max_sync";
    case detail::kReduceAnd: return "__reduce_and_sync";
    case detail::kReduceOr: return "__reduce_or_sync";
    case detail::kReduceXor: return "__reduce_xor_sync";
    case detail::kWarpCall: return "a warp matrix operation (wmma, mma, ldmatrix)";
  }
  return "a warp collective";
}

std::string hex_mask(unsigned m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", m);
  return buf;
}

// Two lanes that meet in one collective must be doing the same thing: the same intrinsic (or the same
// warp matrix operation) with the same mask. Returns a description of the mismatch, or "".
// The test alone, for the hot path (every lane pair of every collective): no string is built when they agree.
bool same_collective(const CudaThread& a, const CudaThread& b) {
  const bool same_call = a.op != detail::kWarpCall || std::memcmp(a.value, b.value, sizeof(void (*)())) == 0;
  return a.op == b.op && same_call && a.mask == b.mask;
}
std::string collective_mismatch(const CudaThread& a, unsigned lane_a, const CudaThread& b, unsigned lane_b) {
  if (same_collective(a, b)) return "";
  const auto site = [](const CudaThread& t, unsigned lane) {
    return "lane " + std::to_string(lane) + " at " + op_name(t.op) + "(mask " + hex_mask(t.mask) + ") " + t.file + ":" +
           std::to_string(t.line);
  };
  return "lanes of one warp meet at different warp collectives (every lane named in the mask must call the same "
         "one with the same mask): " + site(a, lane_a) + ", " + site(b, lane_b);
}

// Completes the collectives whose lanes have all arrived. Returns true if any completed; reports a lane
// named in a mask that exited or waits at a block barrier.
bool resolve_warps(BlockRun& b) {
  bool progress = false;
  const std::size_t n = b.threads.size();
  for (std::size_t base = 0; base < n; base += 32) {
    const std::size_t lanes = std::min<std::size_t>(32, n - base);
    std::vector<std::size_t> completed;
    for (std::size_t l = 0; l < lanes; ++l) {
      CudaThread& t = b.threads[base + l];
      if (t.state != State::at_warp) continue;
      bool ready = true;
      for (std::size_t p = 0; p < lanes; ++p) {
        if (((t.mask >> p) & 1u) == 0) continue;
        const CudaThread& other = b.threads[base + p];
        if (other.state == State::at_warp) {
          if (same_collective(t, other)) continue;
          if (const std::string m = collective_mismatch(t, static_cast<unsigned>(l), other, static_cast<unsigned>(p));
              !m.empty()) {
            b.launch->fail("kernel " + b.launch->name + ", block " + dim_str(b.idx) + ", warp " +
                           std::to_string(base / 32) + ": " + m);
            return false;
          }
          continue;
        }
        if (other.state == State::done) {
          // PTX waits for the non-exited lanes of the mask only (shfl.sync, vote.sync, redux.sync,
          // bar.warp.sync): naming a lane that has exited is allowed, reading its value is not (a shuffle whose
          // source lane exited, below). A warp matrix operation needs every lane of the warp.
          if (t.op != detail::kWarpCall) continue;
          b.launch->fail(where(b, t) + ": " + op_name(t.op) + " at " + t.file + ":" + std::to_string(t.line) +
                         " names lane " + std::to_string(p) + " in its mask " + hex_mask(t.mask) +
                         ", but that lane has exited (a warp matrix operation needs all 32 lanes of the warp)");
          return false;
        }
        if (other.state == State::at_barrier) {
          b.launch->fail(where(b, t) + ": " + op_name(t.op) + " at " + t.file + ":" + std::to_string(t.line) + " waits for lane " +
                         std::to_string(p) + ", which waits at __syncthreads at " + other.file + ":" +
                         std::to_string(other.line));
          return false;
        }
        ready = false;
      }
      if (!ready) continue;
      // Everyone in this lane's mask is here: compute this lane's result from their values.
      const unsigned lane = static_cast<unsigned>(l);
      if (t.op == detail::kWarpCall) {
        // Once per warp: the lowest lane of the mask runs the call with every lane's argument.
        if (static_cast<unsigned>(__builtin_ctz(t.mask)) != lane) continue;
        void (*fn)(void* const*, int) = nullptr;
        std::memcpy(&fn, t.value, sizeof fn);
        std::vector<void*> args;
        std::vector<std::size_t> members;
        for (std::size_t p = 0; p < lanes; ++p) {
          if (((t.mask >> p) & 1u) == 0) continue;
          void* arg = nullptr;
          std::memcpy(&arg, b.threads[base + p].value + sizeof fn, sizeof arg);
          args.push_back(arg);
          members.push_back(p);
        }
        {
          // The call runs as that lane, so that what it touches is that lane's (the traffic model records a
          // collective's global stores, store_matrix_sync's, as the lane's accesses; a fault names the lane).
          BlockRun* const outer_block = tl_block;
          CudaThread* const outer_thread = tl_thread;
          tl_block = &b;
          tl_thread = &t;
          try {
            fn(args.data(), static_cast<int>(args.size()));
          } catch (...) {
            tl_block = outer_block;
            tl_thread = outer_thread;
            throw;
          }
          tl_block = outer_block;
          tl_thread = outer_thread;
        }
        completed.insert(completed.end(), members.begin(), members.end());
        progress = true;
        continue;
      }
      const auto in_mask = [&](unsigned p) { return p < lanes && ((t.mask >> p) & 1u) != 0; };
      const auto value_of = [&](unsigned p) -> const CudaThread& { return b.threads[base + p]; };
      const unsigned width = static_cast<unsigned>(t.width <= 0 || t.width > 32 ? 32 : t.width);
      const unsigned segment = lane & ~(width - 1);
      std::memcpy(t.result, t.value, t.bytes);
      switch (t.op) {
        case detail::kShflIdx:
        case detail::kShflUp:
        case detail::kShflDown:
        case detail::kShflXor: {
          long src = lane;
          if (t.op == detail::kShflIdx) src = segment + (static_cast<unsigned>(t.arg) & (width - 1));
          if (t.op == detail::kShflUp) src = (lane - segment) >= static_cast<unsigned>(t.arg) ? long(lane) - t.arg : long(lane);
          if (t.op == detail::kShflDown) src = (lane - segment) + static_cast<unsigned>(t.arg) < width ? long(lane) + t.arg : long(lane);
          if (t.op == detail::kShflXor) {
            src = lane ^ static_cast<unsigned>(t.arg);
            if (static_cast<unsigned>(src) >= segment + width) src = lane;
          }
          const unsigned s = static_cast<unsigned>(src);
          if (s >= lanes || !in_mask(s)) {
            b.launch->fail(where(b, t) + ": shuffle at " + t.file + ":" + std::to_string(t.line) + " reads lane " +
                           std::to_string(s) + ", which is not in the mask (undefined on a GPU)");
            return false;
          }
          if (value_of(s).state == State::done) {
            b.launch->fail(where(b, t) + ": " + op_name(t.op) + " at " + t.file + ":" + std::to_string(t.line) +
                           " reads the value of lane " + std::to_string(s) + " (mask " + hex_mask(t.mask) +
                           "), but that lane has exited: the value is undefined on a GPU (keep the lanes "
                           "whose values are read running, or shuffle within the lanes still running)");
            return false;
          }
          std::memcpy(t.result, value_of(s).value, t.bytes);
          break;
        }
        case detail::kBallot:
        case detail::kAny:
        case detail::kAll: {
          unsigned bits = 0, members = 0;
          for (unsigned p = 0; p < lanes; ++p) {
            if (!in_mask(p) || value_of(p).state == State::done) continue;  // over the non-exited lanes
            ++members;
            if (load<int>(value_of(p).value) != 0) bits |= 1u << p;
          }
          const int r = t.op == detail::kBallot ? static_cast<int>(bits)
                        : t.op == detail::kAny  ? (bits != 0)
                                                : (static_cast<unsigned>(__builtin_popcount(bits)) == members);
          std::memcpy(t.result, &r, sizeof r);
          break;
        }
        case detail::kSyncWarp: break;
        default: {  // reductions on 32-bit integers; arg = 1 for signed
          long long acc = 0;
          bool first = true;
          for (unsigned p = 0; p < lanes; ++p) {
            if (!in_mask(p) || value_of(p).state == State::done) continue;  // over the non-exited lanes
            const long long v = t.arg ? static_cast<long long>(load<int>(value_of(p).value))
                                      : static_cast<long long>(load<unsigned>(value_of(p).value));
            if (first) {
              acc = v;
              first = false;
              continue;
            }
            switch (t.op) {
              case detail::kReduceAdd: acc += v; break;
              case detail::kReduceMin: acc = std::min(acc, v); break;
              case detail::kReduceMax: acc = std::max(acc, v); break;
              case detail::kReduceAnd: acc &= v; break;
              case detail::kReduceOr: acc |= v; break;
              case detail::kReduceXor: acc ^= v; break;
              default: break;
            }
          }
          const unsigned r = static_cast<unsigned>(acc);
          std::memcpy(t.result, &r, sizeof r);
        }
      }
      completed.push_back(l);
      progress = true;
    }
    // Release the lanes whose result was computed (after the loop: every lane read the others' values).
    for (std::size_t l : completed) b.threads[base + l].state = State::runnable;
    b.waiting_warp -= static_cast<int>(completed.size());
  }
  return progress;
}

// Makes the threads whose detail::wait_until condition now holds runnable; true if there were any.
bool wake_waiters(BlockRun& b) {
  bool woke = false;
  for (auto& t : b.threads) {
    if (t.state == State::at_wait && t.ready(t.ready_arg)) {
      t.state = State::runnable;
      woke = true;
    }
  }
  return woke;
}

// ---- one block ----

// Per worker, reused by its blocks: the thread records and the schedule's orders. (Race mode allocates the
// records anew for each block: a new allocation clears TSan's shadow of the old one, and blocks are not
// ordered, so reused records would look like races between the threads of two blocks.)
thread_local std::vector<CudaThread> tl_thread_cache;
thread_local std::vector<unsigned> tl_first_order;
thread_local std::vector<unsigned> tl_round_order;

// ---- tiles of more than one warp (thread_block_tile<64> ... <1024>) ----

// Releases the tiles whose live threads all wait at their sync. Returns true if any was released; reports
// a tile that can never complete (a member exited, or waits at a block barrier, a grid barrier or the sync of
// a different tile).
bool resolve_tiles(BlockRun& b) {
  bool progress = false;
  const std::size_t n = b.threads.size();
  for (std::size_t i = 0; i < n; ++i) {
    const CudaThread& t = b.threads[i];
    if (t.state != State::at_tile) continue;
    const std::size_t first = t.tile_first, end = std::min<std::size_t>(n, first + t.tile_count);
    bool ready = true;
    for (std::size_t p = first; p < end && ready; ++p) {
      const CudaThread& m = b.threads[p];
      if (m.state == State::at_tile && m.tile_first == t.tile_first && m.tile_count == t.tile_count) continue;
      if (m.state == State::at_warp || m.state == State::runnable || m.state == State::not_started) {
        ready = false;  // its warp collective may still complete
        continue;
      }
      const std::string other = m.state == State::done         ? "has exited"
                                : m.state == State::at_barrier ? std::string("waits at __syncthreads at ") + m.file +
                                                                     ":" + std::to_string(m.line)
                                : m.state == State::at_grid    ? std::string("waits at grid.sync() at ") + m.file +
                                                                     ":" + std::to_string(m.line)
                                                               : std::string("waits at the sync of a ") +
                                                                     std::to_string(m.tile_count) + "-thread tile at " +
                                                                     m.file + ":" + std::to_string(m.line);
      b.launch->fail(where(b, t) + ": the sync of its " + std::to_string(t.tile_count) + "-thread tile at " + t.file +
                     ":" + std::to_string(t.line) + " can never complete: thread " + dim_str(m.idx) +
                     " of the same tile " + other + " (every thread of a thread_block_tile must reach its sync)");
      return false;
    }
    if (ready) {
      for (std::size_t p = first; p < end; ++p) {
        CudaThread& m = b.threads[p];
        if (m.state != State::at_tile) continue;
        m.state = State::runnable;
        --b.waiting_tile;
      }
      progress = true;
    }
    i = std::max(i, end - 1);
  }
  return progress;
}

// Why a block whose live threads all wait can go no further, reported as the launch's error.
void report_stuck_block(BlockRun& b) {
  Launch& launch = *b.launch;
  const CudaThread* grid = nullptr;
  const CudaThread* other = nullptr;
  for (const auto& t : b.threads) {
    if (t.state == State::at_warp) {
      launch.fail(where(b, t) + ": warp collective at " + t.file + ":" + std::to_string(t.line) +
                  " can never complete: lanes of its mask wait elsewhere");
      return;
    }
    if (t.state == State::at_wait) {
      launch.fail(where(b, t) + ": " + t.wait_what + " at " + t.file + ":" + std::to_string(t.line) +
                  " can never complete: every other thread of the block has exited or waits elsewhere");
      return;
    }
    if (t.state == State::at_grid && grid == nullptr) grid = &t;
    if (t.state != State::at_grid && t.state != State::done && other == nullptr) other = &t;
  }
  if (grid != nullptr && other != nullptr) {
    launch.fail(where(b, *grid) + ": waits at grid.sync() at " + grid->file + ":" + std::to_string(grid->line) +
                " while thread " + dim_str(other->idx) + " of its block waits at " + other->file + ":" +
                std::to_string(other->line) + " (every thread of the grid must reach grid.sync())");
    return;
  }
  launch.fail("kernel " + launch.name + ": the scheduler found no thread able to run");
}

// Sets up block `linear_block` of the launch in `b` (its thread records, shared memory, sync objects).
// A cooperative launch gives each block records of its own: all its blocks are resident at once.
void begin_block(Launch& launch, BlockRun& b, unsigned long long linear_block) {
  b.launch = &launch;
  b.linear = linear_block;
  if (!kRaceMode && !launch.cooperative) b.threads.swap(tl_thread_cache);
  const dim3 g = launch.grid;
  b.idx = {static_cast<unsigned>(linear_block % g.x), static_cast<unsigned>((linear_block / g.x) % g.y),
           static_cast<unsigned>(linear_block / (static_cast<unsigned long long>(g.x) * g.y))};
  const dim3 bd = launch.block;
  const std::size_t n = static_cast<std::size_t>(bd.x) * bd.y * bd.z;
  b.threads.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    CudaThread& t = b.threads[i];
    t.linear = static_cast<unsigned>(i);
    t.idx = {static_cast<unsigned>(i % bd.x), static_cast<unsigned>((i / bd.x) % bd.y),
             static_cast<unsigned>(i / (static_cast<std::size_t>(bd.x) * bd.y))};
    t.state = State::not_started;
    t.barriers_passed = 0;
    t.collectives = 0;
    t.tile_syncs = 0;
    t.grid_syncs = 0;
    t.tsan_fiber = nullptr;
  }
  b.alive = static_cast<int>(n);
  b.barrier_sync = std::make_unique<char[]>(2);
  b.warp_sync.resize((n + 31) / 32);
#if defined(ROOFLAB_EMU_TSAN)
  b.scheduler_fiber = __tsan_get_current_fiber();
#endif
  // Exactly the requested bytes (rounded up to 16), ending against a guard page, poisoned: an overrun is
  // reported, and nothing the previous block left is visible.
  b.dynamic_smem = shared_begin_block(launch.dynamic_smem, launch.shared_limit);
}

// Makes `b` the block the running code sees (built-in variables, the scheduler's view).
void enter_block(BlockRun& b) {
  blockIdx = b.idx;
  blockDim = b.launch->block;
  gridDim = b.launch->grid;
  tl_block = &b;
}

// Round 0: start the threads back to back on one fiber, in the schedule's order. Most threads of most
// kernels never block, and then a whole block runs on a handful of fibers. A thread that blocks keeps the
// fiber it runs on, and the threads after it continue on a new one. (Race mode gives every thread a fiber
// of its own instead, in the rounds: TSan needs one identity per CUDA thread.)
void start_threads(BlockRun& b) {
#if !defined(ROOFLAB_EMU_TSAN)
  const std::size_t n = b.threads.size();
  const std::vector<unsigned>& first_order = make_order(n, b.linear * 1000003ull, tl_first_order);
  while (b.next_start < n && !b.launch->failed) {
    // `first_order` is read only while threads are still to start, which ends within this function.
    ctx::fiber runner(std::allocator_arg, PooledStack{}, [&b, &first_order, n](ctx::fiber&& sched) {
      while (b.next_start < n && !b.launch->failed) {
        CudaThread& t = b.threads[first_order[b.next_start++]];
        t.state = State::runnable;
        tl_thread = &t;
        threadIdx = t.idx;
        t.sched = std::move(sched);
        run_thread_body(b, t);  // may suspend: this fiber then belongs to t until t ends
        sched = std::move(t.sched);
      }
      return std::move(sched);
    });
    runner = std::move(runner).resume();
    tl_thread = nullptr;
    // A non-empty continuation means the thread that was running blocked: the fiber is its from now on.
    if (runner) b.threads[first_order[b.next_start - 1]].fiber = std::move(runner);
  }
  b.round = 1;
#else
  (void)b;
#endif
}

// Every live thread waits somewhere and no warp collective or tile can complete. Releases the block barrier
// if all of them wait at one __syncthreads and returns true; otherwise reports why the block is stuck.
bool release_block_barrier(BlockRun& b) {
  Launch& launch = *b.launch;
  const CudaThread* first = nullptr;
  bool all_at_barrier = true;
  int count = 0, all = 1, any = 0;
  for (const auto& t : b.threads) {
    if (t.state == State::done) continue;
    if (t.state != State::at_barrier) {
      all_at_barrier = false;
      continue;
    }
    count += t.predicate != 0;
    all &= t.predicate != 0;
    any |= t.predicate != 0;
    if (first == nullptr) {
      first = &t;
    } else if (t.line != first->line || (t.file != first->file && std::strcmp(t.file, first->file) != 0)) {
      launch.fail("kernel " + launch.name + ", block " + dim_str(b.idx) +
                  ": threads wait at different __syncthreads (a barrier inside a branch some threads skip): thread " +
                  dim_str(first->idx) + " at " + first->file + ":" + std::to_string(first->line) + ", thread " +
                  dim_str(t.idx) + " at " + t.file + ":" + std::to_string(t.line) +
                  ". The CUDA programming guide makes __syncthreads in a branch that not every thread of the "
                  "block takes undefined behaviour: some GPUs let it pass, others hang or corrupt shared memory, "
                  "so the CPU backend refuses it; move the barrier out of the branch");
      return false;
    }
  }
  if (!all_at_barrier) {
    report_stuck_block(b);
    return false;
  }
  for (auto& t : b.threads) {
    if (t.state != State::at_barrier) continue;
    t.barrier_result = t.barrier_mode == 1 ? count : t.barrier_mode == 2 ? all : t.barrier_mode == 3 ? any : 0;
    t.state = State::runnable;
  }
  return true;
}

// Runs the block's threads round after round until they have all finished (true), or, in a cooperative
// launch, until every live one waits at grid.sync() (false: the grid scheduler releases them).
bool advance_block(BlockRun& b) {
  Launch& launch = *b.launch;
  const std::size_t n = b.threads.size();
  while (!launch.failed && b.alive > 0) {
    for (unsigned i : make_order(n, b.linear * 1000003ull + b.round, tl_round_order)) {
      CudaThread& t = b.threads[i];
      if (t.state == State::at_wait && t.ready(t.ready_arg)) t.state = State::runnable;
      if (t.state == State::not_started || t.state == State::runnable) resume(b, t);
      if (launch.failed) break;
    }
    ++b.round;
    if (launch.failed || b.alive == 0) break;
    if (b.waiting_warp > 0 && resolve_warps(b)) continue;
    if (launch.failed) break;
    if (wake_waiters(b)) continue;  // a wait ended by a thread that ran after the waiter in this round
    if (b.waiting_tile > 0 && resolve_tiles(b)) continue;
    if (launch.failed) break;
    if (b.waiting_grid > 0 && b.waiting_grid == b.alive) return false;
    // Every live thread now waits somewhere: a block barrier is released when all of them wait at the same
    // __syncthreads.
    if (!release_block_barrier(b)) break;
  }
  return true;
}

// Ends the block: unwinds what a failed launch left suspended and checks shared-memory padding.
void end_block(BlockRun& b) {
  Launch& launch = *b.launch;
  // Destroying a suspended fiber unwinds its stack (a failed launch); done fibers are already empty.
  if (b.alive > 0) {
    for (auto& t : b.threads) t.fiber = ctx::fiber();
  }
#if defined(ROOFLAB_EMU_TSAN)
  {
    std::lock_guard lock(launch.retire_mutex);
    for (auto& t : b.threads) {
      if (t.tsan_fiber == nullptr) continue;
      if (t.state == State::done) {
        launch.retired_fibers.push_back(t.tsan_fiber);
      } else {
        __tsan_destroy_fiber(t.tsan_fiber);  // unwound: it released nothing the host acquired
      }
    }
  }
#endif
  // No happens-before edge to the next block on this worker (race mode): blocks are unordered on a GPU.
  if (const std::string padding = shared_end_block(); !padding.empty()) {
    launch.fail("kernel " + launch.name + ", block " + dim_str(b.idx) + ": " + padding);
  }
  tl_block = nullptr;
  if (!kRaceMode && !launch.cooperative) b.threads.swap(tl_thread_cache);
}

void run_block(Launch& launch, unsigned long long linear_block) {
  // The scheduler's bookkeeping is not the kernel's memory traffic (and the thread records are reused by
  // the next block, which nothing orders after this one).
  IgnoreScope ignore;
  BlockRun b;
  begin_block(launch, b, linear_block);
  enter_block(b);
  start_threads(b);
  advance_block(b);
  end_block(b);
}

// ---- cooperative launches: every block resident, grid.sync() a barrier of the whole grid ----
//
// All blocks run on the calling OS thread, interleaved: each runs, in the schedule's order of blocks, until
// it ends or all its live threads wait at grid.sync(); then every waiting thread is released and the next
// phase begins. Each block keeps its own thread records and shared memory (shared_use_state) from phase to
// phase, as a resident block keeps its shared memory on a GPU. The order of blocks differs per schedule, so a
// kernel that reads another block's results without grid.sync() reads stale data under one of them.
void run_cooperative(Launch& launch, unsigned long long blocks) {
  IgnoreScope ignore;
  std::vector<std::unique_ptr<BlockRun>> runs(blocks);
  std::vector<char> finished(blocks, 0);
  for (unsigned long long i = 0; i < blocks && !launch.failed; ++i) {
    runs[i] = std::make_unique<BlockRun>();
    runs[i]->shared_state = shared_new_state();
    shared_use_state(runs[i]->shared_state);
    begin_block(launch, *runs[i], i);
  }
  std::vector<unsigned> order;
  for (std::uint64_t phase = 0; !launch.failed; ++phase) {
    bool waiting = false;
    for (unsigned i : make_order(blocks, phase * 7919u + 1u, order)) {
      BlockRun& b = *runs[i];
      if (finished[i] != 0) continue;
      shared_use_state(b.shared_state);
      enter_block(b);
      if (phase == 0) start_threads(b);
      finished[i] = advance_block(b) ? 1 : 0;
      waiting = waiting || finished[i] == 0;
      if (launch.failed) break;
    }
    if (launch.failed || !waiting) break;
    for (unsigned long long i = 0; i < blocks; ++i) {  // every block waits at grid.sync(): release them all
      if (finished[i] != 0) continue;
      for (auto& t : runs[i]->threads) {
        if (t.state == State::at_grid) t.state = State::runnable;
      }
      runs[i]->waiting_grid = 0;
    }
  }
  for (unsigned long long i = 0; i < blocks; ++i) {
    if (!runs[i]) continue;
    shared_use_state(runs[i]->shared_state);
    enter_block(*runs[i]);
    end_block(*runs[i]);
    shared_use_state(nullptr);
    shared_delete_state(runs[i]->shared_state);
  }
}

}  // namespace

// ---- public API ----

namespace {
// Written by the report hook below (no lock there: see why), read by tests after their launches.
std::atomic<int> g_races{0};
std::string g_last_race;
}  // namespace

int races_reported() { return g_races.load(); }
std::string last_race_summary() {
  IgnoreScope ignore;
  return g_last_race;
}
bool race_mode() {
#if defined(ROOFLAB_EMU_TSAN)
  return true;
#else
  return false;
#endif
}
unsigned long long race_fibers_reused() {
#if defined(ROOFLAB_EMU_TSAN)
  return fiber_pool().reused();
#else
  return 0;
#endif
}

void set_schedule(Schedule s, std::uint64_t seed) {
  config().schedule = s;
  config().seed = seed;
}
Schedule schedule() { return config().schedule; }
void set_workers(int workers) { config().workers = std::max(1, workers); }

namespace {
// The name of a function with internal linkage (a `static` or anonymous-namespace kernel), or of any
// function in a binary linked without ENABLE_EXPORTS: dladdr sees only exported symbols, so look the
// address up in the file's full symbol table (.symtab; absent only if the binary was stripped).
std::string symtab_name(const char* file, std::uintptr_t offset) {
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string found;
  if (fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) > sizeof(Elf64_Ehdr)) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      const auto* base = static_cast<const unsigned char*>(map);
      const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
      const bool elf64 = std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
      if (elf64 && eh->e_shoff + static_cast<std::size_t>(eh->e_shnum) * sizeof(Elf64_Shdr) <= size) {
        const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum && found.empty(); ++i) {
          if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
          const Elf64_Shdr& strs = sh[sh[i].sh_link];
          if (sh[i].sh_offset + sh[i].sh_size > size || strs.sh_offset + strs.sh_size > size) continue;
          const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
          const std::size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
          for (std::size_t k = 0; k < count; ++k) {
            if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_name >= strs.sh_size) continue;
            if (offset < syms[k].st_value || offset >= syms[k].st_value + std::max<Elf64_Xword>(syms[k].st_size, 1)) {
              continue;
            }
            found = reinterpret_cast<const char*>(base + strs.sh_offset + syms[k].st_name);
            break;
          }
        }
      }
      munmap(map, size);
    }
  }
  close(fd);
  return found;
}

}  // namespace

std::string demangle(const char* symbol) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : symbol;
  std::free(demangled);
  return name;
}

std::string kernel_name(const void* kernel) {
  static std::mutex cache_mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard lock(cache_mutex);
  if (const auto it = cache.find(kernel); it != cache.end()) return it->second;
  std::string name;
  Dl_info info{};
  if (dladdr(kernel, &info) != 0) {
    if (info.dli_sname != nullptr && info.dli_saddr == kernel) {
      name = demangle(info.dli_sname);
    } else if (info.dli_fname != nullptr) {
      // Symbol values are relative to the object's load bias: the main program's is its link_map's l_addr
      // (0 unless it is position independent), a shared library's is its base. The main program is read
      // through /proc/self/exe (its dli_fname may be relative to a directory we have left).
      const auto* self = static_cast<const link_map*>(dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD));
      const bool main_program = self != nullptr && (reinterpret_cast<std::uintptr_t>(info.dli_fbase) == self->l_addr ||
                                                    self->l_addr == 0);
      const std::uintptr_t bias = main_program ? self->l_addr : reinterpret_cast<std::uintptr_t>(info.dli_fbase);
      const std::string sym = symtab_name(main_program ? "/proc/self/exe" : info.dli_fname,
                                          reinterpret_cast<std::uintptr_t>(kernel) - bias);
      if (!sym.empty()) name = demangle(sym.c_str());
    }
  }
  if (name.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", kernel);
    name = std::string("kernel at ") + buf;
  }
  cache.emplace(kernel, name);
  return name;
}

std::string deduced_kernel_name(const char* written, std::initializer_list<const char*> mangled_argument_types) {
  std::string name = std::string(written) + "<...>(";
  for (const char* t : mangled_argument_types) {
    if (name.back() != '(') name += ", ";
    name += demangle(t);
  }
  return name + ")";
}

bool is_fiber_stack_guard(const void* address) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  for (const auto& g : g_stack_guards) {
    const std::uintptr_t guard = g.load(std::memory_order_relaxed);
    if (guard != 0 && a >= guard && a < guard + os_page()) return true;
  }
  return false;
}

const char* current_kernel_for_report() { return tl_launch != nullptr ? tl_launch->name.c_str() : nullptr; }
bool current_thread_for_report(uint3* block, uint3* thread) {
  if (tl_block == nullptr || tl_thread == nullptr) return false;
  *block = tl_block->idx;
  *thread = tl_thread->idx;
  return true;
}
// A report from code that must not throw (the alignment sanitizer's entry point, alignment.cpp): the running
// thread's launch fails with it as if the thread had thrown it; the thread itself runs on.
bool fail_current_launch(const std::string& what) {
  if (tl_block == nullptr || tl_thread == nullptr) return false;
  IgnoreScope ignore;  // the backend's bookkeeping, not the kernel's memory traffic
  tl_block->launch->fail(where(*tl_block, *tl_thread) + ": " + what);
  return true;
}

std::size_t max_dynamic_smem(const void* kernel);  // runtime_api.cpp (cudaFuncSetAttribute)
long long launch_bound(const void* kernel);        // runtime_api.cpp (__launch_bounds__, where registered)
std::string check_padding_canaries();             // runtime_api.cpp
void ensure_fault_handler();                      // runtime_api.cpp
namespace detail {
void count_launch(const void* kernel, unsigned long long threads);  // runtime_api.cpp (activity())
}  // namespace detail

namespace detail {

cudaError_t launch_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                        ThreadBody thread_body, const char* name, bool cooperative);

namespace {
// The CPU backend holds every thread of a cooperative grid suspended at grid.sync() at once, each on a fiber
// stack of its own (two mappings each, under the kernel's vm.max_map_count of 65530): a bound of its own,
// below what a large pretend GPU would hold. Race mode adds ThreadSanitizer's own state per fiber (about half
// a megabyte): 12,416 threads exhausted its allocator, 4,096 run.
constexpr unsigned long long kCooperativeThreads = kRaceMode ? 4096 : 16384;

// cudaLaunchCooperativeKernel's checks before anything runs: the grid must fit on the pretend GPU at once (as
// cudaOccupancyMaxActiveBlocksPerMultiprocessor answers for this kernel, times the SMs), else
// cudaErrorCooperativeLaunchTooLarge as on a GPU; and within the backend's own bound (a KernelError).
cudaError_t check_cooperative(const void* kernel, const std::string& name, unsigned long long blocks,
                              unsigned long long threads, std::size_t dynamic_smem) {
  int per_sm = 0, sms = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(threads), dynamic_smem);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const unsigned long long resident = static_cast<unsigned long long>(per_sm) * static_cast<unsigned long long>(sms);
  if (blocks > resident) {
    std::fprintf(stderr,
                 "rooflab emu: cudaLaunchCooperativeKernel(%s): %llu blocks, but the pretend GPU holds at most %llu "
                 "of them at once (%d SMs x %d blocks per SM, cudaOccupancyMaxActiveBlocksPerMultiprocessor): "
                 "cudaErrorCooperativeLaunchTooLarge\n",
                 name.c_str(), blocks, resident, sms, per_sm);
    return cudaErrorCooperativeLaunchTooLarge;
  }
  if (blocks * threads > kCooperativeThreads) {
    throw KernelError("kernel " + name + ": a cooperative launch of " + std::to_string(blocks * threads) +
                      " threads; the CPU backend holds at most " + std::to_string(kCooperativeThreads) +
                      " threads of a cooperative grid at once (each waits at grid.sync() on a stack of its own). "
                      "A GPU would run it: size the grid for a smaller pretend GPU (ROOFLAB_EMU_SMS=4, say) or "
                      "launch fewer blocks");
  }
  return cudaSuccess;
}
}  // namespace

namespace {
// Why a launch of blocks of `block` fails for a kernel declared __launch_bounds__(max_threads, ...).
std::string beyond_launch_bounds(dim3 block, long long max_threads) {
  const long long threads = static_cast<long long>(block.x) * block.y * block.z;
  return "a block of " + std::to_string(threads) + " threads " + dim_str(block) +
         ", more than the kernel's __launch_bounds__ allow (" + std::to_string(max_threads) +
         "): a GPU refuses this launch, since ptxas fitted the kernel's registers to blocks of at most " +
         std::to_string(max_threads) + " threads. Launch smaller blocks or change the bound";
}
}  // namespace

cudaError_t run_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                     ThreadBody thread_body, const char* name) {
  return launch_grid(kernel, grid, block, dynamic_smem, thread_body, name, false);
}

cudaError_t run_cooperative_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                                 ThreadBody thread_body, const char* name) {
  return launch_grid(kernel, grid, block, dynamic_smem, thread_body, name, true);
}

cudaError_t launch_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_smem,
                        ThreadBody thread_body, const char* name, bool cooperative) {
  // However the launch ends, a watched one is ordered among the streams' work with what it touched.
  struct OrderedWhenItEnds {
    ~OrderedWhenItEnds() {
      try {
        finish_launch_ordering();
      } catch (...) {  // out of memory for the record: the launch's own error matters more
      }
    }
  } const ordered_when_it_ends;
  // A launch only recorded (LaunchShapes) runs nothing: no banner on the output of `inspect --json`.
  if (!recording_launch_shapes()) banner();
  const std::string kernel_text = name != nullptr ? std::string(name) : kernel_name(kernel);
  const unsigned long long threads = static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 || block.x > 1024 ||
      block.y > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u) {
    throw KernelError("kernel " + kernel_text + ": invalid launch configuration (cudaErrorInvalidConfiguration): grid " +
                      dim_str(grid) + ", block " + dim_str(block) + " (" + std::to_string(threads) +
                      " threads); a block has 1 to 1024 threads with block.z <= 64, and a grid 1 to 2^31-1 blocks in "
                      "x and 1 to 65535 in y and z");
  }
  // A kernel whose __launch_bounds__ are registered fails here, before any block runs, as on a GPU; a launch
  // without an address (a template the call deduces) is held to them by its body's first statement.
  if (const long long bound = launch_bound(kernel); bound > 0 && static_cast<long long>(threads) > bound) {
    throw KernelError("kernel " + kernel_text + ": " + beyond_launch_bounds(block, bound));
  }
  const std::size_t optin = max_dynamic_smem(kernel);
  const std::size_t limit = std::max(config().dynamic_smem_limit, optin);
  if (dynamic_smem > limit) {
    throw KernelError("kernel " + kernel_text + ": invalid launch configuration (cudaErrorInvalidValue): " +
                      std::to_string(dynamic_smem) + " bytes of dynamic shared memory asked for; the limit is " +
                      std::to_string(limit) +
                      " (raise it with cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                      "bytes), up to 227 KiB)");
  }
  const unsigned long long blocks = static_cast<unsigned long long>(grid.x) * grid.y * grid.z;
  if (cooperative) {
    if (const cudaError_t err = check_cooperative(kernel, kernel_text, blocks, threads, dynamic_smem); err != cudaSuccess) {
      return err;
    }
  }
  count_launch(kernel, blocks * threads);
  note_kernel_launch(kernel_text);
  if (note_launch_shape(kernel_text, grid, block, dynamic_smem)) return cudaSuccess;  // recorded, not run
  const DeviceMemoryOpen device_memory_open;  // the kernel may touch device memory; host code may not
  Launch launch;
  launch.kernel = kernel;
  launch.name = kernel_text;
  // Static and dynamic shared memory together: 48 KiB, or up to the opt-in maximum once the kernel has
  // opted in with cudaFuncSetAttribute (its static bytes then count against 227 KiB, as on a GPU).
  launch.shared_limit = optin > 0 ? std::max<std::size_t>(config().dynamic_smem_limit, 227 * 1024) : config().dynamic_smem_limit;
  launch.grid = grid;
  launch.block = block;
  launch.dynamic_smem = dynamic_smem;
  launch.body = &thread_body;
  launch.cooperative = cooperative;
  const auto work = [&launch, blocks] {
    ensure_fault_handler();  // this OS thread's alternate signal stack: a fiber stack overflow is reported
    tl_launch = &launch;
    for (unsigned long long i = launch.next_block++; i < blocks && !launch.failed; i = launch.next_block++) {
      run_block(launch, i);
    }
    tl_launch = nullptr;
  };
  const int workers = static_cast<int>(std::min<unsigned long long>(static_cast<unsigned long long>(config().workers), blocks));
  if (cooperative) {
    ensure_fault_handler();
    tl_launch = &launch;
    run_cooperative(launch, blocks);  // every block on this OS thread, interleaved at grid.sync()
    tl_launch = nullptr;
  } else if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  tsan_acquire(&launch.done_sync);  // the host reads what the threads wrote
#if defined(ROOFLAB_EMU_TSAN)
  // Ordered before whatever the host launches next; a failed launch's are destroyed with it (~Launch).
  if (!launch.failed) fiber_pool().release(launch.retired_fibers);
#endif
  if (launch.failed) throw KernelError(launch.error);
  finish_launch_ordering();  // before the canaries are read: the watch keeps untouched pages closed
  if (const std::string overrun = check_padding_canaries(); !overrun.empty()) {
    throw KernelError("kernel " + launch.name + ": " + overrun);
  }
  return cudaSuccess;
}

void check_launch_bounds(long long max_threads) {
  if (tl_block == nullptr) return;  // not on a CUDA thread (host code calling a kernel's body is not a launch)
  const dim3 b = tl_block->launch->block;
  if (static_cast<long long>(b.x) * b.y * b.z <= max_threads) return;
  throw KernelError(beyond_launch_bounds(b, max_threads));
}

void tile_sync(unsigned first, unsigned count, const char* file, unsigned line) {
  CudaThread* t = tl_thread;
  if (t == nullptr) throw KernelError("a thread_block_tile's sync called outside a kernel");
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    BlockRun& b = *tl_block;
    if (!b.tile_sync) b.tile_sync = std::make_unique<char[]>(2 * b.threads.size());
    sync = &b.tile_sync[2 * first + t->tile_syncs++ % 2u];
  }
  tsan_release(sync);
  {
    IgnoreScope ignore;
    t->state = State::at_tile;
    t->tile_first = static_cast<std::uint16_t>(first);
    t->tile_count = static_cast<std::uint16_t>(count);
    t->file = file;
    t->line = line;
    ++tl_block->waiting_tile;
  }
  suspend();
  tsan_acquire(sync);
}

void* tile_scratch() {
  IgnoreScope ignore;
  BlockRun* b = tl_block;
  if (b == nullptr) throw KernelError("a thread_block_tile collective called outside a kernel");
  if (b->tile_scratch.empty()) b->tile_scratch.resize(b->threads.size() * 32);
  return b->tile_scratch.data();
}

bool grid_is_cooperative() { return tl_block != nullptr && tl_block->launch->cooperative; }

void grid_sync(const char* file, unsigned line) {
  CudaThread* t = tl_thread;
  if (t == nullptr) throw KernelError("grid.sync() called outside a kernel");
  Launch& launch = *tl_block->launch;
  if (!launch.cooperative) {
    throw KernelError(std::string("grid.sync() at ") + file + ":" + std::to_string(line) +
                      " in a kernel not launched with cudaLaunchCooperativeKernel: only a cooperative launch keeps "
                      "every block resident, so a grid barrier elsewhere is undefined on a GPU (this_grid()."
                      "is_valid() is false there, and the sync traps or hangs); launch the kernel with "
                      "cudaLaunchCooperativeKernel");
  }
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    sync = &launch.grid_sync[t->grid_syncs++ % 2];
  }
  tsan_release(sync);
  {
    IgnoreScope ignore;
    t->state = State::at_grid;
    t->file = file;
    t->line = line;
    ++tl_block->waiting_grid;
  }
  suspend();
  tsan_acquire(sync);
}

int syncthreads(int predicate, int mode, const char* file, unsigned line) {
  CudaThread* t = tl_thread;
  if (t == nullptr) throw KernelError("__syncthreads called outside a kernel");
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    sync = &tl_block->barrier_sync[t->barriers_passed++ % 2];
  }
  tsan_release(sync);
  {
    IgnoreScope ignore;
    t->state = State::at_barrier;
    t->file = file;
    t->line = line;
    t->barrier_mode = mode;
    t->predicate = predicate;
  }
  suspend();
  tsan_acquire(sync);
  IgnoreScope ignore;
  return t->barrier_result;
}

void warp_collective(int op, unsigned mask, const void* value, std::size_t bytes, int arg, int width, void* result,
                     const char* file, unsigned line) {
  CudaThread* t = tl_thread;
  if (t == nullptr) throw KernelError("warp collective called outside a kernel");
  const unsigned lane = t->linear % 32;
  if (((mask >> lane) & 1u) == 0) {
    throw KernelError(std::string("warp collective at ") + file + ":" + std::to_string(line) + ": lane " +
                      std::to_string(lane) + " calls it with a mask that does not include itself");
  }
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    sync = &tl_block->warp_sync[t->linear / 32][t->collectives++ % 2];
  }
  tsan_release(sync);
  {
    IgnoreScope ignore;
    ++tl_block->waiting_warp;
    t->state = State::at_warp;
    t->op = op;
    t->mask = mask;
    t->bytes = bytes;
    if (bytes > 0) std::memcpy(t->value, value, bytes);
    t->arg = arg;
    t->width = width;
    t->file = file;
    t->line = line;
  }
  suspend();
  tsan_acquire(sync);
  IgnoreScope ignore;
  if (result != nullptr) std::memcpy(result, t->result, op == kBallot || op == kAny || op == kAll || op >= kReduceAdd ? 4 : bytes);
}

void warp_call(unsigned mask, void (*fn)(void* const*, int), void* arg, const char* file, unsigned line) {
  unsigned char packed[sizeof fn + sizeof arg];
  std::memcpy(packed, &fn, sizeof fn);
  std::memcpy(packed + sizeof fn, &arg, sizeof arg);
  warp_collective(kWarpCall, mask, packed, sizeof packed, 0, 32, nullptr, file, line);
}

void wait_until(bool (*ready)(const void*), const void* arg, const char* what, const char* file, unsigned line) {
  CudaThread* t = tl_thread;
  if (t == nullptr) throw KernelError(std::string(what) + " called outside a kernel");
  {
    IgnoreScope ignore;
    if (ready(arg)) return;
    t->state = State::at_wait;
    t->ready = ready;
    t->ready_arg = arg;
    t->wait_what = what;
    t->file = file;
    t->line = line;
  }
  suspend();  // the caller synchronizes (race mode) on its own objects
}

unsigned lane_id() {
  if (tl_thread == nullptr) throw KernelError("a warp-level operation called outside a kernel");
  return static_cast<unsigned>(tl_thread->linear % 32);
}

unsigned active_mask() {
  CudaThread* t = tl_thread;
  if (t == nullptr || tl_block == nullptr) return 0;
  const std::size_t base = t->linear / 32 * 32;
  unsigned m = 0;
  for (std::size_t p = 0; p < 32 && base + p < tl_block->threads.size(); ++p) {
    if (tl_block->threads[base + p].state != State::done) m |= 1u << p;
  }
  return m;
}

}  // namespace detail
}  // namespace rooflab::emu

#if defined(ROOFLAB_EMU_TSAN)
// ThreadSanitizer calls this (a weak hook in its runtime) with the SUMMARY line of every report: count the
// races so tests can fail on them, and print the line as the runtime would.
extern "C" void __sanitizer_report_error_summary(const char* summary) {
  // It runs on the racing CUDA thread's fiber while TSan prints the report, one report at a time. Its own
  // memory traffic must go unchecked (a race found inside a report deadlocks TSan) and must not synchronize
  // (a lock here would order two blocks' threads from then on, hiding their later races).
  rooflab::emu::IgnoreScope ignore;
  rooflab::emu::g_races.fetch_add(1, std::memory_order_relaxed);
  rooflab::emu::g_last_race = summary != nullptr ? summary : "";
  std::fprintf(stderr, "%s\n", summary != nullptr ? summary : "");
}
#endif
