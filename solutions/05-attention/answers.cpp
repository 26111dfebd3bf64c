// Lab 05: naive vs Flash attention - the analytic questions. Handout: README.md, "Counting attention" to
// "Memory".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab05 {

// PROVIDED: the peak a path's math runs at, by the element size (lab.hpp's counting rules).
namespace {
[[maybe_unused]] double peak_for(double elem_bytes, const rooflab::GpuSpec& gpu) {
  return rooflab::peak_flops(gpu, elem_bytes <= 2 ? rooflab::DType::fp16 : rooflab::DType::fp32).value();
}
}  // namespace

double flops(const Shape& s) {
  // STUDENT BEGIN (lab05.q1)
  // Two GEMMs of 2 L d FLOPs per (query, key) pair each; the mask keeps L (L + 1) / 2 pairs of L^2.
  const double l = static_cast<double>(s.len);
  const double pairs = s.causal ? l * (l + 1) / 2 : l * l;
  return static_cast<double>(s.batch_heads) * 4.0 * pairs * static_cast<double>(s.head_dim);
  // STUDENT END
}

double naive_bytes(const Shape& s, double elem_bytes) {
  // STUDENT BEGIN (lab05.q2)
  // Q, K read, O written, V read: 4 L d; S written, read, P written, read: 4 L^2.
  const double l = static_cast<double>(s.len), d = static_cast<double>(s.head_dim);
  return static_cast<double>(s.batch_heads) * (4 * l * d + 4 * l * l) * elem_bytes;
  // STUDENT END
}

double flash_bytes(const Shape& s, double elem_bytes) {
  // STUDENT BEGIN (lab05.q3)
  return static_cast<double>(s.batch_heads) * 4.0 * static_cast<double>(s.len) * static_cast<double>(s.head_dim) *
         elem_bytes;
  // STUDENT END
}

double intensity(const Shape& s, Path path, double elem_bytes) {
  // STUDENT BEGIN (lab05.q4)
  // The naive path's GEMMs compute every score, masked or not.
  if (path == Path::naive) return flops(Shape{s.batch_heads, s.len, s.head_dim, false}) / naive_bytes(s, elem_bytes);
  return flops(s) / flash_bytes(s, elem_bytes);
  // STUDENT END
}

bool compute_bound(const Shape& s, Path path, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q5)
  return intensity(s, path, elem_bytes) >= peak_for(elem_bytes, gpu) / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

double time_floor_s(const Shape& s, Path path, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q6)
  const double bytes = path == Path::naive ? naive_bytes(s, elem_bytes) : flash_bytes(s, elem_bytes);
  const double work = intensity(s, path, elem_bytes) * bytes;  // the FLOPs this path does
  return std::max(bytes / (gpu.bandwidth_gbps * 1e9), work / peak_for(elem_bytes, gpu));
  // STUDENT END
}

double naive_extra_bytes(const Shape& s, double elem_bytes) {
  // STUDENT BEGIN (lab05.q7)
  const double l = static_cast<double>(s.len);
  return static_cast<double>(s.batch_heads) * l * l * elem_bytes;
  // STUDENT END
}

std::size_t longest_fitting_len(std::size_t batch_heads, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q8)
  // The largest L with batch_heads L^2 e <= memory: the square root, then a step either way for rounding.
  const double memory = gpu.memory_gb * 1e9;
  const auto fits = [&](double l) { return static_cast<double>(batch_heads) * l * l * elem_bytes <= memory; };
  auto l = static_cast<std::size_t>(std::sqrt(memory / (static_cast<double>(batch_heads) * elem_bytes)));
  while (l > 0 && !fits(static_cast<double>(l))) --l;
  while (fits(static_cast<double>(l + 1))) ++l;
  return l;
  // STUDENT END
}

double flash_hbm_elements(std::size_t len, std::size_t head_dim, std::size_t sram_elems) {
  // STUDENT BEGIN (lab05.q9)
  // Query tiles of B rows; each reads all of K and V once more.
  const std::size_t b = std::clamp<std::size_t>(sram_elems / (4 * head_dim), 1, len);
  const double tiles = static_cast<double>((len + b - 1) / b);
  const double ld = static_cast<double>(len) * static_cast<double>(head_dim);
  return 2 * ld + 2 * ld * tiles;
  // STUDENT END
}

double predicted_speedup(const Shape& s, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q10)
  return time_floor_s(s, Path::naive, elem_bytes, gpu) / time_floor_s(s, Path::flash, elem_bytes, gpu);
  // STUDENT END
}

}  // namespace lab05
