// The CUDA runtime API subset the labs use, defined for the CPU backend against the toolkit's own
// declarations (cuda_runtime_api.h). libcudart is never linked: an API not defined here fails at link time.
//
// Device memory: every cudaMalloc gets its own mapping [guard page][data pages][guard page], the
// allocation's end (rounded up to 16 bytes, the alignment float4 needs) touching the second guard page, so a
// kernel that reads or writes past the end faults (or far enough before the start); the fault handler names
// the kernel, block, thread, how far past which allocation the access was, and where the allocation was
// made. The up-to-15 bytes of alignment padding are a canary checked after every launch. New memory is
// filled with 0xCD bytes (never zeros), so a read of memory nobody wrote shows.
#include <rooflab/emu/runtime.hpp>

#include "internal.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rooflab::emu {

const char* current_kernel_for_report();                      // scheduler.cpp
bool current_thread_for_report(uint3* block, uint3* thread);  // scheduler.cpp
bool is_fiber_stack_guard(const void* address);               // scheduler.cpp

namespace {

constexpr unsigned char kPoison = 0xCD;
constexpr std::size_t kAlign = 16;

struct GuardRecord;

struct Allocation {
  std::size_t size = 0;        // bytes the program asked for
  void* mapping = nullptr;     // device memory: the whole mapping, guard pages included
  std::size_t mapping_bytes = 0;
  bool device = true;          // false: cudaMallocHost (pinned host memory, which kernels may also touch)
  GuardRecord* record = nullptr;  // its guard pages and where it was made (device memory)
};

std::mutex g_mutex;
std::map<std::uintptr_t, Allocation> g_allocations;  // by start address

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
};
constexpr int kGuardRecords = 4096;
GuardRecord g_guards[kGuardRecords];

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

thread_local cudaError_t tl_last_error = cudaSuccess;

cudaError_t record(cudaError_t err) {
  if (err != cudaSuccess) tl_last_error = err;
  return err;
}

// The allocation containing [p, p + bytes), if any.
const Allocation* find(const void* p, std::size_t bytes, std::uintptr_t* start_out = nullptr) {
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

// ---- the fault handler: an access into a guard page is an out-of-bounds access ----

void write_err(const char* s) { (void)!write(STDERR_FILENO, s, std::strlen(s)); }

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

void on_fault(int sig, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
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
  for (const auto& g : g_guards) {
    const std::uintptr_t guard = g.guard.load(std::memory_order_relaxed);
    if (guard == 0) continue;
    const bool after = addr >= guard && addr < guard + page_size();
    const bool before = g.front_guard != 0 && addr >= g.front_guard && addr < g.front_guard + page_size();
    if (!after && !before) continue;
    if (after) {
      const std::size_t past = addr - (g.start + g.size);
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: out-of-bounds access %s: address %zu bytes past the end of a %zu-byte %s "
                    "(element %zu for 4-byte elements)",
                    who, past, g.size, g.what, g.size / 4 + past / 4);
    } else {
      std::snprintf(msg, sizeof msg, "\nrooflab emu: out-of-bounds access %s: address %zu bytes before the start of a %zu-byte %s",
                    who, g.start - addr, g.size, g.what);
    }
    if (g.site_frames > 0) append_site(msg, sizeof msg, g);
    std::strncat(msg, ".\n", sizeof msg - std::strlen(msg) - 1);
    write_err(msg);
    signal(sig, SIG_DFL);
    return;  // the access repeats and the default action ends the process
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
  signal(sig, SIG_DFL);
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

struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};
struct Stream {};

// The pretend GPU: an A100-like sm_80 (108 SMs unless ROOFLAB_EMU_SMS says otherwise). Its shared memory
// opt-in limit is the largest of current GPUs (227 KiB, an H100's) so that a kernel that opts in to more than
// 48 KiB runs here whatever GPU it was written for.
constexpr std::size_t kPretendMemory = std::size_t{80} << 30;
constexpr std::size_t kSharedPerBlock = 48 * 1024;
constexpr std::size_t kSharedOptin = 227 * 1024;
constexpr std::size_t kSharedPerSm = 228 * 1024;
int pretend_sms() {
  static const int sms = [] {
    const char* s = std::getenv("ROOFLAB_EMU_SMS");
    return s != nullptr && std::atoi(s) > 0 ? std::atoi(s) : 108;
  }();
  return sms;
}

std::map<const void*, std::size_t> g_smem_optin;  // cudaFuncSetAttribute(MaxDynamicSharedMemorySize)

// Records a guard page for the fault handler (a fixed table it can read without locks).
GuardRecord* register_guard(const void* guard, const void* front_guard, const void* start, std::size_t size,
                            const char* what, void* const* site = nullptr, int site_frames = 0) {
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

// Prints a runtime API misuse, the first few times each kind happens (a loop must not flood the output).
void misuse(int kind, const char* format, ...) __attribute__((format(printf, 2, 3)));
void misuse(int kind, const char* format, ...) {
  static std::atomic<int> counts[8];
  const int n = counts[kind & 7]++;
  if (n >= 5) return;
  va_list args;
  va_start(args, format);
  std::fputs("rooflab emu: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputs(n == 4 ? " (further reports of this kind are not shown)\n" : "\n", stderr);
  va_end(args);
}

}  // namespace

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

// After a launch: the bytes around each allocation inside its data pages (the up-to-15 bytes of alignment
// padding after the end, and the rest of the first page before the start) must still hold the poison: a
// write there is out of bounds but touched no guard page. Returns a description of the first such write,
// and restores the poison.
std::string check_padding_canaries() {
  static const std::vector<unsigned char> clean(65536, kPoison);
  std::lock_guard lock(g_mutex);
  for (auto& [start, a] : g_allocations) {
    if (!a.device) continue;
    const std::size_t rounded = (a.size + kAlign - 1) / kAlign * kAlign;
    auto* p = reinterpret_cast<unsigned char*>(start);
    auto* front = static_cast<unsigned char*>(a.mapping) + page_size();  // first data page
    const std::size_t front_bytes = static_cast<std::size_t>(p - front);
    std::string report;
    char msg[512];
    if (front_bytes <= clean.size() && std::memcmp(front, clean.data(), front_bytes) != 0) {
      std::size_t first = front_bytes;  // the write farthest before the start
      for (std::size_t i = 0; i < front_bytes; ++i) {
        if (front[i] != kPoison) {
          first = i;
          break;
        }
      }
      std::size_t nearest = first;
      for (std::size_t i = first; i < front_bytes; ++i) {
        if (front[i] != kPoison) nearest = i;
      }
      std::snprintf(msg, sizeof msg,
                    "wrote at byte offsets -%zu to -%zu of a %zu-byte cudaMalloc allocation (before its start)",
                    front_bytes - first, front_bytes - nearest, a.size);
      report = msg;
      std::memset(front, kPoison, front_bytes);
    } else {
      for (std::size_t i = a.size; i < rounded && report.empty(); ++i) {
        if (p[i] == kPoison) continue;
        std::size_t last = i;
        for (std::size_t j = i; j < rounded; ++j) {
          if (p[j] != kPoison) last = j;
        }
        std::snprintf(msg, sizeof msg,
                      "wrote at byte offsets %zu to %zu of a %zu-byte cudaMalloc allocation (past its end)", i, last,
                      a.size);
        report = msg;
        std::memset(p + a.size, kPoison, rounded - a.size);
      }
    }
    if (report.empty()) continue;
    report += " (next to the allocation but short of its guard page, so found after the launch: the writing thread "
              "is not known; run a single block, or look for an index off by one)";
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
}  // namespace detail

}  // namespace rooflab::emu

using namespace rooflab::emu;

// ---- memory ----

cudaError_t cudaMalloc(void** ptr, size_t size) {
  install_fault_handler();
  if (ptr == nullptr) return record(cudaErrorInvalidValue);
  void* site[kSiteFrames + 1];
  const int frames = backtrace(site, kSiteFrames + 1);
  const std::size_t page = page_size();
  const std::size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  const std::size_t data_pages = (std::max<std::size_t>(rounded, 1) + page - 1) / page * page;
  const std::size_t total = page + data_pages + page;  // [front guard][data][guard]
  void* mapping = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return record(cudaErrorMemoryAllocation);
  auto* front_guard = static_cast<unsigned char*>(mapping);
  auto* guard = front_guard + page + data_pages;
  mprotect(front_guard, page, PROT_NONE);
  mprotect(guard, page, PROT_NONE);
  unsigned char* start = guard - rounded;
  std::memset(front_guard + page, kPoison, data_pages);  // the allocation and the slack before it
  {
    std::lock_guard lock(g_mutex);
    GuardRecord* rec = register_guard(guard, front_guard, start, size, "cudaMalloc allocation", site + 1,
                                      std::max(frames - 1, 0));
    g_allocations[reinterpret_cast<std::uintptr_t>(start)] = {size, mapping, total, true, rec};
    g_allocated_bytes += size;
  }
  *ptr = start;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  Allocation a;
  {
    std::lock_guard lock(g_mutex);
    const auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == g_allocations.end() || !it->second.device) {
      misuse(0, "cudaFree(%p): not the start of a live cudaMalloc allocation (freed twice, or from cudaMallocHost or "
                "new?)", ptr);
      return record(cudaErrorInvalidValue);
    }
    a = it->second;
    g_allocations.erase(it);
    g_allocated_bytes -= a.size;
    if (a.record != nullptr) a.record->guard.store(0);
  }
  munmap(a.mapping, a.mapping_bytes);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return record(cudaErrorInvalidValue);
  *ptr = std::malloc(std::max<std::size_t>(size, 1));
  if (*ptr == nullptr) return record(cudaErrorMemoryAllocation);
  std::lock_guard lock(g_mutex);
  g_allocations[reinterpret_cast<std::uintptr_t>(*ptr)] = {size, nullptr, 0, false, nullptr};
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) { return cudaMallocHost(ptr, size); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  std::lock_guard lock(g_mutex);
  const auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == g_allocations.end() || it->second.device) {
    misuse(1, "cudaFreeHost(%p): not a live cudaMallocHost allocation", ptr);
    return record(cudaErrorInvalidValue);
  }
  g_allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

namespace {
const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
  }
  return "an invalid cudaMemcpyKind";
}

// Checks a copy's direction against where the pointers really are, and its size against the allocation.
// Pinned host memory (cudaMallocHost) counts as host memory.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  std::lock_guard lock(g_mutex);
  const Allocation* d = find(dst, 1);
  const Allocation* s = find(src, 1);
  const bool dst_dev = d != nullptr && d->device;
  const bool src_dev = s != nullptr && s->device;
  bool want_dst = dst_dev, want_src = src_dev;
  switch (kind) {
    case cudaMemcpyHostToDevice: want_dst = true; want_src = false; break;
    case cudaMemcpyDeviceToHost: want_dst = false; want_src = true; break;
    case cudaMemcpyDeviceToDevice: want_dst = true; want_src = true; break;
    case cudaMemcpyHostToHost: want_dst = false; want_src = false; break;
    case cudaMemcpyDefault: break;
    default:
      misuse(2, "cudaMemcpy with kind %d, which is not a cudaMemcpyKind", static_cast<int>(kind));
      return cudaErrorInvalidMemcpyDirection;
  }
  if (want_dst != dst_dev || want_src != src_dev) {
    misuse(3, "cudaMemcpy(%p, %p, %zu, %s): the destination is %s memory and the source is %s memory, but the kind "
              "says %s to %s", dst, src, count, kind_name(kind), dst_dev ? "device" : "host", src_dev ? "device" : "host",
           want_src ? "device" : "host", want_dst ? "device" : "host");
    return cudaErrorInvalidValue;
  }
  if ((dst_dev && find(dst, count) == nullptr) || (src_dev && find(src, count) == nullptr)) {
    const Allocation* a = dst_dev && find(dst, count) == nullptr ? d : s;
    misuse(4, "cudaMemcpy of %zu bytes runs past the end of a %zu-byte device allocation (%s)", count, a->size,
           a == d ? "the destination" : "the source");
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
  if (const cudaError_t err = check_copy(dst, src, count, kind); err != cudaSuccess) return record(err);
  std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, count, kind);
}

// __constant__ and __device__ variables are ordinary globals on the CPU: a symbol copy is a memcpy.
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return record(cudaErrorInvalidMemcpyDirection);
  }
  std::memmove(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return record(cudaErrorInvalidMemcpyDirection);
  }
  std::memmove(dst, static_cast<const char*>(symbol) + offset, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t) {
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  if (count == 0) return cudaSuccess;
  {
    std::lock_guard lock(g_mutex);
    const Allocation* a = find(ptr, count);
    if (a == nullptr || !a->device) {
      misuse(5, "cudaMemset(%p, %d, %zu): the range is not inside one cudaMalloc allocation", ptr, value, count);
      return record(cudaErrorInvalidValue);
    }
  }
  std::memset(ptr, value, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t) { return cudaMemset(ptr, value, count); }

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = kPretendMemory;
  std::lock_guard lock(g_mutex);
  *free_bytes = g_allocated_bytes < kPretendMemory ? kPretendMemory - g_allocated_bytes : 0;
  return cudaSuccess;
}

// ---- device ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : record(cudaErrorInvalidDevice); }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return record(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "rooflab CPU backend (pretend sm_80, %d SMs)", pretend_sms());
  prop->totalGlobalMem = kPretendMemory;
  prop->sharedMemPerBlock = kSharedPerBlock;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = 2147483647;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 64 * 1024;
  prop->multiProcessorCount = pretend_sms();
  prop->major = 8;
  prop->minor = 0;
  prop->l2CacheSize = 40 * 1024 * 1024;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->maxBlocksPerMultiProcessor = 32;
  prop->sharedMemPerMultiprocessor = kSharedPerSm;
  prop->sharedMemPerBlockOptin = kSharedOptin;
  prop->regsPerMultiprocessor = 65536;
  prop->memoryBusWidth = 5120;
  prop->concurrentKernels = 1;
  prop->unifiedAddressing = 1;
  prop->canMapHostMemory = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return record(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = pretend_sms(); break;
    case cudaDevAttrComputeCapabilityMajor: *value = 8; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxBlockDimX: *value = 1024; break;
    case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
    case cudaDevAttrMaxGridDimY: *value = 65535; break;
    case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = 32; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrL2CacheSize: *value = 40 * 1024 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(kSharedPerBlock); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(kSharedOptin); break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = static_cast<int>(kSharedPerSm); break;
    case cudaDevAttrTotalConstantMemory: *value = 64 * 1024; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = 65536; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = 65536; break;
    case cudaDevAttrClockRate: *value = 1410000; break;
    case cudaDevAttrMemoryClockRate: *value = 1593000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; break;
    case cudaDevAttrConcurrentKernels: *value = 1; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrIntegrated: *value = 0; break;
    case cudaDevAttrEccEnabled: *value = 0; break;
    case cudaDevAttrPciBusId: *value = 0; break;
    case cudaDevAttrPciDeviceId: *value = 0; break;
    case cudaDevAttrPciDomainId: *value = 0; break;
    default:
      misuse(6, "cudaDeviceGetAttribute(%d) is not emulated by the CPU backend", static_cast<int>(attr));
      return record(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || static_cast<std::size_t>(value) > kSharedOptin) {
      misuse(7, "cudaFuncSetAttribute(%s, cudaFuncAttributeMaxDynamicSharedMemorySize, %d): the pretend GPU allows at "
                "most %zu bytes", kernel_name(func).c_str(), value, kSharedOptin);
      return record(cudaErrorInvalidValue);
    }
    std::lock_guard lock(g_mutex);
    g_smem_optin[func] = static_cast<std::size_t>(value);
  }
  return cudaSuccess;
}

// ---- errors ----

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = tl_last_error;
  tl_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return tl_last_error; }

namespace {
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};
// The errors the CPU backend can return, and the ones a lab most often prints.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
const ErrorText* error_text(cudaError_t error) {
  for (const auto& e : kErrors) {
    if (e.code == error) return &e;
  }
  return nullptr;
}
}  // namespace

const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* e = error_text(error);
  return e != nullptr ? e->name : "cudaErrorUnrecognized (a code the CPU backend does not name)";
}

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* e = error_text(error);
  return e != nullptr ? e->text : "an error the CPU backend does not describe";
}

cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaFuncSetCacheConfig(const void*, cudaFuncCache) { return cudaSuccess; }

// ---- streams and events (synchronous on the CPU) ----

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = reinterpret_cast<cudaStream_t>(new rooflab::emu::Stream);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) { return cudaStreamCreate(stream); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<rooflab::emu::Stream*>(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = reinterpret_cast<cudaEvent_t>(new rooflab::emu::Event);
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) { return cudaEventCreate(event); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<rooflab::emu::Event*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  auto* e = reinterpret_cast<rooflab::emu::Event*>(event);
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  const auto* a = reinterpret_cast<rooflab::emu::Event*>(start);
  const auto* b = reinterpret_cast<rooflab::emu::Event*>(end);
  if (!a->recorded || !b->recorded) return record(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}
