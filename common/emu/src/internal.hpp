// What the CPU backend's source files share with each other (not with kernels): race-mode annotations,
// guarded mappings for shared memory, and the shared-memory hooks the scheduler calls around each block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>

#if defined(ROOFLAB_EMU_TSAN)
#include <sanitizer/tsan_interface.h>
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

namespace rooflab::emu {

// A C++ symbol's readable name, or the symbol itself when it does not demangle (scheduler.cpp).
std::string demangle(const char* symbol);

// ---- race mode (ThreadSanitizer) ----
// The backend's own bookkeeping is not the kernel's memory traffic: it runs inside an IgnoreScope. Each TSan
// fiber has its own ignore state, so a scope opened on a CUDA thread's fiber covers that fiber only.
#if defined(ROOFLAB_EMU_TSAN)
struct IgnoreScope {
  IgnoreScope() { __tsan_ignore_thread_begin(); }
  ~IgnoreScope() { __tsan_ignore_thread_end(); }
  IgnoreScope(const IgnoreScope&) = delete;
  IgnoreScope& operator=(const IgnoreScope&) = delete;
};
inline void tsan_release(void* a) { __tsan_release(a); }
inline void tsan_acquire(void* a) { __tsan_acquire(a); }
inline constexpr bool kRaceMode = true;
#else
struct IgnoreScope {
  IgnoreScope() {}  // user-provided, so that an unused scope object draws no warning
  ~IgnoreScope() {}
  IgnoreScope(const IgnoreScope&) = delete;
  IgnoreScope& operator=(const IgnoreScope&) = delete;
};
inline void tsan_release(void*) {}
inline void tsan_acquire(void*) {}
inline constexpr bool kRaceMode = false;
#endif

// ---- guarded mappings (runtime_api.cpp) ----
// `bytes` bytes at `start`, followed by up to align-1 bytes of padding and then a PROT_NONE page that the
// fault handler reports as "N bytes past the end of a `bytes`-byte <what>". `what` must outlive the mapping.
struct GuardedMapping {
  unsigned char* mapping = nullptr;
  std::size_t mapping_bytes = 0;
  unsigned char* start = nullptr;
  std::size_t bytes = 0;
  std::size_t padded = 0;  // bytes rounded up to the alignment: start + padded is the guard page
  void* record = nullptr;  // the fault handler's record of the guard page
};
GuardedMapping map_guarded(std::size_t bytes, std::size_t align, const char* what);
void unmap_guarded(GuardedMapping& m);
inline constexpr unsigned char kPoisonByte = 0xCD;

// ---- shared memory (shared_memory.cpp), called by the scheduler on the worker's OS thread ----
// Starts a block: poisons its dynamic shared memory (returned) and forgets the previous block's __shared__
// variables. `limit` bounds static + dynamic bytes.
void* shared_begin_block(std::size_t dynamic_bytes, std::size_t limit);
// Ends a block; returns a description of a write into the padding after a shared variable, or "".
std::string shared_end_block();
// A cooperative launch keeps all its blocks resident: each block gets shared-memory state of its own, and the
// scheduler puts it in use before running the block's threads (nullptr: the worker's own state again).
void* shared_new_state();
void shared_use_state(void* state);
void shared_delete_state(void* state);
// Whether `p` is in the running block's shared memory (a __shared__ variable it has reached, or its dynamic
// shared memory); if so, *at is its place in a model of the block's shared window: the byte offset in its
// variable, plus the variable's index times 2^32 (each variable starts at bank 0, and variables stay apart).
bool shared_memory_place(const void* p, std::uintptr_t* at);

// ---- the scheduler's view of the running thread (scheduler.cpp), for reports ----
const char* current_kernel_for_report();

// ---- a launch's pointer arguments (guarded_memory.cpp), for detail::prepare_launch (runtime_api.cpp) ----
namespace detail {
// begin_launch_arguments starts a launch's round; device_pointer_argument
// says whether p lies in memory a kernel may touch and notes the parameter (its name where the rewriter
// saw the kernel's signature, its element type and size) for that allocation, so that an out-of-bounds
// report can say `y[1024]` in the parameter's own element size.
struct PointerParameter {
  const char* name = nullptr;  // into the launch's parameter list, not terminated; nullptr when unknown
  std::size_t name_length = 0;
  std::size_t element_size = 0;  // 0 for a pointer to an incomplete type
  const char* element_type = "";
};
void begin_launch_arguments();
// Orders, among the streams' work, the launch prepare_launch left watched (its memory the pages it touched);
// nothing when it left none. launch_grid calls it once the grid has run, or has failed to.
void finish_launch_ordering();
// The bytes from p to the end of its allocation, its reach (LaunchShape::reach); nullopt when p is in none.
std::optional<std::size_t> device_pointer_argument(const void* p, const PointerParameter& parameter);
const char* element_type_name(const std::type_info& type);  // demangled, valid for the program's lifetime

// The index-th name of "a,b,n" (what the rewriter passes), or {nullptr, 0} if it is empty or missing.
inline std::pair<const char*, std::size_t> parameter_name(const char* parameters, std::size_t index) {
  if (parameters == nullptr) return {nullptr, 0};
  const char* p = parameters;
  for (std::size_t k = 0; k < index; ++k) {
    p = std::strchr(p, ',');
    if (p == nullptr) return {nullptr, 0};
    ++p;
  }
  const std::size_t length = std::strcspn(p, ",");
  return {length == 0 ? nullptr : p, length};
}
// src/kernels.cpp: whether a LaunchShapes is alive (launches are recorded, not run).
bool recording_launch_shapes();
// src/runtime_api.cpp: what the launch prepare_launch last saw on this thread passed in each argument
// (LaunchShape::reach and ::scalars), handed over once: a launch that prepared none gets empty lists.
struct ArgumentFacts {
  std::vector<std::size_t> reach;
  std::vector<std::optional<long long>> scalars;
};
ArgumentFacts take_argument_facts();

}  // namespace detail

}  // namespace rooflab::emu
