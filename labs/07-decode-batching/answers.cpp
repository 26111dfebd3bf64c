// Lab 07: decode batching - the analytic questions. Handout: README.md, "Decode reads every weight" and
// "Batching".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab07 {

double weight_bytes(const rooflab::ModelSpec& m, double bytes_per_param) {
  // STUDENT BEGIN (lab07.q1)
  // TODO(lab07.q1): every parameter, once. (1 line)
  ROOFLAB_TODO("lab07.q1", m, bytes_per_param);
  // STUDENT END
}

double step_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch, std::size_t context,
                    double bytes_per_param, double kv_elem_bytes, rooflab::DType compute) {
  // STUDENT BEGIN (lab07.q2)
  // TODO(lab07.q2): bytes (weights once, plus each sequence's KV cache) over the bandwidth vs FLOPs (2 per
  //   active parameter per token) over the peak of `compute`; the larger. (5 lines)
  ROOFLAB_TODO("lab07.q2", m, gpu, batch, context, bytes_per_param, kv_elem_bytes, compute);
  // STUDENT END
}

double tokens_per_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch, std::size_t context,
                    double bytes_per_param, double kv_elem_bytes, rooflab::DType compute) {
  // STUDENT BEGIN (lab07.q3)
  // TODO(lab07.q3) (1 line)
  ROOFLAB_TODO("lab07.q3", m, gpu, batch, context, bytes_per_param, kv_elem_bytes, compute);
  // STUDENT END
}

double linear_intensity(std::size_t n_in, std::size_t n_out, std::size_t batch, double elem_bytes) {
  // STUDENT BEGIN (lab07.q4)
  // TODO(lab07.q4): weights, inputs and outputs all count. (2 lines)
  ROOFLAB_TODO("lab07.q4", n_in, n_out, batch, elem_bytes);
  // STUDENT END
}

std::size_t crossover_batch(std::size_t n_in, std::size_t n_out, const rooflab::GpuSpec& gpu, rooflab::DType type,
                            double elem_bytes) {
  // STUDENT BEGIN (lab07.q5)
  // TODO(lab07.q5): the ridge is peak / bandwidth (in bytes per second). (5 lines)
  ROOFLAB_TODO("lab07.q5", n_in, n_out, gpu, type, elem_bytes);
  // STUDENT END
}

std::size_t batch_for_fraction(std::size_t n_in, std::size_t n_out, const rooflab::GpuSpec& gpu, rooflab::DType type,
                               double elem_bytes, double fraction) {
  // STUDENT BEGIN (lab07.q6)
  // TODO(lab07.q6): the attainable FLOP/s is min(P, I x BW). (5 lines)
  ROOFLAB_TODO("lab07.q6", n_in, n_out, gpu, type, elem_bytes, fraction);
  // STUDENT END
}

double moe_batch1_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, double bytes_per_param) {
  // STUDENT BEGIN (lab07.q7)
  // TODO(lab07.q7): m.active_params_b is empty for dense models. (1 line)
  ROOFLAB_TODO("lab07.q7", m, gpu, bytes_per_param);
  // STUDENT END
}

}  // namespace lab07
