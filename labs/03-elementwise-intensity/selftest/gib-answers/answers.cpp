// SELFTEST (known-bad submission): predicted times with GiB/s; see expect.json.
// Lab 03: elementwise intensity - the analytic questions. Handout: README.md, "Counting elementwise work".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab03 {

Cost relu(std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q1)
  return {static_cast<double>(n), 2.0 * static_cast<double>(n * elem_bytes)};  // a compare; read x, write y
  // STUDENT END
}

Cost add(std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q2)
  return {static_cast<double>(n), 3.0 * static_cast<double>(n * elem_bytes)};  // read a and b, write y
  // STUDENT END
}

Cost bias_relu(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q3)
  const double n = static_cast<double>(rows * cols);
  return {2.0 * n, (2.0 * n + static_cast<double>(cols)) * static_cast<double>(elem_bytes)};
  // STUDENT END
}

Cost gelu(std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q4)
  return {9.0 * static_cast<double>(n), 2.0 * static_cast<double>(n * elem_bytes)};
  // STUDENT END
}

Cost layernorm(std::size_t b, std::size_t l, std::size_t d, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q5)
  const double n = static_cast<double>(b * l * d);
  return {8.0 * n, (2.0 * n + 2.0 * static_cast<double>(d)) * static_cast<double>(elem_bytes)};
  // STUDENT END
}

Cost adam_step(std::size_t params) {
  // STUDENT BEGIN (lab03.q6)
  // Reads parameter, gradient, m and v (4 x 4 bytes), writes parameter, m and v (3 x 4 bytes).
  return {12.0 * static_cast<double>(params), 28.0 * static_cast<double>(params)};
  // STUDENT END
}

double intensity(const Cost& c) {
  // STUDENT BEGIN (lab03.q7)
  return c.flops / c.bytes;
  // STUDENT END
}

double predicted_time_s(const Cost& c, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab03.q8)
  // (bug: bandwidth taken as GiB/s)
  return std::max(c.bytes / (gpu.bandwidth_gbps * 1073741824.0), c.flops / rooflab::peak_flops(gpu, type).value());
  // STUDENT END
}

Cost chain_unfused(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q9)
  // bias add: read x and bias, write t; GELU: read t, write u; residual add: read u and r, write y.
  const double n = static_cast<double>(rows * cols), e = static_cast<double>(elem_bytes);
  return {11.0 * n, (2.0 * n + static_cast<double>(cols) + 2.0 * n + 3.0 * n) * e};
  // STUDENT END
}

Cost chain_fused(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q10)
  const double n = static_cast<double>(rows * cols), e = static_cast<double>(elem_bytes);
  return {11.0 * n, (3.0 * n + static_cast<double>(cols)) * e};  // read x, r and bias; write y
  // STUDENT END
}

double fusion_speedup(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q11)
  return chain_unfused(rows, cols, elem_bytes).bytes / chain_fused(rows, cols, elem_bytes).bytes;
  // STUDENT END
}

}  // namespace lab03
