// Lab 02 graders: the analytic questions, with random inputs and every GPU in data/gpus.json. Expected
// values are derived here from the data file's own fields, independently of the solution.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/roofline_plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <cmath>

namespace {

using rooflab::DType;

constexpr DType kTypes[] = {DType::fp64, DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8, DType::int8};

// Every answer is also recorded for the grader's check outside the student's process (rooflab/detail/report.hpp).
::testing::AssertionResult near(double got, double want, double rel = 1e-9) {
  return rooflab::grading::near(got, want, {0.0, rel});
}
using rooflab::grading::same;

double bandwidth(const rooflab::GpuSpec& g) { return g.bandwidth_gbps * 1e9; }

}  // namespace

ROOFLAB_TEST(Lab02Analytic, Fp32LanesPerSm) {
  for (const auto& g : rooflab::graded_gpus()) {
    ROOFLAB_EXPECT(same(lab02::fp32_lanes_per_sm(g.cc_major, g.cc_minor), g.fp32_lanes_per_sm)) << g.name;
  }
}

ROOFLAB_TEST(Lab02Analytic, Fp32PeakFromSmsLanesAndClock) {
  rooflab::Rng rng(rooflab::test_seed());
  for (int trial = 0; trial < 50; ++trial) {
    const int sms = 1 + static_cast<int>(rng.below(200));
    const int lanes = trial % 2 == 0 ? 64 : 128;
    const double mhz = rng.uniform(500, 2600);
    ROOFLAB_EXPECT(near(lab02::fp32_peak_flops(sms, lanes, mhz), 2.0 * sms * lanes * mhz * 1e6)) << sms << " SMs";
  }
  // And the datasheets agree with it (within 3%) where they publish SMs and clock.
  for (const auto& g : rooflab::graded_gpus()) {
    if (!g.sms || !g.boost_clock_mhz) continue;
    ROOFLAB_EXPECT(near(lab02::fp32_peak_flops(*g.sms, g.fp32_lanes_per_sm, *g.boost_clock_mhz), g.fp32_tflops * 1e12, 0.03))
        << g.name;
  }
}

ROOFLAB_TEST(Lab02Analytic, RidgePointEveryGpuEveryType) {
  for (const auto& g : rooflab::graded_gpus()) {
    for (DType t : kTypes) {
      const auto peak = rooflab::peak_flops(g, t);
      const auto got = lab02::ridge_point(g, t);
      ROOFLAB_ASSERT(same(got.has_value(), peak.has_value())) << g.name << " type " << static_cast<int>(t);
      if (peak) {
        ROOFLAB_EXPECT(near(*got, *peak / bandwidth(g))) << g.name << " type " << static_cast<int>(t);
      }
    }
  }
  // Exercises 1 and 5 of docs/sources.md: A100 FP16 156 FLOP/byte at 2 TB/s; H100 SXM FP16 about 295.
  ROOFLAB_EXPECT(rooflab::grading::near(*lab02::ridge_point(rooflab::gpu("h100-sxm"), DType::fp16), 989.4e12 / 3350e9,
                                     {1e-6, 0.0}));
}

ROOFLAB_TEST(Lab02Analytic, AttainableAndBoundAndFraction) {
  rooflab::Rng rng(rooflab::test_seed() + 1);
  for (const auto& g : rooflab::graded_gpus()) {
    for (DType t : kTypes) {
      const auto peak = rooflab::peak_flops(g, t);
      if (!peak) continue;
      const double ridge = *peak / bandwidth(g);
      // Both sides of the ridge, near it and far, and one point drawn from the seed on either side.
      for (double f : {0.01, 0.5, 0.99, 1.01, 3.0, 100.0, std::exp(rng.uniform(-4.0, 4.0))}) {
        const double i = ridge * f * rng.uniform(0.999, 1.001);
        const double want = std::min(*peak, i * bandwidth(g));
        ROOFLAB_EXPECT(near(lab02::attainable_flops(i, g, t), want)) << g.name << " I=" << i;
        ROOFLAB_EXPECT(same(lab02::memory_bound(i, g, t), i < ridge)) << g.name << " I=" << i;
        ROOFLAB_EXPECT(near(lab02::fraction_of_peak(i, g, t), want / *peak)) << g.name << " I=" << i;
      }
    }
  }
}

ROOFLAB_TEST(Lab02Analytic, DecodeTimeAndThroughput) {
  rooflab::Rng rng(rooflab::test_seed() + 2);
  for (const auto& g : rooflab::graded_gpus()) {
    const auto peak = rooflab::peak_flops(g, DType::fp16);
    if (!peak) continue;
    for (int batch : {1, 8, 32, 64, 512, 4096}) {
      const double params = rng.uniform(1e9, 100e9);
      const double bpp = batch % 2 == 0 ? 2.0 : 1.0;
      const double step = std::max(params * bpp / bandwidth(g), 2 * params * batch / *peak);
      ROOFLAB_EXPECT(near(lab02::decode_step_s(params, bpp, batch, g, DType::fp16), step)) << g.name << " B=" << batch;
      ROOFLAB_EXPECT(near(lab02::decode_tokens_per_s(params, bpp, batch, g, DType::fp16), batch / step)) << g.name;
    }
  }
  // Exercise 3 of docs/sources.md: a 70B FP16 model on an H100 SXM needs at least 140 GB / 3.35 TB/s = 41.8 ms per token.
  ROOFLAB_EXPECT(rooflab::grading::near(lab02::decode_step_s(70e9, 2, 1, rooflab::gpu("h100-sxm"), DType::fp16), 0.0418,
                                     {0.0001, 0.0}));
}

ROOFLAB_TEST(Lab02Analytic, LinearLayerIntensityAndRidgeBatch) {
  rooflab::Rng rng(rooflab::test_seed() + 3);
  for (int trial = 0; trial < 50; ++trial) {
    const int b = 1 + static_cast<int>(rng.below(2048)), k = 64 * (1 + static_cast<int>(rng.below(128)));
    const int n = 64 * (1 + static_cast<int>(rng.below(128)));
    const double e = trial % 2 == 0 ? 2.0 : 1.0;
    const double want = 2.0 * b * k * n / ((1.0 * k * n + 1.0 * b * k + 1.0 * b * n) * e);
    ROOFLAB_EXPECT(near(lab02::linear_intensity(b, k, n, e), want)) << b << "x" << k << "x" << n;
  }
  // The ridge batch: the first batch whose intensity reaches the ridge, checked against its neighbours.
  for (const auto& g : rooflab::graded_gpus()) {
    for (DType t : {DType::fp16, DType::fp32, DType::int8}) {
      const auto peak = rooflab::peak_flops(g, t);
      if (!peak) continue;
      const double e = t == DType::fp32 ? 4.0 : t == DType::int8 ? 1.0 : 2.0;
      const double ridge = *peak / bandwidth(g);
      const int got = lab02::batch_at_ridge(4096, 4096, e, g, t);
      // The ridge batch is unique: the grader compares it with the reference solution's.
      rooflab::grading::record_answer("batch_at_ridge", got);
      const auto intensity = [&](int b) { return 2.0 * b * 4096 * 4096 / ((4096.0 * 4096 + 2.0 * b * 4096) * e); };
      if (intensity(1000000) < ridge) {
        ROOFLAB_EXPECT(same(got, 0)) << g.name << ": no batch reaches the ridge";
        continue;
      }
      // Checked by its property, and the message says which property failed without the ridge itself.
      if (got < 1 || intensity(got) < ridge) {
        ADD_FAILURE() << "batch " << got << " does not reach the ridge point of " << g.name << " for type "
                      << static_cast<int>(t) << " (4096 x 4096 weights)";
      } else if (got > 1 && intensity(got - 1) >= ridge) {
        ADD_FAILURE() << "batch " << got - 1 << " already reaches the ridge point of " << g.name << " for type "
                      << static_cast<int>(t) << ": the first batch that does is asked";
      }
    }
  }
}

// The lab's roofline picture from the datasheet alone (no GPU needed): every data type's roof for the
// A100 80GB and the H100 SXM, ridge points marked. With a GPU the perf tests add the measured roofs.
ROOFLAB_TEST(Lab02Plots, DatasheetRoofline) {
  for (const char* id : {"a100-80gb-sxm4", "h100-sxm"}) {
    const auto& g = rooflab::gpu(id);
    auto p = rooflab::roofline_plot("Roofline of the " + g.name + " (datasheet, dense)", 0.1, 4000,
                                    "datasheet roofs only: no GPU was measured for this plot");
    const std::pair<DType, const char*> types[] = {{DType::fp32, "FP32 CUDA cores"}, {DType::tf32, "TF32 tensor"},
                                                   {DType::fp16, "FP16 tensor"}, {DType::fp8, "FP8 tensor"}};
    for (const auto& [t, label] : types) {
      const auto peak = rooflab::peak_flops(g, t);
      if (!peak) continue;
      p.roofs.push_back({g.bandwidth_gbps * 1e9 / 1e12, *peak / 1e12, label, false});
    }
    rooflab::grading::save_plot(p, std::string("lab02-roofline-") + id);
  }
}
