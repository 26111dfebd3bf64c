// Inputs for the kernels a perf test times, and the check of their output after timing.
//
// Timed inputs are random, drawn from the run's seed (an instructor's secret seed changes them too), element by
// element with no period: a kernel cannot recognise constant data and skip the work (every output equal, one row
// computed and broadcast), nor compute one stretch of a periodic input and copy it, nor hand back an answer cached
// from an earlier run. After timing, the output is compared with a host reference at sampled elements, because a
// full reference at the timed sizes would cost the host seconds per kernel. Which elements are sampled is drawn
// only then, from the operating system's entropy rather than the seed: a launcher that knows the seed and the
// harness's code still cannot know which outputs will be read, so it must write them all. The first and last
// elements are always among them (where tails go wrong). While a perf test is timed, benchmark() moves every
// TimedInput before every sample (InputMotion in rooflab/testing/timing.hpp) and its host view moves with it:
// a check after timing reads the inputs the last sample was given through host(), never a copy taken before.
#pragma once

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/compare.hpp>
#include <rooflab/half.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/timing.hpp>

#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace rooflab {

// n random values in [lo, hi) (never within 1/64 of zero), on the device, and as the host reads them back
// (`host(i)` is exactly the device's element i, rounded to T). Element i is a hash of the seed, `salt` and i
// (counter-based, like Philox or splitmix64 over the index), so the host computes any element without storing
// the array, and no stretch of the input repeats: there is no period a kernel could compute once and copy.
// `salt` tells a test's inputs apart: two inputs with one salt would be equal.
template <typename T>
class TimedInput {
 public:
  TimedInput(std::size_t n, std::uint64_t salt, float lo = -1.0f, float hi = 1.0f)
      : device(n), key_(test_seed() ^ (salt * 0x9E3779B97F4A7C15ull)), lo_(lo), hi_(hi) {
    if (lo >= hi || (lo > -kMinMagnitude && hi < kMinMagnitude)) {
      throw std::invalid_argument("TimedInput: empty range after excluding values near zero");
    }
    // Uploaded a chunk at a time (the host never holds the whole array), each chunk computed by up to 8 host
    // threads: one thread computes about 100 million elements in 3 s, and Lab 01's size sweep draws 1.6 billion.
    constexpr std::size_t kChunk = std::size_t{1} << 22;
    std::vector<T> chunk(std::min(n, kChunk));
    const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
    for (std::size_t at = 0; at < n; at += kChunk) {
      const std::size_t count = std::min(kChunk, n - at);
      const auto fill = [&](std::size_t from, std::size_t to) {
        for (std::size_t i = from; i < to; ++i) chunk[i] = rounded(at + i);
      };
      if (workers == 1 || count < (std::size_t{1} << 16)) {
        fill(0, count);
      } else {
        std::vector<std::thread> threads;
        const std::size_t share = (count + workers - 1) / workers;
        for (std::size_t from = 0; from < count; from += share) threads.emplace_back(fill, from, std::min(count, from + share));
        for (auto& t : threads) t.join();
      }
      ROOFLAB_CUDA_CHECK(cudaMemcpy(device.data() + at, chunk.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    }
  }
  // Element i as the device holds it now: benchmark() turns a timed input between samples (InputMotion in
  // rooflab/testing/timing.hpp), and the host view turns with it.
  float host(std::size_t i) const { return as_float(rounded((i + shift_) % device.size())); }
  // The host view turned left by r elements, as benchmark() has just turned the device array (timed_input()).
  void host_rotate(std::size_t r) const { shift_ = (shift_ + r) % device.size(); }
  // Element i of the sequence the array was filled from (element i of the array until benchmark() turns it), for
  // any i, past the end too: what the test of the sequence's period reads.
  float generated(std::size_t i) const { return as_float(rounded(i)); }
  // Elements [from, from + count) as the host reads them (for a reference that takes a row).
  std::vector<float> host_range(std::size_t from, std::size_t count) const {
    std::vector<float> out(count);
    for (std::size_t i = 0; i < count; ++i) out[i] = host(from + i);
    return out;
  }

  DeviceBuffer<T> device;

 private:
  static constexpr float kMinMagnitude = 1.0f / 64;
  // Element i before rounding to T: uniform in [lo, hi), drawn again (a second counter) while within 1/64 of zero.
  float value(std::size_t i) const {
    for (std::uint64_t attempt = 0;; ++attempt) {
      Rng rng(key_ ^ (static_cast<std::uint64_t>(i) * 0xD1B54A32D192ED03ull) ^ (attempt * 0x8CB92BA72F3D8DD7ull));
      const float v = static_cast<float>(rng.uniform(lo_, hi_));
      if (v <= -kMinMagnitude || v >= kMinMagnitude) return v;
    }
  }
  T rounded(std::size_t i) const {
    if constexpr (std::is_same_v<T, __half>) {
      return __float2half(value(i));
    } else {
      return static_cast<T>(value(i));
    }
  }

  std::uint64_t key_;
  float lo_, hi_;
  // How far the device array has been turned left since it was filled (benchmark() turns it through
  // timed_input() below, which reaches a const TimedInput: the values are the same, their places move).
  mutable std::size_t shift_ = 0;
};

// A timed input as benchmark() watches it on a dry run (rooflab/testing/timing.hpp): every timed launch must read at
// least `min_fraction` of its `count` elements from `first` on (all of them when count is 0).
template <typename T>
TimedRead timed_input(const TimedInput<T>& in, const char* name = "input", std::size_t first = 0, std::size_t count = 0,
                      double min_fraction = 0.5) {
  const std::size_t n = count > 0 ? count : in.device.size() - first;
  TimedRead read{static_cast<const void*>(in.device.data() + first), n * sizeof(T), min_fraction, name};
  const std::size_t size = in.device.size();
  read.motion = {const_cast<T*>(in.device.data()), size, sizeof(T),
                 [&in](std::size_t r) { in.host_rotate(r); }};
  return read;
}

// `options` with a check of every sample's output (BenchOptions::check_each_sample): `check` returns a
// ::testing::AssertionResult, as the test's check after timing does. Keep it cheap (a few elements: an output
// handed back from another call is wrong almost everywhere); the check after timing reads more.
template <typename Check>
BenchOptions checking_each_sample(BenchOptions options, Check check) {
  options.check_each_sample = [check = std::move(check)]() -> std::string {
    const ::testing::AssertionResult r = check();
    return r ? std::string() : std::string(r.message());
  };
  return options;
}

// `count` indices spread at random over [0, n), plus 0 and n - 1, sorted, without repeats. Drawn from the
// operating system's entropy each time it is called (after timing), never from the seed: no code in the process
// can know them while the kernel runs. A failure names its element, which is all a student needs to reproduce it.
inline std::vector<std::size_t> sampled_indices(std::size_t n, std::size_t count) {
  if (n == 0) return {};
  std::random_device entropy;
  Rng rng((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy());
  std::vector<std::size_t> at{0, n - 1};
  for (std::size_t i = 0; i < count; ++i) at.push_back(rng.below(n));
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

// The timed kernel's output `got` (downloaded after timing) against `want(i)`, a host reference for element i,
// at the indices `at`: |got - want| <= atol + rtol |want|, and never NaN or infinite. `kernel` names the
// kernel in the failure, which says that a timed kernel must do all of its work.
template <typename Got, typename Want>
::testing::AssertionResult timed_output_matches_by(std::string_view kernel, std::size_t size, Got&& got,
                                                   std::span<const std::size_t> at, Want&& want, Tolerance tol) {
  for (const std::size_t i : at) {
    const double g = got(i), w = want(i);
    if (!std::isfinite(g) || std::abs(g - w) > tol.atol + tol.rtol * std::abs(w)) {
      return ::testing::AssertionFailure() << kernel << ": output element " << i << " is " << g << " after timing, "
                                           << "want " << w << " (of " << size << " elements, " << at.size()
                                           << " checked at random): a timed kernel must do all of its work";
    }
  }
  return ::testing::AssertionSuccess();
}
template <typename T, typename Want>
::testing::AssertionResult timed_output_matches(std::string_view kernel, const std::vector<T>& got,
                                                std::span<const std::size_t> at, Want&& want, Tolerance tol) {
  return timed_output_matches_by(kernel, got.size(), [&](std::size_t i) -> double { return as_float(got.at(i)); }, at,
                                 std::forward<Want>(want), tol);
}
// The same, reading only the checked elements of the device buffer (a check after every sample, where copying a
// whole output back each time would cost more than the sample).
template <typename T, typename Want>
::testing::AssertionResult timed_output_matches(std::string_view kernel, const DeviceBuffer<T>& out,
                                                std::span<const std::size_t> at, Want&& want, Tolerance tol) {
  return timed_output_matches_by(
      kernel, out.size(),
      [&](std::size_t i) -> double {
        if (i >= out.size()) throw std::out_of_range("timed_output_matches: element past the end of the output");
        T v{};
        ROOFLAB_CUDA_CHECK(cudaMemcpy(&v, out.data() + i, sizeof(T), cudaMemcpyDeviceToHost));
        return as_float(v);
      },
      at, std::forward<Want>(want), tol);
}

}  // namespace rooflab
