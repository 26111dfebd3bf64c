// The performance model: how fast a kernel will run on a named GPU, predicted without one.
//
// A prediction reads what the build already has about a kernel (its PTX, the ptxas report, its launch block
// and the occupancy that follows) and the GPU's rates (data/gpus.json, data/perf_model.json). It names the
// limiter and prints the evidence behind it:
//
//   1. bytes of global loads in flight per SM on the loop that runs (Little's law): per thread, the load bytes
//      the loop issues before the first instruction that uses one of them, times the threads resident per SM;
//      loads of reused data (an array the loop reads many times over that the L2 holds: a bias vector, a GEMV's
//      x), traced from PTX to the kernel parameter they come from, are served by the caches and do not count;
//   2. issue slots, MUFU and shared-memory wavefronts per trip, against the architecture's rates; the wavefronts
//      with the bank conflicts of the requests warp 0 makes on the first trip (each lane's addresses from running the
//      PTX's integer part for it, accesses ptxas issues as one counted as one);
//   3. the instruction class's ceiling (mma.sync and WMMA on sm_90 reach about two thirds of the dense tensor
//      peak, which needs wgmma);
//   4. occupancy: with a barrier after the loads, a round of trips takes the longer of the resident blocks' work
//      and one block's work plus the load latency of each round trip it waits for one after another (one block per
//      SM leaves the SM idle while it waits); the round trips come from running the PTX's integer part at the
//      timed launch (count_trips): a piece loaded and stored before the next is loaded is one each;
//   5. waves: where the launch's grid is known, each wave of blocks is predicted at its own fill (a grid that
//      does not fill the GPU has fewer loads in flight; a last partial wave leaves SMs idle).
//
// It is a model, never a measurement: it earns no points, a measurement on a GPU is printed beside it, and
// docs/measurements.md holds it against the GPU runs. It reads SASS where nvdisasm is found (a full CUDA toolkit
// has it; NVIDIA's nvidia-cuda-nvdisasm wheel on PyPI provides it where the toolkit lacks it) and PTX otherwise,
// where ptxas may still move loads or unroll further; the evidence says which it read.
//
//   const auto code = rooflab::perf::analyze(kernel.body);     // loops, per-trip counts
//   const auto p = rooflab::perf::predict(decl_work, code, occupancy, gpu, constants, n);
//   p.fraction, p.limiter, p.evidence
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rooflab/specs.hpp>

namespace rooflab::perf {

// What one trip of a loop (or the whole body of a kernel without one) does, per thread, read from PTX.
struct Trip {
  int first_line = 0;  // lines of the kernel body (1-based) the loop spans
  int last_line = 0;
  int instructions = 0;  // PTX instructions: about the warp instructions one warp issues per trip
  int global_loads = 0;
  double load_bytes = 0;
  // Load bytes issued before the first instruction that reads a register one of them wrote: what a thread
  // has in flight at once. A loop that uses each value right after loading it has one load in flight.
  double load_bytes_before_use = 0;
  // Each global load in order: the kernel parameters its address is computed from (sorted indices; scalars such
  // as a length are among them, and the prediction tells pointers by their reach; from SASS only where the
  // parameters' layout is given, analyze_sass), its bytes, whether it is issued before the first use, and whether
  // nothing later in the trip reads it (a load for the next trip, in a software-pipelined loop).
  struct Load {
    std::vector<int> params;
    double bytes = 0;
    bool before_use = false;
    bool for_next_trip = false;
  };
  std::vector<Load> loads;
  // The loads' bytes summed by their parameters: all of them, or those issued before the first use.
  std::map<std::vector<int>, double> bytes_by_params(bool before_use_only = false) const;
  int global_stores = 0;
  double store_bytes = 0;
  double cp_async_bytes = 0;  // cp.async global -> shared: in flight until a wait
  int ffma = 0;               // fma.rn.f32 and friends (one FP32 pipe slot each)
  int hfma2 = 0;              // fma.rn.f16x2 / bf16x2
  int mufu = 0;               // ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh (approx): the special-function unit
  int conversions = 0;        // cvt.* (many run at a quarter rate or on the MUFU pipe)
  double shared_wavefronts = 0;  // ld/st.shared and ldmatrix, counted as 128-byte wavefronts, no conflicts
  double hmma = 0;               // tensor instructions in HMMA.16816 equivalents (m16n8k16: 1, wmma 16x16x16: 2)
  int barriers = 0;              // bar.sync / barrier.sync
  // The trip's wait for its cp.async copies (cp.async.wait_group N, SASS DEPBAR.LE SB0, N): the N newest batches
  // it lets stay in flight (-1: no wait), and whether it comes before the trip's own copies. A batch committed
  // after the wait in one trip is first waited for N + 1 trips later; one committed before it, N trips later.
  int async_wait = -1;
  bool async_wait_before_copies = false;
  // How many trips of work a cp.async copy has to land in before a trip waits for it (0: no copies, no wait, or
  // waited for in the trip that issues it).
  int copies_ahead() const {
    if (cp_async_bytes <= 0 || async_wait < 0) return 0;
    return async_wait + (async_wait_before_copies ? 1 : 0);
  }
  // The cp.async bytes a thread has in flight at once: its copies of every trip between issue and wait.
  double cp_async_in_flight() const { return cp_async_bytes * std::max(1, copies_ahead()); }
  bool loop = false;             // false: the kernel's whole body, it has no loop
  // An unrolled loop's remainder: the compiler unrolled the loop before it and this one runs the trips that
  // are left. It runs when a thread has fewer trips than the unroll factor.
  bool remainder = false;
  int remainder_of = -1;  // index of the unrolled loop it finishes
};

// What running a kernel's integer part at the timed launch shows (count_trips; PTX only), for thread 0 of block 0.
struct Trips {
  // How many times each loop's head ran, in the order of the PTX reading's loops (0: not known).
  std::vector<double> head_runs;
  double hot_trips = 0;  // the hot loop's trips over thread 0's whole run (0: not counted)
  // The global-load round trips one trip of the hot loop waits for one after another, along the path that ran: a
  // load, then an instruction that reads what it loaded, then the next load, is two (a staging loop or unrolled
  // remainder that loads a piece and stores it before loading the next waits for each piece in turn). Loads that
  // nothing in the trip reads (for the next trip) wait for none. 0: no trip of the hot loop completed in the run.
  double round_trips = 0;
  std::string round_trips_why;    // in words, for the evidence
  // Bank conflicts: the shared-memory wavefronts one trip of the hot loop takes beyond those its accesses' widths
  // give (the static count's, which assumes none), from the addresses warp 0's 32 lanes compute on the first trip.
  // Negative where lanes share words (a broadcast takes one wavefront whatever its width). 0: none, or not known.
  double conflict_wavefronts = 0;
  std::string conflict_why;       // in words (empty: not measured)
  std::string trips_why;          // the hot loop's trips as the run counted them, in words (empty: not counted)
};

struct Code {
  std::string from = "PTX";  // "SASS" when read from nvdisasm's listing of the cubin
  std::string from_note;     // why the PTX (no nvdisasm here, say)
  std::vector<Trip> loops;  // every loop, in program order; the whole body when there is none
  int hot = -1;             // the loop the prediction reads (see analyze)
  int mover = -1;           // the loop that moves the most global bytes of its own (-1: none moves any)
  // The loops that may be passes beside the hot loop: loops that run one after the other with it (siblings: inside
  // the same loop or none, neither inside the other, the later reached from the earlier's end) and load from global
  // memory. Not two copies of one loop for two cases (the first copy's exit jumps past the second): one of those runs.
  // Those that read an array the hot loop reads, as many bytes a trip, are passes: a kernel that reads its input
  // twice (a softmax's max and sum, then its outputs) spends both loops' instructions on each byte, and may read it
  // the second time from DRAM; predict adds them (see with_passes there).
  std::vector<int> passes;
  std::string why_hot;      // in words
  // Each loop's place in the listing: [its head, its closing branch + 1), in `loops`' order (empty for a body without
  // a loop).
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  Trips trips;  // from running the PTX's integer part at the timed launch (count_trips); empty without it
};

// The loops of a kernel's PTX body (one per backward branch), each with its per-trip counts; a loop's counts
// include the loops nested in it once. The hot loop is the innermost one with tensor instructions if any, else
// the one whose own work (global bytes, and FP32 FMAs at four bytes each, outside its nested loops) is largest;
// a remainder loop is never chosen over the unrolled loop it finishes (a timed problem is large: its threads run
// many trips of the unrolled loop). A kernel without loops is one straight trip.
Code analyze(std::string_view ptx_body);
// The same from SASS (one function of nvdisasm's listing): the code that runs, after ptxas scheduled, unrolled and
// chose the pipes (half to float is HADD2.F32 on the FMA pipe, not the conversion unit; loads may be moved past
// their uses' neighbours, or serialized). Line numbers are the listing's.
//
// With `params`, each global load's address is traced to the kernel parameters it is computed from, as the PTX
// reading does: SASS reads a parameter from constant bank 0 (c[0x0][offset]), at the offsets of the parameter
// layout (rooflab::ptx::param_layout of the kernel's PTX entry) past the architecture's base (param_bank_base).
struct SassParams {
  int base = 0;                               // the first parameter's offset in constant bank 0
  std::vector<std::pair<int, int>> layout;    // each parameter's offset from the base and its size, in order
};
Code analyze_sass(std::string_view sass_body, const SassParams* params = nullptr);
// Where kernel parameters start in constant bank 0 on an architecture ("sm_90"), as nvdisasm's listings of CUDA
// 13's cubins show: 0x160 up to sm_89, 0x210 on sm_90, 0x380 from sm_100 on.
int param_bank_base(std::string_view arch);
// Each function's listing in an nvdisasm output, by mangled name.
std::map<std::string, std::string> sass_functions(std::string_view listing);

// Per-architecture constants (data/perf_model.json), each with where it comes from.
struct Constants {
  std::string arch;                 // "sm_90"
  double issue_per_clock = 4;       // warp instructions per SM per clock (four schedulers)
  double mufu_per_clock = 0.5;      // warp MUFU instructions per SM per clock (16 lanes)
  double shared_wavefronts_per_clock = 1;  // 128-byte shared-memory wavefronts per SM per clock
  double hmma_per_clock = 0;        // HMMA.16816 per SM per clock at the dense FP16 peak (from gpus.json)
  double mma_sync_ceiling = 1;      // fraction of the dense tensor peak mma.sync / WMMA can reach
  // The bytes-in-flight curve: X bytes in flight per SM give f = 1 / (1 + (knee / X)^curve_exponent) of the copy
  // ceiling, knee = knee_latency_ns x the copy ceiling per SM.
  double knee_latency_ns = 140;
  double curve_exponent = 1.5;
  double copy_fraction = 0.89;      // copy ceiling over datasheet bandwidth, when no calibration is given
  double issue_efficiency = 0.5;    // sustained fraction of issue slots a memory-bound loop reaches
  double barrier_latency_ns = 700;  // one block per SM: a k-step's loads are not overlapped with math
  // Reused data: an array the loop reads at least cache_reuse times over, whose reach fits in cache_l2_share of the
  // L2, is served by the caches, not DRAM (its loads are not DRAM bytes in flight).
  double cache_reuse = 8;
  double cache_l2_share = 0.5;
  // The L2's read bandwidth in bytes per clock (0: not known). A kernel whose declared bytes are rereads (a tiled
  // GEMM's strips of A and B, read again by every block of a row or column) moves them between L2 and the SMs at
  // this rate, and only the arrays themselves between DRAM and L2; where it is not known, every declared byte is
  // read at DRAM's rate.
  double l2_bytes_per_clock = 0;
  std::string provenance;           // the file's words for this architecture
};
Constants constants_for(const GpuSpec& gpu);  // throws DataError when the file lacks the architecture
Constants load_constants(const std::filesystem::path& file, const GpuSpec& gpu);

// What the kernel must do and how it is launched.
struct Work {
  double flops = 0;
  double bytes = 0;       // DRAM bytes (declared; the traffic model's figure where known)
  DType dtype = DType::fp32;
  unsigned block = 0;
  int blocks_per_sm = 0;  // from the occupancy calculator
  // Blocks the launch starts (0: unknown, taken to fill every SM for the whole run). A grid of fewer blocks than
  // the SMs hold at once leaves warps, and so loads in flight, unused; a last partial wave leaves SMs idle.
  unsigned long long grid = 0;
  std::string grid_from;  // in words, for the evidence: "the launcher's grid at the timed size on the CPU backend"
  std::optional<double> copy_ceiling_gbps;  // calibrated copy ceiling; else datasheet x copy_fraction
  // Per kernel parameter, in order: the bytes a pointer argument reaches at the timed launch (to the end of its
  // allocation), 0 for other arguments; empty when the launch was not recorded. An array the loop rereads many
  // times over and the L2 holds (a bias vector, a GEMV's x) is served by the caches: its loads are no DRAM bytes.
  std::vector<double> reach;
  // Per kernel parameter, in order: an integer argument's value at the timed launch (a length, a batch), nothing for
  // the others; empty when not recorded. With the block and the grid they give the trips of loops bounded by them
  // (loop_trips).
  std::vector<std::optional<long long>> scalars;
};

struct Prediction {
  double time_s = 0;
  double fraction = 0;        // of the kernel's roof
  std::string roof;           // "copy ceiling", "FP32 peak", "FP16 tensor peak"
  double roof_time_s = 0;     // the floor on that roof
  std::string limiter;        // "loads in flight", "issue slots", "MUFU", "shared memory", "tensor class", ...
  std::string advice;         // what to change, in words
  std::vector<std::string> evidence;  // one line per measure, with its figures (code figures from PTX: no SASS here)
};

// The bytes-in-flight curve alone: the fraction of the copy ceiling X bytes in flight per SM allow.
double in_flight_fraction(double bytes_per_sm, double copy_bytes_per_s_per_sm, const Constants& c);

// A predicted or floor time in words, "182.18 us", "4.21 ms", "1.40 s": the one form inspect's table, the prediction's
// evidence and a grade's hints print times in.
std::string time_text(double seconds);

// Runs the integer part of a kernel's PTX (`code` is analyze's reading of the same body) for thread 0 of block 0 at
// the launch `w` describes (its block, grid and integer arguments; pointers stand for distinct places), counting how
// many times each loop's head runs, and along the path one trip of the hot loop takes, its round trips one after
// another (Code::trips).
// Values loaded from memory and floating-point values are unknown; a branch on one ends the run, and what was
// counted until then stands (each loop's runs up to its last completed entry). A block or grid of more than one
// dimension leaves the sizes unknown.
void count_trips(Code& code, std::string_view ptx_body, const Work& w);

Prediction predict(const Work& work, const Code& code, const GpuSpec& gpu, const Constants& c);

}  // namespace rooflab::perf
