// Deterministic random test data. The generator is written out (splitmix64) rather than taken from
// <random>'s distributions, whose output differs between standard libraries: a seed must mean the same
// data everywhere. Values are never zero (a kernel that writes zeros must not pass by luck), and the seed
// can be replaced by an instructor's secret one through ROOFLAB_SEED.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rooflab {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

 private:
  std::uint64_t state_;
};

// A seed as an instructor writes it: an unsigned integer (decimal, or 0x hex), nothing else. "abc", "12ab",
// "-1" and "1.5" are no seed: a typo must never quietly become seed 0 (or 1).
inline std::optional<std::uint64_t> parse_seed(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const std::uint64_t v = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str() || *end != '\0') return std::nullopt;
  return v;
}

// The seed of this run: ROOFLAB_SEED if set (instructors grade with a secret one), else the course default.
inline std::uint64_t test_seed() {
  if (const char* s = std::getenv("ROOFLAB_SEED"); s != nullptr && *s != '\0') {
    if (const auto seed = parse_seed(s)) return *seed;
    throw std::invalid_argument(std::string("ROOFLAB_SEED=\"") + s + "\" is not a seed: give an unsigned integer");
  }
  return 20261122ull;
}

// n values in [lo, hi) with magnitude at least `min_magnitude` (never zero).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                                        float min_magnitude = 1.0f / 64) {
  if (lo >= hi || (lo > -min_magnitude && hi < min_magnitude)) {
    throw std::invalid_argument("random_floats: empty range after excluding values near zero");
  }
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    float value = 0.0f;
    do {
      value = static_cast<float>(rng.uniform(lo, hi));
    } while (value > -min_magnitude && value < min_magnitude);
    x = value;
  }
  return v;
}

}  // namespace rooflab
