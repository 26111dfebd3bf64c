// What orders streams' work on a GPU (ordering.hpp), as vector clocks: each stream slot counts the
// operations issued on it, and keeps, for every slot, the last operation of that slot it waits for. An
// operation is ordered before a point P (another stream's operation, an event, the host) when P's clock has
// reached it. The CUDA rules kept here:
//   - the legacy default stream (slot 0) waits for everything issued before on the blocking streams, and every
//     blocking stream waits for everything issued before on it; non-blocking streams (cudaStreamNonBlocking)
//     are ordered with neither;
//   - an event records its stream's clock; cudaStreamWaitEvent merges it into the waiting stream's;
//   - the host knows finished what it synchronized with (a stream, an event, the device, a synchronous copy),
//     and an event recorded after that also comes after it.
#include "ordering.hpp"

#include "guarded_memory.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>

namespace rooflab::emu::ordering {
namespace {

using Clock = std::vector<std::uint64_t>;

struct Slot {
  bool live = true;
  bool non_blocking = false;
  std::uint64_t issued = 0;  // operations issued on it
  Clock waits;               // per slot, the last operation it waits for
};

// Bytes [lo, hi) of the allocation that starts at `allocation`, which an operation touches (and may write).
struct Range {
  std::uintptr_t allocation = 0;
  std::size_t size = 0;  // the allocation's
  std::uintptr_t lo = 0, hi = 0;
  bool writes = false;
};

bool overlap(const Range& a, const Range& b) { return a.lo < b.hi && b.lo < a.hi && (a.writes || b.writes); }

// "bytes 4096 to 8191 of a 65536-byte allocation": where two ranges meet.
std::string where_they_meet(const Range& a, const Range& b) {
  const std::uintptr_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
  return "bytes " + std::to_string(lo - a.allocation) + " to " + std::to_string(hi - 1 - a.allocation) + " of a " +
         std::to_string(a.size) + "-byte allocation";
}

struct Operation {
  int slot = 0;
  std::uint64_t seq = 0;     // its place on its stream (1, 2 ...)
  std::uint64_t index = 0;   // its place among every operation issued
  std::string what;
  std::vector<Range> memory;  // what it touches
};

std::mutex g_order_mutex;
std::vector<Slot> g_slots(2);  // 0: the legacy default stream; 1: cudaStreamPerThread (blocking)
Clock g_host;                  // per slot, the last operation the host knows finished
std::uint64_t g_index = 0;
std::deque<Operation> g_pending;  // operations the host does not know finished, that touch memory or may be timed
std::string g_last_pair;          // the last race between streams reported (last_unordered_pair)

void merge(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}
std::uint64_t at(const Clock& c, int slot) { return static_cast<std::size_t>(slot) < c.size() ? c[slot] : 0; }

// What an operation about to be issued on `slot` waits for: its stream's clock, with the legacy stream's
// implicit synchronization, and what the host already knows finished.
Clock clock_of(int slot) {
  Slot& s = g_slots[slot];
  if (slot == 0) {
    for (std::size_t b = 1; b < g_slots.size(); ++b) {
      if (!g_slots[b].live || g_slots[b].non_blocking) continue;
      merge(s.waits, g_slots[b].waits);
      if (s.waits.size() <= b) s.waits.resize(b + 1, 0);
      s.waits[b] = std::max(s.waits[b], g_slots[b].issued);
    }
  } else if (!s.non_blocking) {
    merge(s.waits, g_slots[0].waits);
    if (s.waits.empty()) s.waits.resize(1, 0);
    s.waits[0] = std::max(s.waits[0], g_slots[0].issued);
  }
  merge(s.waits, g_host);
  Clock c = s.waits;
  if (c.size() <= static_cast<std::size_t>(slot)) c.resize(slot + 1, 0);
  c[slot] = s.issued;
  return c;
}

// Copies into pinned host memory waiting for the host to know they finished (land_when_finished).
struct Landing {
  int slot = 0;
  std::uint64_t seq = 0;
  void* dst = nullptr;
  std::uintptr_t allocation = 0;  // the pinned allocation dst lies in
  std::vector<unsigned char> bytes;
};
std::vector<Landing> g_landings;

// The landings the host now knows finished, in the order they were issued.
void land_finished() {
  std::erase_if(g_landings, [](Landing& l) {
    if (at(g_host, l.slot) < l.seq) return false;
    std::memcpy(l.dst, l.bytes.data(), l.bytes.size());
    return true;
  });
}

void forget_finished() {
  land_finished();
  while (!g_pending.empty() && at(g_host, g_pending.front().slot) >= g_pending.front().seq) g_pending.pop_front();
  // (Operations behind one the host does not know finished stay until a later sweep: the list stays short.)
  if (g_pending.size() > 4096) {
    std::erase_if(g_pending, [](const Operation& op) { return at(g_host, op.slot) >= op.seq; });
    while (g_pending.size() > 4096) g_pending.pop_front();  // the oldest: long past any timed interval
  }
}

std::uintptr_t allocation_start(const void* p) {
  std::lock_guard lock(memory::g_mutex);
  std::uintptr_t start = 0;
  return memory::find(p, 1, &start) != nullptr ? start : 0;
}

// The ranges of the allocations `memory` lies in (none for memory outside every allocation: host memory).
// Takes the memory lock: call it before the order lock.
std::vector<Range> ranges_of(const std::vector<Access>& memory) {
  std::lock_guard lock(memory::g_mutex);
  std::vector<Range> ranges;
  for (const Access& m : memory) {
    std::uintptr_t start = 0;
    const memory::Allocation* a = memory::find(m.p, 1, &start);
    if (a == nullptr || m.bytes == 0) continue;
    Range r{start, a->size, start, start + a->size, m.writes};
    if (m.bytes != kWholeAllocation) {
      r.lo = reinterpret_cast<std::uintptr_t>(m.p);
      r.hi = std::min(r.hi, r.lo + m.bytes);
    }
    ranges.push_back(r);
  }
  return ranges;
}

std::string stream_name(int slot) {
  if (slot == 0) return "the legacy default stream";
  if (slot == 1) return "cudaStreamPerThread";
  return "stream #" + std::to_string(slot - 1) + (g_slots[slot].non_blocking ? " (cudaStreamNonBlocking)" : " (blocking)");
}

// Two operations on different streams, neither ordered before the other, that touch the same bytes where
// either may write them: on a GPU they may run at the same time, and what the reader sees, or which write lands
// last, is a matter of timing. "" when the operation about to be issued on `slot` (waiting for `c`) has none
// such among those the host does not know finished. A copy's or memset's bytes are exact; a watched launch's
// are the pages it touched (so two launches writing different pages of one allocation are no race); anything
// else counts as touching its whole allocation.
// The first pending operation not ordered before a point on `slot` (whose clock is `c`) that touches bytes of
// `memory` where either may write them, with the two ranges that meet; op == nullptr when there is none.
struct Meeting {
  const Operation* op = nullptr;
  Range mine, theirs;
};
Meeting first_unordered_meeting(int slot, const Clock& c, const std::vector<Range>& memory) {
  for (const Operation& op : g_pending) {
    if (op.slot == slot || at(c, op.slot) >= op.seq) continue;  // in its stream's order, or ordered before it
    for (const Range& theirs : op.memory) {
      for (const Range& mine : memory) {
        if (overlap(mine, theirs)) return {&op, mine, theirs};
      }
    }
  }
  return {};
}

std::string unordered_pair(int slot, const Clock& c, const std::string& what, const std::vector<Range>& memory) {
  const Meeting m = first_unordered_meeting(slot, c, memory);
  if (m.op == nullptr) return "";
  return what + " on " + stream_name(slot) + (m.mine.writes ? " may write" : " reads") + " memory that " + m.op->what +
         " on " + stream_name(m.op->slot) + " may still be " + (m.theirs.writes ? "writing" : "reading") +
         " on a GPU (" + where_they_meet(m.mine, m.theirs) +
         "): nothing orders the two (an event recorded after the one and waited for by the other's stream, "
         "cudaStreamWaitEvent, or a synchronization between them), so the two may run at once";
}

}  // namespace

int create_stream(bool non_blocking) {
  std::lock_guard lock(g_order_mutex);
  g_slots.push_back(Slot{true, non_blocking, 0, {}});
  return static_cast<int>(g_slots.size() - 1);
}

void destroy_stream(cudaStream_t stream) {
  std::lock_guard lock(g_order_mutex);
  const int slot = slot_of(stream);
  if (slot > 1) g_slots[slot].live = false;  // its work still finishes: the slot stays for the records
}

int slot_of(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy) return 0;
  if (stream == cudaStreamPerThread) return 1;
  return reinterpret_cast<memory::Stream*>(stream)->slot;
}

void issue(cudaStream_t stream, std::string what, std::vector<Access> memory) {
  std::vector<Range> ranges = ranges_of(memory);
  std::string race;
  {
    std::lock_guard lock(g_order_mutex);
    const int slot = slot_of(stream);
    const Clock c = clock_of(slot);  // what this operation waits for
    race = unordered_pair(slot, c, what, ranges);
    if (!race.empty()) g_last_pair = race;
    Slot& s = g_slots[slot];
    ++s.issued;
    g_pending.push_back(Operation{slot, s.issued, ++g_index, std::move(what), std::move(ranges)});
    forget_finished();
  }
  if (!race.empty()) memory::misuse(8, "%s", race.c_str());
}

bool watch_wanted(cudaStream_t stream) {
  std::lock_guard lock(g_order_mutex);
  const int slot = slot_of(stream);
  // The legacy default stream and a blocking stream wait for each other's earlier work: no overlap between them.
  const auto implicitly_ordered = [](int a, int b) {
    return (a == 0 && !g_slots[b].non_blocking) || (b == 0 && !g_slots[a].non_blocking);
  };
  for (std::size_t t = 0; t < g_slots.size(); ++t) {
    const int other = static_cast<int>(t);
    if (other == slot || !g_slots[t].live || (other == 1 && g_slots[t].issued == 0)) continue;
    if (!implicitly_ordered(slot, other)) return true;
  }
  const Clock c = clock_of(slot);
  return std::ranges::any_of(g_pending, [&](const Operation& op) { return op.slot != slot && at(c, op.slot) < op.seq; });
}

EventMark record(cudaStream_t stream) {
  std::lock_guard lock(g_order_mutex);
  const int slot = slot_of(stream);
  EventMark m;
  m.recorded = true;
  m.stream = slot;
  m.clock = clock_of(slot);
  m.issued = ++g_index;
  return m;
}

void wait(cudaStream_t stream, const EventMark& mark) {
  if (!mark.recorded) return;  // a wait for an event never recorded completes at once, as on a GPU
  std::lock_guard lock(g_order_mutex);
  merge(g_slots[slot_of(stream)].waits, mark.clock);
}

void host_waits_for_stream(cudaStream_t stream) {
  std::lock_guard lock(g_order_mutex);
  merge(g_host, clock_of(slot_of(stream)));
  forget_finished();
}

void host_waits_for_event(const EventMark& mark) {
  if (!mark.recorded) return;
  std::lock_guard lock(g_order_mutex);
  merge(g_host, mark.clock);
  forget_finished();
}

void host_waits_for_device() {
  std::lock_guard lock(g_order_mutex);
  for (std::size_t i = 0; i < g_slots.size(); ++i) {
    if (g_host.size() <= i) g_host.resize(i + 1, 0);
    g_host[i] = g_slots[i].issued;
  }
  land_finished();
  g_pending.clear();
}

void drop_landings(const void* allocation) {
  const std::uintptr_t start = allocation_start(allocation);
  if (start == 0) return;
  std::lock_guard lock(g_order_mutex);
  std::erase_if(g_landings, [&](const Landing& l) { return l.allocation == start; });
}

void land_when_finished(cudaStream_t stream, void* dst, std::vector<unsigned char> bytes) {
  const std::uintptr_t allocation = allocation_start(dst);  // before the order lock: it takes the memory lock
  std::lock_guard lock(g_order_mutex);
  const int slot = slot_of(stream);
  std::memset(dst, memory::kPoison, bytes.size());
  g_landings.push_back(Landing{slot, g_slots[slot].issued, dst, allocation, std::move(bytes)});
  land_finished();  // a copy the host already knows finished (none yet: it was just issued)
}

std::string unordered_with(const void* address, std::size_t bytes, bool writes) {
  const std::vector<Range> mine = ranges_of({Access{address, writes, bytes}});
  if (mine.empty()) return "";
  std::lock_guard lock(g_order_mutex);
  // A synchronous copy runs on the legacy default stream (whose own earlier work its clock holds).
  const Meeting m = first_unordered_meeting(0, clock_of(0), mine);
  if (m.op == nullptr) return "";
  return m.op->what + " on " + stream_name(m.op->slot) + " may still be " + (m.theirs.writes ? "writing" : "reading") +
         " it on a GPU (" + where_they_meet(m.mine, m.theirs) +
         "): nothing orders it before this copy (a cudaStreamSynchronize or cudaDeviceSynchronize, or an event the "
         "copy's stream waits for; a cudaStreamNonBlocking stream is not ordered with the legacy default stream)";
}

std::string last_unordered_pair() {
  std::lock_guard lock(g_order_mutex);
  return g_last_pair;
}

std::string not_covered(const EventMark& start, const EventMark& stop) {
  if (!start.recorded || !stop.recorded) return "";
  std::lock_guard lock(g_order_mutex);
  for (const Operation& op : g_pending) {
    if (op.index <= start.issued || op.index >= stop.issued) continue;
    if (at(stop.clock, op.slot) >= op.seq) continue;
    return op.what + " was issued on " + stream_name(op.slot) +
           " between the two events, and nothing orders it before the end event (recorded on " +
           stream_name(stop.stream) + "): on a GPU the interval ends without it";
  }
  return "";
}

}  // namespace rooflab::emu::ordering
