// SELFTEST (known-bad submission): ridge points from sparse tensor figures; see expect.json.
// Lab 02: the ridge point - the analytic questions. Handout: README.md, section "Peaks and ridges".
// The tests call these with random inputs and every GPU in data/gpus.json: compute, don't look up.
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab02 {

int fp32_lanes_per_sm(int cc_major, int cc_minor) {
  // STUDENT BEGIN (lab02.q1)
  // Volta (7.0), Turing (7.5) and the A100 (8.0) have 64 FP32 lanes per SM; GA10x (8.6), Ada (8.9),
  // Hopper (9.0) and Blackwell (10.0) have 128.
  if (cc_major < 8 || (cc_major == 8 && cc_minor == 0)) return 64;
  return 128;
  // STUDENT END
}

double fp32_peak_flops(int sms, int lanes_per_sm, double clock_mhz) {
  // STUDENT BEGIN (lab02.q2)
  return 2.0 * sms * lanes_per_sm * clock_mhz * 1e6;  // an FMA is a multiply and an add
  // STUDENT END
}

std::optional<double> ridge_point(const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q3)
  const std::optional<double> peak = rooflab::peak_flops(gpu, type);  // dense: never the sparsity figure
  if (!peak) return std::nullopt;
  // (bug: tensor types take the sparsity figure, twice the dense peak)
  const bool tensor = type != rooflab::DType::fp32 && type != rooflab::DType::fp64;
  return (tensor ? 2.0 : 1.0) * *peak / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

double attainable_flops(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q4)
  return std::min(rooflab::peak_flops(gpu, type).value(), intensity * gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

bool memory_bound(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q5)
  return intensity < ridge_point(gpu, type).value();
  // STUDENT END
}

double fraction_of_peak(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab02.q6)
  return attainable_flops(intensity, gpu, type) / rooflab::peak_flops(gpu, type).value();
  // STUDENT END
}

double decode_step_s(double params, double bytes_per_param, int batch, const rooflab::GpuSpec& gpu,
                     rooflab::DType type) {
  // STUDENT BEGIN (lab02.q7)
  // The weights stream once per step whatever the batch; the FLOPs grow with it. Whichever takes longer
  // sets the floor: memory at small batches, compute past the ridge.
  const double bytes = params * bytes_per_param;
  const double flops = 2.0 * params * batch;
  return std::max(bytes / (gpu.bandwidth_gbps * 1e9), flops / rooflab::peak_flops(gpu, type).value());
  // STUDENT END
}

double decode_tokens_per_s(double params, double bytes_per_param, int batch, const rooflab::GpuSpec& gpu,
                           rooflab::DType type) {
  // STUDENT BEGIN (lab02.q8)
  return batch / decode_step_s(params, bytes_per_param, batch, gpu, type);
  // STUDENT END
}

double linear_intensity(int batch, int in_features, int out_features, double bytes_per_element) {
  // STUDENT BEGIN (lab02.q9)
  const double b = batch, k = in_features, n = out_features;
  return 2.0 * b * k * n / ((k * n + b * k + b * n) * bytes_per_element);
  // STUDENT END
}

int batch_at_ridge(int in_features, int out_features, double bytes_per_element, const rooflab::GpuSpec& gpu,
                   rooflab::DType type) {
  // STUDENT BEGIN (lab02.q10)
  // Intensity grows with the batch (towards 2 k n / ((k + n) bytes) as the batch outgrows the weights), so
  // the first batch at or past the ridge is found by doubling, then bisecting.
  const double ridge = ridge_point(gpu, type).value();
  const auto reaches = [&](int b) { return linear_intensity(b, in_features, out_features, bytes_per_element) >= ridge; };
  int hi = 1;
  while (!reaches(hi)) {
    if (hi >= 1000000) return 0;
    hi = std::min(hi * 2, 1000000);
  }
  int lo = hi / 2;  // does not reach (or 0)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (reaches(mid) ? hi : lo) = mid;
  }
  return hi;
  // STUDENT END
}

}  // namespace lab02
