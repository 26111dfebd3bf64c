#include <rooflab/testing/buffer.hpp>
#include <rooflab/check.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/device_memory.hpp>
#include <rooflab/testing/timing.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/detail/report.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#if defined(ROOFLAB_EMU)
#include <rooflab/emu/launch.hpp>
#include <rooflab/emu/pretend_gpu.hpp>
#endif

namespace rooflab {

#if defined(ROOFLAB_EMU)
namespace {
// A dry run pretends to be a small GPU that students rent (sm_86, 72 SMs, 6 MB L2) unless ROOFLAB_EMU_GPU
// names another: the perf tests then size their work and look up datasheet figures as they would there.
[[maybe_unused]] const bool kDryRunGpu = (emu::set_default_pretend_gpu("a10"), true);
[[maybe_unused]] const bool kDryRunPlots = (set_plot_banner("DRY RUN (CPU backend, not GPU figures)"), true);
}  // namespace
#endif

SampleStats sample_stats(std::vector<double> s) {
  if (s.empty()) return {0, 0, 0, 0, 0};
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  const double median = n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  const double mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double x : s) var += (x - mean) * (x - mean);
  var = n > 1 ? var / static_cast<double>(n - 1) : 0;
  const double rse = (n > 1 && mean > 0) ? std::sqrt(var / static_cast<double>(n)) / mean : 1.0;
  return {median, s.front(), s.back(), mean, rse};
}

double Measurement::percent_of(double ceiling) const {
  if (ceiling <= 0) return 0;
  return 100.0 * (work.bytes() > 0 ? gbps() : flops_per_s()) / ceiling;
}

std::string Measurement::summary() const {
  std::string s = fmt::format("median {:.3f} us (min {:.3f}, max {:.3f}, rse {:.2f}%, {} samples)", median_s * 1e6,
                              min_s * 1e6, max_s * 1e6, 100 * rse, samples);
  if (work.bytes() > 0) s += fmt::format(", {:.1f} GB/s", gbps());
  if (work.flops > 0) s += fmt::format(", {:.2f} TFLOP/s", flops_per_s() / 1e12);
  if (throttled_samples > 0) s += fmt::format(", {} samples throttled", throttled_samples);
  return s;
}

L2Flusher::L2Flusher() {
  int device = 0;
  ROOFLAB_CUDA_CHECK(cudaGetDevice(&device));
  int l2 = 0;
  ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  // Twice the L2, and at least 64 MB so that a mis-reported L2 size still flushes it (scaled on a dry run).
  bytes_ = std::max<std::size_t>(
      static_cast<std::size_t>(perf_scale() * static_cast<double>(std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 64u << 20))),
      4096);
  ROOFLAB_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buffer_ != nullptr) ROOFLAB_CUDA_WARN(cudaFree(buffer_));
}

void L2Flusher::flush(cudaStream_t stream) { ROOFLAB_CUDA_CHECK(cudaMemsetAsync(buffer_, 0, bytes_, stream)); }

double perf_scale() {
  if (!kDryRun) return 1.0;
  static const double scale = [] {
    const char* s = std::getenv("ROOFLAB_DRYRUN_SCALE");
    const double v = s != nullptr ? std::atof(s) : 0.0;
    return v > 0 && v <= 1 ? v : 1.0 / 4096;
  }();
  return scale;
}

std::size_t scaled(std::size_t n, std::size_t at_least) {
  return std::max(at_least, static_cast<std::size_t>(static_cast<double>(n) * perf_scale()));
}

int scaled_gemm_n(int n) {
  const int m = static_cast<int>(n * std::cbrt(perf_scale())) / 64 * 64;
  return std::max(m, 64);
}

void launch_reading_inputs(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                           const std::vector<TimedRead>& inputs) {
#if defined(ROOFLAB_EMU)
  if (inputs.size() > 0) {
    std::vector<emu::WatchedRange> ranges;
    for (const TimedRead& in : inputs) ranges.push_back({in.data, in.bytes});
    emu::begin_read_watch(ranges);
    std::vector<std::size_t> touched;
    try {
      launch(stream);
      ROOFLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (...) {
      emu::end_read_watch();
      throw;
    }
    touched = emu::end_read_watch();
    std::size_t i = 0;
    for (const TimedRead& in : inputs) {
      const double read = static_cast<double>(touched[i++]), need = in.min_fraction * static_cast<double>(in.bytes);
      if (read >= need) continue;
      throw TimedReadError(fmt::format(
          "a timed launch touched {} of the {} bytes of its {} ({:.0f}%, at least {:.0f}% expected): each timed "
          "launch must compute its output from its inputs; a launcher that writes back an answer kept from an "
          "earlier call reads none of them",
          touched[i - 1], in.bytes, in.name, 100 * read / static_cast<double>(in.bytes), 100 * in.min_fraction));
    }
    return;
  }
#endif
  (void)inputs;
  launch(stream);
}

unsigned long long kernel_launches_so_far() {
#if defined(ROOFLAB_EMU)
  return emu::kernel_launch_count();
#else
  return 0;
#endif
}

namespace {
// "batched_kernel" of a registry's "lab07::batched_kernel<8>" (namespace and template arguments dropped).
[[maybe_unused]] std::string registry_base(const std::string& name) {
  std::string s = name.substr(0, name.find_first_of("<("));
  const std::size_t colon = s.rfind("::");
  return colon == std::string::npos ? s : s.substr(colon + 2);
}
}  // namespace

void check_kernels_started(const std::vector<std::string>& expected, unsigned long long launches_before) {
#if defined(ROOFLAB_EMU)
  if (expected.empty()) return;
  const std::vector<std::string> ran = emu::kernels_launched_since(launches_before);
  for (const std::string& r : ran) {
    const std::string base = emu::detail::kernel_base_name(r);
    for (const std::string& e : expected) {
      if (!base.empty() && base == registry_base(e)) return;
    }
  }
  throw TimedReadError(fmt::format(
      "a timed launch started {} where the lab's registry names {}: each timed launch must run the kernel it is "
      "graded on, not hand back an earlier answer",
      ran.empty() ? std::string("no kernel") : fmt::format("only {}", fmt::join(ran, ", ")), fmt::join(expected, " or ")));
#else
  (void)expected;
  (void)launches_before;
#endif
}

std::uint64_t device_fingerprint(const void* data, std::size_t bytes) {
  constexpr std::size_t kChunk = std::size_t{64} << 20;
  std::vector<std::uint64_t> host((std::min(bytes, kChunk) + 7) / 8);
  // Four lanes of xor-multiply (FNV's 64-bit prime, odd: each step is one to one in the lane), so that the
  // multiplies overlap; the lanes are mixed into one value at the end.
  std::uint64_t lane[4] = {0xcbf29ce484222325ull, 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull};
  constexpr std::uint64_t kPrime = 0x100000001b3ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(kChunk, bytes - done);
    host[(n - 1) / 8] = 0;  // the last word's bytes past the end count as zeros
    ROOFLAB_CUDA_CHECK(cudaMemcpy(host.data(), p + done, n, cudaMemcpyDeviceToHost));
    const std::size_t words = (n + 7) / 8;
    for (std::size_t w = 0; w < words; ++w) lane[w % 4] = (lane[w % 4] ^ host[w]) * kPrime;
    done += n;
  }
  std::uint64_t h = bytes;
  for (const std::uint64_t l : lane) h = (h ^ (l ^ (l >> 29))) * kPrime;
  return h;
}

namespace {
// The inputs benchmark() moves before every sample (TimedRead::motion), each array once however many of the
// declared reads lie in it. It keeps a copy of each as it was before the first warm-up launch and writes the
// array from that copy turned left by a fresh number of elements, so a launcher cannot carry anything from one
// sample to the next in an input, and every sample computes on inputs no earlier call saw.
class InputMover {
 public:
  explicit InputMover(const std::vector<TimedRead>& inputs) {
    std::random_device entropy;
    rng_ = Rng((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
    for (const TimedRead& in : inputs) {
      const InputMotion& m = in.motion;
      if (m.base == nullptr || m.elements < 2 || moves(m.base)) continue;
      Moved x{&m, DeviceBuffer<unsigned char>(m.elements * m.element_bytes), 0};
      ROOFLAB_CUDA_CHECK(cudaMemcpy(x.original.data(), m.base, x.original.bytes(), cudaMemcpyDeviceToDevice));
      moved_.push_back(std::move(x));
    }
  }
  bool moves(const void* base) const {
    return std::any_of(moved_.begin(), moved_.end(), [&](const Moved& x) { return x.motion->base == base; });
  }
  // Before a sample: each array turned by a fresh amount in [1, n), never drawn from the seed, and its host
  // view turned with it.
  void move(cudaStream_t stream) {
    for (Moved& x : moved_) {
      const std::size_t n = x.motion->elements;
      const std::size_t to = 1 + static_cast<std::size_t>(rng_.below(n - 1));
      write_turned(x, to, stream);
      x.motion->host_rotate((to + n - x.turned) % n);
      x.turned = to;
    }
  }
  // What the last sample was given, written again (the check of what a launcher left in its inputs compares with it).
  void rewrite(cudaStream_t stream) {
    for (Moved& x : moved_) write_turned(x, x.turned, stream);
  }

 private:
  struct Moved {
    const InputMotion* motion;
    DeviceBuffer<unsigned char> original;
    std::size_t turned;  // elements the array is turned left from `original` by (and its host view)
  };
  static void write_turned(const Moved& x, std::size_t r, cudaStream_t stream) {
    const std::size_t e = x.motion->element_bytes, n = x.motion->elements;
    auto* base = static_cast<unsigned char*>(x.motion->base);
    ROOFLAB_CUDA_CHECK(cudaMemcpyAsync(base, x.original.data() + r * e, (n - r) * e, cudaMemcpyDeviceToDevice, stream));
    if (r > 0) {
      ROOFLAB_CUDA_CHECK(cudaMemcpyAsync(base + (n - r) * e, x.original.data(), r * e, cudaMemcpyDeviceToDevice, stream));
    }
  }
  Rng rng_{0};
  std::vector<Moved> moved_;
};
}  // namespace

#if !defined(ROOFLAB_EMU)
namespace {
// How long a synchronize of a device with nothing left to run may take (the API's own cost, a busy host): far
// above it, far below any kernel a perf test times at its size.
constexpr double kStillBusySlack_s = 200e-6;
}  // namespace
#endif

Measurement benchmark(const std::function<void(cudaStream_t)>& launch, Work work, BenchOptions options,
                      std::initializer_list<TimedOutput> outputs, const std::vector<TimedRead>& inputs) {
  if (kDryRun) {
    // The real loop, briefly: a dry run proves the loop and its arithmetic, not the figures. Seven calls in all
    // (two warm-ups, five samples), so that a launcher that behaves for its first four calls and then replays,
    // skips or defers its work is still seen by the samples' checks (the read watch, the stop event's cover).
    options.warmup = std::min(options.warmup, 2);
    options.min_samples = std::min(options.min_samples, 5);
    options.max_seconds = std::min(options.max_seconds, 0.01);
  }
  Stream stream;
  Event start;
  Event stop;
  L2Flusher flusher;
  int device = 0;
  ROOFLAB_CUDA_CHECK(cudaGetDevice(&device));
  const DeviceInfo info = query_device(device);

  const auto poison = [&] {
    for (const TimedOutput& o : outputs) ROOFLAB_CUDA_CHECK(cudaMemsetAsync(o.data, 0xFF, o.bytes, stream.get()));
  };
  // Lines marked persisting (an access-policy window, refused in students' code by the grader's symbol rule)
  // would survive the flush: where the GPU has a persisting L2, it is reset before every sample too.
  int persisting_l2 = 0;
  if (cudaDeviceGetAttribute(&persisting_l2, cudaDevAttrMaxPersistingL2CacheSize, device) != cudaSuccess) {
    persisting_l2 = 0;
    (void)cudaGetLastError();
  }
  InputMover mover(inputs);
  // The inputs that are not moved as the test declared them, before any launch (a moved one is compared with what
  // the harness wrote before the last sample, below).
  std::vector<std::uint64_t> fingerprints;
  for (const TimedRead& in : inputs) {
    fingerprints.push_back(mover.moves(in.motion.base) ? 0 : device_fingerprint(in.data, in.bytes));
  }
  std::optional<DeviceMemoryWatch> memory;  // from here on: what the launches take, not the harness's buffers
  if (options.watch_device_memory) memory.emplace();
  for (int i = 0; i < options.warmup; ++i) {
    poison();
    launch(stream.get());
  }
  stream.synchronize();

  std::vector<double> samples;
  Measurement m;
  m.work = work;
  double clock_sum = 0;
  int clock_reads = 0;
  const auto began = std::chrono::steady_clock::now();
  double checked_s = 0;  // spent in check_each_sample, not counted against max_seconds
  while (static_cast<int>(samples.size()) < options.max_samples) {
    mover.move(stream.get());  // inputs no earlier call saw (InputMotion)
    poison();  // before the flush, so that it also evicts the poisoned lines and the moved inputs
    if (options.flush_l2) flusher.flush(stream.get());
    if (persisting_l2 > 0 && cudaCtxResetPersistingL2Cache() != cudaSuccess) (void)cudaGetLastError();
    start.record(stream.get());
#if defined(ROOFLAB_EMU)
    const unsigned long long allocations_before = emu::device_allocations_made();
#endif
    const unsigned long long launches_before = kernel_launches_so_far();
    launch_reading_inputs(launch, stream.get(), inputs);  // on a dry run, also counts the inputs' bytes read
    check_kernels_started(options.kernels, launches_before);
    stop.record(stream.get());
    stop.synchronize();
    const double sample_s = stop.elapsed_ms_since(start) * 1e-3;
#if defined(ROOFLAB_EMU)
    if (const auto made = emu::device_allocations_made() - allocations_before; made > 0) {
      throw TimedAllocation(fmt::format(
          "a timed launch allocated device memory ({} cudaMalloc call{} in one call of the launcher): on a GPU an "
          "allocation synchronizes the device and costs more than a small kernel. Allocate nothing per call: a "
          "launcher works in the buffers it is given", made, made == 1 ? "" : "s"));
    }
    if (const std::string left_out = emu::work_not_covered(start.get(), stop.get()); !left_out.empty()) {
      throw TimedWorkNotCovered("a timed launch left work outside the timed interval: " + left_out +
                                ". A launcher runs its work on the stream it is given (or orders its own streams "
                                "back into it with an event and cudaStreamWaitEvent before it returns)");
    }
#else
    // On a GPU the same bound, device-wide: once the stop event has completed, nothing this process put on the
    // GPU may still be running. A synchronize of an idle device returns in microseconds; work a launcher left
    // on a stream of its own (never ordered back into the given one) keeps it waiting, and would otherwise run
    // untimed behind the stop event. Other processes' work on the GPU is not this context's and is not waited for.
    const auto stopped = std::chrono::steady_clock::now();
    ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const double still_busy = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
    if (still_busy > std::max(kStillBusySlack_s, 0.05 * sample_s)) {
      throw TimedWorkNotCovered(fmt::format(
          "the GPU was still busy {:.0f} us after a sample's stop event (the sample timed {:.0f} us): a timed launch "
          "left work running outside the timed interval. A launcher runs its work on the stream it is given (or "
          "orders its own streams back into it with an event and cudaStreamWaitEvent before it returns)",
          still_busy * 1e6, sample_s * 1e6));
    }
#endif
    if (options.check_each_sample) {
      const auto checking = std::chrono::steady_clock::now();
      if (const std::string wrong = options.check_each_sample(); !wrong.empty()) {
        throw TimedOutputWrong(fmt::format("the output of timed sample {} is wrong: {}", samples.size() + 1, wrong));
      }
      checked_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - checking).count();
    }
    samples.push_back(sample_s);
    if (auto mhz = current_sm_clock_mhz(device)) {
      clock_sum += *mhz;
      ++clock_reads;
      if (*mhz < 0.75 * info.max_sm_clock_mhz) ++m.throttled_samples;
    }
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() - checked_s;
    if (static_cast<int>(samples.size()) >= options.min_samples) {
      if (sample_stats(samples).rse < options.target_rse || spent > options.max_seconds) break;
    }
  }
  if (memory) m.peak_extra_device_bytes = memory->peak_extra_bytes();
  // What the last sample left in each input, against what it was given: for a moved input, the array written
  // again as the last sample's move wrote it; otherwise the fingerprint taken before the first warm-up.
  std::vector<std::uint64_t> left;
  for (const TimedRead& in : inputs) left.push_back(device_fingerprint(in.data, in.bytes));
  mover.rewrite(stream.get());
  stream.synchronize();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const bool moved = mover.moves(inputs[i].motion.base);
    if (left[i] == (moved ? device_fingerprint(inputs[i].data, inputs[i].bytes) : fingerprints[i])) continue;
    throw TimedInputChanged(fmt::format(
        "the timed launches changed their input {} ({} bytes; its fingerprint {} and after the last sample "
        "differ): a launcher must leave its inputs as it was given them, not keep an answer or a transformed copy "
        "in them for later calls", inputs[i].name, inputs[i].bytes,
        moved ? "as the harness wrote it before the last sample" : "before the first warm-up launch"));
  }
  const SampleStats st = sample_stats(samples);
  m.samples = static_cast<int>(samples.size());
  m.median_s = st.median;
  m.min_s = st.min;
  m.max_s = st.max;
  m.mean_s = st.mean;
  m.rse = st.rse;
  m.mean_sm_clock_mhz = clock_reads > 0 ? clock_sum / clock_reads : 0;
  // The grader rejects a process that ends sooner than the kernel time it claims to have timed.
  double timed = 0;
  for (double s : samples) timed += s;
  report::claim_kernel_seconds(timed);
  return m;
}

}  // namespace rooflab
