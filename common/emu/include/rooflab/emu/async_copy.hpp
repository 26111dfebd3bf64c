// Asynchronous copies and block-scope barriers on the CPU backend: what <cuda/barrier>, <cuda/pipeline>,
// <cuda_pipeline_primitives.h> and <cooperative_groups/memcpy_async.h> (common/emu/cuda_include) are built on.
//
// A GPU copies global memory into shared memory in the background (cp.async); the destination's bytes are
// undefined until a wait covers the copy. The backend reads the source when the copy is issued and keeps
// the bytes aside; the destination is poisoned (0xCD) and receives them only at the wait that covers the copy
// (a __pipeline_wait_prior / pipeline consumer_wait / barrier phase completion / cooperative_groups::wait).
// So a thread that reads the destination too early reads poison (a wrong result under every schedule), a
// write into it before the wait is reported at the wait, and in race mode ThreadSanitizer reports either
// access with its source line: each thread's copies are written, when issued, by a "copy engine" fiber of
// its own that the wait alone orders before the waiting thread (async_copy.cpp).
//
// Copies are kept per CUDA thread as cp.async keeps them: an open batch, then committed batches, oldest
// first. A batch can instead be handed to a barrier's current phase (producer_commit, a memcpy_async with a
// barrier): it is delivered when that phase completes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rooflab::emu::async {

// ---- copies (async_copy.cpp) ----
// Issues a copy of `bytes` bytes into the calling thread's open batch; the last `zero_fill` of them are zeros
// instead of source bytes (__pipeline_memcpy_async's src_size).
void issue(void* dst, const void* src, std::size_t bytes, std::size_t zero_fill, const char* file, unsigned line);
// Closes the open batch (cp.async.commit_group; an empty batch counts too).
void commit();
// Delivers every committed batch but the `prior` newest (cp.async.wait_group prior).
void wait_prior(std::size_t prior, const char* file, unsigned line);
// How many batches the calling thread has committed and not yet waited for.
std::size_t committed_batches();

// ---- block-scope barriers ----
// The state of a cuda::barrier<thread_scope_block>, in the user's __shared__ object (raw, poisoned memory
// until init). `completion` is called once per phase, by the thread that completes it, before delivery.
struct BarrierState {
  std::ptrdiff_t expected;  // arrivals per phase (arrive_and_drop lowers it for the next phases)
  std::ptrdiff_t pending;   // arrivals still missing in this phase
  std::uint64_t phase;      // completed phases so far
  std::uint32_t magic;      // set by init: a barrier used before init is reported
};
using Completion = void (*)(void* barrier);

void barrier_init(BarrierState* b, std::ptrdiff_t expected);
// Arrives `update` times (drop: also leaves the barrier for the next phases); returns the phase arrived at.
std::uint64_t barrier_arrive(BarrierState* b, std::ptrdiff_t update, bool drop, Completion completion, void* self,
                             const char* file, unsigned line);
// Suspends the calling CUDA thread until the barrier has completed phase `phase` (the scheduler runs the others).
void barrier_wait(BarrierState* b, std::uint64_t phase, const char* file, unsigned line);
// Waits for the phase of this parity (CCCL's wait_parity: the current phase when its parity matches, else
// the one just completed).
void barrier_wait_parity(BarrierState* b, bool parity, const char* file, unsigned line);
bool barrier_done(const BarrierState* b, std::uint64_t phase);
std::uint64_t barrier_phase(const BarrierState* b);  // completed phases so far
// Hands the calling thread's open batch to the barrier's current phase (pipeline producer_commit).
void attach_open_batch(BarrierState* b);
// A copy delivered when the barrier's current phase completes (cuda::memcpy_async(..., barrier)).
void issue_to_barrier(BarrierState* b, void* dst, const void* src, std::size_t bytes, const char* file, unsigned line);

// ---- the calling thread's place in its block (for group copies) ----
unsigned thread_rank_in_block();

}  // namespace rooflab::emu::async

namespace rooflab::emu::detail {
// The scheduler's wait (scheduler.cpp): suspends the calling CUDA thread until ready(arg) is true, letting the
// block's other threads run; a wait that can never end is reported with `what` and the caller's line.
void wait_until(bool (*ready)(const void* arg), const void* arg, const char* what, const char* file, unsigned line);
}  // namespace rooflab::emu::detail

namespace rooflab::emu {
// Called by shared_memory.cpp at the start and end of every block (the copies and barriers are per block).
void async_begin_block();
void async_end_block();
}  // namespace rooflab::emu
