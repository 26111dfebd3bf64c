// The timing harness (GPU only). The caller declares the work (bytes read, bytes written, FLOPs) and a
// launch; the harness times it the way nvbench and BabelStream do and turns the work into GB/s, FLOP/s
// and percent of a ceiling. Kernels never time themselves.
//
//   auto m = rooflab::benchmark([&](cudaStream_t s) { lab01::triad(b, c, a, 3.0f, n, s); },
//                               {.bytes_read = 2 * n * 4, .bytes_written = n * 4});
//   m.gbps(); m.median_s; m.percent_of(ceiling_gbps);
//
// Habits (docs/sources.md, "Measuring"): warm-up launches; the L2 is flushed before every sample by writing a
// buffer twice its size, and its persisting lines reset, so every sample starts from DRAM; CUDA events around each launch; samples are
// taken until the relative standard error of the mean is under the target (1%) or the time budget is
// spent; the median is reported with min, max and spread; with NVML the SM clock is read after each sample
// and samples under 75% of the maximum clock are flagged as throttled.
#pragma once

#include <rooflab/cuda.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rooflab {

struct Work {
  double bytes_read = 0;
  double bytes_written = 0;
  double flops = 0;
  double bytes() const { return bytes_read + bytes_written; }
};

struct BenchOptions {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 2000;
  double target_rse = 0.01;   // stop when stddev / sqrt(n) / mean falls under this
  double max_seconds = 3.0;   // time budget for the sampling (not counting warm-up)
  bool flush_l2 = true;
  // Dry run: each timed launch must start at least one of these kernels, named as the lab's registry names
  // them ("lab07::gemv_kernel"; registry_kernels() below): a launcher that answers a timed call with only a
  // copy kernel runs none of them. Empty: not checked (library baselines, calibration).
  std::vector<std::string> kernels{};
  // On a GPU as on a dry run: the test's check of the timed output, run after every sample (outside the timed
  // interval, before the next sample's inputs are moved), so it reads the inputs that sample was given. It
  // returns what is wrong, empty when nothing is; benchmark() throws TimedOutputWrong naming the sample. A check
  // after timing reads only the last sample's output: a launcher right on some calls and stale on others (a
  // kept answer handed back every other call) would pass it by luck. Its time is not counted against
  // max_seconds. Empty function: only the test's check after timing. (checking_each_sample() in
  // rooflab/testing/timed_data.hpp makes one from a gtest check.)
  std::function<std::string()> check_each_sample{};
  // Measure the device memory the launches take beyond what was allocated before the first of them
  // (Measurement::peak_extra_device_bytes; rooflab/testing/device_memory.hpp says how), leaving out the
  // harness's own buffers (the L2 flusher's, the moved inputs' copies).
  bool watch_device_memory = false;
};

// The kernel names of a lab's registry (lab.hpp's kKernels: anything with a `kernel` name), for BenchOptions::kernels.
template <typename Registry>
std::vector<std::string> registry_kernels(const Registry& registry) {
  std::vector<std::string> names;
  for (const auto& k : registry) names.emplace_back(k.kernel);
  return names;
}
// `options` with BenchOptions::kernels set (for a lab's shared options constant).
inline BenchOptions expecting_kernels(BenchOptions options, std::vector<std::string> kernels) {
  options.kernels = std::move(kernels);
  return options;
}

struct Measurement {
  Work work;
  int samples = 0;
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  double mean_s = 0;
  double rse = 0;                  // relative standard error of the mean
  int throttled_samples = 0;       // SM clock under 75% of max during the sample (NVML only)
  double mean_sm_clock_mhz = 0;    // 0 when NVML is not available
  std::size_t peak_extra_device_bytes = 0;  // with BenchOptions::watch_device_memory only
  double gbps() const { return median_s > 0 ? work.bytes() / median_s / 1e9 : 0; }
  double best_gbps() const { return min_s > 0 ? work.bytes() / min_s / 1e9 : 0; }
  double flops_per_s() const { return median_s > 0 ? work.flops / median_s : 0; }
  double percent_of(double ceiling) const;  // of gbps() when bytes were declared, else of flops_per_s()
  std::string summary() const;
};

// Flushes the L2 by writing a buffer at least twice its size (RAII: owns the buffer).
class L2Flusher {
 public:
  L2Flusher();
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cudaStream_t stream);

 private:
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
};

// Device memory a timed launch writes. benchmark() poisons it (all-ones bytes: NaN for floating point)
// before every warm-up run and every sample, outside the timed interval and before the L2 flush, so the
// output a test checks after timing is the last sample's own work: a launcher that remembers it was called
// with these arguments before and skips the kernel leaves poison behind instead of a stale right answer.
struct TimedOutput {
  void* data = nullptr;
  std::size_t bytes = 0;
};
template <typename Buffer>
TimedOutput timed_output(Buffer& b) {
  return {static_cast<void*>(b.data()), b.bytes()};
}

// How benchmark() may move an input between samples: the whole device array it lies in (`elements` of
// `element_bytes` each), and `host_rotate(r)`, which turns the test's host view of it (what its reference
// reads) left by r elements, as the device array was just turned. Empty (`base` null): never moved.
struct InputMotion {
  void* base = nullptr;
  std::size_t elements = 0;
  std::size_t element_bytes = 0;
  std::function<void(std::size_t)> host_rotate{};
};

// Device memory a timed launch must read: its inputs. A launcher that remembers its previous answer and
// writes it back (a copy kernel from a buffer of its own) passes the poisoning above and reads no input. On a
// dry run, benchmark() counts the bytes of each input that every timed launch touched (the CPU backend's
// read watch, page by page) and throws TimedReadError when a launch touched less than `min_fraction` of an
// input. On a GPU nothing is counted: the speed a replay claims is left to the plausibility rules.
//
// An input with a `motion` (every TimedInput, and a buffer declared with its host copy) is also moved before
// every sample, on a GPU as on a dry run: its device array is rewritten from a copy of its contents as they were
// before the first warm-up, turned left by a number of elements drawn from the operating system's entropy
// (never from the seed), and the test's host view is turned with it. Every sample thus computes on inputs no
// earlier call saw, at the same addresses and of the same values: a launcher that keys a kept answer on its
// pointers and shape (and touches every page to satisfy the read watch) hands back an answer to other inputs,
// and the check after timing, which reads the moved inputs through the host view, fails it.
struct TimedRead {
  const void* data = nullptr;
  std::size_t bytes = 0;
  double min_fraction = 0.5;  // of `bytes`: "almost none" fails; a kernel that reads every element passes
  const char* name = "input";
  InputMotion motion{};
};
template <typename Buffer>
TimedRead timed_input(const Buffer& b, const char* name = "input", double min_fraction = 0.5) {
  return {static_cast<const void*>(b.data()), b.bytes(), min_fraction, name};
}
// A device buffer whose host copy `host` (element i of the one is element i of the other, in any type) is what
// the test's reference reads: benchmark() moves both between samples (InputMotion above).
template <typename Buffer, typename HostElement>
TimedRead timed_input(Buffer& b, std::vector<HostElement>& host, const char* name = "input", double min_fraction = 0.5) {
  if (host.size() != b.size()) throw std::invalid_argument("timed_input: the host copy and the buffer differ in size");
  TimedRead read = timed_input(std::as_const(b), name, min_fraction);
  read.motion = {static_cast<void*>(b.data()), b.size(), b.bytes() / std::max<std::size_t>(b.size(), 1),
                 [&host](std::size_t r) { std::rotate(host.begin(), host.begin() + static_cast<std::ptrdiff_t>(r), host.end()); }};
  return read;
}
class TimedReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The same inputs are also fingerprinted (device_fingerprint): after the last sample each must hold what the
// harness gave that sample (for an input that is moved, what it wrote there; otherwise what it held before the
// first warm-up launch), on a GPU as on a dry run. A launcher that writes into an input (an answer stashed there
// for a later call, an input transformed once and reused) makes benchmark() throw TimedInputChanged, naming it.
class TimedInputChanged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// On a dry run, each sample's interval (its start and stop events, on the harness's stream) must cover every
// operation the launcher issued inside it: work put on a stream of the launcher's own and never ordered back
// into the stream it was given (an event the given stream waits for, or a synchronization) would run past the
// stop event on a GPU, untimed. benchmark() throws TimedWorkNotCovered, naming the operation and its stream. On a
// GPU the bound is device-wide: once a sample's stop event has completed, a cudaDeviceSynchronize must find the
// device idle (within 200 us, or 5% of the sample); work still running there throws TimedWorkNotCovered too.
class TimedWorkNotCovered : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// On a dry run, a timed launch may not allocate device memory (cudaMalloc inside the launcher, freed or not):
// on a GPU the allocation synchronizes the device and costs more than a small kernel. benchmark() throws
// TimedAllocation with the count; allocate once, outside the calls, or take a workspace from the caller.
class TimedAllocation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A sample whose output BenchOptions::check_each_sample found wrong.
class TimedOutputWrong : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A 64-bit fingerprint of `bytes` of device memory: copied to the host in chunks and mixed eight bytes at a time
// in four independent lanes. Any change of a byte changes it (a checksum, not a cryptographic hash).
std::uint64_t device_fingerprint(const void* data, std::size_t bytes);
// The dry run's check of one launch (what benchmark() runs around each timed launch; exposed for tests):
// runs `launch`, then throws TimedReadError if it read too little of an input. Runs `launch` alone on a GPU.
void launch_reading_inputs(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                           const std::vector<TimedRead>& inputs);
// The dry run's other check of one timed launch: it started one of `expected` (BenchOptions::kernels) since
// the backend had counted `launches_before` launches; throws TimedReadError otherwise. Nothing on a GPU.
void check_kernels_started(const std::vector<std::string>& expected, unsigned long long launches_before);
// The backend's launch count now (0 on a GPU), for check_kernels_started.
unsigned long long kernel_launches_so_far();

Measurement benchmark(const std::function<void(cudaStream_t)>& launch, Work work, BenchOptions options = {},
                      std::initializer_list<TimedOutput> outputs = {}, const std::vector<TimedRead>& inputs = {});

// ---- problem sizes: the one knob between a GPU run and a dry run ----
//
// A dry run is this harness, the perf tests and calibration compiled for the CPU backend (docs/cpu-mode.md,
// "Dry runs"): the same code paths with every problem size multiplied by perf_scale(), so that it finishes
// in seconds on a CPU. Its timings, scores and plots mean nothing; it proves that the code runs to the end.
#if defined(ROOFLAB_EMU)
inline constexpr bool kDryRun = true;
#else
inline constexpr bool kDryRun = false;
#endif

// 1 on a GPU; on a dry run ROOFLAB_DRYRUN_SCALE if set (0 < s <= 1), else 1/4096.
double perf_scale();
// Bytes per array that must stream from DRAM: 4x the L2 and at least 256 MB (the "4x L2" rule), times
// `scale`, rounded down to a multiple of 4 KiB and at least 4 KiB.
// Inline: the static binaries (rooflab inspect's timed launches) size their problems by it without the harness.
inline std::size_t streaming_bytes(std::size_t l2_bytes, double scale = perf_scale()) {
  const double full = static_cast<double>(std::max<std::size_t>(4 * l2_bytes, std::size_t{256} << 20));
  const auto bytes = static_cast<std::size_t>(full * scale) / 4096 * 4096;
  return std::max<std::size_t>(bytes, 4096);
}
// A count (threads, iterations, elements) times perf_scale(), at least `at_least`.
std::size_t scaled(std::size_t n, std::size_t at_least = 1);
// A square GEMM's n whose n^3 work is scaled by perf_scale(): a multiple of 64, at least 64.
int scaled_gemm_n(int n);

// Statistics of a sample (exposed for tests): median, min, max, mean, relative standard error.
struct SampleStats {
  double median, min, max, mean, rse;
};
SampleStats sample_stats(std::vector<double> samples);

}  // namespace rooflab
