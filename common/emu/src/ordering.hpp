// What orders the work of streams on a GPU, kept beside the CPU backend's synchronous execution
// (ordering.cpp): each stream's operations, what each stream waits for (the legacy default stream's implicit
// synchronization, events, cudaStreamWaitEvent) and what the host knows to be finished (a stream, event or
// device synchronization). The backend still runs every operation when it is issued; this is what lets it say
// where a GPU would not have: a host copy that reads memory a kernel on another stream may still be writing, a
// timed interval whose end does not cover work issued inside it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rooflab::emu::ordering {

// An event's place in the streams' order: the operations of each stream that finish before it completes.
struct EventMark {
  bool recorded = false;
  int stream = 0;                    // the stream it was recorded on (a slot: 0 is the legacy default stream)
  std::uint64_t issued = 0;          // the index of the record among every operation issued, any stream
  std::vector<std::uint64_t> clock;  // per stream slot, the last operation ordered before it
};

int create_stream(bool non_blocking);  // a new slot
void destroy_stream(cudaStream_t stream);
int slot_of(cudaStream_t stream);      // nullptr and cudaStreamLegacy: 0; cudaStreamPerThread: 1

// Memory an operation touches: `bytes` bytes from `p` (a copy's ends, a memset, the pages a watched launch
// touched), or, when that is not known, every byte of the allocation holding `p` (a library call's matrices, a
// kernel's pointer argument that was not watched); `writes`: it may write them (a non-const pointer).
inline constexpr std::size_t kWholeAllocation = static_cast<std::size_t>(-1);
struct Access {
  const void* p = nullptr;
  bool writes = false;
  std::size_t bytes = kWholeAllocation;
};

// An operation issued on `stream`: `what` names it in reports; `memory` what it touches. One that touches bytes
// which an operation on another stream, unordered with it, may write (or that may write bytes such an operation
// touches) is reported: both named, with their streams and the bytes (last_unordered_pair).
void issue(cudaStream_t stream, std::string what, std::vector<Access> memory);
// Whether a launch about to be issued on `stream` could overlap, on a GPU, with work on another stream: some
// other live stream is not ordered with it by the legacy default stream's implicit synchronization, or work not
// ordered before it is pending. Then the launch is worth watching page by page (memory::begin_access_watch):
// two streams working on different parts of one allocation are not a race.
bool watch_wanted(cudaStream_t stream);
std::string last_unordered_pair();
// The bytes of the asynchronous copy just issued on `stream` (the last `issue` there) into pinned host memory at
// `dst`: on a GPU the call returns before the copy runs, so the bytes land only when the host knows the copy
// finished (a synchronization of its stream, an event after it, the device, or a synchronous copy the legacy
// stream orders after it). Until then `dst` holds the poison 0xCD: a host read that comes too early reads it,
// on the CPU as it could read stale bytes on a GPU.
void land_when_finished(cudaStream_t stream, void* dst, std::vector<unsigned char> bytes);
void drop_landings(const void* allocation);  // cudaFreeHost of the allocation that starts there
EventMark record(cudaStream_t stream);
void wait(cudaStream_t stream, const EventMark& mark);  // cudaStreamWaitEvent
void host_waits_for_stream(cudaStream_t stream);
void host_waits_for_event(const EventMark& mark);
void host_waits_for_device();

// A synchronous copy or set on the legacy default stream that reads (`writes` false) or writes `bytes` at
// `address`: "" when every operation touching that memory is ordered before it, else what is not (the
// operation, its stream and why), for a report.
std::string unordered_with(const void* address, std::size_t bytes, bool writes);

// The operations issued between two events that the later one does not cover (""
// when none): what an interval timed with them leaves out on a GPU.
std::string not_covered(const EventMark& start, const EventMark& stop);

}  // namespace rooflab::emu::ordering
