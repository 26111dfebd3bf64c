// Lab @LAB_ID@ graders: the analytic questions (no device). Inputs are random (seeded by ROOFLAB_SEED) and the
// per-GPU question runs over every GPU in data/gpus.json, so an answer typed in for one case fails. Expected
// values are derived here from first principles, not from the solution.
// fill in: one ROOFLAB_TEST per question (its points are in rubric.json).
#include "lab.hpp"

#include <rooflab/specs.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

namespace {

constexpr rooflab::Tolerance kRel{0.0, 1e-9};

}  // namespace

ROOFLAB_TEST(@LAB_SUITE@Analytic, ScaleBytes) {
  rooflab::Rng rng(rooflab::test_seed());
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t n = 1 + rng.below(1ull << 32);
    const double want = 2.0 * sizeof(float) * static_cast<double>(n);  // x read once, y written once
    ROOFLAB_EXPECT(rooflab::grading::near(@LAB_NS@::scale_bytes(n), want, kRel)) << "n = " << n;
  }
}

ROOFLAB_TEST(@LAB_SUITE@Analytic, TimeFloorOnEveryGpu) {
  rooflab::Rng rng(rooflab::test_seed() + 1);
  for (const auto& gpu : rooflab::gpus()) {
    const std::size_t n = 1 + rng.below(1ull << 30);
    const double want = 8.0 * static_cast<double>(n) / (gpu.bandwidth_gbps * 1e9);
    ROOFLAB_EXPECT(rooflab::grading::near(@LAB_NS@::time_floor_s(n, gpu), want, kRel)) << gpu.id << ", n = " << n;
  }
}
