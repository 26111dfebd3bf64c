// Asynchronous copies and block-scope barriers on the CPU backend (rooflab/emu/async_copy.hpp).
//
// A copy is executed at once into a buffer of the backend's, and its destination is poisoned; the bytes land
// at the wait that covers the copy, after a check that no thread wrote the destination in between (reported
// with the copy's line and the wait's). A read in between gets poison, which the schedules turn into wrong
// results, like a missing __syncthreads.
//
// Race mode: each CUDA thread that issues copies gets a "copy engine", a ThreadSanitizer fiber of its own. At
// the issue the engine is switched to with synchronization (it comes after everything the thread did before)
// and writes the destination range for TSan, then releases a sync object of that copy only. The wait acquires
// it; a barrier phase acquires the copies handed to it before it releases its waiters. Any access to the
// destination that no wait orders after the engine's write is then a data race, reported by TSan with the
// access's line and the copy's (the engine's name and stack). The backend's own poisoning and delivery run
// inside IgnoreScope, so TSan sees only the engine's write.
//
// Everything is per block and per worker: blocks of one worker run one after another, each thread's copies
// and each barrier's pending copies die with the block (async_begin_block / async_end_block).
// GCC 12 reports a false -Wrestrict inside std::string's operator+ at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <rooflab/emu/async_copy.hpp>
#include <rooflab/emu/runtime.hpp>

#include "internal.hpp"

// The traffic recorder (traffic.cpp), in the binaries that link it (rooflab::emu_traffic) and null elsewhere: a weak
// reference, so that the backend does not pull the recorder into every binary.
namespace rooflab::emu::traffic::detail {
[[gnu::weak]] void note_access(std::uintptr_t addr, unsigned size, bool store, std::uintptr_t pc);
}  // namespace rooflab::emu::traffic::detail

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(ROOFLAB_EMU_TSAN)
extern "C" void __tsan_write_range(void* addr, unsigned long size);
extern "C" void __tsan_func_entry(void* pc);
extern "C" void __tsan_func_exit();
#endif

namespace rooflab::emu::async {

namespace {

constexpr std::uint32_t kBarrierMagic = 0x62617272u;  // "barr": written by init

struct Copy {
  unsigned char* dst = nullptr;
  std::vector<unsigned char> bytes;  // the source's bytes at the issue (zero-filled tail included)
  const char* file = "";
  unsigned line = 0;
  uint3 issuer{};
  void* sync = nullptr;  // race mode: released by the engine after its write
};
using Batch = std::vector<Copy>;

struct ThreadCopies {
  Batch open;
  std::deque<Batch> committed;
  void* engine = nullptr;  // race mode: this thread's copy engine fiber
};

struct BlockAsync {
  std::unordered_map<unsigned, ThreadCopies> threads;               // by rank in the block
  std::unordered_map<const void*, Batch> on_barrier;                // copies waiting for a barrier's phase
  std::map<std::pair<const void*, std::uint64_t>, std::unique_ptr<char>> phase_sync;  // race mode
  std::vector<std::unique_ptr<char>> copy_sync;                     // race mode: one per copy, block-long
};

thread_local BlockAsync tl_async;
// Blocks begun and not yet ended on this worker: more than one only in a cooperative launch, whose blocks
// are all resident at once; the bookkeeping above is for one block at a time, so copies there are refused.
thread_local int tl_open_blocks = 0;

std::string dim_str(uint3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}
std::string site(const char* file, unsigned line) { return std::string(file) + ":" + std::to_string(line); }

ThreadCopies& mine() {
  if (tl_open_blocks > 1) {
    throw KernelError("asynchronous copies and cuda::barrier in a cooperative launch (cudaLaunchCooperativeKernel, "
                      "grid sync) are not supported by rooflab's CPU backend (docs/cpu-mode.md)");
  }
  return tl_async.threads[thread_rank_in_block()];
}

void* sync_for_phase(const void* barrier, std::uint64_t phase) {
  std::unique_ptr<char>& s = tl_async.phase_sync[{barrier, phase}];
  if (!s) s = std::make_unique<char>();
  return s.get();
}

// Race mode: the engine writes the destination now, ordered after the issuing thread, and releases the
// copy's own sync object (which the wait acquires). A no-op otherwise.
void engine_write([[maybe_unused]] ThreadCopies& t, [[maybe_unused]] Copy& c, [[maybe_unused]] void* pc) {
#if defined(ROOFLAB_EMU_TSAN)
  // What the engine touches is copied to locals first: the copy record is the backend's, not the engine's.
  void* issuer = nullptr;
  void* engine = nullptr;
  void* dst = c.dst;
  unsigned long bytes = 0;
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    if (t.engine == nullptr) t.engine = __tsan_create_fiber(0);
    engine = t.engine;
    tl_async.copy_sync.push_back(std::make_unique<char>());
    c.sync = sync = tl_async.copy_sync.back().get();
    bytes = c.bytes.size();
    // TSan keeps 63 characters of a name: the thread and the copy's line, with the file's base name.
    const char* slash = std::strrchr(c.file, '/');
    const std::string name = "async copy of thread " + dim_str(c.issuer) + " at " +
                             site(slash != nullptr ? slash + 1 : c.file, c.line);
    __tsan_set_fiber_name(engine, name.c_str());
    issuer = __tsan_get_current_fiber();
  }
  __tsan_switch_to_fiber(engine, 0);  // synchronizing: the copy starts after what its thread did before
  __tsan_func_entry(pc);
  __tsan_write_range(dst, bytes);
  __tsan_func_exit();
  __tsan_release(sync);
  __tsan_switch_to_fiber(issuer, __tsan_switch_to_fiber_no_sync);
#endif
}

Copy make_copy(void* dst, const void* src, std::size_t bytes, std::size_t zero_fill, const char* file, unsigned line) {
  if (zero_fill > bytes) zero_fill = bytes;
  Copy c;
  c.dst = static_cast<unsigned char*>(dst);
  c.bytes.assign(bytes, 0);
  if (bytes > zero_fill) std::memcpy(c.bytes.data(), src, bytes - zero_fill);
  c.file = file;
  c.line = line;
  c.issuer = threadIdx;
  return c;
}

// Lands a copy after checking that nobody wrote its destination since the issue. Bookkeeping: call inside
// an IgnoreScope.
void deliver(Copy& c, const char* file, unsigned line) {
  for (std::size_t i = 0; i < c.bytes.size(); ++i) {
    if (c.dst[i] == kPoisonByte) continue;
    throw KernelError("shared memory written while an asynchronous copy was filling it: byte " + std::to_string(i) +
                      " of the " + std::to_string(c.bytes.size()) + "-byte copy issued at " + site(c.file, c.line) +
                      " by thread " + dim_str(c.issuer) + " was written before the wait that completes it (" +
                      site(file, line) + "). Until a wait covers a copy (__pipeline_wait_prior, pipeline "
                      "consumer_wait, the barrier's wait, cooperative_groups::wait) its destination may be neither "
                      "read nor written");
  }
  std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
}

// Delivers a batch, then (race mode) orders the calling thread after each copy's engine write.
void deliver_batch(Batch& batch, const char* file, unsigned line) {
  std::vector<void*> syncs;
  {
    IgnoreScope ignore;
    for (Copy& c : batch) {
      deliver(c, file, line);
      if (c.sync != nullptr) syncs.push_back(c.sync);
    }
    batch.clear();
  }
  for (void* s : syncs) tsan_acquire(s);
}

void check_initialized(const BarrierState* b, const char* file, unsigned line) {
  if (b->magic != kBarrierMagic) {
    throw KernelError("cuda::barrier used at " + site(file, line) +
                      " before init(&barrier, count) or its constructor set it up (a __shared__ barrier is "
                      "initialized by one thread, then __syncthreads, before any thread uses it)");
  }
}

// The last arrival of a phase: the copies handed to the phase land, the completion function runs, and the
// phase advances, releasing its waiters.
void complete_phase(BarrierState* b, Completion completion, void* self, const char* file, unsigned line) {
  Batch copies;
  {
    IgnoreScope ignore;
    if (const auto it = tl_async.on_barrier.find(b); it != tl_async.on_barrier.end()) copies.swap(it->second);
  }
  deliver_batch(copies, file, line);
  if (completion != nullptr) completion(self);
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    sync = sync_for_phase(b, b->phase);
  }
  tsan_release(sync);
  IgnoreScope ignore;
  b->pending = b->expected;
  ++b->phase;
}

struct PhaseWait {
  const BarrierState* barrier;
  std::uint64_t phase;
};

bool phase_done(const void* arg) {
  const auto* w = static_cast<const PhaseWait*>(arg);
  return w->barrier->phase > w->phase;
}

}  // namespace

unsigned thread_rank_in_block() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

// What the traffic model (traffic.hpp) counts of a copy: its source bytes read from global memory and its destination
// written in shared memory, as the issuing thread's accesses at the call's site. The backend reads the source
// itself (uninstrumented), so the copy's bytes would otherwise reach no recording.
void note_traffic(const void* dst, const void* src, std::size_t bytes, std::size_t zero_fill, void* pc) {
  if (traffic::detail::note_access == nullptr) return;
  const auto site = reinterpret_cast<std::uintptr_t>(pc);
  if (bytes > zero_fill) {
    traffic::detail::note_access(reinterpret_cast<std::uintptr_t>(src), static_cast<unsigned>(bytes - zero_fill), false,
                                 site);
  }
  // The shared write is a site of its own (the recorder keys sites by address): one byte past the call's.
  traffic::detail::note_access(reinterpret_cast<std::uintptr_t>(dst), static_cast<unsigned>(bytes), true, site + 1);
}

void issue(void* dst, const void* src, std::size_t bytes, std::size_t zero_fill, const char* file, unsigned line) {
  Copy c;
  ThreadCopies* t = nullptr;
  {
    IgnoreScope ignore;
    c = make_copy(dst, src, bytes, zero_fill, file, line);
    t = &mine();
    note_traffic(dst, src, bytes, zero_fill, __builtin_return_address(0));
  }
  engine_write(*t, c, __builtin_return_address(0));
  IgnoreScope ignore;
  std::memset(dst, kPoisonByte, bytes);
  t->open.push_back(std::move(c));
}

void commit() {
  IgnoreScope ignore;
  ThreadCopies& t = mine();
  t.committed.push_back(std::move(t.open));
  t.open.clear();
}

std::size_t committed_batches() {
  IgnoreScope ignore;
  return mine().committed.size();
}

void wait_prior(std::size_t prior, const char* file, unsigned line) {
  for (;;) {
    Batch oldest;
    {
      IgnoreScope ignore;
      ThreadCopies& t = mine();
      if (t.committed.size() <= prior) return;
      oldest = std::move(t.committed.front());
      t.committed.pop_front();
    }
    deliver_batch(oldest, file, line);
  }
}

void barrier_init(BarrierState* b, std::ptrdiff_t expected) {
  IgnoreScope ignore;
  (void)mine();  // refused in a cooperative launch
  if (expected < 0) throw KernelError("cuda::barrier initialized with a negative count");
  b->expected = expected;
  b->pending = expected;
  b->phase = 0;
  b->magic = kBarrierMagic;
}

std::uint64_t barrier_arrive(BarrierState* b, std::ptrdiff_t update, bool drop, Completion completion, void* self,
                             const char* file, unsigned line) {
  void* sync = nullptr;
  std::uint64_t phase = 0;
  bool last = false;
  {
    IgnoreScope ignore;
    check_initialized(b, file, line);
    if (update <= 0 || update > b->pending) {
      throw KernelError("cuda::barrier arrival at " + site(file, line) + " with update " + std::to_string(update) +
                        " when the phase expects " + std::to_string(b->pending) +
                        " more (undefined behaviour on a GPU: more arrivals than the barrier's count)");
    }
    phase = b->phase;
    sync = sync_for_phase(b, phase);
    if (drop) --b->expected;
    b->pending -= update;
    last = b->pending == 0;
  }
  tsan_release(sync);  // the waiters of this phase come after this thread's work before it arrived
  if (last) complete_phase(b, completion, self, file, line);
  return phase;
}

bool barrier_done(const BarrierState* b, std::uint64_t phase) {
  IgnoreScope ignore;
  return b->phase > phase;
}

void barrier_wait(BarrierState* b, std::uint64_t phase, const char* file, unsigned line) {
  {
    IgnoreScope ignore;
    check_initialized(b, file, line);
  }
  const PhaseWait w{b, phase};
  if (!barrier_done(b, phase)) detail::wait_until(&phase_done, &w, "cuda::barrier wait", file, line);
  void* sync = nullptr;
  {
    IgnoreScope ignore;
    sync = sync_for_phase(b, phase);
  }
  tsan_acquire(sync);
}

void barrier_wait_parity(BarrierState* b, bool parity, const char* file, unsigned line) {
  std::uint64_t phase = 0;
  {
    IgnoreScope ignore;
    check_initialized(b, file, line);
    phase = b->phase;
  }
  if (((phase & 1u) != 0) == parity) {
    barrier_wait(b, phase, file, line);  // the current phase has this parity: wait for it
  } else if (phase > 0) {
    void* sync = nullptr;
    {
      IgnoreScope ignore;
      sync = sync_for_phase(b, phase - 1);
    }
    tsan_acquire(sync);  // already complete: still ordered after its arrivals, as the GPU's wait is
  }
}

std::uint64_t barrier_phase(const BarrierState* b) {
  IgnoreScope ignore;
  return b->phase;
}

void attach_open_batch(BarrierState* b) {
  IgnoreScope ignore;
  ThreadCopies& t = mine();
  Batch& target = tl_async.on_barrier[b];
  for (Copy& c : t.open) target.push_back(std::move(c));
  t.open.clear();
}

void issue_to_barrier(BarrierState* b, void* dst, const void* src, std::size_t bytes, const char* file, unsigned line) {
  Copy c;
  ThreadCopies* t = nullptr;
  {
    IgnoreScope ignore;
    check_initialized(b, file, line);
    c = make_copy(dst, src, bytes, 0, file, line);
    t = &mine();
    note_traffic(dst, src, bytes, 0, __builtin_return_address(0));
  }
  engine_write(*t, c, __builtin_return_address(0));
  IgnoreScope ignore;
  std::memset(dst, kPoisonByte, bytes);
  tl_async.on_barrier[b].push_back(std::move(c));
}

}  // namespace rooflab::emu::async

namespace rooflab::emu {

void async_begin_block() {
  IgnoreScope ignore;
  if (async::tl_open_blocks++ == 0) async::tl_async = async::BlockAsync();
}

void async_end_block() {
  if (--async::tl_open_blocks > 0) return;
#if defined(ROOFLAB_EMU_TSAN)
  for (auto& [rank, t] : async::tl_async.threads) {
    if (t.engine != nullptr) __tsan_destroy_fiber(t.engine);
  }
#endif
  IgnoreScope ignore;
  async::tl_async = async::BlockAsync();  // copies never waited for die with their block (nobody may read them)
}

}  // namespace rooflab::emu
