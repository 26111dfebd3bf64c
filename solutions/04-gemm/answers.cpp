// Lab 04: GEMM - the analytic questions. Handout: README.md, "Counting GEMM work" to "Tensor cores".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab04 {

// PROVIDED: rounding up a division, for the tile counts.
namespace {
[[maybe_unused]] std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
}  // namespace

double flops(const Shape& s) {
  // STUDENT BEGIN (lab04.q1)
  // One multiply-add (2 FLOPs) per (i, j, p).
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  // STUDENT END
}

double ideal_bytes(const Shape& s, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q2)
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  return (m * k + k * n) * static_cast<double>(in_bytes) + m * n * static_cast<double>(out_bytes);
  // STUDENT END
}

double ideal_intensity(const Shape& s, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q3)
  return flops(s) / ideal_bytes(s, in_bytes, out_bytes);
  // STUDENT END
}

double tiled_bytes(const Shape& s, std::size_t bm, std::size_t bn, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q4)
  // Every column strip of C (ceil(N / BN) of them) reads all of A; every row strip reads all of B.
  const double a = static_cast<double>(s.m * s.k) * static_cast<double>(ceil_div(s.n, bn));
  const double b = static_cast<double>(s.k * s.n) * static_cast<double>(ceil_div(s.m, bm));
  return (a + b) * static_cast<double>(in_bytes) + static_cast<double>(s.m * s.n) * static_cast<double>(out_bytes);
  // STUDENT END
}

double tiled_intensity(const Shape& s, std::size_t bm, std::size_t bn, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q5)
  return flops(s) / tiled_bytes(s, bm, bn, in_bytes, out_bytes);
  // STUDENT END
}

bool compute_bound(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab04.q6)
  return intensity >= rooflab::peak_flops(gpu, type).value() / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

double time_floor_s(const Shape& s, std::size_t in_bytes, std::size_t out_bytes, const rooflab::GpuSpec& gpu,
                    rooflab::DType type) {
  // STUDENT BEGIN (lab04.q7)
  return std::max(ideal_bytes(s, in_bytes, out_bytes) / (gpu.bandwidth_gbps * 1e9),
                  flops(s) / rooflab::peak_flops(gpu, type).value());
  // STUDENT END
}

std::size_t smem_per_block(std::size_t bm, std::size_t bn, std::size_t bk, std::size_t in_bytes, int stages) {
  // STUDENT BEGIN (lab04.q8)
  return static_cast<std::size_t>(stages) * (bm * bk + bk * bn) * in_bytes;
  // STUDENT END
}

int blocks_per_sm(std::size_t smem_bytes, int threads, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab04.q9)
  if (threads <= 0 || threads > gpu.max_threads_per_block) return 0;
  if (static_cast<double>(smem_bytes) > gpu.smem_max_per_block_kb * 1024) return 0;
  const std::size_t unit = static_cast<std::size_t>(std::max(gpu.smem_alloc_unit_bytes, 1));
  const std::size_t footprint =
      ceil_div(smem_bytes + static_cast<std::size_t>(gpu.reserved_smem_per_block_bytes), unit) * unit;
  int blocks = std::min(gpu.max_threads_per_sm / threads, gpu.max_blocks_per_sm);
  if (footprint > 0) {
    blocks = std::min(blocks, static_cast<int>(static_cast<std::size_t>(gpu.smem_per_sm_kb * 1024) / footprint));
  }
  return blocks;
  // STUDENT END
}

Waves waves(const Shape& s, std::size_t bm, std::size_t bn, int blocks_per_sm, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab04.q10)
  Waves w;
  w.tiles = ceil_div(s.m, bm) * ceil_div(s.n, bn);
  const std::size_t slots = static_cast<std::size_t>(gpu.sms.value()) * static_cast<std::size_t>(blocks_per_sm);
  w.waves = ceil_div(w.tiles, slots);
  w.efficiency = static_cast<double>(w.tiles) / static_cast<double>(w.waves * slots);
  return w;
  // STUDENT END
}

double padding_waste_flops(const Shape& s, std::size_t multiple) {
  // STUDENT BEGIN (lab04.q11)
  const auto pad = [&](std::size_t x) { return static_cast<double>(ceil_div(x, multiple) * multiple); };
  return 2.0 * pad(s.m) * pad(s.n) * pad(s.k) - flops(s);
  // STUDENT END
}

}  // namespace lab04
