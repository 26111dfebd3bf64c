// Lab 07: decode batching - the analytic questions. Handout: README.md, "Decode reads every weight" and
// "Batching".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab07 {

double weight_bytes(const rooflab::ModelSpec& m, double bytes_per_param) {
  // STUDENT BEGIN (lab07.q1)
  return m.params_b * 1e9 * bytes_per_param;
  // STUDENT END
}

double step_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch, std::size_t context,
                    double bytes_per_param, double kv_elem_bytes, rooflab::DType compute) {
  // STUDENT BEGIN (lab07.q2)
  // Memory: the weights once for the whole batch (that is the point of batching), plus each sequence's own
  // cache. Compute: 2 FLOPs per active parameter per token. The roofline's floor is the slower of the two.
  const double kv_per_token = 2.0 * m.layers * m.kv_heads * m.head_dim * kv_elem_bytes;
  const double bytes = weight_bytes(m, bytes_per_param) + static_cast<double>(batch * context) * kv_per_token;
  const double flops = 2.0 * m.active_params_b.value_or(m.params_b) * 1e9 * static_cast<double>(batch);
  return std::max(bytes / (gpu.bandwidth_gbps * 1e9), flops / rooflab::peak_flops(gpu, compute).value());
  // STUDENT END
}

double tokens_per_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch, std::size_t context,
                    double bytes_per_param, double kv_elem_bytes, rooflab::DType compute) {
  // STUDENT BEGIN (lab07.q3)
  return static_cast<double>(batch) / step_floor_s(m, gpu, batch, context, bytes_per_param, kv_elem_bytes, compute);
  // STUDENT END
}

double linear_intensity(std::size_t n_in, std::size_t n_out, std::size_t batch, double elem_bytes) {
  // STUDENT BEGIN (lab07.q4)
  const double i = static_cast<double>(n_in), o = static_cast<double>(n_out), b = static_cast<double>(batch);
  return 2 * b * i * o / ((i * o + b * i + b * o) * elem_bytes);
  // STUDENT END
}

std::size_t crossover_batch(std::size_t n_in, std::size_t n_out, const rooflab::GpuSpec& gpu, rooflab::DType type,
                            double elem_bytes) {
  // STUDENT BEGIN (lab07.q5)
  // The intensity grows with the batch (about 2B / elem_bytes while B is small beside the layer's sides),
  // so the first batch that reaches the ridge is found by walking up.
  const double ridge = rooflab::peak_flops(gpu, type).value() / (gpu.bandwidth_gbps * 1e9);
  for (std::size_t b = 1; b <= 1000000; ++b) {
    if (linear_intensity(n_in, n_out, b, elem_bytes) >= ridge) return b;
  }
  return 0;
  // STUDENT END
}

std::size_t batch_for_fraction(std::size_t n_in, std::size_t n_out, const rooflab::GpuSpec& gpu, rooflab::DType type,
                               double elem_bytes, double fraction) {
  // STUDENT BEGIN (lab07.q6)
  // min(P, I x BW) >= f x P means I >= f x ridge (for f <= 1).
  const double peak = rooflab::peak_flops(gpu, type).value(), bw = gpu.bandwidth_gbps * 1e9;
  for (std::size_t b = 1; b <= 1000000; ++b) {
    if (std::min(peak, linear_intensity(n_in, n_out, b, elem_bytes) * bw) >= fraction * peak) return b;
  }
  return 0;
  // STUDENT END
}

double moe_batch1_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, double bytes_per_param) {
  // STUDENT BEGIN (lab07.q7)
  return m.active_params_b.value_or(m.params_b) * 1e9 * bytes_per_param / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

}  // namespace lab07
