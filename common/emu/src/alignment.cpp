// Misaligned accesses made by kernels: on a GPU a load or store through a misaligned float4* (int4*, double2*,
// a 16-byte struct ...) faults with cudaErrorMisalignedAddress; on the CPU the same access usually works, so
// the backend reports it itself, two ways:
// - a reinterpret_cast<T*> dereferenced where it is made (rooflab/emu/rewritten.hpp's aligned_reinterpret_cast)
//   is checked before the access and throws, naming the cast;
// - every other access (a pointer kept in a variable, a C-style cast, pointer arithmetic) is checked by GCC's
//   -fsanitize=alignment, which cmake/RooflabEmu.cmake turns on for the rewritten .cu files: its checks call
//   the UBSan entry point defined here (no libubsan is linked), at the access itself, whatever instructions
//   the compiler chose for it.
#include <rooflab/emu/runtime.hpp>  // first: it defines the CUDA keywords rewritten.hpp expects
#include <rooflab/emu/rewritten.hpp>

#include "guarded_memory.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace rooflab::emu {

bool current_thread_for_report(uint3* block, uint3* thread);  // scheduler.cpp
bool fail_current_launch(const std::string& what);            // scheduler.cpp
const char* current_kernel_for_report();                      // scheduler.cpp

namespace detail {

void misaligned_pointer(const void* address, std::size_t align, std::size_t size, const char* type, const char* file,
                        unsigned line) {
  uint3 block{}, thread{};
  if (!current_thread_for_report(&block, &thread)) return;  // host code: not the GPU's rule
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  const memory::GuardRecord* g = memory::device_data_record(a);
  if (g != nullptr && a >= g->start && a + size > g->start + g->size) return;  // no whole T left: never read
  char msg[1024];
  std::snprintf(msg, sizeof msg,
                "misaligned address %p (%zu bytes past a %zu-byte boundary): reinterpret_cast<%s> at %s:%u; %s needs "
                "%zu-byte alignment, and a GPU faults (cudaErrorMisalignedAddress) when it loads or stores through "
                "this pointer (offset the data by a multiple of the vector width, or load element by element)",
                address, static_cast<std::size_t>(a % align), align, type, file, line, type, align);
  // Where the pointer points, when it is inside a cudaMalloc allocation.
  if (g != nullptr && a >= g->start) {
    const std::size_t len = std::strlen(msg);
    std::snprintf(msg + len, sizeof msg - len, "; it points at byte offset %zu of a %zu-byte %s",
                  static_cast<std::size_t>(a - g->start), g->size, g->what);
    if (g->site_frames > 0) memory::append_site(msg, sizeof msg, *g);
  }
  // The scheduler adds the kernel, block and thread.
  throw KernelError(msg);
}

}  // namespace detail

// ---- the alignment sanitizer's entry point ----

namespace {

// What GCC's instrumentation passes (the layouts of the UBSan runtime's interface, which GCC follows).
struct SanitizerLocation {
  const char* file;
  std::uint32_t line;
  std::uint32_t column;
};
struct SanitizerType {
  std::uint16_t kind;
  std::uint16_t info;
  char name[1];  // "'float4'", quotes included
};
struct TypeMismatch {
  SanitizerLocation where;
  const SanitizerType* type;
  unsigned char log_alignment;
  unsigned char check_kind;  // what the access is: a load, a store, a reference binding ...
};

// GCC's kinds 0 and 1 are loads and stores; the others (a reference bound to the object, as a copy does, a
// member access through the pointer ...) all access it on a GPU.
const char* access_kind(unsigned char kind) {
  return kind == 0 ? "a load of" : kind == 1 ? "a store to" : "an access to";
}

// GCC's type name as the source spells it: "'const struct float4'" -> "const float4".
void type_name(const SanitizerType* type, char* out, std::size_t size) {
  const char* in = type != nullptr ? type->name : "an object";
  std::size_t n = 0;
  for (const char* c = in; *c != '\0' && n + 1 < size; ++c) {
    if (*c == '\'') continue;
    if (std::strncmp(c, "struct ", 7) == 0 || std::strncmp(c, "class ", 6) == 0) {
      c += *c == 's' ? 6 : 5;
      continue;
    }
    out[n++] = *c;
  }
  out[n] = '\0';
}

// The last report of this OS thread and the CUDA thread it is about, for the fault handler: an aligned SSE
// access that the compiler emitted after the check faults on the CPU too, and the process ends there
// (guarded_memory.cpp prints this report first when the fault is the same CUDA thread's).
thread_local char tl_pending[1024];
thread_local const char* tl_pending_kernel = nullptr;
thread_local uint3 tl_pending_block{}, tl_pending_thread{};

bool same(uint3 a, uint3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// The report of one misaligned access, in the words of misaligned_pointer's.
void describe(char* msg, std::size_t size, const TypeMismatch& d, std::uintptr_t a) {
  const std::size_t align = std::size_t{1} << d.log_alignment;
  char type[128];
  type_name(d.type, type, sizeof type);
  std::snprintf(msg, size,
                "misaligned address %p (%zu bytes past a %zu-byte boundary): %s %s at %s:%u:%u; %s needs %zu-byte "
                "alignment, and a GPU faults (cudaErrorMisalignedAddress) on this access (offset the data by a "
                "multiple of the vector width, or load element by element)",
                reinterpret_cast<void*>(a), static_cast<std::size_t>(a % align), align, access_kind(d.check_kind), type,
                d.where.file != nullptr ? d.where.file : "?", d.where.line, d.where.column, type, align);
  if (const memory::GuardRecord* g = memory::device_data_record(a); g != nullptr && a >= g->start) {
    const std::size_t len = std::strlen(msg);
    std::snprintf(msg + len, size - len, "; it points at byte offset %zu of a %zu-byte %s",
                  static_cast<std::size_t>(a - g->start), g->size, g->what);
    if (g->site_frames > 0) memory::append_site(msg, size, *g);
  }
}

// Host code (main, launchers) is not held to the GPU's rule. In a kernel, the launch fails with the report;
// the CUDA thread runs on (GCC declares the check's call nothrow, so no exception may leave it), and no new
// block starts.
void report_type_mismatch(const TypeMismatch* d, std::uintptr_t a) {
  uint3 block{}, thread{};
  if (d == nullptr || !current_thread_for_report(&block, &thread)) return;
  if (a % (std::size_t{1} << d->log_alignment) == 0) return;  // only the alignment check is compiled in
  describe(tl_pending, sizeof tl_pending, *d, a);
  tl_pending_kernel = current_kernel_for_report();
  tl_pending_block = block;
  tl_pending_thread = thread;
  fail_current_launch(tl_pending);
}

}  // namespace

namespace memory {
// The report made for the running CUDA thread, if any (async-signal-safe: no allocation).
const char* pending_misaligned_report() {
  uint3 block{}, thread{};
  if (tl_pending[0] == '\0' || !current_thread_for_report(&block, &thread)) return nullptr;
  const bool same_thread = tl_pending_kernel == current_kernel_for_report() && same(block, tl_pending_block) &&
                           same(thread, tl_pending_thread);
  return same_thread ? tl_pending : nullptr;
}
}  // namespace memory

}  // namespace rooflab::emu

// -fsanitize-recover=alignment calls the first; the second is what -fno-sanitize-recover would call (it must
// not return): defined too, so that either flag links without libubsan.
extern "C" void __ubsan_handle_type_mismatch_v1(void* data, void* pointer) {
  rooflab::emu::report_type_mismatch(static_cast<const rooflab::emu::TypeMismatch*>(data),
                                     reinterpret_cast<std::uintptr_t>(pointer));
}
extern "C" [[noreturn]] void __ubsan_handle_type_mismatch_v1_abort(void* data, void* pointer) {
  __ubsan_handle_type_mismatch_v1(data, pointer);
  std::fprintf(stderr, "rooflab emu: %s\n", rooflab::emu::tl_pending);
  std::abort();
}
