// The entry points the compiler's ThreadSanitizer instrumentation calls (-fsanitize=thread on a .cu built
// with rooflab_emu_add_cu(<target> TRAFFIC ...)), answered by the traffic recorder instead of libtsan.
//
// This file itself is compiled without instrumentation, and a TRAFFIC binary never links libtsan: each hook
// notes the access (address, size, direction, and its caller's address as the site) and returns. The atomic
// hooks also do the operation, since the instrumented code calls them instead of performing it; they do it
// sequentially consistent, whatever order was asked (stronger is always correct). Function entry and exit,
// and the vtable hooks, have nothing to record.
#include <cstddef>
#include <cstdint>

namespace rooflab::emu::traffic::detail {
void note_access(std::uintptr_t addr, unsigned size, bool store, std::uintptr_t pc);
extern bool g_instrumented;
}  // namespace rooflab::emu::traffic::detail

namespace {
using rooflab::emu::traffic::detail::note_access;
inline std::uintptr_t site(void* return_address) { return reinterpret_cast<std::uintptr_t>(return_address); }
inline std::uintptr_t at(const volatile void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

// The caller of the hook is the instrumented instruction's site: __builtin_return_address(0) must be taken
// in the hook itself, hence macros rather than a shared helper.
#define ROOFLAB_TRAFFIC_PLAIN(n)                                                                              \
  extern "C" void __tsan_read##n(void* p) { note_access(at(p), n, false, site(__builtin_return_address(0))); } \
  extern "C" void __tsan_write##n(void* p) { note_access(at(p), n, true, site(__builtin_return_address(0))); } \
  extern "C" void __tsan_unaligned_read##n(void* p) {                                                         \
    note_access(at(p), n, false, site(__builtin_return_address(0)));                                          \
  }                                                                                                           \
  extern "C" void __tsan_unaligned_write##n(void* p) {                                                        \
    note_access(at(p), n, true, site(__builtin_return_address(0)));                                           \
  }                                                                                                           \
  extern "C" void __tsan_volatile_read##n(void* p) {                                                          \
    note_access(at(p), n, false, site(__builtin_return_address(0)));                                          \
  }                                                                                                           \
  extern "C" void __tsan_volatile_write##n(void* p) {                                                         \
    note_access(at(p), n, true, site(__builtin_return_address(0)));                                           \
  }

ROOFLAB_TRAFFIC_PLAIN(1)
ROOFLAB_TRAFFIC_PLAIN(2)
ROOFLAB_TRAFFIC_PLAIN(4)
ROOFLAB_TRAFFIC_PLAIN(8)
ROOFLAB_TRAFFIC_PLAIN(16)
#undef ROOFLAB_TRAFFIC_PLAIN

extern "C" void __tsan_read_range(void* p, std::size_t n) {
  note_access(at(p), static_cast<unsigned>(n), false, site(__builtin_return_address(0)));
}
extern "C" void __tsan_write_range(void* p, std::size_t n) {
  note_access(at(p), static_cast<unsigned>(n), true, site(__builtin_return_address(0)));
}
extern "C" void __tsan_init() { rooflab::emu::traffic::detail::g_instrumented = true; }
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

// ---- atomics: an atomic is a read and a write of the same bytes at the L2 ----

#define ROOFLAB_TRAFFIC_NOTE(p, T, store) note_access(at(p), sizeof(T), store, site(__builtin_return_address(0)))
#define ROOFLAB_TRAFFIC_RMW(bits, T, name, builtin)                                     \
  extern "C" T __tsan_atomic##bits##_##name(volatile T* p, T v, int) {                  \
    ROOFLAB_TRAFFIC_NOTE(p, T, true);                                                   \
    return builtin(p, v, __ATOMIC_SEQ_CST);                                             \
  }
#define ROOFLAB_TRAFFIC_ATOMICS(bits, T)                                                                   \
  extern "C" T __tsan_atomic##bits##_load(const volatile T* p, int) {                                     \
    ROOFLAB_TRAFFIC_NOTE(p, T, false);                                                                     \
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                           \
  }                                                                                                        \
  extern "C" void __tsan_atomic##bits##_store(volatile T* p, T v, int) {                                  \
    ROOFLAB_TRAFFIC_NOTE(p, T, true);                                                                      \
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);                                                              \
  }                                                                                                        \
  ROOFLAB_TRAFFIC_RMW(bits, T, exchange, __atomic_exchange_n)                                              \
  ROOFLAB_TRAFFIC_RMW(bits, T, fetch_add, __atomic_fetch_add)                                              \
  ROOFLAB_TRAFFIC_RMW(bits, T, fetch_sub, __atomic_fetch_sub)                                              \
  ROOFLAB_TRAFFIC_RMW(bits, T, fetch_and, __atomic_fetch_and)                                              \
  ROOFLAB_TRAFFIC_RMW(bits, T, fetch_or, __atomic_fetch_or)                                                \
  ROOFLAB_TRAFFIC_RMW(bits, T, fetch_xor, __atomic_fetch_xor)                                              \
  ROOFLAB_TRAFFIC_RMW(bits, T, fetch_nand, __atomic_fetch_nand)                                            \
  extern "C" int __tsan_atomic##bits##_compare_exchange_strong(volatile T* p, T* expected, T v, int, int) { \
    ROOFLAB_TRAFFIC_NOTE(p, T, true);                                                                      \
    return __atomic_compare_exchange_n(p, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
  }                                                                                                        \
  extern "C" int __tsan_atomic##bits##_compare_exchange_weak(volatile T* p, T* expected, T v, int, int) {   \
    ROOFLAB_TRAFFIC_NOTE(p, T, true);                                                                      \
    return __atomic_compare_exchange_n(p, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
  }                                                                                                        \
  extern "C" T __tsan_atomic##bits##_compare_exchange_val(volatile T* p, T expected, T v, int, int) {       \
    ROOFLAB_TRAFFIC_NOTE(p, T, true);                                                                      \
    __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);               \
    return expected;                                                                                       \
  }

ROOFLAB_TRAFFIC_ATOMICS(8, unsigned char)
ROOFLAB_TRAFFIC_ATOMICS(16, unsigned short)
ROOFLAB_TRAFFIC_ATOMICS(32, unsigned int)
ROOFLAB_TRAFFIC_ATOMICS(64, unsigned long long)
#undef ROOFLAB_TRAFFIC_ATOMICS
#undef ROOFLAB_TRAFFIC_RMW
#undef ROOFLAB_TRAFFIC_NOTE

extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
