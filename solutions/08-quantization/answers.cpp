// Lab 08: weight-only quantization - the analytic questions. Handout: README.md, "Data types", "Block
// formats and their bytes", "Group-wise quantization and its error" and "Why decode speeds up".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab08 {

double bits_per_weight(const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q1)
  // Every weight's own bits, plus its share of the group's scale and zero point.
  return f.weight_bits + static_cast<double>(f.scale_bits + f.zero_bits) / f.group;
  // STUDENT END
}

double model_bytes(const rooflab::ModelSpec& m, const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q2)
  return m.params_b * 1e9 * bits_per_weight(f) / 8;
  // STUDENT END
}

double decode_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q3)
  // At batch 1 a step reads every weight once for 2 FLOPs: memory-bound on every GPU, so bytes decide.
  return model_bytes(m, f) / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

double decode_speedup_vs_fp16(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q4)
  return decode_floor_s(m, gpu, kFp16) / decode_floor_s(m, gpu, f);
  // STUDENT END
}

double group_max_error(std::span<const float> group, int qmax) {
  // STUDENT BEGIN (lab08.q5)
  // The bound is scale / 2; the actual worst weight is whichever lands farthest from a multiple of the scale.
  double absmax = 0;
  for (const float v : group) absmax = std::max(absmax, std::fabs(static_cast<double>(v)));
  if (absmax == 0) return 0;
  const double scale = absmax / qmax;
  double worst = 0;
  for (const float v : group) worst = std::max(worst, std::fabs(v - scale * std::round(v / scale)));
  return worst;
  // STUDENT END
}

double fp8_max(const Fp8Format& f) {
  // STUDENT BEGIN (lab08.q6)
  // IEEE-style: the largest exponent field is all-ones minus one, with a full mantissa. E4M3 keeps the
  // all-ones exponent for numbers and gives up only its all-ones mantissa (NaN), so its largest value has
  // exponent field all-ones and mantissa all-ones but one.
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int top_field = (1 << f.exponent_bits) - (f.ieee_specials ? 2 : 1);
  const int top_mantissa = (1 << f.mantissa_bits) - (f.ieee_specials ? 1 : 2);
  return std::ldexp(1.0 + static_cast<double>(top_mantissa) / (1 << f.mantissa_bits), top_field - bias);
  // STUDENT END
}

double fp8_spacing(const Fp8Format& f, double x) {
  // STUDENT BEGIN (lab08.q7)
  // Within a binade [2^e, 2^(e+1)) the 2^m mantissa steps are equal; below the smallest normal the spacing
  // stays that of the smallest binade (subnormals).
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int e = std::max(static_cast<int>(std::floor(std::log2(x))), 1 - bias);
  return std::ldexp(1.0, e - f.mantissa_bits);
  // STUDENT END
}

double int8_ridge(const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab08.q8)
  const auto peak = rooflab::peak_flops(gpu, rooflab::DType::int8);
  return peak ? *peak / (gpu.bandwidth_gbps * 1e9) : 0.0;
  // STUDENT END
}

}  // namespace lab08
