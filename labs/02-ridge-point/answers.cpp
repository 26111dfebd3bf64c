// Lab 02: the ridge point - the analytic questions. Handout: README.md, section "Peaks and ridges".
// The tests call these with random inputs and every GPU in data/gpus.json: compute, don't look up.
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab02 {

int fp32_lanes_per_sm(int cc_major, int cc_minor) {
  // STUDENT BEGIN (lab02.q1)
  // TODO(lab02.q1): the handout's table of FP32 lanes per SM by compute capability. (2 lines)
  ROOFLAB_TODO("lab02.q1", cc_major, cc_minor);
  // STUDENT END
}

double fp32_peak_flops(int sms, int lanes_per_sm, double clock_mhz) {
  // STUDENT BEGIN (lab02.q2)
  // TODO(lab02.q2): SMs x lanes x FLOPs per FMA x clock in Hz. (1 line)
  ROOFLAB_TODO("lab02.q2", sms, lanes_per_sm, clock_mhz);
  // STUDENT END
}

std::optional<double> ridge_point(const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q3)
  // TODO(lab02.q3): dense peak (rooflab::peak_flops(gpu, type), a std::optional: empty where the GPU has no
  //   such unit) over the bandwidth in bytes/s (gpu.bandwidth_gbps is decimal GB/s). (3 lines)
  ROOFLAB_TODO("lab02.q3", gpu, type);
  // STUDENT END
}

double attainable_flops(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q4)
  // TODO(lab02.q4): the roofline: the lower of the compute roof (rooflab::peak_flops) and the memory slope
  //   (intensity x bandwidth in bytes/s). (1 line)
  ROOFLAB_TODO("lab02.q4", intensity, gpu, type);
  // STUDENT END
}

bool memory_bound(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q5)
  // TODO(lab02.q5): left of the ridge point (ridge_point above)? (1 line)
  ROOFLAB_TODO("lab02.q5", intensity, gpu, type);
  // STUDENT END
}

double fraction_of_peak(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q6)
  // TODO(lab02.q6): attainable over peak (attainable_flops above, rooflab::peak_flops). (1 line)
  ROOFLAB_TODO("lab02.q6", intensity, gpu, type);
  // STUDENT END
}

double decode_step_s(double params, double bytes_per_param, int batch, const rooflab::GpuSpec& gpu,
                     rooflab::DType type) {
  // STUDENT BEGIN (lab02.q7)
  // TODO(lab02.q7): the time to stream the weights once (params x bytes_per_param at gpu.bandwidth_gbps) vs the
  //   time to do the FLOPs (how many per parameter, for each sequence of the batch? at rooflab::peak_flops):
  //   which one bounds? Handout: "Decoding, batches and the ridge". (4 lines)
  ROOFLAB_TODO("lab02.q7", params, bytes_per_param, batch, gpu, type);
  // STUDENT END
}

double decode_tokens_per_s(double params, double bytes_per_param, int batch, const rooflab::GpuSpec& gpu,
                           rooflab::DType type) {
  // STUDENT BEGIN (lab02.q8)
  // TODO(lab02.q8): a step produces one token per sequence of the batch. (1 line)
  ROOFLAB_TODO("lab02.q8", params, bytes_per_param, batch, gpu, type);
  // STUDENT END
}

double linear_intensity(int batch, int in_features, int out_features, double bytes_per_element) {
  // STUDENT BEGIN (lab02.q9)
  // TODO(lab02.q9): 2 x batch x in x out FLOPs; bytes of W (in x out), x (batch x in), y (batch x out). (2 lines)
  ROOFLAB_TODO("lab02.q9", batch, in_features, out_features, bytes_per_element);
  // STUDENT END
}

int batch_at_ridge(int in_features, int out_features, double bytes_per_element, const rooflab::GpuSpec& gpu,
                   rooflab::DType type) {
  // STUDENT BEGIN (lab02.q10)
  // TODO(lab02.q10): the first batch whose linear_intensity reaches the ridge point (it grows with the
  //   batch): a loop over batch = 1, 2, ... (or a doubling search then a binary one) calling linear_intensity
  //   and ridge_point above. About 12 lines.
  ROOFLAB_TODO("lab02.q10", in_features, out_features, bytes_per_element, gpu, type);
  // STUDENT END
}

}  // namespace lab02
