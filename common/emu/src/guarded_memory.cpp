// Guarded device memory for the CPU backend: the allocation table, guard pages and the fault handler that
// reports out-of-bounds accesses, canaries, the read watch of timed runs, and the activity counters. The
// runtime API's entry points that use it (cudaMalloc, cudaMemcpy ...) are in runtime_api.cpp.
//
// Device memory: every cudaMalloc gets its own mapping [guard page][data pages][guard page], the
// allocation's end (rounded up to 16 bytes, the alignment float4 needs) touching the second guard page, so a
// kernel that reads or writes past the end faults (or far enough before the start); the fault handler names
// the kernel, block, thread, how far past which allocation the access was, and where the allocation was
// made. The up-to-15 bytes of alignment padding, and the slack before the start in the first page, hold a
// canary checked after every launch; each allocation's canary differs (it encodes the allocation's serial
// number), so a kernel that copies in[n] to out[n] leaves out's padding holding in's canary, which shows.
// New memory is filled with 0xCD bytes (never zeros), so a read of memory nobody wrote shows.
//
// Host code cannot touch device memory, as on a GPU: the data pages are PROT_NONE except while a kernel
// runs or while the runtime's own copies and memsets run (ROOFLAB_EMU_OPEN_DEVICE_MEMORY=1 turns this off).
// Launches, copies and memsets are counted (rooflab::emu::activity()) so that a test can tell that the
// kernel under test ran rather than the host computing the answer.
#include <rooflab/emu/pretend_gpu.hpp>
#include <rooflab/emu/runtime.hpp>

#include "guarded_memory.hpp"
#include "internal.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

namespace rooflab::emu {

const char* current_kernel_for_report();                      // scheduler.cpp
bool current_thread_for_report(uint3* block, uint3* thread);  // scheduler.cpp
bool is_fiber_stack_guard(const void* address);               // scheduler.cpp
std::string kernel_name(const void* kernel);                  // scheduler.cpp (any function's name)
cudaError_t record_error(cudaError_t err);                    // runtime_api.cpp, for device_props.cpp

namespace memory {



std::mutex g_mutex;
std::map<std::uintptr_t, Allocation> g_allocations;  // by start address

GuardRecord g_guards[kGuardRecords];

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

std::atomic<unsigned long long> g_argument_round{0};  // one per launch (detail::begin_launch_arguments)

thread_local cudaError_t tl_last_error = cudaSuccess;

cudaError_t record(cudaError_t err) {
  if (err != cudaSuccess) tl_last_error = err;
  return err;
}

// The allocation containing [p, p + bytes), if any.
Allocation* find(const void* p, std::size_t bytes, std::uintptr_t* start_out) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = g_allocations.upper_bound(a);
  if (it == g_allocations.begin()) return nullptr;
  --it;
  if (a < it->first || a + bytes > it->first + it->second.size || (bytes > 0 && a >= it->first + it->second.size)) {
    return nullptr;
  }
  if (start_out != nullptr) *start_out = it->first;
  return &it->second;
}

// ---- canaries: the bytes around an allocation, distinct per allocation ----
// The canary is 16 bytes repeated by address, so the padding read as any aligned float, __half,
// __nv_bfloat16 or double is a finite, non-zero number that is not a small integer (a value a test compares
// and finds wrong, not a NaN that an isnan check could skip or a 0 that a sum absorbs). Each 2-byte
// half-word's low byte is odd (no view is a small integer) and one-to-one in the serial number modulo 128;
// its high byte is one of 8 that keep every view finite (a half in +-[2.5, 7), a float in +-[8, 32768), a
// double below 2^113), chosen by the serial modulo 8. So two allocations made one after the other differ
// in every byte, and any two of 128 in a row in every half-word: a value read past the end of one
// allocation and written past the end of another shows, with its exact byte range.
std::array<unsigned char, 16> make_canary(unsigned long long serial) {
  constexpr unsigned char kHigh[8] = {0x41, 0x45, 0xC2, 0xC6, 0x42, 0x46, 0xC1, 0xC5};
  std::array<unsigned char, 16> c{};
  for (unsigned word = 0; word < 8; ++word) {
    const unsigned low = static_cast<unsigned>((serial * 0x9Du + word * 0x3Bu) % 128u);
    c[2 * word] = static_cast<unsigned char>(low << 1 | 1u);
    c[2 * word + 1] = kHigh[(serial + word) % 8];
  }
  return c;
}

void fill_canary(unsigned char* p, std::size_t n, const std::array<unsigned char, 16>& canary) {
  for (std::size_t i = 0; i < n; ++i) p[i] = canary[reinterpret_cast<std::uintptr_t>(p + i) % 16];
}

// The first and last byte of [p, p + n) that no longer hold the canary; false if all do.
bool canary_changed(const unsigned char* p, std::size_t n, const std::array<unsigned char, 16>& canary,
                    std::size_t* first, std::size_t* last) {
  bool found = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] == canary[reinterpret_cast<std::uintptr_t>(p + i) % 16]) continue;
    if (!found) *first = i;
    *last = i;
    found = true;
  }
  return found;
}

// ---- host access: device memory is PROT_NONE except while kernels or the runtime's own copies run ----

bool protect_device_memory() {
  static const bool on = [] {
    const char* s = std::getenv("ROOFLAB_EMU_OPEN_DEVICE_MEMORY");
    return s == nullptr || *s == '\0' || *s == '0';
  }();
  return on;
}

int g_launches_running = 0;  // launches between DeviceMemoryOpen's constructor and destructor (g_mutex)

// The data pages of a device allocation (between its guard pages), opened or closed to everyone.
void set_access(const Allocation& a, bool open) {
  const std::size_t page = page_size();
  mprotect(static_cast<unsigned char*>(a.mapping) + page, a.mapping_bytes - 2 * page,
           open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

// ---- read watch (timed runs): which pages of the watched ranges were touched ----
// A watched allocation's data pages stay closed while kernels run; the fault handler opens a page at its
// first touch and counts the page's bytes inside the range. The handler reads this table without locks: a
// slot is filled in before g_watch_count publishes it, and cleared only when no kernel runs.
struct ReadWatchSlot {
  std::uintptr_t lo = 0, hi = 0;        // the watched bytes
  std::uintptr_t first_page = 0;        // the allocation's data pages (all of them close, so all must reopen)
  std::size_t pages = 0;
  std::atomic<unsigned char>* touched = nullptr;  // one flag per data page
  std::atomic<std::size_t> bytes{0};
  const Allocation* allocation = nullptr;
};
constexpr int kWatchSlots = 8;
ReadWatchSlot g_watch[kWatchSlots];
std::atomic<int> g_watch_count{0};

bool is_read_watched(const Allocation& a) {
  const int n = g_watch_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_watch[i].allocation == &a) return true;
  }
  return false;
}

// ---- access watch (streams): which pages of its device allocations one launch touched ----
// A launch that work on another stream may overlap on a GPU (ordering::watch_wanted) runs with its pointer
// arguments' allocations closed; the fault handler opens a page at its first touch and marks it. What the
// launch touched, page by page, is then what its operation holds in the streams' order, instead of every
// byte of each allocation it was given. Same lock-free discipline as the read watch's table.
struct AccessWatchSlot {
  std::uintptr_t first_page = 0;  // the allocation's data pages
  std::size_t pages = 0;
  std::atomic<unsigned char>* touched = nullptr;  // one flag per data page
  const Allocation* allocation = nullptr;
  std::uintptr_t start = 0;  // the allocation's bytes
};
constexpr int kAccessSlots = 16;
AccessWatchSlot g_access[kAccessSlots];
std::atomic<int> g_access_count{0};

bool is_access_watched(const Allocation& a) {
  const int n = g_access_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_access[i].allocation == &a) return true;
  }
  return false;
}

// Marks the page holding addr in the access watch, read (1) or written (2); returns what the page may be opened
// to: 0 (no watched allocation holds it), 1 (reading: a later write faults again and is marked) or 2 (both).
// Async-signal-safe (atomics only).
int touch_access(std::uintptr_t addr, bool write) {
  const int n = g_access_count.load(std::memory_order_acquire);
  int open = 0;
  for (int i = 0; i < n; ++i) {
    AccessWatchSlot& w = g_access[i];
    if (addr < w.first_page || addr >= w.first_page + w.pages * page_size()) continue;
    std::atomic<unsigned char>& state = w.touched[(addr - w.first_page) / page_size()];
    if (write) {
      state.store(2);
    } else {
      unsigned char untouched = 0;
      state.compare_exchange_strong(untouched, 1);
    }
    open = std::max(open, state.load() == 2 ? 2 : 1);
  }
  return open;
}

bool is_watched(const Allocation& a) { return is_read_watched(a) || is_access_watched(a); }

// Marks the data pages of [from, to) touched in every watched slot holding them and counts their watched
// bytes once; returns whether a watched allocation holds `from`. Async-signal-safe (atomics only).
bool touch_watched(std::uintptr_t from, std::uintptr_t to) {
  const std::size_t page = page_size();
  bool any = false;
  const int n = g_watch_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    ReadWatchSlot& w = g_watch[i];
    const std::uintptr_t end = w.first_page + w.pages * page;
    if (from < w.first_page || from >= end) continue;
    any = true;
    for (std::size_t p = (from - w.first_page) / page; p < w.pages && w.first_page + p * page < to; ++p) {
      if (w.touched[p].exchange(1) != 0) continue;
      const std::uintptr_t at = w.first_page + p * page;
      const std::uintptr_t a = std::max(at, w.lo), b = std::min(at + page, w.hi);
      if (a < b) w.bytes += b - a;
    }
  }
  return any;
}

// The fault handler's part: a touch of a closed watched page is counted and the page opened (the access
// repeats and succeeds). Whoever touches it counts: a kernel, or an emulated library computing from it.
// `write`: the faulting access wrote. A page the read watch opens is opened for writing too, so the access
// watch counts it written (it would not see a later write).
bool watched_page_fault(std::uintptr_t addr, bool write) {
  const bool read = g_watch_count.load(std::memory_order_acquire) != 0 && touch_watched(addr, addr + 1);
  const int access = g_access_count.load(std::memory_order_acquire) != 0 ? touch_access(addr, write || read) : 0;
  if (!read && access == 0) return false;
  const std::uintptr_t page = addr / page_size() * page_size();
  mprotect(reinterpret_cast<void*>(page), page_size(), read || access == 2 ? PROT_READ | PROT_WRITE : PROT_READ);
  return true;
}

// Whether the access that faulted was a write: the page fault's error code on x86-64 (its bit 1); elsewhere
// every fault counts as a write (a race between streams may then be reported where two streams only read).
bool fault_wrote(void* context) {
#if defined(__x86_64__)
  return (static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
  (void)context;
  return true;
#endif
}


// ---- activity: what ran, for tests that must know the kernel under test did the work ----

std::mutex g_activity_mutex;
Activity g_activity;
std::vector<const void*> g_kernels_launched;  // in launch order, each once


void count_copy(Direction d, std::size_t bytes) {
  std::lock_guard lock(g_activity_mutex);
  switch (d) {
    case Direction::to_host: ++g_activity.memcpy_to_host; g_activity.bytes_to_host += bytes; break;
    case Direction::to_device: ++g_activity.memcpy_to_device; g_activity.bytes_to_device += bytes; break;
    case Direction::device_to_device:
      ++g_activity.memcpy_device_to_device;
      g_activity.bytes_device_to_device += bytes;
      break;
    case Direction::host_to_host: break;
  }
}

// ---- the fault handler: an access into a guard page is an out-of-bounds access ----

void write_err(const char* s) { (void)!write(STDERR_FILENO, s, std::strlen(s)); }

// After a report: restores the default action in the kernel itself, so that the faulting access, repeated
// when the handler returns, ends the process with the signal. (Through the raw system call: in race mode
// ThreadSanitizer intercepts signal() and sigaction() and keeps its own handler, which ignores a SIG_DFL
// disposition for a synchronous signal and would let the access fault forever.)
void end_with_default_action(int sig) {
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } action{SIG_DFL, 0, nullptr, 0};
  syscall(SYS_rt_sigaction, sig, &action, nullptr, sizeof action.mask);
}

// Appends "made at f <- g <- h" for the first frames of the allocating call stack outside the backend.
// (dladdr and the demangler are not async-signal-safe; the process is about to end, and the fault is
// in a kernel's memory access, not inside the allocator.)
void append_site(char* msg, std::size_t cap, const GuardRecord& g) {
  int shown = 0;
  for (int f = 0; f < g.site_frames && shown < 2; ++f) {
    Dl_info info{};
    if (dladdr(g.site[f], &info) == 0 || info.dli_sname == nullptr) continue;
    if (std::strncmp(info.dli_sname, "cudaMalloc", 10) == 0 || std::strstr(info.dli_sname, "rooflab3emu") != nullptr) {
      continue;  // the backend's own frames
    }
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    const char* name = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    const std::size_t len = std::strlen(msg);
    std::snprintf(msg + len, cap - len, "%s%s", shown == 0 ? " made at " : " <- ", name);
    std::free(demangled);
    ++shown;
  }
  if (shown == 0) {
    const std::size_t len = std::strlen(msg);
    std::snprintf(msg + len, cap - len, " (where it was made is unknown: link with ENABLE_EXPORTS for names)");
  }
}

// What the access at addr was in the kernel's terms, from the current launch's pointer parameters into the
// allocation: " (out[1024] through the kernel's parameter out, an array of 1024 float elements of 4 bytes)",
// or, when the kernel's parameter names are unknown (a launch through rooflab::launch, a kernel declared in
// another file), " (element 1024 of the kernel's array of 1024 float elements of 4 bytes)"; "" when no
// parameter of this launch points into it. Each parameter counts from the pointer it was given, in its own
// element size (an FP16 array in 2-byte elements, a float4 view in 16-byte ones).
void append_element(char* msg, std::size_t cap, const GuardRecord& g, std::uintptr_t addr) {
  if (g.argument_round.load(std::memory_order_relaxed) != g_argument_round.load()) return;
  const int count = g.argument_count.load(std::memory_order_relaxed);
  bool wrote = false;
  for (int k = 0; k < count && k < 2; ++k) {
    const GuardRecord::Argument& a = g.arguments[k];
    if (a.element == 0) continue;
    const auto element = static_cast<long long>(a.element);
    const long long offset =
        addr >= a.base ? static_cast<long long>(addr - a.base) : -static_cast<long long>(a.base - addr);
    const long long index = offset >= 0 ? offset / element : -((-offset + element - 1) / element);  // rounds down
    const std::size_t elements = (g.start + g.size - a.base) / a.element;
    const std::size_t len = std::strlen(msg);
    const char* open = wrote ? "; or " : " (";
    wrote = true;
    if (a.name != nullptr) {
      const int n = static_cast<int>(a.name_length);
      std::snprintf(msg + len, cap - len,
                    "%s%.*s[%lld] through the kernel's parameter %.*s, an array of %zu %s elements of %zu bytes", open,
                    n, a.name, index, n, a.name, elements, a.type, a.element);
    } else {
      std::snprintf(msg + len, cap - len, "%selement %lld of the kernel's array of %zu %s elements of %zu bytes", open,
                    index, elements, a.type, a.element);
    }
  }
  if (wrote) std::strncat(msg, ")", cap - std::strlen(msg) - 1);
}

#if defined(__x86_64__)
// The memory operand of the SSE or AVX instruction at the faulting instruction pointer: its address and
// width. A misaligned access by an instruction that requires alignment (movaps, movdqa, SSE arithmetic on
// a memory operand: what the compiler emits for a float4 copy, since float4 is declared 16-byte aligned)
// raises a general-protection fault, which the kernel reports with no address; the address comes from
// decoding the instruction (prefixes, REX or VEX, the 0F opcode maps, ModRM, SIB, displacement) against the
// saved registers. Returns 1 with the operand, -1 for an instruction outside the 0F opcode maps (a
// general-purpose one, which never requires alignment) or with a register operand, 0 for an encoding it
// does not know (EVEX).
int vector_operand(const ucontext_t* uc, std::uintptr_t* address, unsigned* width) {
  const greg_t* regs = uc->uc_mcontext.gregs;
  const auto* code = reinterpret_cast<const unsigned char*>(regs[REG_RIP]);
  constexpr int kRegIndex[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                                 REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
  const auto reg = [&](unsigned n) { return static_cast<std::uintptr_t>(regs[kRegIndex[n & 15]]); };
  std::size_t i = 0;
  while (i < 14) {  // legacy prefixes
    const unsigned char b = code[i];
    if (b != 0x66 && b != 0x67 && b != 0xF2 && b != 0xF3 && b != 0xF0 && b != 0x2E && b != 0x36 && b != 0x3E &&
        b != 0x26 && b != 0x64 && b != 0x65) {
      break;
    }
    ++i;
  }
  unsigned rex_x = 0, rex_b = 0, map = 0;
  *width = 16;
  if ((code[i] & 0xF0) == 0x40) {
    rex_x = (code[i] >> 1) & 1u;
    rex_b = code[i] & 1u;
    ++i;
  }
  if (code[i] == 0xC5) {  // two-byte VEX: map 0F
    *width = (code[i + 1] >> 2) & 1u ? 32 : 16;
    map = 1;
    i += 2;
  } else if (code[i] == 0xC4) {  // three-byte VEX: R, X, B inverted
    rex_x = ((code[i + 1] >> 6) & 1u) ^ 1u;
    rex_b = ((code[i + 1] >> 5) & 1u) ^ 1u;
    map = code[i + 1] & 0x1Fu;
    *width = (code[i + 2] >> 2) & 1u ? 32 : 16;
    i += 3;
  } else if (code[i] == 0x0F) {
    ++i;
    map = code[i] == 0x38 ? 2 : code[i] == 0x3A ? 3 : 1;
    if (map != 1) ++i;
  }
  if (map == 0 && code[i] == 0x62) return 0;  // EVEX (AVX-512)
  if (map < 1 || map > 3) return -1;  // not an SSE or AVX instruction
  const unsigned char opcode = code[i++];
  const unsigned char modrm = code[i++];
  const unsigned mod = modrm >> 6, rm = modrm & 7u;
  if (mod == 3) return -1;  // a register operand
  std::uintptr_t ea = 0;
  const auto disp32 = [&] {
    std::int32_t d;
    std::memcpy(&d, code + i, 4);
    i += 4;
    return static_cast<std::uintptr_t>(static_cast<std::intptr_t>(d));
  };
  if (rm == 4) {
    const unsigned char sib = code[i++];
    const unsigned index = ((sib >> 3) & 7u) | rex_x << 3;
    if (index != 4) ea += reg(index) << (sib >> 6);
    if ((sib & 7u) == 5 && mod == 0) {
      ea += disp32();
    } else {
      ea += reg((sib & 7u) | rex_b << 3);
    }
  } else if (rm == 5 && mod == 0) {  // RIP-relative: from the end of the instruction (an imm8 may follow)
    const std::uintptr_t d = disp32();
    const bool imm8 = map == 3 || (map == 1 && ((opcode >= 0x70 && opcode <= 0x73) || opcode == 0xC2 ||
                                                (opcode >= 0xC4 && opcode <= 0xC6)));
    ea = reinterpret_cast<std::uintptr_t>(code) + i + (imm8 ? 1 : 0) + d;
  } else {
    ea = reg(rm | rex_b << 3);
  }
  if (mod == 1) {
    ea += static_cast<std::uintptr_t>(static_cast<std::intptr_t>(static_cast<std::int8_t>(code[i])));
  } else if (mod == 2) {
    ea += disp32();
  }
  *address = ea;
  return 1;
}
#endif

// The cudaMalloc allocation whose data pages (between its guard pages) hold `addr`, if any.
const GuardRecord* device_data_record(std::uintptr_t addr) {
  for (const auto& g : g_guards) {
    const std::uintptr_t guard = g.guard.load(std::memory_order_relaxed);
    if (guard == 0 || g.front_guard == 0) continue;
    if (addr >= g.front_guard + page_size() && addr < guard) return &g;
  }
  return nullptr;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (sig == SIGSEGV && info->si_code == SEGV_ACCERR && watched_page_fault(addr, fault_wrote(context))) {
    return;  // a watch's mark
  }
  char msg[2048];
  const char* kernel = current_kernel_for_report();
  uint3 block{}, thread{};
  const bool in_kernel = current_thread_for_report(&block, &thread);
  char who[512];
  if (in_kernel) {
    std::snprintf(who, sizeof who, "in kernel %s, block (%u,%u,%u), thread (%u,%u,%u)", kernel != nullptr ? kernel : "?",
                  block.x, block.y, block.z, thread.x, thread.y, thread.z);
  } else {
    std::snprintf(who, sizeof who, "outside a kernel (host code dereferenced device memory)");
  }
  // A general-protection fault (no address) or an alignment fault inside a kernel: a misaligned vector
  // access, which a GPU reports as "misaligned address", or a non-canonical wild pointer (such as one read
  // from memory holding the 0xCD poison).
  const bool general_protection = sig == SIGSEGV && info->si_code == SI_KERNEL;
  if (in_kernel && (general_protection || (sig == SIGBUS && info->si_code == BUS_ADRALN))) {
    // The check before the access reported it already, with the access's line: the CPU faults as well when
    // the compiler chose an aligned SSE instruction for it.
    if (const char* report = pending_misaligned_report(); report != nullptr) {
      std::snprintf(msg, sizeof msg, "\nrooflab emu: kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s.\n",
                    kernel != nullptr ? kernel : "?", block.x, block.y, block.z, thread.x, thread.y, thread.z, report);
      write_err(msg);
      end_with_default_action(sig);
      return;
    }
    std::uintptr_t at = addr;
    unsigned width = 16;
    int decoded = sig == SIGBUS ? 1 : 0;
#if defined(__x86_64__)
    if (decoded == 0) decoded = vector_operand(static_cast<const ucontext_t*>(context), &at, &width);
#else
    (void)context;
#endif
    const bool canonical = (at >> 47) == 0 || (at >> 47) == (~std::uintptr_t{0} >> 47);
    if (decoded == 1 && canonical && at % width != 0) {
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: misaligned address %s: a %u-byte vector access at %p, %zu bytes past a multiple "
                    "of %u (float4, int4, uint4 and double2 must be 16-byte aligned; on a GPU this is "
                    "cudaErrorMisalignedAddress)",
                    who, width, reinterpret_cast<void*>(at), static_cast<std::size_t>(at % width), width);
      if (const GuardRecord* g = device_data_record(at); g != nullptr && at >= g->start) {
        const std::size_t len = std::strlen(msg);
        std::snprintf(msg + len, sizeof msg - len, ", at byte offset %zu of a %zu-byte %s",
                      static_cast<std::size_t>(at - g->start), g->size, g->what);
        if (g->site_frames > 0) append_site(msg, sizeof msg, *g);
      }
    } else if (decoded == 0) {
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: misaligned address %s (most likely): a general-protection fault in an instruction "
                    "the backend does not decode; SSE instructions raise it for a 16-byte access that is not 16-byte "
                    "aligned (a float4, int4, uint4 or double2 through a pointer that is not a multiple of 16); "
                    "otherwise it is a wild non-canonical pointer",
                    who);
    } else {
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: invalid memory access %s (a general-protection fault: a wild pointer outside the "
                    "address space, such as one read from memory nobody wrote, which holds 0xCD bytes)",
                    who);
    }
    std::strncat(msg, ".\n", sizeof msg - std::strlen(msg) - 1);
    write_err(msg);
    end_with_default_action(sig);
    return;
  }
  // A misaligned access that ran on after its report (the check cannot stop the thread) and crossed the end of
  // its allocation: the misalignment is the cause, the overrun its consequence.
  if (const char* report = in_kernel ? pending_misaligned_report() : nullptr; report != nullptr) {
    std::snprintf(msg, sizeof msg, "\nrooflab emu: kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s; then:",
                  kernel != nullptr ? kernel : "?", block.x, block.y, block.z, thread.x, thread.y, thread.z, report);
    write_err(msg);
  }
  for (const auto& g : g_guards) {
    const std::uintptr_t guard = g.guard.load(std::memory_order_relaxed);
    if (guard == 0) continue;
    const bool after = addr >= guard && addr < guard + page_size();
    const bool before = g.front_guard != 0 && addr >= g.front_guard && addr < g.front_guard + page_size();
    if (!after && !before) continue;
    if (after) {
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: out-of-bounds access %s: address %zu bytes past the end of a %zu-byte %s", who,
                    static_cast<std::size_t>(addr - (g.start + g.size)), g.size, g.what);
      append_element(msg, sizeof msg, g, addr);
    } else {
      std::snprintf(msg, sizeof msg, "\nrooflab emu: out-of-bounds access %s: address %zu bytes before the start of a %zu-byte %s",
                    who, g.start - addr, g.size, g.what);
      append_element(msg, sizeof msg, g, addr);
    }
    if (g.site_frames > 0) append_site(msg, sizeof msg, g);
    std::strncat(msg, ".\n", sizeof msg - std::strlen(msg) - 1);
    write_err(msg);
    end_with_default_action(sig);
    return;  // the access repeats and the default action ends the process
  }
  if (const GuardRecord* g = device_data_record(addr); g != nullptr && !in_kernel) {
    // Device memory is closed to host code outside kernels (see set_access): this is the host touching it.
    bool write = false;
#if defined(__x86_64__)
    write = (static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // page-fault error code
#endif
    const auto* ip = reinterpret_cast<const void*>(
#if defined(__x86_64__)
        static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]
#else
        nullptr
#endif
    );
    const std::string function = ip != nullptr ? kernel_name(ip) : "";
    const bool named = !function.empty() && function.rfind("kernel at ", 0) != 0;
    std::snprintf(msg, sizeof msg,
                  "\nrooflab emu: host code %s byte offset %zu of a %zu-byte %s%s%s", write ? "wrote to" : "read",
                  static_cast<std::size_t>(addr - g->start), g->size, g->what, named ? ", in " : "",
                  named ? function.c_str() : "");
    if (g->site_frames > 0) {
      std::strncat(msg, "; the allocation was", sizeof msg - std::strlen(msg) - 1);
      append_site(msg, sizeof msg, *g);
    }
    std::strncat(msg,
                 ". On a GPU this faults: device memory is not host memory. Copy it with cudaMemcpy (or give host "
                 "code cudaMallocHost memory).\n",
                 sizeof msg - std::strlen(msg) - 1);
    write_err(msg);
    end_with_default_action(sig);
    return;
  }
  if (in_kernel) {
    const char* what = is_fiber_stack_guard(info->si_addr)
                           ? "a fiber stack overflow: each CUDA thread has a 128 KiB stack on the CPU backend (a large "
                             "local array, or deep recursion?)"
                           : "not device memory: a wild or null pointer, or memory already freed";
    std::snprintf(msg, sizeof msg, "\nrooflab emu: invalid memory access %s at address %p (%s).\n", who, info->si_addr,
                  what);
    write_err(msg);
  }
  end_with_default_action(sig);
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
  });
  // The handler runs on an alternate stack: a fault on a small fiber stack must still be reported.
  thread_local bool have_altstack = false;
  if (!have_altstack) {
    static thread_local std::vector<char> altstack(64 * 1024);
    stack_t ss{};
    ss.ss_sp = altstack.data();
    ss.ss_size = altstack.size();
    sigaltstack(&ss, nullptr);
    have_altstack = true;
  }
}



std::map<const void*, std::size_t> g_smem_optin;  // cudaFuncSetAttribute(MaxDynamicSharedMemorySize)

// Records a guard page for the fault handler (a fixed table it can read without locks).
GuardRecord* register_guard(const void* guard, const void* front_guard, const void* start, std::size_t size,
                            const char* what, void* const* site, int site_frames) {
  for (auto& g : g_guards) {
    std::uintptr_t expected = 0;
    if (g.guard.load() != 0) continue;
    if (!g.guard.compare_exchange_strong(expected, 1)) continue;  // claimed; filled in before it is published
    g.front_guard = reinterpret_cast<std::uintptr_t>(front_guard);
    g.start = reinterpret_cast<std::uintptr_t>(start);
    g.size = size;
    g.what = what;
    g.site_frames = std::min(site_frames, kSiteFrames);
    for (int f = 0; f < g.site_frames; ++f) g.site[f] = site[f];
    g.guard.store(reinterpret_cast<std::uintptr_t>(guard));
    return &g;
  }
  return nullptr;  // more than kGuardRecords live allocations: the guard pages still fault, unnamed
}

std::size_t g_allocated_bytes = 0;  // live cudaMalloc bytes (cudaMemGetInfo)
std::size_t g_peak_allocated_bytes = 0;  // the most g_allocated_bytes reached since the last reset

// Prints a runtime API misuse, the first few times each kind happens (a loop must not flood the output).
void misuse(int kind, const char* format, ...) __attribute__((format(printf, 2, 3)));
void misuse(int kind, const char* format, ...) {
  static std::atomic<int> counts[16];
  const int n = counts[kind & 15]++;
  if (n >= 5) return;
  va_list args;
  va_start(args, format);
  std::fputs("rooflab emu: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputs(n == 4 ? " (further reports of this kind are not shown)\n" : "\n", stderr);
  va_end(args);
}

}  // namespace memory

using namespace memory;

// Shared memory's mappings (internal.hpp): the data ends `padded - bytes` bytes before the guard page, where
// padded is bytes rounded up to the alignment. New mappings read as zeros: the caller poisons them.
GuardedMapping map_guarded(std::size_t bytes, std::size_t align, const char* what) {
  install_fault_handler();
  const std::size_t page = page_size();
  GuardedMapping m;
  m.bytes = bytes;
  m.padded = (bytes + align - 1) / align * align;
  const std::size_t data_pages = (std::max<std::size_t>(m.padded, 1) + page - 1) / page * page;
  m.mapping_bytes = data_pages + page;
  void* mapping = mmap(nullptr, m.mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) throw KernelError("out of memory for shared memory");
  m.mapping = static_cast<unsigned char*>(mapping);
  unsigned char* guard = m.mapping + data_pages;
  mprotect(guard, page, PROT_NONE);
  m.start = guard - m.padded;
  m.record = register_guard(guard, nullptr, m.start, bytes, what);
  return m;
}

void unmap_guarded(GuardedMapping& m) {
  if (m.mapping == nullptr) return;
  if (m.record != nullptr) static_cast<GuardRecord*>(m.record)->guard.store(0);
  munmap(m.mapping, m.mapping_bytes);
  m = GuardedMapping{};
}

bool is_device_pointer(const void* p) {
  std::lock_guard lock(g_mutex);
  return find(p, 0) != nullptr;
}

// The live allocation (cudaMalloc, or pinned cudaMallocHost memory when *device comes back false) that
// contains p: its start and size. For host-side checks of library calls (src/cublas.cpp).
bool find_allocation(const void* p, const void** start, std::size_t* size, bool* device) {
  std::lock_guard lock(g_mutex);
  std::uintptr_t s = 0;
  const Allocation* a = find(p, 0, &s);
  if (a == nullptr) return false;
  *start = reinterpret_cast<const void*>(s);
  *size = a->size;
  *device = a->device;
  return true;
}

// After a launch: the bytes around each allocation inside its data pages (the up-to-15 bytes of alignment
// padding after the end, and the rest of the first page before the start) must still hold its canary: a
// write there is out of bounds but touched no guard page. Returns a description of the first such write,
// and restores the canary. Runs while device memory is open (inside the launch).
std::string check_padding_canaries() {
  std::lock_guard lock(g_mutex);
  for (auto& [start, a] : g_allocations) {
    // A watched input's closed pages are left alone: reading its canaries would count as the launch's reads.
    if (!a.device || is_watched(a)) continue;
    const std::size_t rounded = (a.size + kAlign - 1) / kAlign * kAlign;
    auto* p = reinterpret_cast<unsigned char*>(start);
    auto* front = static_cast<unsigned char*>(a.mapping) + page_size();  // first data page
    const std::size_t front_bytes = static_cast<std::size_t>(p - front);
    std::string report;
    char msg[512];
    std::size_t first = 0, last = 0;
    if (canary_changed(front, front_bytes, a.canary, &first, &last)) {
      std::snprintf(msg, sizeof msg,
                    "wrote up to %zu bytes before the start of a %zu-byte cudaMalloc allocation (byte offsets -%zu to "
                    "-%zu)",
                    front_bytes - first, a.size, front_bytes - first, front_bytes - last);
      report = msg;
      fill_canary(front, front_bytes, a.canary);
    } else if (canary_changed(p + a.size, rounded - a.size, a.canary, &first, &last)) {
      std::snprintf(msg, sizeof msg,
                    "wrote up to %zu bytes past the end of a %zu-byte cudaMalloc allocation (byte offsets %zu to %zu)",
                    last + 1, a.size, a.size + first, a.size + last);
      report = msg;
      fill_canary(p + a.size, rounded - a.size, a.canary);
    }
    if (report.empty()) continue;
    report += " (into the canary bytes next to the allocation, short of its guard page, so found after the launch: "
              "the writing thread is not known; look for an index off by one, or a vector access past a size that "
              "is not a multiple of the vector width)";
    if (a.record != nullptr && a.record->site_frames > 0) {
      char site[1024] = "";
      append_site(site, sizeof site, *a.record);
      report += site;
    }
    return report;
  }
  return "";
}

std::size_t max_dynamic_smem(const void* kernel) {
  std::lock_guard lock(g_mutex);
  const auto it = g_smem_optin.find(kernel);
  return it == g_smem_optin.end() ? 0 : it->second;
}

void ensure_fault_handler() { install_fault_handler(); }

namespace detail {
void set_last_error(cudaError_t err) { record(err); }

DeviceMemoryOpen::DeviceMemoryOpen() {
  std::lock_guard lock(g_mutex);
  if (g_launches_running++ > 0 || !protect_device_memory()) return;
  for (const auto& [start, a] : g_allocations) {
    if (a.device && a.opened == 0 && !is_watched(a)) set_access(a, true);  // watched: opened page by page
  }
}

DeviceMemoryOpen::~DeviceMemoryOpen() {
  std::lock_guard lock(g_mutex);
  if (--g_launches_running > 0 || !protect_device_memory()) return;
  for (const auto& [start, a] : g_allocations) {
    if (a.device && a.opened == 0) set_access(a, false);
  }
}

void begin_launch_arguments() { ++g_argument_round; }

const char* element_type_name(const std::type_info& type) {
  static std::mutex mutex;
  static std::map<std::type_index, std::string> names;  // nodes never move: the c_str()s stay valid
  std::lock_guard lock(mutex);
  auto [it, inserted] = names.try_emplace(std::type_index(type));
  if (inserted) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
    it->second = status == 0 && demangled != nullptr ? demangled : type.name();
    std::free(demangled);
  }
  return it->second.c_str();
}

std::optional<std::size_t> device_pointer_argument(const void* p, const PointerParameter& parameter) {
  std::lock_guard lock(g_mutex);
  std::uintptr_t start = 0;
  const Allocation* a = find(p, 0, &start);
  if (a == nullptr) return std::nullopt;
  if (a->record != nullptr) {
    GuardRecord& g = *a->record;
    const unsigned long long round = g_argument_round.load();
    if (g.argument_round.load() != round) {
      g.argument_count = 0;
      g.argument_round = round;
    }
    const int k = g.argument_count.load();
    if (k < 2) {
      g.arguments[k] = {parameter.name, parameter.name_length, reinterpret_cast<std::uintptr_t>(p),
                        parameter.element_size, parameter.element_type};
      g.argument_count = k + 1;
    }
  }
  return start + a->size - reinterpret_cast<std::uintptr_t>(p);
}

// scheduler.cpp, once a launch's configuration is accepted.
void count_launch(const void* kernel, unsigned long long threads) {
  std::lock_guard lock(g_activity_mutex);
  ++g_activity.launches;
  g_activity.threads += threads;
  if (std::find(g_kernels_launched.begin(), g_kernels_launched.end(), kernel) == g_kernels_launched.end()) {
    g_kernels_launched.push_back(kernel);
  }
}
}  // namespace detail

Activity activity() {
  std::lock_guard lock(g_activity_mutex);
  return g_activity;
}

std::size_t device_bytes_allocated() {
  std::lock_guard lock(g_mutex);
  return g_allocated_bytes;
}

std::size_t peak_device_bytes_allocated() {
  std::lock_guard lock(g_mutex);
  return g_peak_allocated_bytes;
}

void reset_peak_device_bytes_allocated() {
  std::lock_guard lock(g_mutex);
  g_peak_allocated_bytes = g_allocated_bytes;
}

void begin_read_watch(const std::vector<WatchedRange>& ranges) {
  std::lock_guard lock(g_mutex);
  if (g_watch_count.load() != 0) throw std::logic_error("rooflab emu: begin_read_watch while a watch is on");
  if (ranges.size() > static_cast<std::size_t>(kWatchSlots)) throw std::invalid_argument("rooflab emu: more than 8 watched ranges");
  int n = 0;
  for (const WatchedRange& r : ranges) {
    const Allocation* a = find(r.data, r.bytes);
    if (a == nullptr || !a->device) {
      throw std::invalid_argument("rooflab emu: a watched range is not inside one cudaMalloc allocation");
    }
    ReadWatchSlot& w = g_watch[n++];
    w.lo = reinterpret_cast<std::uintptr_t>(r.data);
    w.hi = w.lo + r.bytes;
    w.first_page = reinterpret_cast<std::uintptr_t>(a->mapping) + page_size();
    w.pages = a->mapping_bytes / page_size() - 2;
    w.touched = new std::atomic<unsigned char>[w.pages]();
    w.bytes = 0;
    w.allocation = a;
  }
  g_watch_count.store(n, std::memory_order_release);
  for (int i = 0; i < n; ++i) set_access(*g_watch[i].allocation, false);  // closed even where memory is open
}

std::vector<std::size_t> end_read_watch() {
  std::lock_guard lock(g_mutex);
  const int n = g_watch_count.load();
  g_watch_count.store(0, std::memory_order_release);
  std::vector<std::size_t> touched;
  for (int i = 0; i < n; ++i) {
    ReadWatchSlot& w = g_watch[i];
    touched.push_back(w.bytes.load());
    // Back to the state the rest of the backend expects: open only while kernels or copies use it.
    const bool open = !protect_device_memory() || g_launches_running > 0 || w.allocation->opened > 0;
    set_access(*w.allocation, open);
    delete[] w.touched;
    w.touched = nullptr;
    w.allocation = nullptr;
  }
  return touched;
}

bool memory::begin_access_watch(const std::vector<const void*>& pointers) {
  std::lock_guard lock(g_mutex);
  if (g_access_count.load() != 0) return false;  // another host thread's launch holds it
  std::vector<std::pair<Allocation*, std::uintptr_t>> allocations;  // and its start
  for (const void* p : pointers) {
    std::uintptr_t start = 0;
    Allocation* a = find(p, 1, &start);
    if (a == nullptr || !a->device || a->opened > 0) return false;  // pinned memory, or a copy using it now
    if (std::ranges::find(allocations, std::pair{a, start}) == allocations.end()) allocations.push_back({a, start});
  }
  if (allocations.empty() || allocations.size() > static_cast<std::size_t>(kAccessSlots)) return false;
  int n = 0;
  for (const auto& [a, start] : allocations) {
    AccessWatchSlot& w = g_access[n++];
    w.first_page = reinterpret_cast<std::uintptr_t>(a->mapping) + page_size();
    w.pages = a->mapping_bytes / page_size() - 2;
    w.touched = new std::atomic<unsigned char>[w.pages]();
    w.allocation = a;
    w.start = start;
  }
  g_access_count.store(n, std::memory_order_release);
  for (int i = 0; i < n; ++i) set_access(*g_access[i].allocation, false);  // closed until touched
  return true;
}

std::vector<TouchedPages> memory::end_access_watch() {
  std::lock_guard lock(g_mutex);
  const int n = g_access_count.load();
  g_access_count.store(0, std::memory_order_release);
  std::vector<TouchedPages> touched;
  const std::uintptr_t page = page_size();
  for (int i = 0; i < n; ++i) {
    AccessWatchSlot& w = g_access[i];
    TouchedPages t;
    t.start = w.start;
    const std::uintptr_t end = w.start + w.allocation->size;
    for (std::size_t p = 0; p < w.pages; ++p) {
      const unsigned char state = w.touched[p].load();
      if (state == 0) continue;
      const std::uintptr_t lo = std::max(w.first_page + p * page, w.start);
      const std::uintptr_t hi = std::min(w.first_page + (p + 1) * page, end);
      if (lo >= hi) continue;  // the padding before the allocation, or after it
      if (!t.ranges.empty() && t.ranges.back().hi == lo && t.ranges.back().written == (state == 2)) {
        t.ranges.back().hi = hi;
      } else {
        t.ranges.push_back({lo, hi, state == 2});
      }
    }
    touched.push_back(std::move(t));
    // Back to the state the rest of the backend expects; a read watch keeps its own closed pages.
    if (!is_read_watched(*w.allocation)) {
      set_access(*w.allocation, !protect_device_memory() || g_launches_running > 0 || w.allocation->opened > 0);
    }
    delete[] w.touched;
    w.touched = nullptr;
    w.allocation = nullptr;
  }
  return touched;
}

std::vector<std::string> kernels_launched() {
  std::vector<const void*> kernels;
  {
    std::lock_guard lock(g_activity_mutex);
    kernels = g_kernels_launched;
  }
  std::vector<std::string> names;
  for (const void* k : kernels) {
    std::string name = kernel_name(k);
    // Listed once by name: kernels with internal linkage in two files can share a name.
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  }
  return names;
}

}  // namespace rooflab::emu
