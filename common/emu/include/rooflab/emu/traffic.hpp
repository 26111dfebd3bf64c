// The memory-traffic model of the CPU backend: where a kernel's global-memory bytes go, without a GPU.
//
// A binary whose .cu files are built with `rooflab_emu_add_cu(<target> TRAFFIC ...)` has every load and store
// of those files instrumented (the compiler's ThreadSanitizer instrumentation, answered by the backend's own
// hooks in src/traffic_hooks.cpp, not by libtsan). While a Recording lives, each access a CUDA thread makes
// to device memory is noted with its address, size, direction and instruction (the site), and turned into
// what a GPU would count:
//
//   - requests: the accesses of one warp at one site and one occurrence (the n-th time each lane reached
//     that site) form one request, as the lanes of a warp issue one instruction together;
//   - sectors (32 bytes) and lines (128 bytes) each request touches, and the bytes its lanes used: the
//     global load/store efficiency is used / (32 x sectors);
//   - an L2 of the pretend GPU's size (or a size scaled to a reduced problem), 128-byte lines of four
//     32-byte sectors, 16 ways with LRU replacement, write-allocate without a fetch and write-back; each
//     launch starts with a clean, empty L2 (as Nsight Compute's cache control does) and its dirty sectors
//     are written back at its end. Sectors missed on reads are DRAM bytes read; dirty sectors written back
//     are DRAM bytes written.
//
// Addresses are counted at their offset in their allocation, each allocation starting on 256 bytes as
// cudaMalloc's do (the backend's own are only 16-byte aligned). Accesses to the stack and host memory are not
// device allocations and are not counted.
//
// Shared memory is counted apart, in wavefronts: a GPU's shared memory has 32 banks of 4 bytes, and a warp's
// request takes one pass (wavefront) per distinct 4-byte word the busiest bank must deliver, at least one per
// 128 bytes the lanes use. Lanes reading one word share it (a broadcast). So 32 lanes reading consecutive floats
// take 1 wavefront, a column of a 32 x 32 float tile 32 (every lane in bank 0: a 32-way bank conflict), the
// same column of a tile padded to 33 floats a row 1, and 32 float4 reads 4 (the ideal for 512 bytes). Each
// __shared__ variable is placed at bank 0 (a GPU packs them one after another: a request within one variable
// conflicts the same way wherever the variable starts, by 4-byte steps). The wavefronts over the ideal is what
// Nsight Compute reports as an n-way bank conflict.
// Recording runs the grid on one worker. See docs/cpu-mode.md, "Memory traffic".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rooflab::emu::traffic {

// One access site (an instruction of a kernel) in one launch.
struct Site {
  std::uintptr_t pc = 0;      // the instruction's address in the process
  std::string where;          // "kernels.cu:42" (from the debug line table; "?" if unknown)
  bool store = false;
  const void* allocation = nullptr;   // the start of the device allocation its first access fell in
  unsigned long long requests = 0;
  unsigned long long sectors = 0;     // 32-byte sectors summed over requests
  unsigned long long lines = 0;       // 128-byte lines summed over requests
  unsigned long long bytes_used = 0;  // distinct bytes the lanes of each request touched, summed
  // The fewest sectors that could hold each request's used bytes, summed: a broadcast (every lane reads one
  // value) needs 1, 32 lanes reading consecutive floats 4. sectors / min_sectors is how many times the bytes
  // a site needs it fetches.
  unsigned long long min_sectors = 0;
  unsigned widest = 0;                // bytes of the widest single access of one thread
  unsigned long long bytes_requested = 0;  // every thread's accesses in full
  // Shared-memory sites (KernelTraffic::shared_sites) only: the passes the requests took and the fewest they
  // could have taken for the bytes used (ceil(bytes / 128) each).
  unsigned long long wavefronts = 0;
  unsigned long long ideal_wavefronts = 0;
  double sectors_per_request() const { return requests ? double(sectors) / double(requests) : 0; }
  // Shared memory: the n of an n-way bank conflict (1: none).
  double conflict_ways() const { return ideal_wavefronts ? double(wavefronts) / double(ideal_wavefronts) : 0; }
  // Global load/store efficiency: the fraction of the fetched sector bytes the threads used.
  double efficiency() const { return sectors ? double(bytes_used) / (32.0 * double(sectors)) : 0; }
};

// One launch of a kernel while recording.
struct KernelTraffic {
  std::string kernel;  // the name the backend reports ("lab01::copy_kernel(float const*, float*, int)")
  std::vector<Site> sites;  // ordered by site address
  unsigned long long load_requests = 0, store_requests = 0;
  unsigned long long load_sectors = 0, store_sectors = 0;
  unsigned long long bytes_loaded = 0, bytes_stored = 0;  // distinct bytes used per request, summed
  // Bytes the threads asked for, each access counted in full (a value 32 lanes read is 32 reads): what a
  // per-thread analysis such as the labs' tile counts adds up, before any coalescing or cache.
  unsigned long long bytes_requested = 0;
  unsigned widest_load = 0, widest_store = 0;
  unsigned long long l2_hits = 0, l2_misses = 0;  // sector loads (a store allocates without a fetch)
  double dram_read_bytes = 0, dram_write_bytes = 0;
  std::size_t l2_bytes = 0;  // the modelled L2's size for this launch
  // Shared memory: its sites (no sectors, no L2: wavefronts), and their totals.
  std::vector<Site> shared_sites;
  unsigned long long shared_load_requests = 0, shared_store_requests = 0;
  unsigned long long shared_load_wavefronts = 0, shared_store_wavefronts = 0;
  unsigned long long shared_load_ideal = 0, shared_store_ideal = 0;
  double shared_load_ways() const { return shared_load_ideal ? double(shared_load_wavefronts) / double(shared_load_ideal) : 0; }
  double shared_store_ways() const {
    return shared_store_ideal ? double(shared_store_wavefronts) / double(shared_store_ideal) : 0;
  }
  double dram_bytes() const { return dram_read_bytes + dram_write_bytes; }
  // Of the sectors loads asked the L2 for, the share it held.
  double l2_hit_rate() const {
    const double all = double(l2_hits + l2_misses);
    return all > 0 ? double(l2_hits) / all : 0;
  }
  double sectors_per_load_request() const { return load_requests ? double(load_sectors) / double(load_requests) : 0; }
  double sectors_per_store_request() const {
    return store_requests ? double(store_sectors) / double(store_requests) : 0;
  }
  double load_efficiency() const { return load_sectors ? double(bytes_loaded) / (32.0 * double(load_sectors)) : 0; }
  double store_efficiency() const {
    return store_sectors ? double(bytes_stored) / (32.0 * double(store_sectors)) : 0;
  }
};

struct Options {
  // The modelled L2 in bytes; 0: the pretend GPU's L2 (cudaDeviceProp::l2CacheSize) times l2_scale.
  std::size_t l2_bytes = 0;
  // For a test at a reduced shape: the reduced problem's footprint over the full one's, so that what fits in
  // the L2 at full size fits at the reduced size, and what does not fit still does not.
  double l2_scale = 1.0;
  unsigned ways = 16;
};

// True in a binary built with TRAFFIC: its kernels' accesses can be recorded.
bool available();

// Records every launch from construction to stop() (or destruction). One at a time per process.
class Recording {
 public:
  explicit Recording(const Options& options = {});
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  // Ends the recording: one entry per launch that touched device memory, in launch order.
  std::vector<KernelTraffic> stop();

 private:
  bool stopped_ = false;
};

// The L2 size Options resolve to (for messages).
std::size_t modelled_l2_bytes(const Options& options);

// A fixed-width table of the launches (kernel, requests, sectors per request, efficiencies, widest access,
// L2 hit rate, DRAM bytes; shared-memory requests and their bank conflicts) and, with sites = true, each site
// under its kernel.
std::string table(const std::vector<KernelTraffic>& launches, bool sites = true);

// The site of `launch` that fetches the most sectors beyond its min_sectors, or nullptr when none does.
const Site* most_wasteful_site(const KernelTraffic& launch);
// The shared-memory site of `launch` that takes the most wavefronts beyond its ideal (bank conflicts), or nullptr
// when none does.
const Site* most_conflicted_site(const KernelTraffic& launch);

}  // namespace rooflab::emu::traffic
