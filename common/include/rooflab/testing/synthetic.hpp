// GPUs and models drawn from the test seed, asked about beside the published ones.
//
// An analytic question asked only of the GPUs in data/gpus.json and the models in data/models.json can be
// answered by a table typed in from the handout or a spec sheet, keyed by name: it passes without the
// arithmetic the question teaches. Every analytic test therefore walks graded_gpus() / graded_models(): the
// published entries and a few synthetic ones whose figures (bandwidth, peaks, SMs, clocks, shared memory,
// block limits; layers, heads, KV heads, head dim, window, experts) are drawn from rooflab::test_seed(). An
// instructor's secret seed (ROOFLAB_SEED) gives GPUs and models nobody has seen. A synthetic entry is
// plausible (its FP32 peak is its SMs x lanes x 2 x clock, its heads a multiple of its KV heads, its
// parameter count that of its shapes) but no real part: its id starts with "synthetic-" and its notes say so.
//
//   for (const auto& g : rooflab::graded_gpus()) ROOFLAB_EXPECT(near(lab01::time_floor_s(op, n, g), ...));
//
// `rooflab-seed-audit` (common/src/seed_audit.cpp, CTest lab<NN>.analytic.seeded) checks that every
// question of every lab is asked of such inputs.
#pragma once

#include <rooflab/specs.hpp>

#include <cstdint>
#include <vector>

namespace rooflab {

// `n` GPUs / models drawn from `seed` (the same seed gives the same entries on every machine).
std::vector<GpuSpec> synthetic_gpus(std::uint64_t seed, int n);
std::vector<ModelSpec> synthetic_models(std::uint64_t seed, int n);

// The published entries followed by four synthetic ones drawn from test_seed(), built once per process.
const std::vector<GpuSpec>& graded_gpus();
const std::vector<ModelSpec>& graded_models();

bool is_synthetic(const GpuSpec& g);
bool is_synthetic(const ModelSpec& m);

}  // namespace rooflab
