// The CUDA runtime API subset the labs use, defined for the CPU backend against the toolkit's own
// declarations (cuda_runtime_api.h). libcudart is never linked: an API not defined here fails at link time.
// The device memory these entry points manage (guard pages, canaries, the fault handler, host access) is
// guarded_memory.cpp's.
#include <rooflab/emu/pretend_gpu.hpp>
#include <rooflab/emu/runtime.hpp>

#include <cuda_profiler_api.h>

#include "guarded_memory.hpp"
#include "internal.hpp"

#include <execinfo.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace rooflab::emu {
std::string kernel_name(const void* kernel);  // scheduler.cpp (any function's name)
cudaError_t record_error(cudaError_t err);    // below, for device_props.cpp
long long launch_bound(const void* kernel);   // below, for scheduler.cpp
}  // namespace rooflab::emu

using namespace rooflab::emu;
using namespace rooflab::emu::memory;

// ---- memory ----

static std::atomic<unsigned long long> g_allocations_made{0};  // device allocations so far (device_allocations_made)

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
  static std::atomic<unsigned long long> serial{0};
  const std::array<unsigned char, 16> canary = make_canary(serial++);
  fill_canary(front_guard + page, static_cast<std::size_t>(start - (front_guard + page)), canary);  // slack before
  // Poisoned, so that a read of memory nobody wrote shows; not while launches are only recorded (LaunchShapes:
  // no kernel runs, so nothing reads it): the perf tests' sizes (768 MB for Lab 01) would be written for nothing.
  if (!detail::recording_launch_shapes()) std::memset(start, kPoison, size);
  fill_canary(start + size, rounded - size, canary);  // the alignment padding
  {
    std::lock_guard lock(g_mutex);
    GuardRecord* rec = register_guard(guard, front_guard, start, size, "cudaMalloc allocation", site + 1,
                                      std::max(frames - 1, 0));
    Allocation& a = g_allocations[reinterpret_cast<std::uintptr_t>(start)];
    a = {size, mapping, total, true, rec, canary, 0};
    g_allocated_bytes += size;
    g_peak_allocated_bytes = std::max(g_peak_allocated_bytes, g_allocated_bytes);
    // Host code may not touch it, unless a kernel is running (which may, once it learns the pointer).
    if (g_launches_running == 0 && protect_device_memory()) set_access(a, false);
  }
  *ptr = start;
  g_allocations_made.fetch_add(1, std::memory_order_relaxed);
  return cudaSuccess;
}

unsigned long long rooflab::emu::device_allocations_made() { return g_allocations_made.load(); }

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
  g_allocations[reinterpret_cast<std::uintptr_t>(*ptr)] = {size, nullptr, 0, false, nullptr, {}, 0};
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) { return cudaMallocHost(ptr, size); }
// Page-locking memory the program allocated itself: accepted. Such memory stays pageable host memory here, so an
// asynchronous copy into it has landed when the call returns (into cudaMallocHost memory it lands later).
cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int) {
  return ptr == nullptr || size == 0 ? record(cudaErrorInvalidValue) : cudaSuccess;
}
cudaError_t cudaHostUnregister(void* ptr) { return ptr == nullptr ? record(cudaErrorInvalidValue) : cudaSuccess; }
// Mapped pinned memory: kernels may touch cudaMallocHost (cudaHostAlloc) memory here, at its own address.
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int flags) {
  const void* start = nullptr;
  std::size_t size = 0;
  bool on_device = true;
  if (device == nullptr || flags != 0 || !find_allocation(host, &start, &size, &on_device) || on_device) {
    return record(cudaErrorInvalidValue);
  }
  *device = host;
  return cudaSuccess;
}
// One GPU: no peer to reach.
cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (can == nullptr || device != 0 || peer != 0) return record(cudaErrorInvalidDevice);
  *can = 0;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  ordering::drop_landings(ptr);  // copies into it that never landed have nowhere to land now
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

// Checks a copy's direction against where the pointers really are, and its size against the allocation,
// and opens the device allocations it touches to this host code (`access`). Pinned host memory
// (cudaMallocHost) counts as host memory. `direction` is the copy's real direction.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, RuntimeAccess& access,
                       Direction* direction) {
  std::lock_guard lock(g_mutex);
  Allocation* d = find(dst, 1);
  Allocation* s = find(src, 1);
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
  *direction = dst_dev && src_dev ? Direction::device_to_device
               : dst_dev          ? Direction::to_device
               : src_dev          ? Direction::to_host
                                  : Direction::host_to_host;
  if (dst_dev) access.open_locked(d);
  if (src_dev) {
    const auto from = reinterpret_cast<std::uintptr_t>(src);
    touch_watched(from, from + count);  // a copy out of a watched input reads it
    access.open_locked(s);
  }
  return cudaSuccess;
}

// Opens the device allocation holding p, if any (a symbol copy's host side may be device memory); its
// direction from the symbol's side.
Direction open_if_device(const void* p, RuntimeAccess& access, Direction if_device, Direction if_host) {
  std::lock_guard lock(g_mutex);
  Allocation* a = find(p, 1);
  if (a == nullptr || !a->device) return if_host;
  access.open_locked(a);
  return if_device;
}
}  // namespace

namespace {
// A synchronous copy or set runs on the legacy default stream, after what that stream waits for. Device memory
// that work still unordered with it may write (a kernel on a cudaStreamNonBlocking stream, never synchronized)
// is reported, and a copy out of it gives the poison 0xCD bytes: on a GPU the copy could read what was there
// before the kernel wrote it, and the program's check must not pass by the CPU's luck. Then the host knows the
// legacy stream finished (ordering.hpp).
bool unordered_device_read(const void* src, bool src_device, void* dst, size_t count) {
  if (!src_device) return false;
  const std::string unordered = ordering::unordered_with(src, count, false);
  if (unordered.empty()) return false;
  misuse(6, "a synchronous copy reads %zu bytes at %p that %s; the copy gives 0xCD bytes here", count, src,
         unordered.c_str());
  std::memset(dst, kPoison, count);
  return true;
}
void unordered_device_write(const void* dst, bool dst_device, size_t count, const char* what) {
  if (!dst_device) return;
  const std::string unordered = ordering::unordered_with(dst, count, true);
  if (!unordered.empty()) misuse(6, "%s writes %zu bytes at %p that %s", what, count, dst, unordered.c_str());
}
// The host bytes an asynchronous copy (the operation just issued on `stream`) has written at dst: into pinned
// memory the copy is asynchronous on a GPU, so they are taken back and land only when the host knows it finished
// (ordering::land_when_finished); into pageable memory the call returns after the copy, as CUDA documents, and
// they stay. Every asynchronous copy to the host comes through here.
void land_later_if_pinned(cudaStream_t stream, void* dst, size_t count) {
  const void* start = nullptr;
  std::size_t size = 0;
  bool device = true;
  if (count == 0 || !find_allocation(dst, &start, &size, &device) || device) return;
  const auto* bytes = static_cast<const unsigned char*>(dst);
  ordering::land_when_finished(stream, dst, std::vector<unsigned char>(bytes, bytes + count));
}
}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
  RuntimeAccess access;
  Direction direction{};
  if (const cudaError_t err = check_copy(dst, src, count, kind, access, &direction); err != cudaSuccess) {
    return record(err);
  }
  const bool from_device = direction == Direction::to_host || direction == Direction::device_to_device;
  const bool to_device = direction == Direction::to_device || direction == Direction::device_to_device;
  unordered_device_write(dst, to_device, count, "a synchronous copy");
  if (!unordered_device_read(src, from_device, dst, count)) std::memmove(dst, src, count);
  count_copy(direction, count);
  ordering::host_waits_for_stream(nullptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  RuntimeAccess access;
  Direction direction{};
  if (const cudaError_t err = check_copy(dst, src, count, kind, access, &direction); err != cudaSuccess) {
    return record(err);
  }
  std::memmove(dst, src, count);
  count_copy(direction, count);
  ordering::issue(stream, "cudaMemcpyAsync", {{src, false, count}, {dst, true, count}});
  if (direction == Direction::to_host) land_later_if_pinned(stream, dst, count);
  return cudaSuccess;
}

// __constant__ and __device__ variables are ordinary globals on the CPU: a symbol copy is a memcpy, counted
// as a copy to or from the device.
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return record(cudaErrorInvalidMemcpyDirection);
  }
  RuntimeAccess access;
  const Direction direction = open_if_device(src, access, Direction::device_to_device, Direction::to_device);
  std::memmove(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, count);
  count_copy(direction, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault) {
    return record(cudaErrorInvalidMemcpyDirection);
  }
  RuntimeAccess access;
  const Direction direction = open_if_device(dst, access, Direction::device_to_device, Direction::to_host);
  std::memmove(dst, static_cast<const char*>(symbol) + offset, count);
  count_copy(direction, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  const cudaError_t err = cudaMemcpyToSymbol(symbol, src, count, offset, kind);
  if (err == cudaSuccess) ordering::issue(stream, "cudaMemcpyToSymbolAsync", {{src, false, count}});
  return err;
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  const cudaError_t err = cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
  if (err == cudaSuccess) {
    ordering::issue(stream, "cudaMemcpyFromSymbolAsync", {{dst, true, count}});
    land_later_if_pinned(stream, dst, count);
  }
  return err;
}

// ---- pitched memory: rows of `width` bytes, `pitch` bytes apart ----

// The pitch a GPU gives (rows start 512 bytes apart on the GPUs rooflab knows; code must use the returned
// pitch, never assume it).
cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  constexpr size_t kPitchAlignment = 512;
  if (ptr == nullptr || pitch == nullptr) return record(cudaErrorInvalidValue);
  *pitch = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (*pitch == 0) *pitch = kPitchAlignment;
  return cudaMalloc(ptr, *pitch * height);
}

// Row by row: each row is checked as one cudaMemcpy is (direction, and the row inside its allocation), so a
// pitch or height that runs past an allocation is reported at the first row that does.
namespace {
cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > dpitch || width > spitch) {
    misuse(6, "cudaMemcpy2D: width %zu bytes is wider than the %s pitch (%zu bytes)", width,
           width > dpitch ? "destination" : "source", width > dpitch ? dpitch : spitch);
    return record(cudaErrorInvalidPitchValue);
  }
  for (size_t row = 0; row < height; ++row) {
    void* d = static_cast<char*>(dst) + row * dpitch;
    const void* s = static_cast<const char*>(src) + row * spitch;
    RuntimeAccess access;
    Direction direction{};
    if (const cudaError_t err = check_copy(d, s, width, kind, access, &direction); err != cudaSuccess) {
      return record(err);
    }
    std::memmove(d, s, width);
    count_copy(direction, width);
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  const cudaError_t err = copy_2d(dst, dpitch, src, spitch, width, height, kind);
  if (err == cudaSuccess && width > 0 && height > 0) ordering::host_waits_for_stream(nullptr);
  return err;
}
// Asynchronous: the host learns nothing of the legacy stream from it; into pinned memory each row lands when
// the host knows the copy finished.
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  const cudaError_t err = copy_2d(dst, dpitch, src, spitch, width, height, kind);
  if (err != cudaSuccess || width == 0 || height == 0) return err;
  // The rows and the gaps between them: the gaps are the pitch's padding, which nothing else uses.
  ordering::issue(stream, "cudaMemcpy2DAsync",
                  {{src, false, spitch * (height - 1) + width}, {dst, true, dpitch * (height - 1) + width}});
  for (size_t row = 0; row < height; ++row) land_later_if_pinned(stream, static_cast<char*>(dst) + row * dpitch, width);
  return err;
}

namespace {
cudaError_t memset_device(void* ptr, int value, size_t count) {
  if (count == 0) return cudaSuccess;
  RuntimeAccess access;
  {
    std::lock_guard lock(g_mutex);
    Allocation* a = find(ptr, count);
    if (a == nullptr || !a->device) {
      misuse(5, "cudaMemset(%p, %d, %zu): the range is not inside one cudaMalloc allocation", ptr, value, count);
      return record(cudaErrorInvalidValue);
    }
    access.open_locked(a);
  }
  std::memset(ptr, value, count);
  std::lock_guard lock(g_activity_mutex);
  ++g_activity.memsets;
  return cudaSuccess;
}
}  // namespace

// On the legacy default stream, asynchronous with the host (as on a GPU, for device memory).
cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  const cudaError_t err = memset_device(ptr, value, count);
  if (err == cudaSuccess && count > 0) {
    unordered_device_write(ptr, true, count, "cudaMemset");
    ordering::issue(nullptr, "cudaMemset", {{ptr, true, count}});
  }
  return err;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  const cudaError_t err = memset_device(ptr, value, count);
  if (err == cudaSuccess && count > 0) ordering::issue(stream, "cudaMemsetAsync", {{ptr, true, count}});
  return err;
}
namespace {
cudaError_t memset_2d(void* ptr, size_t pitch, int value, size_t width, size_t height) {
  if (width > pitch && height > 1) return record(cudaErrorInvalidPitchValue);
  for (size_t row = 0; row < height; ++row) {
    if (const cudaError_t err = memset_device(static_cast<char*>(ptr) + row * pitch, value, width); err != cudaSuccess) {
      return err;
    }
  }
  return cudaSuccess;
}
}  // namespace
cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height) {
  const cudaError_t err = memset_2d(ptr, pitch, value, width, height);
  if (err == cudaSuccess && width > 0 && height > 0) ordering::issue(nullptr, "cudaMemset2D", {{ptr, true, pitch * (height - 1) + width}});
  return err;
}
cudaError_t cudaMemset2DAsync(void* ptr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  const cudaError_t err = memset_2d(ptr, pitch, value, width, height);
  if (err == cudaSuccess && width > 0 && height > 0) ordering::issue(stream, "cudaMemset2DAsync", {{ptr, true, pitch * (height - 1) + width}});
  return err;
}

// __trap() in a kernel (rooflab/emu/runtime.hpp): the thread stops, and the launch fails with its report.
[[noreturn]] void rooflab::emu::detail::trap_called(const char* file, unsigned line) {
  throw rooflab::emu::KernelError("__trap() at " + std::string(file) + ":" + std::to_string(line) +
                                  ": the kernel stops here (on a GPU the launch fails, and every later CUDA call "
                                  "of the program with it)");
}

// The SM's cycle counter: a steady clock counted in cycles of the pretend GPU's SM clock (cudaDevAttrClockRate),
// so code that spins for `milliseconds * clockRate` ticks, as CUDA's samples do, spins that long here too.
long long rooflab::emu::detail::device_clock() {
  const long long ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  static const long double cycles_per_ns = rooflab::emu::pretend_gpu().sm_clock_khz / 1e6L;
  return static_cast<long long>(static_cast<long double>(ns) * cycles_per_ns);
}

void rooflab::emu::detail::device_sleep(unsigned ns) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(ns, 1000000u)));
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  const std::size_t memory = rooflab::emu::pretend_gpu().memory_bytes;
  *total = memory;
  std::lock_guard lock(g_mutex);
  *free_bytes = g_allocated_bytes < memory ? memory - g_allocated_bytes : 0;
  return cudaSuccess;
}

// The device memory live now, in bytes and allocations: what test_main.cpp's check compares at the start and
// end of every correctness test (a launcher that keeps memory between calls leaves some behind).
extern "C" void rooflab_emu_device_memory_in_use(unsigned long long* bytes, unsigned long long* allocations) {
  std::lock_guard lock(g_mutex);
  *bytes = g_allocated_bytes;
  *allocations = 0;
  for (const auto& [start, a] : g_allocations) *allocations += a.device ? 1 : 0;
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
// Scheduling and mapping flags (cudaDeviceScheduleBlockingSync, cudaDeviceMapHost ...): kept, and read back.
namespace {
unsigned g_device_flags = 0;
}  // namespace
cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  g_device_flags = flags;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return record(cudaErrorInvalidValue);
  *flags = g_device_flags;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  ordering::host_waits_for_device();
  return cudaSuccess;
}
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}

// cudaGetDeviceProperties, cudaDeviceGetAttribute, cudaDeviceGetPCIBusId: device_props.cpp (the pretend GPU).

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

// ---- __launch_bounds__ ----

// The bounds of the kernels declared __launch_bounds__(N, ...), each instance registered by a static its body
// names (rooflab/emu/rewritten.hpp, LaunchBounds). Registered while the program's statics start, so the table is
// made on first use, and guarded by g_mutex (constant-initialized).
namespace {
std::map<const void*, long long>& launch_bounds_table() {
  static std::map<const void*, long long> table;
  return table;
}
}  // namespace

namespace rooflab::emu::detail {
bool register_launch_bounds(const void* kernel, long long max_threads) {
  std::lock_guard lock(g_mutex);
  launch_bounds_table()[kernel] = max_threads;
  return true;
}
}  // namespace rooflab::emu::detail

// The bound registered for `kernel`, or 0 (none known: a kernel without one, or one with no single address).
long long rooflab::emu::launch_bound(const void* kernel) {
  std::lock_guard lock(g_mutex);
  const auto& table = launch_bounds_table();
  const auto it = table.find(kernel);
  return it == table.end() ? 0 : it->second;
}

// What the CPU can know of a kernel: its dynamic shared memory limit (the opt-in above, else 48 KiB), the
// threads a block may have (the pretend GPU's 1024, or fewer where the kernel's __launch_bounds__ say so) and
// the pretend GPU's limits. Static shared memory, registers and local memory have no CPU meaning: 0.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr || func == nullptr) return record(cudaErrorInvalidValue);
  *attr = cudaFuncAttributes{};
  const long long bound = launch_bound(func);
  attr->maxThreadsPerBlock = bound > 0 && bound < 1024 ? static_cast<int>(bound) : 1024;
  attr->ptxVersion = 80;
  attr->binaryVersion = 80;
  std::lock_guard lock(g_mutex);
  const auto it = g_smem_optin.find(func);
  attr->maxDynamicSharedSizeBytes = static_cast<int>(it == g_smem_optin.end() ? kSharedPerBlock : it->second);
  return cudaSuccess;
}

// Resident blocks of `func` per SM on the pretend GPU, limited by threads (whole warps), the block count and
// shared memory (the dynamic bytes plus the driver's reserve per block; static shared memory and registers
// are unknown on the CPU and limit nothing). The figures are cudaGetDeviceProperties' own. A block past the
// kernel's maxThreadsPerBlock (its __launch_bounds__) never runs: none is resident.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func, int block_size,
                                                                   size_t dynamic_smem, unsigned int /*flags*/) {
  if (blocks == nullptr || func == nullptr || block_size <= 0) return record(cudaErrorInvalidValue);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  cudaFuncAttributes attr{};
  cudaFuncGetAttributes(&attr, func);
  *blocks = 0;
  if (block_size > attr.maxThreadsPerBlock || dynamic_smem > static_cast<size_t>(attr.maxDynamicSharedSizeBytes)) {
    return cudaSuccess;  // such a block never runs: no block is resident
  }
  const int warps = (block_size + prop.warpSize - 1) / prop.warpSize;
  const int by_threads = prop.maxThreadsPerMultiProcessor / (warps * prop.warpSize);
  const size_t per_block = dynamic_smem + prop.reservedSharedMemPerBlock;
  const int by_smem = static_cast<int>(prop.sharedMemPerMultiprocessor / per_block);
  *blocks = std::min({by_threads, prop.maxBlocksPerMultiProcessor, by_smem});
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block_size,
                                                          size_t dynamic_smem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, func, block_size, dynamic_smem, 0);
}

// ---- profiler markers: no profiler watches a CPU run ----

cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

// ---- errors ----

// For device_props.cpp: an error cudaGetLastError returns.
cudaError_t rooflab::emu::record_error(cudaError_t err) { return record(err); }


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

// Every operation runs when it is issued; ordering.hpp keeps what would order it on a GPU, for the reports of
// work a GPU would not have finished (a copy that reads it, a timed interval that ends before it).
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  auto* s = new rooflab::emu::memory::Stream;
  s->slot = ordering::create_stream((flags & cudaStreamNonBlocking) != 0);
  *stream = reinterpret_cast<cudaStream_t>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int) {
  return cudaStreamCreateWithFlags(stream, flags);
}
// Priorities order nothing here (every operation runs when it is issued); the range is a recent GPU's.
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t, int* priority) {
  if (priority == nullptr) return record(cudaErrorInvalidValue);
  *priority = 0;
  return cudaSuccess;
}
// A host function on a stream runs once the stream's earlier work has finished, on a thread of the driver: here
// that work has run, and the function runs now. (Its stream's copies into pinned memory land first.)
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (fn == nullptr) return record(cudaErrorInvalidValue);
  ordering::issue(stream, "cudaLaunchHostFunc", {});
  ordering::host_waits_for_stream(stream);
  fn(user_data);
  return cudaSuccess;
}
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data, unsigned int flags) {
  if (callback == nullptr || flags != 0) return record(cudaErrorInvalidValue);
  ordering::issue(stream, "cudaStreamAddCallback", {});
  ordering::host_waits_for_stream(stream);
  callback(stream, cudaSuccess, user_data);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  ordering::destroy_stream(stream);
  delete reinterpret_cast<rooflab::emu::memory::Stream*>(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  ordering::host_waits_for_stream(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  ordering::wait(stream, reinterpret_cast<rooflab::emu::memory::Event*>(event)->mark);
  return cudaSuccess;
}
// A stream's attributes (the access-policy window of the persisting L2 among them) are accepted and do nothing:
// the pretend GPU has no L2 to keep lines in. (The grader refuses these controls in a lab's kernels: a window
// that keeps data in L2 between timed samples; grader/symbols.hpp.)
cudaError_t cudaStreamSetAttribute(cudaStream_t, cudaStreamAttrID, const cudaStreamAttrValue*) { return cudaSuccess; }
cudaError_t cudaStreamGetAttribute(cudaStream_t, cudaStreamAttrID, cudaStreamAttrValue* value) {
  if (value != nullptr) *value = cudaStreamAttrValue{};
  return cudaSuccess;
}
cudaError_t cudaCtxResetPersistingL2Cache() { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t stream) {  // finished: the host learns it
  ordering::host_waits_for_stream(stream);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = reinterpret_cast<cudaEvent_t>(new rooflab::emu::memory::Event);
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) { return cudaEventCreate(event); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<rooflab::emu::memory::Event*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto* e = reinterpret_cast<rooflab::emu::memory::Event*>(event);
  e->at = std::chrono::steady_clock::now();
  e->recorded = true;
  e->mark = ordering::record(stream);
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  ordering::host_waits_for_event(reinterpret_cast<rooflab::emu::memory::Event*>(event)->mark);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  const auto* a = reinterpret_cast<rooflab::emu::memory::Event*>(start);
  const auto* b = reinterpret_cast<rooflab::emu::memory::Event*>(end);
  if (!a->recorded || !b->recorded) return record(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

// ---- the ordering of launches (rooflab/emu/launch.hpp) ----

namespace {
// A launch whose memory is watched page by page (prepare_launch), ordered when it has run.
struct WatchedLaunch {
  bool on = false;
  cudaStream_t stream = nullptr;
  std::string what;
  std::vector<ordering::Access> memory;
};
thread_local WatchedLaunch tl_watched_launch;
thread_local rooflab::emu::detail::ArgumentFacts tl_arguments;  // of the launch being prepared
}  // namespace

rooflab::emu::detail::ArgumentFacts rooflab::emu::detail::take_argument_facts() { return std::exchange(tl_arguments, {}); }

void rooflab::emu::detail::prepare_launch(cudaStream_t stream, const std::string& name, const char* parameters,
                                          const LaunchArgument* arguments, std::size_t count) {
  begin_launch_arguments();  // element sizes of this launch's pointers, for out-of-bounds reports
  std::vector<ordering::Access> memory;  // the allocations the launch may read (false) or write (true)
  tl_arguments.reach.assign(count, 0);
  tl_arguments.scalars.assign(count, std::nullopt);
  for (std::size_t index = 0; index < count; ++index) {
    const LaunchArgument& argument = arguments[index];
    tl_arguments.scalars[index] = argument.integer;
    if (!argument.is_pointer) continue;
    PointerParameter parameter;
    parameter.element_size = argument.element_size;
    if (argument.element_type != nullptr) parameter.element_type = element_type_name(*argument.element_type);
    std::tie(parameter.name, parameter.name_length) = parameter_name(parameters, index);
    if (argument.pointer == nullptr) continue;
    const std::optional<std::size_t> reach = device_pointer_argument(argument.pointer, parameter);
    if (!reach) {
      const std::string named =
          parameter.name != nullptr ? " (" + std::string(parameter.name, parameter.name_length) + ")" : "";
      throw KernelError("host pointer passed to kernel " + name + ", argument " + std::to_string(index + 1) +
                        named +
                        ": it is not inside a cudaMalloc (or cudaMallocHost) allocation; on a GPU the kernel would "
                        "fault or read garbage (copy the data to device memory and pass that pointer)");
    }
    memory.push_back({argument.pointer, argument.writable});
    tl_arguments.reach[index] = *reach;
  }
  // Where work on another stream could overlap with it on a GPU, the launch runs watched, and is ordered once it
  // has run with the pages it touched (finish_launch_ordering); else now, with the whole allocations.
  if (!memory.empty() && ordering::watch_wanted(stream)) {
    std::vector<const void*> pointers;
    for (const ordering::Access& m : memory) pointers.push_back(m.p);
    if (memory::begin_access_watch(pointers)) {
      tl_watched_launch = WatchedLaunch{true, stream, "kernel " + name, std::move(memory)};
      return;
    }
  }
  ordering::issue(stream, "kernel " + name, std::move(memory));
}

void rooflab::emu::detail::finish_launch_ordering() {
  if (!tl_watched_launch.on) return;
  WatchedLaunch launch = std::move(tl_watched_launch);
  tl_watched_launch = WatchedLaunch{};
  const std::vector<memory::TouchedPages> touched = memory::end_access_watch();
  std::vector<ordering::Access> memory;
  for (const ordering::Access& argument : launch.memory) {
    std::uintptr_t start = 0;
    {
      std::lock_guard lock(memory::g_mutex);
      if (memory::find(argument.p, 1, &start) == nullptr) continue;  // freed by the kernel? (it cannot be)
    }
    for (const memory::TouchedPages& t : touched) {
      if (t.start != start) continue;
      for (const memory::TouchedPages::Range& r : t.ranges) {  // what it did, whatever the pointer's constness
        memory.push_back({reinterpret_cast<const void*>(r.lo), r.written, static_cast<std::size_t>(r.hi - r.lo)});
      }
    }
  }
  ordering::issue(launch.stream, std::move(launch.what), std::move(memory));
}

std::string rooflab::emu::last_unordered_pair() { return ordering::last_unordered_pair(); }

std::string rooflab::emu::work_not_covered(cudaEvent_t start, cudaEvent_t stop) {
  return ordering::not_covered(reinterpret_cast<memory::Event*>(start)->mark,
                               reinterpret_cast<memory::Event*>(stop)->mark);
}

#if defined(ROOFLAB_EMU_TSAN)
// Race mode: the fault handler names the allocation and the function with dladdr and the demangler, which
// allocate. The process ends right after, so ThreadSanitizer's report of a signal-unsafe call would only
// hide the real report (and deadlock inside it). And no second of sleep at exit (ThreadSanitizer's default, to
// catch threads still running then): every launch's threads have joined by the time a test binary returns, and
// the second, in every race binary the grader and the selftests run, was most of a small lab's run. TSAN_OPTIONS
// still overrides this.
extern "C" const char* __tsan_default_options() { return "report_signal_unsafe=0:atexit_sleep_ms=0"; }
#endif
