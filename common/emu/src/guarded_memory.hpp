// Guarded device memory (guarded_memory.cpp), shared with the runtime API's entry points (runtime_api.cpp):
// the allocation table, the guard records the fault handler reads, and the helpers that open device memory
// to the runtime's own copies. Internal to the backend.
#pragma once

#include "ordering.hpp"

#include <rooflab/emu/launch.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace rooflab::emu::memory {

constexpr unsigned char kPoison = 0xCD;
constexpr std::size_t kAlign = 16;

struct GuardRecord;

struct Allocation {
  std::size_t size = 0;        // bytes the program asked for
  void* mapping = nullptr;     // device memory: the whole mapping, guard pages included
  std::size_t mapping_bytes = 0;
  bool device = true;          // false: cudaMallocHost (pinned host memory, which kernels may also touch)
  GuardRecord* record = nullptr;  // its guard pages and where it was made (device memory)
  std::array<unsigned char, 16> canary{};  // the padding's bytes, by address modulo 16
  int opened = 0;              // runtime copies or memsets using it now (it is accessible to host code)
};

// A fixed table the fault handler can read without locks: guard page ranges and their allocations.
constexpr int kSiteFrames = 8;
struct GuardRecord {
  std::atomic<std::uintptr_t> guard{0};  // the page after the allocation (0: record free)
  std::uintptr_t front_guard = 0;        // the page at the start of the mapping (0: none)
  std::uintptr_t start = 0;
  std::size_t size = 0;
  const char* what = "cudaMalloc allocation";
  void* site[kSiteFrames] = {};          // the call stack of cudaMalloc, for "allocation made at ..."
  int site_frames = 0;
  // The current launch's pointer parameters into it (the first two), for "y[1024]" in reports: valid when
  // argument_round is the current launch's round.
  struct Argument {
    const char* name = nullptr;  // the parameter's name, not terminated (nullptr: unknown)
    std::size_t name_length = 0;
    std::uintptr_t base = 0;     // the pointer passed
    std::size_t element = 0;     // sizeof(*pointer), 0 for an incomplete type
    const char* type = "";       // the element type, demangled
  };
  Argument arguments[2];
  std::atomic<int> argument_count{0};
  std::atomic<unsigned long long> argument_round{0};
};
constexpr int kGuardRecords = 4096;

enum class Direction { to_host, to_device, device_to_device, host_to_host };

struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
  ordering::EventMark mark;  // its place in the streams' order (ordering.hpp)
};
struct Stream {
  int slot = 0;  // in the streams' order (ordering.hpp)
};

// Shared-memory limits of every pretend GPU (device_props.cpp reports the same): the opt-in limit is the
// largest of current GPUs (227 KiB, an H100's) so that a kernel that opts in to more than 48 KiB runs here
// whatever GPU it was written for.
constexpr std::size_t kSharedPerBlock = 48 * 1024;
constexpr std::size_t kSharedOptin = 227 * 1024;

// ---- state and helpers (guarded_memory.cpp) ----
extern std::mutex g_mutex;                                  // guards the allocation table and the counters below
extern std::map<std::uintptr_t, Allocation> g_allocations;  // by start address
extern int g_launches_running;                              // launches holding device memory open
extern std::size_t g_allocated_bytes;                       // live cudaMalloc bytes (cudaMemGetInfo)
extern std::size_t g_peak_allocated_bytes;
extern std::map<const void*, std::size_t> g_smem_optin;     // cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
extern thread_local cudaError_t tl_last_error;
extern std::mutex g_activity_mutex;  // guards g_activity
extern Activity g_activity;

std::size_t page_size();
cudaError_t record(cudaError_t err);  // sets what cudaGetLastError returns
// The allocation containing [p, p + bytes), if any (g_mutex held).
Allocation* find(const void* p, std::size_t bytes, std::uintptr_t* start_out = nullptr);
std::array<unsigned char, 16> make_canary(unsigned long long serial);
void fill_canary(unsigned char* p, std::size_t n, const std::array<unsigned char, 16>& canary);
bool protect_device_memory();
void set_access(const Allocation& a, bool open);
bool touch_watched(std::uintptr_t from, std::uintptr_t to);

// The access watch of one launch (guarded_memory.cpp): while it is on, the data pages of the device allocations
// holding `pointers` stay closed and the fault handler marks each page at its first touch. false: not started
// (another launch holds it, a pointer is not into device memory, or a runtime copy is using one now). The end
// gives, per allocation, the byte ranges of its touched pages, clipped to the allocation, and whether each was
// written (the page fault's error code says; a page only read stays open for reading until a write faults).
struct TouchedPages {
  struct Range {
    std::uintptr_t lo = 0, hi = 0;
    bool written = false;
  };
  std::uintptr_t start = 0;  // the allocation
  std::vector<Range> ranges;
};
bool begin_access_watch(const std::vector<const void*>& pointers);
std::vector<TouchedPages> end_access_watch();
void count_copy(Direction d, std::size_t bytes);
void install_fault_handler();
// The cudaMalloc allocation whose data pages hold `addr`, if any (lock-free: the fault handler uses it).
const GuardRecord* device_data_record(std::uintptr_t addr);
// The misaligned access the alignment sanitizer reported for the running CUDA thread, if any (alignment.cpp).
const char* pending_misaligned_report();
// Appends " made at f <- g" (where the allocation was made) to msg.
void append_site(char* msg, std::size_t cap, const GuardRecord& g);
GuardRecord* register_guard(const void* guard, const void* front_guard, const void* start, std::size_t size,
                            const char* what, void* const* site = nullptr, int site_frames = 0);
// Prints a runtime API misuse, the first few times each kind happens.
void misuse(int kind, const char* format, ...) __attribute__((format(printf, 2, 3)));

// While one lives, the runtime's own host code may touch the given device allocations (g_mutex held when
// opening, since the allocations were just looked up).
class RuntimeAccess {
 public:
  RuntimeAccess() = default;
  RuntimeAccess(const RuntimeAccess&) = delete;
  RuntimeAccess& operator=(const RuntimeAccess&) = delete;
  void open_locked(Allocation* a) {
    if (a == nullptr || !a->device || (count_ > 0 && opened_[0] == a)) return;
    if (a->opened++ == 0 && g_launches_running == 0 && protect_device_memory()) set_access(*a, true);
    opened_[count_++] = a;
  }
  ~RuntimeAccess() {
    if (count_ == 0) return;
    std::lock_guard lock(g_mutex);
    for (int i = 0; i < count_; ++i) {
      if (--opened_[i]->opened == 0 && g_launches_running == 0 && protect_device_memory()) set_access(*opened_[i], false);
    }
  }

 private:
  Allocation* opened_[2] = {};
  int count_ = 0;
};

}  // namespace rooflab::emu::memory
