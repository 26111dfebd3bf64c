// Shared memory on the CPU backend: a block's static __shared__ variables and its dynamic shared memory.
//
// The source rewriter (common/emu/rewrite) turns each `__shared__ T name[dims];` in a function body into a
// call of static_shared_storage() keyed by the declaration (per template instantiation). Each key gets a
// mapping of its own on each worker thread, placed so that the variable's last byte touches a PROT_NONE
// page: an index past its end faults, and the fault handler reports it like a cudaMalloc overrun, with the
// kernel, block and thread. The first thread of a block that reaches the declaration fills it with 0xCD
// bytes, so no block ever sees what the previous block left there: a missing __syncthreads cannot hide behind
// stale data that happens to be identical in every block. Dynamic shared memory is one such mapping of
// exactly the launch's size, poisoned at every block start.
//
// The static bytes a block has reached plus its dynamic bytes must stay within the launch's limit (48 KiB,
// or more after cudaFuncSetAttribute); a GPU refuses such a launch, so the backend reports it. (A GPU counts
// every __shared__ declaration of the kernel; the backend counts those the block's threads reached.)
//
// Race mode: consecutive blocks on a worker are not ordered (as on a GPU), so reusing a mapping for the next
// block would look like a race to ThreadSanitizer. There every block gets new mappings: munmap clears TSan's
// shadow of the old ones.
#include <rooflab/emu/async_copy.hpp>
#include <rooflab/emu/runtime.hpp>

#include "internal.hpp"

#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rooflab::emu {

namespace {

constexpr std::size_t kStaticLimit = 48 * 1024;  // ptxas refuses more static __shared__ memory per kernel

struct Site {
  GuardedMapping region;
  std::size_t bytes = 0;
  std::size_t align = 1;
  std::string what;   // the fault handler's words: "__shared__ variable tile (kernels.cu:12)"
  std::string where;  // for the limit report: "tile (1024 bytes, kernels.cu:12)"
};

struct WorkerShared {
  std::unordered_map<const void*, std::unique_ptr<Site>> sites;  // every declaration this worker has met
  std::vector<std::pair<const void*, Site*>> in_block;           // those the running block has reached
  bool in_a_block = false;
  std::size_t static_bytes = 0;
  std::size_t dynamic_bytes = 0;
  std::size_t limit = 0;
  GuardedMapping dynamic;
  ~WorkerShared() {
    unmap_guarded(dynamic);
    for (auto& [key, site] : sites) unmap_guarded(site->region);
  }
};

thread_local WorkerShared tl_worker_shared;
thread_local WorkerShared* tl_block_shared = nullptr;  // a cooperative launch's running block, else null
WorkerShared& shared_now() { return tl_block_shared != nullptr ? *tl_block_shared : tl_worker_shared; }

void poison(const GuardedMapping& m) { std::memset(m.start, kPoisonByte, m.padded); }

// The largest power of two up to 16 that divides `bytes`: the alignment that lets the variable end exactly
// at its guard page, and 16 (what float4 accesses need) whenever its size allows.
std::size_t natural_align(std::size_t bytes) {
  std::size_t a = 16;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

std::string base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash != nullptr ? slash + 1 : file;
}

[[noreturn]] void over_limit(const WorkerShared& w) {
  std::string sites;
  for (const auto& [key, site] : w.in_block) sites += (sites.empty() ? "" : ", ") + site->where;
  const std::size_t total = w.static_bytes + w.dynamic_bytes;
  if (w.static_bytes > kStaticLimit) {
    throw KernelError(std::to_string(w.static_bytes) + " bytes of static __shared__ memory (" + sites +
                      "): more than the 48 KiB a kernel may declare statically (ptxas refuses it); put the rest in "
                      "dynamic shared memory (extern __shared__) and raise the limit with cudaFuncSetAttribute");
  }
  throw KernelError("too much shared memory for one block (cudaErrorInvalidValue on a GPU): " +
                    std::to_string(w.static_bytes) + " bytes static (" + sites + ") + " +
                    std::to_string(w.dynamic_bytes) + " bytes dynamic = " + std::to_string(total) +
                    " bytes, over the limit of " + std::to_string(w.limit) +
                    " (48 KiB unless cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                    "bytes) raised it, up to 227 KiB)");
}

// A write into the padding between a variable's end and its guard page (only variables whose size is not a
// multiple of their alignment have such padding).
std::string padding_report(const GuardedMapping& m, const std::string& what) {
  for (std::size_t i = m.bytes; i < m.padded; ++i) {
    if (m.start[i] == kPoisonByte) continue;
    return "wrote past the end of the " + std::to_string(m.bytes) + "-byte " + what + ", at byte offset " +
           std::to_string(i) + " (in its alignment padding, short of its guard page, so found at the end of the "
           "block: the writing thread is not known)";
  }
  return "";
}

}  // namespace

void* shared_begin_block(std::size_t dynamic_bytes, std::size_t limit) {
  WorkerShared& w = shared_now();
  w.in_block.clear();
  w.in_a_block = true;
  w.static_bytes = 0;
  w.dynamic_bytes = dynamic_bytes;
  w.limit = limit;
  async_begin_block();  // asynchronous copies and cuda::barrier bookkeeping are per block too
  if (w.dynamic.mapping == nullptr || w.dynamic.bytes != dynamic_bytes) {
    unmap_guarded(w.dynamic);
    w.dynamic = map_guarded(dynamic_bytes, 16, "block's dynamic shared memory");
  }
  poison(w.dynamic);
  return w.dynamic.start;
}

std::string shared_end_block() {
  WorkerShared& w = shared_now();
  std::string report = padding_report(w.dynamic, "block's dynamic shared memory");
  for (const auto& [key, site] : w.in_block) {
    if (report.empty()) report = padding_report(site->region, site->what);
  }
  if (kRaceMode) {
    unmap_guarded(w.dynamic);
    for (const auto& [key, site] : w.in_block) unmap_guarded(site->region);
  }
  async_end_block();
  w.in_block.clear();
  w.in_a_block = false;
  return report;
}

bool shared_memory_place(const void* p, std::uintptr_t* at) {
  const WorkerShared& w = shared_now();
  if (!w.in_a_block) return false;
  const auto* b = static_cast<const unsigned char*>(p);
  const auto inside = [b](const GuardedMapping& m) { return m.start != nullptr && b >= m.start && b < m.start + m.bytes; };
  if (inside(w.dynamic)) {
    *at = static_cast<std::uintptr_t>(b - w.dynamic.start);
    return true;
  }
  for (std::size_t i = 0; i < w.in_block.size(); ++i) {
    const GuardedMapping& m = w.in_block[i].second->region;
    if (inside(m)) {
      *at = ((static_cast<std::uintptr_t>(i) + 1) << 32) + static_cast<std::uintptr_t>(b - m.start);
      return true;
    }
  }
  return false;
}

void* shared_new_state() { return new WorkerShared(); }
void shared_use_state(void* state) { tl_block_shared = static_cast<WorkerShared*>(state); }
void shared_delete_state(void* state) { delete static_cast<WorkerShared*>(state); }

namespace detail {

void* static_shared_storage(const void* key, std::size_t bytes, std::size_t align, const char* name, const char* file,
                            unsigned line) {
  IgnoreScope ignore;  // the lookup and the poison are the backend's, not the kernel's, memory traffic
  WorkerShared& w = shared_now();
  for (const auto& [k, site] : w.in_block) {
    if (k == key) return site->region.start;
  }
  if (!w.in_a_block) {
    throw KernelError(std::string("__shared__ variable ") + name + " (" + file + ":" + std::to_string(line) +
                      ") used outside a kernel");
  }
  std::unique_ptr<Site>& site = w.sites[key];
  if (!site) {
    site = std::make_unique<Site>();
    site->bytes = bytes;
    site->align = std::max(align, natural_align(bytes));
    site->what = std::string("__shared__ variable ") + name + " (" + file + ":" + std::to_string(line) + ")";
    site->where = std::string(name) + ": " + std::to_string(bytes) + " bytes at " + base_name(file) + ":" +
                  std::to_string(line);
  }
  if (site->region.mapping == nullptr) site->region = map_guarded(site->bytes, site->align, site->what.c_str());
  poison(site->region);
  w.in_block.emplace_back(key, site.get());
  w.static_bytes += bytes;
  if (w.static_bytes > kStaticLimit || w.static_bytes + w.dynamic_bytes > w.limit) over_limit(w);
  return site->region.start;
}

}  // namespace detail

void* dynamic_shared_memory() {
  WorkerShared& w = shared_now();
  if (!w.in_a_block) throw KernelError("dynamic shared memory asked for outside a kernel");
  return w.dynamic.start;
}

}  // namespace rooflab::emu
