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
  // TODO(lab05.q1): the counting rule in lab.hpp; mind the causal pairs. (3 lines)
  ROOFLAB_TODO("lab05.q1", s);
  // STUDENT END
}

double naive_bytes(const Shape& s, double elem_bytes) {
  // STUDENT BEGIN (lab05.q2)
  // TODO(lab05.q2): the six steps of the naive path, per head. (2 lines)
  ROOFLAB_TODO("lab05.q2", s, elem_bytes);
  // STUDENT END
}

double flash_bytes(const Shape& s, double elem_bytes) {
  // STUDENT BEGIN (lab05.q3)
  // TODO(lab05.q3): Q, K, V once, O once. (1 line)
  ROOFLAB_TODO("lab05.q3", s, elem_bytes);
  // STUDENT END
}

double intensity(const Shape& s, Path path, double elem_bytes) {
  // STUDENT BEGIN (lab05.q4)
  // TODO(lab05.q4): the naive path does the unmasked FLOPs whatever the mask. (2 lines)
  ROOFLAB_TODO("lab05.q4", s, path, elem_bytes);
  // STUDENT END
}

bool compute_bound(const Shape& s, Path path, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q5)
  // TODO(lab05.q5): the ridge point of the peak for elem_bytes (peak_for above). (1 line)
  ROOFLAB_TODO("lab05.q5", s, path, elem_bytes, gpu);
  // STUDENT END
}

double time_floor_s(const Shape& s, Path path, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q6)
  // TODO(lab05.q6): the FLOPs this path does, not the shape's. (3 lines)
  ROOFLAB_TODO("lab05.q6", s, path, elem_bytes, gpu);
  // STUDENT END
}

double naive_extra_bytes(const Shape& s, double elem_bytes) {
  // STUDENT BEGIN (lab05.q7)
  // TODO(lab05.q7): one L x L matrix per head. (2 lines)
  ROOFLAB_TODO("lab05.q7", s, elem_bytes);
  // STUDENT END
}

std::size_t longest_fitting_len(std::size_t batch_heads, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q8)
  // TODO(lab05.q8): a square root, then make sure of the rounding. (6 lines)
  ROOFLAB_TODO("lab05.q8", batch_heads, elem_bytes, gpu);
  // STUDENT END
}

double flash_hbm_elements(std::size_t len, std::size_t head_dim, std::size_t sram_elems) {
  // STUDENT BEGIN (lab05.q9)
  // TODO(lab05.q9): B rows a tile, clamped; ceil(len / B) tiles. (4 lines)
  ROOFLAB_TODO("lab05.q9", len, head_dim, sram_elems);
  // STUDENT END
}

double predicted_speedup(const Shape& s, double elem_bytes, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab05.q10)
  // TODO(lab05.q10): two time floors. (1 line)
  ROOFLAB_TODO("lab05.q10", s, elem_bytes, gpu);
  // STUDENT END
}

}  // namespace lab05
