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
  // TODO(lab04.q1): the handout's counting rule. (1 line)
  ROOFLAB_TODO("lab04.q1", s);
  // STUDENT END
}

double ideal_bytes(const Shape& s, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q2)
  // TODO(lab04.q2): A and B read once, C written once, each at its element size. (2 lines)
  ROOFLAB_TODO("lab04.q2", s, in_bytes, out_bytes);
  // STUDENT END
}

double ideal_intensity(const Shape& s, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q3)
  // TODO(lab04.q3): (1 line)
  ROOFLAB_TODO("lab04.q3", s, in_bytes, out_bytes);
  // STUDENT END
}

double tiled_bytes(const Shape& s, std::size_t bm, std::size_t bn, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q4)
  // TODO(lab04.q4): how many times does each strip of A and B come from DRAM? ceil, not /. (4 lines)
  ROOFLAB_TODO("lab04.q4", s, bm, bn, in_bytes, out_bytes);
  // STUDENT END
}

double tiled_intensity(const Shape& s, std::size_t bm, std::size_t bn, std::size_t in_bytes, std::size_t out_bytes) {
  // STUDENT BEGIN (lab04.q5)
  // TODO(lab04.q5): (1 line)
  ROOFLAB_TODO("lab04.q5", s, bm, bn, in_bytes, out_bytes);
  // STUDENT END
}

bool compute_bound(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab04.q6)
  // TODO(lab04.q6): the ridge point of this data type's roof (Lab 02). (1 line)
  ROOFLAB_TODO("lab04.q6", intensity, gpu, type);
  // STUDENT END
}

double time_floor_s(const Shape& s, std::size_t in_bytes, std::size_t out_bytes, const rooflab::GpuSpec& gpu,
                    rooflab::DType type) {
  // STUDENT BEGIN (lab04.q7)
  // TODO(lab04.q7): the roofline floor at the ideal bytes. (2 lines)
  ROOFLAB_TODO("lab04.q7", s, in_bytes, out_bytes, gpu, type);
  // STUDENT END
}

std::size_t smem_per_block(std::size_t bm, std::size_t bn, std::size_t bk, std::size_t in_bytes, int stages) {
  // STUDENT BEGIN (lab04.q8)
  // TODO(lab04.q8): (1 line)
  ROOFLAB_TODO("lab04.q8", bm, bn, bk, in_bytes, stages);
  // STUDENT END
}

int blocks_per_sm(std::size_t smem_bytes, int threads, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab04.q9)
  // TODO(lab04.q9): the three limits of lab.hpp, and 0 when the block cannot launch. (about 10 lines)
  ROOFLAB_TODO("lab04.q9", smem_bytes, threads, gpu);
  // STUDENT END
}

Waves waves(const Shape& s, std::size_t bm, std::size_t bn, int blocks_per_sm, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab04.q10)
  // TODO(lab04.q10): tiles, then waves over the SMs' block slots, then the fraction of slots used. (6 lines)
  ROOFLAB_TODO("lab04.q10", s, bm, bn, blocks_per_sm, gpu);
  // STUDENT END
}

double padding_waste_flops(const Shape& s, std::size_t multiple) {
  // STUDENT BEGIN (lab04.q11)
  // TODO(lab04.q11): pad each dimension up to the multiple. (2 lines)
  ROOFLAB_TODO("lab04.q11", s, multiple);
  // STUDENT END
}

}  // namespace lab04
