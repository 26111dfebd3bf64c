// Inputs for the kernels a perf test times, and the check of their output after timing.
//
// Timed inputs are random, drawn from the run's seed (an instructor's secret seed changes them too): a kernel
// cannot recognise constant data and skip the work (every output equal, one row computed and broadcast), nor
// hand back an answer cached from an earlier run. After timing, the output is compared with a host reference
// at sampled elements, because a full reference at the timed sizes would cost the host seconds per kernel;
// the sample is random as well, so a kernel cannot know which elements are looked at, and the first and last
// elements are always among them (where tails go wrong).
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
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rooflab {

// n random values in [lo, hi) (never within 1/64 of zero), on the device, and as the host reads them back
// (`host(i)` is exactly the device's element i, rounded to T). The values repeat with a period of
// kTimedPeriod elements, a prime: drawing and uploading gigabytes of fresh values would cost the host more
// than the test, and a prime period never lines up with a row length, so no two rows of a matrix are equal.
// `salt` tells a test's inputs apart: two inputs with one salt would be equal.
inline constexpr std::size_t kTimedPeriod = 4194301;  // 2^22 - 3

template <typename T>
class TimedInput {
 public:
  TimedInput(std::size_t n, std::uint64_t salt, float lo = -1.0f, float hi = 1.0f) : device(n) {
    const std::size_t period = std::min(n, kTimedPeriod);
    const auto values = random_floats(period, test_seed() ^ (salt * 0x9E3779B97F4A7C15ull), lo, hi);
    std::vector<T> rounded(period);
    pattern_.resize(period);
    for (std::size_t i = 0; i < period; ++i) {
      if constexpr (std::is_same_v<T, __half>) {
        rounded[i] = __float2half(values[i]);
      } else {
        rounded[i] = static_cast<T>(values[i]);
      }
      pattern_[i] = as_float(rounded[i]);
    }
    for (std::size_t at = 0; at < n; at += period) {
      const std::size_t count = std::min(period, n - at);
      ROOFLAB_CUDA_CHECK(cudaMemcpy(device.data() + at, rounded.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    }
  }
  float host(std::size_t i) const { return pattern_[i % pattern_.size()]; }
  // Elements [from, from + count) as the host reads them (for a reference that takes a row).
  std::vector<float> host_range(std::size_t from, std::size_t count) const {
    std::vector<float> out(count);
    for (std::size_t i = 0; i < count; ++i) out[i] = host(from + i);
    return out;
  }

  DeviceBuffer<T> device;

 private:
  std::vector<float> pattern_;
};

// A timed input as benchmark() watches it on a dry run (rooflab/testing/timing.hpp): every timed launch must read at
// least `min_fraction` of its `count` elements from `first` on (all of them when count is 0).
template <typename T>
TimedRead timed_input(const TimedInput<T>& in, const char* name = "input", std::size_t first = 0, std::size_t count = 0,
                      double min_fraction = 0.5) {
  const std::size_t n = count > 0 ? count : in.device.size() - first;
  return {static_cast<const void*>(in.device.data() + first), n * sizeof(T), min_fraction, name};
}

// `count` indices spread at random over [0, n), plus 0 and n - 1, sorted, without repeats.
inline std::vector<std::size_t> sampled_indices(std::size_t n, std::size_t count, std::uint64_t salt) {
  if (n == 0) return {};
  Rng rng(test_seed() ^ (salt * 0xBF58476D1CE4E5B9ull) ^ 0x5A5A5A5Aull);
  std::vector<std::size_t> at{0, n - 1};
  for (std::size_t i = 0; i < count; ++i) at.push_back(rng.below(n));
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

// The timed kernel's output `got` (downloaded after timing) against `want(i)`, a host reference for element i,
// at the indices `at`: |got - want| <= atol + rtol |want|, and never NaN or infinite. `kernel` names the
// kernel in the failure, which says that a timed kernel must do all of its work.
template <typename T, typename Want>
::testing::AssertionResult timed_output_matches(std::string_view kernel, const std::vector<T>& got,
                                                std::span<const std::size_t> at, Want&& want, Tolerance tol) {
  for (const std::size_t i : at) {
    const double g = as_float(got.at(i)), w = want(i);
    if (!std::isfinite(g) || std::abs(g - w) > tol.atol + tol.rtol * std::abs(w)) {
      return ::testing::AssertionFailure() << kernel << ": output element " << i << " is " << g << " after timing, "
                                           << "want " << w << " (of " << got.size() << " elements, " << at.size()
                                           << " checked at random): a timed kernel must do all of its work";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rooflab
