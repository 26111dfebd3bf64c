// The memory-traffic model (rooflab/emu/traffic.hpp): the recorder the instrumentation hooks feed
// (src/traffic_hooks.cpp), the coalescing count per warp request, the L2 model and the report.
//
// Recording follows the scheduler without hooks of its own: the hooks run on the CUDA thread's fiber, where
// blockIdx, threadIdx, blockDim and gridDim are the running thread's; a change of block (or of launch, by
// the backend's launch counter) closes the previous block. A block's accesses are kept until it ends, then
// grouped into requests and fed to the L2 in the order of their occurrence.
// The prelude first (it must precede the CUDA headers): the running CUDA thread's threadIdx and friends.
#include <rooflab/emu/runtime.hpp>
#include <rooflab/emu/traffic.hpp>

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <numeric>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <rooflab/emu/launch.hpp>

namespace rooflab::emu {
bool current_thread_for_report(uint3* block, uint3* thread);                                // scheduler.cpp
const char* current_kernel_for_report();                                                    // scheduler.cpp
bool find_allocation(const void* p, const void** start, std::size_t* size, bool* device);  // guarded_memory.cpp
bool shared_memory_place(const void* p, std::uintptr_t* at);                                // shared_memory.cpp
}  // namespace rooflab::emu

namespace rooflab::emu::traffic {
namespace {

constexpr unsigned kSectorShift = 5;  // 32-byte sectors
constexpr unsigned kLineShift = 7;    // 128-byte lines, 4 sectors each
// Device allocations are placed as cudaMalloc places them: at multiples of 256 bytes. The backend's own
// allocations end at a guard page and are only 16-byte aligned, which would split a warp's 128 aligned
// bytes over 5 sectors; each access is counted at its offset in its allocation from a 256-aligned base.
// The bases are given out in the order a launch first touches its allocations, one after another from a fixed
// address: the same in every run. (They were the host address scaled by 256, which the system places anew each
// run, so the L2's sets an array fell in, and the modelled hits and DRAM bytes, changed from run to run: Lab 04's
// naive/coalesced DRAM ratio read 1.21x-1.23x in three runs of one binary.)
constexpr unsigned kAllocationAlignShift = 8;
constexpr std::uintptr_t kFirstDeviceAddress = std::uintptr_t{1} << 32;

// ---- the L2 ----

// Set-associative, LRU within a set, 128-byte lines with per-sector valid and dirty bits. A read of an
// absent sector is a miss that fetches 32 bytes from DRAM; a write allocates the sector dirty without a
// fetch (the L2 keeps byte masks); dirty sectors go to DRAM when their line is evicted or at flush().
class L2 {
 public:
  void reset(std::size_t bytes, unsigned ways) {
    ways_ = std::max(1u, ways);
    sets_ = std::max<std::size_t>(1, bytes / ((std::size_t{1} << kLineShift) * ways_));
    ways_data_.assign(sets_ * ways_, Way{});
    clock_ = 0;
    hits = misses = dram_read = dram_write = 0;
  }
  void access(std::uint64_t sector, bool store) {
    const std::uint64_t line = sector >> (kLineShift - kSectorShift);
    const unsigned bit = 1u << (sector & 3);
    // Addresses are hashed to sets, as GPUs do, so power-of-two strides do not pile into one set.
    const std::size_t set = static_cast<std::size_t>((line * 0x9E3779B97F4A7C15ull) >> 20) % sets_;
    Way* w = &ways_data_[set * ways_];
    Way* victim = w;
    for (unsigned i = 0; i < ways_; ++i) {
      if (w[i].tag == line + 1) {
        touch(w[i], bit, store);
        return;
      }
      if (w[i].stamp < victim->stamp) victim = &w[i];
    }
    dram_write += 32.0 * __builtin_popcount(victim->dirty);
    *victim = Way{line + 1, 0, 0, 0};
    touch(*victim, bit, store);
  }
  void flush() {
    for (Way& w : ways_data_) {
      dram_write += 32.0 * __builtin_popcount(w.dirty);
      w.dirty = 0;
    }
  }
  unsigned long long hits = 0, misses = 0;
  double dram_read = 0, dram_write = 0;

 private:
  struct Way {
    std::uint64_t tag = 0;  // line + 1; 0 is empty
    std::uint64_t stamp = 0;
    unsigned char valid = 0, dirty = 0;
  };
  // Hits and misses count loads only: a store never waits for DRAM (it allocates without a fetch), so a
  // load hit rate is the figure that says whether the kernel reuses what it read.
  void touch(Way& w, unsigned bit, bool store) {
    w.stamp = ++clock_;
    if (store) {
      w.valid |= static_cast<unsigned char>(bit);
      w.dirty |= static_cast<unsigned char>(bit);
      return;
    }
    if (w.valid & bit) {
      ++hits;
    } else {
      ++misses;
      dram_read += 32;
      w.valid |= static_cast<unsigned char>(bit);
    }
  }
  std::vector<Way> ways_data_;
  std::size_t sets_ = 1;
  unsigned ways_ = 16;
  std::uint64_t clock_ = 0;
};

// ---- the recorder ----

struct Record {
  std::uintptr_t pc;
  std::uintptr_t addr;
  std::uint32_t occurrence;
  std::uint32_t warp;
  std::uint32_t size;
  bool store;
  bool shared;  // addr is a place in the block's shared window (shared_memory_place), not a device address
  std::uint8_t lane;  // the thread's lane in its warp
};

// A vector access (float4, half2 ...) reaches the hooks as one access of its full width: TRAFFIC builds
// keep aggregates whole (-fno-tree-sra, cmake/RooflabEmu.cmake), as nvcc keeps them in one instruction.
struct ThreadState {
  std::vector<std::pair<std::uintptr_t, std::uint32_t>> occurrences;  // per site
};

class Recorder {
 public:
  explicit Recorder(const Options& options) : options_(options), l2_bytes_(modelled_l2_bytes(options)) {}

  void access(std::uintptr_t addr, unsigned size, bool store, std::uintptr_t pc);
  std::vector<KernelTraffic> finish();

 private:
  bool to_device_address(std::uintptr_t& addr);
  void enter_block(unsigned long long block);
  void close_block();
  void close_launch();
  struct Touched {
    std::uint64_t used = 0, requested = 0;
    unsigned widest = 0;
  };
  Touched touched(const Record* first, const Record* last, unsigned shift);  // fills scratch_
  void add_request(const Record* first, const Record* last);
  void add_shared_request(const Record* first, const Record* last);

  Options options_;
  std::size_t l2_bytes_;
  bool in_launch_ = false;
  unsigned long long launch_ = ~0ull;
  unsigned long long block_ = ~0ull;
  const char* name_ = nullptr;
  std::vector<ThreadState> threads_;
  std::vector<Record> records_;
  struct Placed {
    std::uintptr_t lo, hi;  // the allocation in host memory
    std::uintptr_t base;    // where the model places it (to_device_address)
  };
  std::vector<Placed> ranges_;  // device allocations seen this launch, in the order first touched
  std::uintptr_t next_base_ = kFirstDeviceAddress;
  std::array<std::uintptr_t, 256> host_pages_{};                    // pages known not to be device memory (+1)
  L2 l2_;
  std::map<std::uintptr_t, Site> sites_;
  std::map<std::uintptr_t, Site> shared_sites_;
  KernelTraffic current_;
  std::vector<KernelTraffic> done_;
  std::vector<std::uint64_t> scratch_;
  std::vector<std::uint64_t> phase_words_;  // one phase's words of a shared request (add_shared_request)
  struct Keyed {
    std::uint64_t key;
    Record record;
  };
  std::vector<std::uintptr_t> pcs_;  // close_block's sort: the block's sites, in order
  std::vector<std::size_t> bucket_end_;
  std::vector<Keyed> keyed_;
};

// False for memory that is not a device allocation; otherwise rebases `addr` as a GPU would place it (see
// kAllocationAlignShift): distinct allocations stay apart, offsets inside one are kept.
bool Recorder::to_device_address(std::uintptr_t& addr) {
  for (const Placed& r : ranges_) {
    if (addr >= r.lo && addr < r.hi) {
      addr = r.base + (addr - r.lo);
      return true;
    }
  }
  const std::uintptr_t page = addr >> 12;
  std::uintptr_t& slot = host_pages_[page % host_pages_.size()];
  if (slot == page + 1) return false;
  const void* start = nullptr;
  std::size_t bytes = 0;
  bool device = false;
  if (find_allocation(reinterpret_cast<const void*>(addr), &start, &bytes, &device) && device) {
    const auto lo = reinterpret_cast<std::uintptr_t>(start);
    constexpr std::uintptr_t align = std::uintptr_t{1} << kAllocationAlignShift;
    ranges_.push_back({lo, lo + bytes, next_base_});
    next_base_ += (bytes + align - 1) / align * align;
    addr = ranges_.back().base + (addr - lo);
    return true;
  }
  slot = page + 1;
  return false;
}

void Recorder::access(std::uintptr_t addr, unsigned size, bool store, std::uintptr_t pc) {
  const unsigned long long block =
      blockIdx.x + static_cast<unsigned long long>(gridDim.x) * (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
  const char* name = current_kernel_for_report();
  if (block != block_ || name != name_) {
    name_ = name;
    enter_block(block);
  }
  std::uintptr_t place = 0;
  const bool shared = shared_memory_place(reinterpret_cast<const void*>(addr), &place);
  if (shared) {
    addr = place;
  } else if (!to_device_address(addr)) {
    return;
  }
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  ThreadState& t = threads_[linear];
  std::uint32_t occurrence = 0;
  auto it = std::find_if(t.occurrences.begin(), t.occurrences.end(), [pc](const auto& e) { return e.first == pc; });
  if (it == t.occurrences.end()) {
    t.occurrences.emplace_back(pc, 0);
  } else {
    occurrence = ++it->second;
  }
  records_.push_back(Record{pc, addr, occurrence, linear / 32, size, store, shared, static_cast<std::uint8_t>(linear % 32)});
}

void Recorder::enter_block(unsigned long long block) {
  close_block();
  const unsigned long long launch = kernel_launch_count();
  if (!in_launch_ || launch != launch_) {
    close_launch();
    in_launch_ = true;
    launch_ = launch;
    current_ = KernelTraffic{};
    current_.kernel = std::string(name_ != nullptr ? name_ : "?");
    current_.l2_bytes = l2_bytes_;
    ranges_.clear();
    next_base_ = kFirstDeviceAddress;
    host_pages_.fill(0);
    l2_.reset(l2_bytes_, options_.ways);
    sites_.clear();
    shared_sites_.clear();
  }
  block_ = block;
  threads_.assign(static_cast<std::size_t>(blockDim.x) * blockDim.y * blockDim.z, ThreadState{});
}

// What one request's lanes touch (records sorted by address): the union of their byte ranges (`used`), every
// access in full (`requested`), the widest access, and each (1 << shift)-byte unit touched, once, in order:
// 32-byte sectors of global memory, 4-byte words of shared memory.
Recorder::Touched Recorder::touched(const Record* first, const Record* last, unsigned shift) {
  scratch_.clear();
  Touched t;
  std::uint64_t end = 0;
  for (const Record* r = first; r != last; ++r) {
    const std::uint64_t lo = std::max<std::uint64_t>(r->addr, end), hi = r->addr + r->size;
    if (hi > lo) t.used += hi - lo;
    end = std::max(end, hi);
    t.widest = std::max(t.widest, r->size);
    t.requested += r->size;
    for (std::uint64_t u = r->addr >> shift; u <= (hi - 1) >> shift; ++u) scratch_.push_back(u);
  }
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  return t;
}

void Recorder::add_request(const Record* first, const Record* last) {
  const auto [used, requested, widest] = touched(first, last, kSectorShift);
  unsigned long long lines = 0;
  for (std::size_t i = 0; i < scratch_.size(); ++i) {
    if (i == 0 || (scratch_[i] >> 2) != (scratch_[i - 1] >> 2)) ++lines;
    l2_.access(scratch_[i], first->store);
  }
  Site& site = sites_[first->pc];
  if (site.requests == 0) {
    for (const Placed& r : ranges_) {  // first->addr is rebased (to_device_address)
      if (first->addr >= r.base && first->addr - r.base < r.hi - r.lo) site.allocation = reinterpret_cast<const void*>(r.lo);
    }
  }
  site.pc = first->pc;
  site.store = first->store;
  ++site.requests;
  site.sectors += scratch_.size();
  site.lines += lines;
  site.bytes_used += used;
  site.min_sectors += (used + 31) >> kSectorShift;
  site.bytes_requested += requested;
  site.widest = std::max(site.widest, widest);
}

// One warp's request to shared memory: 32 banks of 4-byte words; each bank delivers one distinct word per
// wavefront (lanes asking for the same word share it), and a wavefront carries at most 128 bytes. Lanes of 16 bytes
// are served 8 at a time, 128 bytes (lanes 0-7, 8-15, ...: an ldmatrix's matrices, each group one transaction), and
// only lanes of one group conflict. (Lanes of 8 bytes may be served by halves of the warp likewise; not measured,
// so they are counted over the warp.)
void Recorder::add_shared_request(const Record* first, const Record* last) {
  const auto [used, requested, widest] = touched(first, last, 2);
  const unsigned long long ideal = std::max<std::uint64_t>(1, (used + 127) / 128);
  // The busiest bank's distinct words among `words` (each once).
  const auto busiest = [](const std::vector<std::uint64_t>& words) {
    std::array<unsigned, 32> per_bank{};
    for (const std::uint64_t w : words) ++per_bank[w & 31];
    return *std::max_element(per_bank.begin(), per_bank.end());
  };
  const unsigned phase_lanes = widest >= 16 ? 8 : 32;
  unsigned long long served = 0;
  if (phase_lanes == 32) {
    served = busiest(scratch_);  // one phase: the request's words, as touched() listed them
  } else {
    for (unsigned phase = 0; phase < 32 / phase_lanes; ++phase) {
      phase_words_.clear();
      for (const Record* r = first; r != last; ++r) {
        if (r->lane / phase_lanes != phase) continue;
        for (std::uint64_t w = r->addr >> 2; w <= (r->addr + r->size - 1) >> 2; ++w) phase_words_.push_back(w);
      }
      if (phase_words_.empty()) continue;
      std::sort(phase_words_.begin(), phase_words_.end());
      phase_words_.erase(std::unique(phase_words_.begin(), phase_words_.end()), phase_words_.end());
      served += busiest(phase_words_);
    }
  }
  const unsigned long long wavefronts = std::max<unsigned long long>(ideal, served);
  Site& site = shared_sites_[first->pc];
  site.pc = first->pc;
  site.store = first->store;
  ++site.requests;
  site.bytes_used += used;
  site.bytes_requested += requested;
  site.widest = std::max(site.widest, widest);
  site.wavefronts += wavefronts;
  site.ideal_wavefronts += ideal;
}

void Recorder::close_block() {
  threads_.clear();
  // Occurrence first: the lanes of a block reach their n-th access of each site at about the same time, so
  // this is the order the L2 sees them in; then (site, warp) makes each request contiguous.
  // The order (occurrence, pc, warp, shared, addr). A comparator of the five fields over the block's records
  // was most of a traffic run (57% of Lab 07's, whose blocks loop long). Instead: the records are bucketed by
  // occurrence (a counting sort: one pass), then each bucket, a few requests of each site, is sorted by one word
  // packing (site, warp, shared), the site as its rank among the block's sites (the same order as its pc),
  // then by address. The word always holds its three fields: a rank is below the record count (32 bits), a warp
  // is a 32-bit thread index over 32 (27 bits) and takes bits 1-31.
  pcs_.clear();
  std::uint32_t last_occurrence = 0;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    last_occurrence = std::max(last_occurrence, r.occurrence);
    if (i > 0 && records_[i - 1].pc == r.pc) continue;
    const auto at = std::lower_bound(pcs_.begin(), pcs_.end(), r.pc);
    if (at == pcs_.end() || *at != r.pc) pcs_.insert(at, r.pc);
  }
  bucket_end_.assign(std::size_t{last_occurrence} + 1, 0);
  for (const Record& r : records_) ++bucket_end_[r.occurrence];
  std::partial_sum(bucket_end_.begin(), bucket_end_.end(), bucket_end_.begin());
  keyed_.resize(records_.size());
  for (std::size_t i = records_.size(); i-- > 0;) {  // backwards into the buckets' ends: each keeps its order
    const Record& r = records_[i];
    const auto rank = static_cast<std::uint64_t>(std::lower_bound(pcs_.begin(), pcs_.end(), r.pc) - pcs_.begin());
    keyed_[--bucket_end_[r.occurrence]] = {(rank << 32) | (std::uint64_t{r.warp} << 1) | std::uint64_t{r.shared}, r};
  }
  // bucket_end_[o] is now where bucket o begins.
  for (std::size_t o = 0; o < bucket_end_.size(); ++o) {
    const std::size_t lo = bucket_end_[o], hi = o + 1 < bucket_end_.size() ? bucket_end_[o + 1] : keyed_.size();
    std::sort(keyed_.begin() + static_cast<std::ptrdiff_t>(lo), keyed_.begin() + static_cast<std::ptrdiff_t>(hi),
              [](const Keyed& a, const Keyed& b) { return a.key != b.key ? a.key < b.key : a.record.addr < b.record.addr; });
  }
  for (std::size_t i = 0; i < keyed_.size(); ++i) records_[i] = keyed_[i].record;
  for (std::size_t i = 0; i < records_.size();) {
    std::size_t j = i + 1;
    while (j < records_.size() && records_[j].occurrence == records_[i].occurrence && records_[j].pc == records_[i].pc &&
           records_[j].warp == records_[i].warp && records_[j].shared == records_[i].shared) {
      ++j;
    }
    if (records_[i].shared) {
      add_shared_request(&records_[i], &records_[j]);
    } else {
      add_request(&records_[i], &records_[j]);
    }
    i = j;
  }
  records_.clear();
}

void Recorder::close_launch() {
  if (!in_launch_) return;
  close_block();
  l2_.flush();
  KernelTraffic& k = current_;
  for (auto& [pc, s] : sites_) {
    (s.store ? k.store_requests : k.load_requests) += s.requests;
    (s.store ? k.store_sectors : k.load_sectors) += s.sectors;
    (s.store ? k.bytes_stored : k.bytes_loaded) += s.bytes_used;
    k.bytes_requested += s.bytes_requested;
    unsigned& widest = s.store ? k.widest_store : k.widest_load;
    widest = std::max(widest, s.widest);
    k.sites.push_back(s);
  }
  for (auto& [pc, s] : shared_sites_) {
    (s.store ? k.shared_store_requests : k.shared_load_requests) += s.requests;
    (s.store ? k.shared_store_wavefronts : k.shared_load_wavefronts) += s.wavefronts;
    (s.store ? k.shared_store_ideal : k.shared_load_ideal) += s.ideal_wavefronts;
    k.shared_sites.push_back(s);
  }
  k.l2_hits = l2_.hits;
  k.l2_misses = l2_.misses;
  k.dram_read_bytes = l2_.dram_read;
  k.dram_write_bytes = l2_.dram_write;
  if (!k.sites.empty()) done_.push_back(std::move(k));
  in_launch_ = false;
  block_ = ~0ull;
  name_ = nullptr;
}

// ---- naming sites: the debug line table, through addr2line ----

// "/path/kernels.cu:42 (discriminator 3)" -> "kernels.cu:42". Built by cutting a view and copying once:
// GCC 12 warns falsely (-Wrestrict, GCC bug 105329) about std::string's in-place erase and operator+ at -O3.
std::string short_location(std::string_view s) {
  if (const auto d = s.find(" (discriminator"); d != std::string_view::npos) s = s.substr(0, d);
  if (const auto slash = s.rfind('/'); slash != std::string_view::npos) s = s.substr(slash + 1);
  if (s.empty() || s[0] == '?') return std::string(1, '?');
  return std::string(s);
}

bool is_pie(const char* file) {
  std::ifstream in(file, std::ios::binary);
  Elf64_Ehdr h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  return in && h.e_type == ET_DYN;
}

void name_sites(std::vector<KernelTraffic>& launches) {
  std::map<std::string, std::vector<Site*>> by_file;  // the object file of each site
  std::map<Site*, std::uintptr_t> offsets;
  for (auto& k : launches) {
    std::vector<Site*> all;
    for (auto& s : k.sites) all.push_back(&s);
    for (auto& s : k.shared_sites) all.push_back(&s);
    for (Site* site : all) {
      Site& s = *site;
      s.where = std::string(1, '?');  // constructed, not assigned from "?": GCC bug 105329
      Dl_info info{};
      if (dladdr(reinterpret_cast<void*>(s.pc), &info) == 0 || info.dli_fname == nullptr) continue;
      const std::uintptr_t base = is_pie(info.dli_fname) ? reinterpret_cast<std::uintptr_t>(info.dli_fbase) : 0;
      by_file[info.dli_fname].push_back(&s);
      offsets[&s] = s.pc - 1 - base;  // the return address follows the call: name the call's line
    }
  }
  for (auto& [file, sites] : by_file) {
    std::ostringstream cmd;
    cmd << "addr2line -e '" << file << "'" << std::hex;
    for (Site* s : sites) cmd << " 0x" << offsets[s];
    cmd << " 2>/dev/null";
    FILE* pipe = popen(cmd.str().c_str(), "r");
    if (pipe == nullptr) continue;
    char line[4096];
    for (Site* s : sites) {
      if (std::fgets(line, sizeof line, pipe) == nullptr) break;
      std::string_view text(line);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
      s->where = short_location(text);
    }
    pclose(pipe);
  }
}

std::atomic<Recorder*> g_active{nullptr};

}  // namespace

namespace detail {
// Called by every instrumented load and store (src/traffic_hooks.cpp): cheap unless a Recording is on and
// a CUDA thread of a kernel is running.
void note_access(std::uintptr_t addr, unsigned size, bool store, std::uintptr_t pc) {
  Recorder* r = g_active.load(std::memory_order_relaxed);
  if (r == nullptr) return;
  uint3 block, thread;
  if (!current_thread_for_report(&block, &thread)) return;
  r->access(addr, size, store, pc);
}
bool g_instrumented = false;  // set by __tsan_init, which every instrumented translation unit calls
}  // namespace detail

std::vector<KernelTraffic> Recorder::finish() {
  close_launch();
  name_sites(done_);
  return std::move(done_);
}

bool available() { return detail::g_instrumented; }

std::size_t modelled_l2_bytes(const Options& options) {
  if (options.l2_bytes != 0) return options.l2_bytes;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) throw std::runtime_error("traffic: no device properties");
  return static_cast<std::size_t>(static_cast<double>(prop.l2CacheSize) * options.l2_scale);
}

Recording::Recording(const Options& options) {
  // One worker: the recorder follows one block at a time on the thread that runs it.
  set_workers(1);
  Recorder* expected = nullptr;
  auto* r = new Recorder(options);
  if (!g_active.compare_exchange_strong(expected, r)) {
    delete r;
    throw std::logic_error("traffic::Recording: another recording is on");
  }
}

Recording::~Recording() {
  if (!stopped_) stop();
}

std::vector<KernelTraffic> Recording::stop() {
  if (stopped_) return {};
  stopped_ = true;
  Recorder* r = g_active.exchange(nullptr);
  std::vector<KernelTraffic> out = r->finish();
  delete r;
  return out;
}

const Site* most_wasteful_site(const KernelTraffic& launch) {
  const Site* worst = nullptr;
  double most = 0;
  for (const Site& s : launch.sites) {
    const double waste = double(s.sectors) - double(s.min_sectors);
    if (waste > most) {
      most = waste;
      worst = &s;
    }
  }
  return worst;
}

const Site* most_conflicted_site(const KernelTraffic& launch) {
  const Site* worst = nullptr;
  unsigned long long most = 0;
  for (const Site& s : launch.shared_sites) {
    const unsigned long long excess = s.wavefronts - s.ideal_wavefronts;
    if (excess > most) {
      most = excess;
      worst = &s;
    }
  }
  return worst;
}

namespace {
// Decimal units, one snprintf each (no std::string concatenation: see short_location).
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string bytes_text(double b) {
  static const char* const unit[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (b >= 1000 && u < 3) {
    b /= 1000;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", u == 0 ? 0 : 2, b, unit[u]);
  return buf;
}
}  // namespace

std::string table(const std::vector<KernelTraffic>& launches, bool sites) {
  std::ostringstream out;
  char line[512];
  for (const KernelTraffic& k : launches) {
    out << k.kernel << "\n";
    std::snprintf(line, sizeof line,
                  "  loads  %10llu requests  %5.2f sectors/request  efficiency %5.1f%%  widest %2u B\n"
                  "  stores %10llu requests  %5.2f sectors/request  efficiency %5.1f%%  widest %2u B\n",
                  k.load_requests, k.sectors_per_load_request(), 100 * k.load_efficiency(), k.widest_load,
                  k.store_requests, k.sectors_per_store_request(), 100 * k.store_efficiency(), k.widest_store);
    out << line;
    out << "  threads asked for " << bytes_text(double(k.bytes_requested)) << "; L2 ("
        << bytes_text(double(k.l2_bytes)) << " modelled) hit rate " << fixed(100 * k.l2_hit_rate(), 1)
        << "%; DRAM read " << bytes_text(k.dram_read_bytes) << ", written " << bytes_text(k.dram_write_bytes) << "\n";
    if (k.shared_load_requests + k.shared_store_requests > 0) {
      std::snprintf(line, sizeof line,
                    "  shared loads  %10llu requests  %5.2f wavefronts/request, %4.2f-way bank conflicts\n"
                    "  shared stores %10llu requests  %5.2f wavefronts/request, %4.2f-way bank conflicts\n",
                    k.shared_load_requests,
                    k.shared_load_requests ? double(k.shared_load_wavefronts) / double(k.shared_load_requests) : 0.0,
                    k.shared_load_ways(), k.shared_store_requests,
                    k.shared_store_requests ? double(k.shared_store_wavefronts) / double(k.shared_store_requests) : 0.0,
                    k.shared_store_ways());
      out << line;
    }
    if (!sites) continue;
    for (const Site& s : k.sites) {
      std::snprintf(line, sizeof line, "    %-28s %-5s %10llu requests  %5.2f sectors/request  efficiency %5.1f%%  widest %2u B\n",
                    s.where.c_str(), s.store ? "store" : "load", s.requests, s.sectors_per_request(),
                    100 * s.efficiency(), s.widest);
      out << line;
    }
    for (const Site& s : k.shared_sites) {
      std::snprintf(line, sizeof line, "    %-28s %-5s %10llu shared requests  %5.2f wavefronts/request  %4.2f-way  widest %2u B\n",
                    s.where.c_str(), s.store ? "store" : "load", s.requests,
                    s.requests ? double(s.wavefronts) / double(s.requests) : 0.0, s.conflict_ways(), s.widest);
      out << line;
    }
  }
  return out.str();
}

}  // namespace rooflab::emu::traffic
