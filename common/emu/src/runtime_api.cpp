// The CUDA runtime API subset the labs use, defined for the CPU backend against the toolkit's own
// declarations (cuda_runtime_api.h). libcudart is never linked: an API not defined here fails at link time.
//
// Device memory: every cudaMalloc gets its own mapping whose end (rounded up to 16 bytes, the alignment
// float4 needs) touches a PROT_NONE guard page, so a kernel that reads or writes past the end faults; the
// fault handler names the kernel, block, thread and how far past which allocation the access was. New
// memory is filled with 0xCD bytes (never zeros), so a read of memory nobody wrote shows.
#include <rooflab/emu/runtime.hpp>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace rooflab::emu {

const char* current_kernel_for_report();                      // scheduler.cpp
bool current_thread_for_report(uint3* block, uint3* thread);  // scheduler.cpp

namespace {

constexpr unsigned char kPoison = 0xCD;
constexpr std::size_t kAlign = 16;

struct Allocation {
  std::size_t size = 0;        // bytes the program asked for
  void* mapping = nullptr;     // device memory: the whole mapping, guard page included
  std::size_t mapping_bytes = 0;
  bool device = true;          // false: cudaMallocHost (pinned host memory, which kernels may also touch)
};

std::mutex g_mutex;
std::map<std::uintptr_t, Allocation> g_allocations;  // by start address

// A fixed table the fault handler can read without locks: guard page ranges and their allocations.
struct GuardRecord {
  std::atomic<std::uintptr_t> guard{0};
  std::uintptr_t start = 0;
  std::size_t size = 0;
  const char* what = "cudaMalloc allocation";
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
  if (a < it->first || a + bytes > it->first + std::max<std::size_t>(it->second.size, 1)) return nullptr;
  if (start_out != nullptr) *start_out = it->first;
  return &it->second;
}

// ---- the fault handler: an access into a guard page is an out-of-bounds access ----

void write_err(const char* s) { (void)!write(STDERR_FILENO, s, std::strlen(s)); }

void on_fault(int sig, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  char msg[1024];
  const char* kernel = current_kernel_for_report();
  uint3 block{}, thread{};
  const bool in_kernel = current_thread_for_report(&block, &thread);
  for (const auto& g : g_guards) {
    const std::uintptr_t guard = g.guard.load(std::memory_order_relaxed);
    if (guard == 0 || addr < guard || addr >= guard + page_size()) continue;
    const std::size_t past = addr - (g.start + g.size);
    if (in_kernel) {
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: out-of-bounds access in kernel %s, block (%u,%u,%u), thread (%u,%u,%u): address "
                    "%zu bytes past the end of a %zu-byte %s (element %zu for 4-byte elements).\n",
                    kernel != nullptr ? kernel : "?", block.x, block.y, block.z, thread.x, thread.y, thread.z, past,
                    g.size, g.what, g.size / 4 + past / 4);
    } else {
      std::snprintf(msg, sizeof msg,
                    "\nrooflab emu: out-of-bounds access outside a kernel: %zu bytes past the end of a %zu-byte "
                    "cudaMalloc allocation (host code dereferenced device memory past its end).\n",
                    past, g.size);
    }
    write_err(msg);
    signal(sig, SIG_DFL);
    return;  // the access repeats and the default action ends the process
  }
  if (in_kernel) {
    std::snprintf(msg, sizeof msg,
                  "\nrooflab emu: invalid memory access in kernel %s, block (%u,%u,%u), thread (%u,%u,%u) at address "
                  "%p (not device memory: a wild or null pointer, or a fiber stack overflow).\n",
                  kernel != nullptr ? kernel : "?", block.x, block.y, block.z, thread.x, thread.y, thread.z,
                  info->si_addr);
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

// The pretend GPU: an A100-like sm_80 unless ROOFLAB_EMU_SMS says otherwise.
int pretend_sms() {
  static const int sms = [] {
    const char* s = std::getenv("ROOFLAB_EMU_SMS");
    return s != nullptr && std::atoi(s) > 0 ? std::atoi(s) : 108;
  }();
  return sms;
}

std::map<const void*, std::size_t> g_smem_optin;  // cudaFuncSetAttribute(MaxDynamicSharedMemorySize)

// Records a guard page for the fault handler (a fixed table it can read without locks).
void register_guard(const void* guard, const void* start, std::size_t size, const char* what) {
  for (auto& g : g_guards) {
    std::uintptr_t expected = 0;
    if (g.guard.load() != 0) continue;
    g.start = reinterpret_cast<std::uintptr_t>(start);
    g.size = size;
    g.what = what;
    if (g.guard.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(guard))) return;
  }
}

// One guarded buffer per worker thread for a block's dynamic shared memory, reused by its blocks.
struct SharedArena {
  unsigned char* mapping = nullptr;
  std::size_t mapping_bytes = 0;
  unsigned char* guard = nullptr;
  GuardRecord* record = nullptr;
  ~SharedArena() {
    if (mapping == nullptr) return;
    if (record != nullptr) record->guard.store(0);
    munmap(mapping, mapping_bytes);
  }
};
thread_local SharedArena tl_shared;

}  // namespace

// The block's dynamic shared memory, exactly `bytes` long (rounded up to 16) and ending against a guard
// page, so an overrun faults and is reported like a cudaMalloc overrun. Filled with poison.
void* guarded_shared_buffer(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  install_fault_handler();
  const std::size_t page = page_size();
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  SharedArena& a = tl_shared;
  if (a.mapping == nullptr || static_cast<std::size_t>(a.guard - a.mapping) < rounded) {
    if (a.mapping != nullptr) {
      if (a.record != nullptr) a.record->guard.store(0);
      munmap(a.mapping, a.mapping_bytes);
    }
    const std::size_t data_pages = (rounded + page - 1) / page * page;
    a.mapping_bytes = data_pages + page;
    a.mapping = static_cast<unsigned char*>(
        mmap(nullptr, a.mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (a.mapping == MAP_FAILED) throw KernelError("out of memory for dynamic shared memory");
    a.guard = a.mapping + data_pages;
    mprotect(a.guard, page, PROT_NONE);
    register_guard(a.guard, a.guard - rounded, bytes, "block's dynamic shared memory");
    for (auto& g : g_guards) {
      if (g.guard.load() == reinterpret_cast<std::uintptr_t>(a.guard)) a.record = &g;
    }
  }
  unsigned char* start = a.guard - rounded;
  if (a.record != nullptr) {
    a.record->start = reinterpret_cast<std::uintptr_t>(start);
    a.record->size = bytes;
  }
  std::memset(start, kPoison, rounded);
  return start;
}

bool is_device_pointer(const void* p) {
  std::lock_guard lock(g_mutex);
  return find(p, 1) != nullptr;
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
  const std::size_t page = page_size();
  const std::size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  const std::size_t data_pages = (std::max<std::size_t>(rounded, 1) + page - 1) / page * page;
  const std::size_t total = data_pages + page;
  void* mapping = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return record(cudaErrorMemoryAllocation);
  auto* guard = static_cast<unsigned char*>(mapping) + data_pages;
  mprotect(guard, page, PROT_NONE);
  unsigned char* start = guard - rounded;
  std::memset(start, kPoison, rounded);
  {
    std::lock_guard lock(g_mutex);
    g_allocations[reinterpret_cast<std::uintptr_t>(start)] = {size, mapping, total, true};
    for (auto& g : g_guards) {
      std::uintptr_t expected = 0;
      if (g.guard.load() != 0) continue;
      g.start = reinterpret_cast<std::uintptr_t>(start);
      g.size = size;
      if (g.guard.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(guard))) break;
    }
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
    if (it == g_allocations.end() || !it->second.device) return record(cudaErrorInvalidValue);
    a = it->second;
    g_allocations.erase(it);
    const auto guard = reinterpret_cast<std::uintptr_t>(a.mapping) + a.mapping_bytes - page_size();
    for (auto& g : g_guards) {
      if (g.guard.load() == guard) g.guard.store(0);
    }
  }
  munmap(a.mapping, a.mapping_bytes);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return record(cudaErrorInvalidValue);
  *ptr = std::malloc(std::max<std::size_t>(size, 1));
  if (*ptr == nullptr) return record(cudaErrorMemoryAllocation);
  std::lock_guard lock(g_mutex);
  g_allocations[reinterpret_cast<std::uintptr_t>(*ptr)] = {size, nullptr, 0, false};
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) { return cudaMallocHost(ptr, size); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  std::lock_guard lock(g_mutex);
  const auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == g_allocations.end() || it->second.device) return record(cudaErrorInvalidValue);
  g_allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

namespace {
// Checks a copy's direction against where the pointers really are, and its size against the allocation.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  std::lock_guard lock(g_mutex);
  const bool dst_dev = find(dst, 1) != nullptr;
  const bool src_dev = find(src, 1) != nullptr;
  bool want_dst = dst_dev, want_src = src_dev;
  switch (kind) {
    case cudaMemcpyHostToDevice: want_dst = true; want_src = false; break;
    case cudaMemcpyDeviceToHost: want_dst = false; want_src = true; break;
    case cudaMemcpyDeviceToDevice: want_dst = true; want_src = true; break;
    case cudaMemcpyHostToHost: want_dst = false; want_src = false; break;
    default: break;
  }
  if (want_dst != dst_dev || want_src != src_dev) {
    std::fprintf(stderr, "rooflab emu: cudaMemcpy kind mismatch: the destination is %s memory and the source is %s "
                         "memory, but the kind says otherwise (kind %d)\n",
                 dst_dev ? "device" : "host", src_dev ? "device" : "host", static_cast<int>(kind));
    return cudaErrorInvalidValue;
  }
  if ((dst_dev && find(dst, count) == nullptr) || (src_dev && find(src, count) == nullptr)) {
    std::fprintf(stderr, "rooflab emu: cudaMemcpy of %zu bytes runs past the end of a device allocation\n", count);
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

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  if (count == 0) return cudaSuccess;
  {
    std::lock_guard lock(g_mutex);
    if (find(ptr, count) == nullptr) {
      std::fprintf(stderr, "rooflab emu: cudaMemset of %zu bytes at %p is not inside one device allocation\n", count, ptr);
      return record(cudaErrorInvalidValue);
    }
  }
  std::memset(ptr, value, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t) { return cudaMemset(ptr, value, count); }

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = std::size_t{80} << 30;
  *free_bytes = *total;
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
  std::snprintf(prop->name, sizeof prop->name, "rooflab CPU backend (pretend sm_80)");
  prop->totalGlobalMem = std::size_t{80} << 30;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->multiProcessorCount = pretend_sms();
  prop->major = 8;
  prop->minor = 0;
  prop->l2CacheSize = 40 * 1024 * 1024;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->sharedMemPerMultiprocessor = 164 * 1024;
  prop->sharedMemPerBlockOptin = 163 * 1024;
  prop->regsPerMultiprocessor = 65536;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return record(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = pretend_sms(); break;
    case cudaDevAttrComputeCapabilityMajor: *value = 8; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrL2CacheSize: *value = 40 * 1024 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 163 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = 164 * 1024; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = 65536; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = 65536; break;
    case cudaDevAttrClockRate: *value = 1410000; break;
    case cudaDevAttrMemoryClockRate: *value = 1593000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; break;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
    case cudaDevAttrMaxGridDimY: *value = 65535; break;
    case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    default:
      std::fprintf(stderr, "rooflab emu: cudaDeviceGetAttribute(%d) is not emulated\n", static_cast<int>(attr));
      return record(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > 227 * 1024) return record(cudaErrorInvalidValue);
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

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaError (not named by the CPU backend)";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    default: return "an error the CPU backend does not describe";
  }
}

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
