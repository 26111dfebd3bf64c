// Lab 08: weight-only quantization - the analytic questions. Handout: README.md, "Data types", "Block
// formats and their bytes", "Group-wise quantization and its error" and "Why decode speeds up".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab08 {

double bits_per_weight(const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q1)
  // TODO(lab08.q1): (1 line)
  ROOFLAB_TODO("lab08.q1", f);
  // STUDENT END
}

double model_bytes(const rooflab::ModelSpec& m, const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q2)
  // TODO(lab08.q2): (1 line)
  ROOFLAB_TODO("lab08.q2", m, f);
  // STUDENT END
}

double decode_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q3)
  // TODO(lab08.q3): bytes over bytes per second. (1 line)
  ROOFLAB_TODO("lab08.q3", m, gpu, f);
  // STUDENT END
}

double decode_speedup_vs_fp16(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, const BlockFormat& f) {
  // STUDENT BEGIN (lab08.q4)
  // TODO(lab08.q4): against kFp16 on the same GPU. (1 line)
  ROOFLAB_TODO("lab08.q4", m, gpu, f);
  // STUDENT END
}

double group_max_error(std::span<const float> group, int qmax) {
  // STUDENT BEGIN (lab08.q5)
  // TODO(lab08.q5): the exact worst error, not the bound: scale = absmax / qmax in double, std::round. (8 lines)
  ROOFLAB_TODO("lab08.q5", group, qmax);
  // STUDENT END
}

double fp8_max(const Fp8Format& f) {
  // STUDENT BEGIN (lab08.q6)
  // TODO(lab08.q6): from the bit fields: bias, the largest exponent field a finite number may use, its largest mantissa. (4 lines)
  ROOFLAB_TODO("lab08.q6", f);
  // STUDENT END
}

double fp8_spacing(const Fp8Format& f, double x) {
  // STUDENT BEGIN (lab08.q7)
  // TODO(lab08.q7): the exponent of x, but never below the smallest normal's. (3 lines)
  ROOFLAB_TODO("lab08.q7", f, x);
  // STUDENT END
}

double int8_ridge(const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab08.q8)
  // TODO(lab08.q8): rooflab::peak_flops(gpu, rooflab::DType::int8) may be empty. (2 lines)
  ROOFLAB_TODO("lab08.q8", gpu);
  // STUDENT END
}

}  // namespace lab08
