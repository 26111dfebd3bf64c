// Misaligned pointers made by kernels (rooflab/emu/rewritten.hpp's aligned_reinterpret_cast): on a GPU a
// load or store through a misaligned float4* (int4*, double2*, a 16-byte struct ...) faults with
// cudaErrorMisalignedAddress; on the CPU the same access usually works, so the backend reports it itself.
#include <rooflab/emu/runtime.hpp>  // first: it defines the CUDA keywords rewritten.hpp expects
#include <rooflab/emu/rewritten.hpp>

#include "guarded_memory.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace rooflab::emu {

bool current_thread_for_report(uint3* block, uint3* thread);  // scheduler.cpp

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
}  // namespace rooflab::emu
