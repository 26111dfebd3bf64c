// Lab 08 graders: bits per weight of every format from its layout, model bytes and decode floors for every
// model in data/models.json on every GPU in data/gpus.json, each GPU's INT8 ridge, the error of a quantized
// group and FP8's range and spacing.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using rooflab::grading::near;
using rooflab::grading::same;

constexpr rooflab::Tolerance kRel{0.0, 1e-9};

// Computed here from the layouts, independently of answers.cpp: the bytes of one group (its weights packed
// into bytes, its scale and zero point) over its weights.
double bits_from_layout(const lab08::BlockFormat& f) {
  const double group_bytes = f.group * f.weight_bits / 8.0 + (f.scale_bits + f.zero_bits) / 8.0;
  return group_bytes * 8 / f.group;
}

// FP8 values enumerated bit pattern by bit pattern (the positive half), for Q6 and Q7.
std::vector<double> fp8_values(const lab08::Fp8Format& f) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1, mbits = f.mantissa_bits;
  std::vector<double> out;
  for (int field = 0; field < (1 << f.exponent_bits); ++field) {
    for (int m = 0; m < (1 << mbits); ++m) {
      const bool top = field == (1 << f.exponent_bits) - 1;
      if (top && (f.ieee_specials || m == (1 << mbits) - 1)) continue;  // infinities and NaNs
      out.push_back(field == 0 ? std::ldexp(m, 1 - bias - mbits) : std::ldexp((1 << mbits) + m, field - bias - mbits));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

ROOFLAB_TEST(Lab08Analytic, FormatsBytesAndDecodeFloors) {
  for (const auto& f : lab08::kFormats) {
    ROOFLAB_EXPECT(near(lab08::bits_per_weight(f), bits_from_layout(f), kRel)) << f.name << ": bits per weight";
  }
  // Layouts no table lists, drawn from the run's seed: the answer must come from the fields, not the name.
  rooflab::Rng rng(rooflab::test_seed() + 8);
  for (int i = 0; i < 8; ++i) {
    const lab08::BlockFormat f{"a random layout", 16 << rng.below(5), 2 + static_cast<int>(rng.below(7)),
                               8 << rng.below(3), 8 * static_cast<int>(rng.below(3))};
    ROOFLAB_EXPECT(near(lab08::bits_per_weight(f), bits_from_layout(f), kRel))
        << fmt::format("group {}, {}-bit weights, {}-bit scale, {}-bit zero point: bits per weight", f.group,
                       f.weight_bits, f.scale_bits, f.zero_bits);
  }
  // The lab's own layouts (lab.hpp) hold exactly these bits: llama.cpp's Q8_0 block is 34 bytes per 32
  // weights and Q4_0's 18, the group-128 int4 layout 66 bytes per 128.
  for (const auto& [f, bytes] :
       {std::pair{lab08::kQ8_0, lab08::int8_bytes(1, 32)}, std::pair{lab08::kQ4_0, lab08::int4_bytes(1, 32, 32)},
        std::pair{lab08::kInt4G128, lab08::int4_bytes(1, 128, 128)}}) {
    ROOFLAB_EXPECT(near(lab08::bits_per_weight(f) * f.group / 8, bytes, kRel)) << f.name << ": bytes of one group";
  }
  // The published layouts and two drawn from the seed: a speedup typed in per format name answers nothing.
  std::vector<lab08::BlockFormat> formats(std::begin(lab08::kFormats), std::end(lab08::kFormats));
  for (int i = 0; i < 2; ++i) {
    formats.push_back({"a random layout", 16 << rng.below(5), 2 + static_cast<int>(rng.below(7)), 8 << rng.below(3),
                       8 * static_cast<int>(rng.below(3))});
  }
  for (const auto& g : rooflab::graded_gpus()) {
    for (const auto& m : rooflab::graded_models()) {
      for (const auto& f : formats) {
        const std::string at = fmt::format("{} in {} on {}", m.id, f.name, g.id);
        const double bytes = m.params_b * 1e9 * bits_from_layout(f) / 8;
        ROOFLAB_EXPECT(near(lab08::model_bytes(m, f), bytes, kRel)) << at << ": model bytes";
        ROOFLAB_EXPECT(near(lab08::decode_floor_s(m, g, f), bytes / (g.bandwidth_gbps * 1e9), kRel))
            << at << ": decode floor";
        ROOFLAB_EXPECT(near(lab08::decode_speedup_vs_fp16(m, g, f), 16 / bits_from_layout(f), kRel))
            << at << ": speedup";
      }
    }
    const auto peak = rooflab::peak_flops(g, rooflab::DType::int8);
    ROOFLAB_EXPECT(near(lab08::int8_ridge(g), peak ? *peak / (g.bandwidth_gbps * 1e9) : 0.0, kRel))
        << g.id << ": INT8 ridge";
  }
}

ROOFLAB_TEST(Lab08Analytic, QuantizationErrorAndFp8) {
  rooflab::Rng rng(rooflab::test_seed() + 8);
  for (int t = 0; t < 40; ++t) {
    const int group = t % 2 == 0 ? 32 : 128, qmax = t % 4 < 2 ? 127 : 7;
    const float spread = static_cast<float>(std::ldexp(1.0, static_cast<int>(rng.below(20)) - 10));
    std::vector<float> v = rooflab::random_floats(static_cast<std::size_t>(group),
                                                  rooflab::test_seed() + 100 + static_cast<std::uint64_t>(t));
    for (auto& x : v) x *= spread;
    double absmax = 0, worst = 0;
    for (const float x : v) absmax = std::max(absmax, std::fabs(static_cast<double>(x)));
    const double scale = absmax / qmax;
    for (const float x : v) worst = std::max(worst, std::fabs(x - scale * std::round(x / scale)));
    const double got = lab08::group_max_error(v, qmax);
    ROOFLAB_EXPECT(near(got, worst, {1e-15, 1e-9}))
        << "a group of " << group << " with qmax " << qmax << ", spread " << spread;
    EXPECT_LE(got, scale / 2 * (1 + 1e-12)) << "the error of a group never exceeds scale / 2";
  }
  const std::vector<float> zeros(32, 0.0f);
  ROOFLAB_EXPECT(same(lab08::group_max_error(zeros, 7), 0.0)) << "a group of zeros";

  // FP8's two formats, and 8-bit-or-narrower formats drawn from the seed (with and without IEEE specials):
  // 448 and 57344 typed in answer only the first two.
  std::vector<lab08::Fp8Format> fp8_formats{lab08::kE4M3, lab08::kE5M2};
  for (int i = 0; i < 4; ++i) {
    const int e = 2 + static_cast<int>(rng.below(5)), m = 1 + static_cast<int>(rng.below(7 - e));
    fp8_formats.push_back({"a random format", e, m, rng.below(2) == 0});
  }
  for (const auto& f : fp8_formats) {
    const auto values = fp8_values(f);
    ROOFLAB_EXPECT(same(lab08::fp8_max(f), values.back()))
        << f.name << fmt::format(" (E{}M{}, {}IEEE specials)", f.exponent_bits, f.mantissa_bits, f.ieee_specials ? "" : "no ")
        << ": largest finite value";
    for (int t = 0; t < 30; ++t) {
      // A magnitude anywhere from the subnormals to the largest value, on a log scale.
      const double x = std::exp(rng.uniform(std::log(values[1]), std::log(values.back())));
      const auto above = std::upper_bound(values.begin(), values.end(), x);
      if (above == values.end()) continue;
      ROOFLAB_EXPECT(near(lab08::fp8_spacing(f, x), *above - *(above - 1), kRel)) << f.name << ": spacing at " << x;
    }
  }
}

// An 8192 x 8192 GEMV's floor on an H100 SXM's datasheet bandwidth against bits per weight: a line through
// the origin (time is bytes over bandwidth), the formats as points on it.
ROOFLAB_TEST(Lab08Plots, BitsPerWeightAgainstTimeDatasheet) {
  const auto& g = rooflab::gpu("h100-sxm");
  const double weights = 8192.0 * 8192.0, bw = g.bandwidth_gbps * 1e9;
  rooflab::Plot p{.title = "Batch-1 GEMV 8192 x 8192 on the " + g.name + ": time against bits per weight",
                  .xlabel = "bits per weight (scales included)",
                  .ylabel = "time (us)",
                  .y_from_zero = true,
                  .xmin = 0,
                  .xmax = 17,
                  .note = "datasheet roofs: no GPU was measured for this plot"};
  rooflab::Series roof{"roofline: bytes / datasheet bandwidth", {}, "lines"};
  for (const double b : {0.0, 17.0}) roof.points.emplace_back(b, b / 8 * weights / bw * 1e6);
  p.series.push_back(roof);
  for (const auto& f : {lab08::kFp16, lab08::kQ8_0, lab08::kQ4_0, lab08::kInt4G128}) {
    const double bits = lab08::bits_per_weight(f);
    p.series.push_back({std::string(f.name), {{bits, bits / 8 * weights / bw * 1e6}}, "points"});
  }
  rooflab::grading::save_plot(p, "lab08-bits-per-weight-datasheet");
}
