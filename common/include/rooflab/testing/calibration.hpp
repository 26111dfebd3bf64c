// The ceilings of *this* GPU, measured once and cached: what the perf graders judge against, so one rule
// grades a T4 and an H100 fairly.
//
//   copy bandwidth   best of our vectorized copy kernel and a device-to-device cudaMemcpy, on arrays 4x the
//                    L2 (or at least 256 MB), bytes counted as read + write
//   FP32 FMA peak    our kernel: many independent FMA chains per thread, result stored so nothing is removed
//   SGEMM peak       cuBLAS, 8192^3 FP32
//   FP16/BF16 peak   cuBLAS GemmEx on tensor cores, FP32 accumulate, 8192^3
//
// Perf tests do not read these directly: rooflab::grading::award() resolves the ceiling a lab's threshold
// names (rooflab/testing/ceiling.hpp) and records it in results.json.
//
// The cache key is the GPU's UUID, the driver version and the maximum SM clock (a changed clock setting
// means new ceilings). The cache lives in ROOFLAB_CACHE_DIR if set, else $XDG_CACHE_HOME/rooflab, else
// ~/.cache/rooflab, else <temp>/rooflab.
#pragma once

#include <rooflab/testing/ceiling.hpp>
#include <rooflab/testing/device_info.hpp>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace rooflab {

struct Ceilings {
  std::string device_name;
  std::string uuid;
  int driver_version = 0;
  double max_sm_clock_mhz = 0;
  std::string measured_at;       // ISO 8601, UTC
  double copy_kernel_gbps = 0;   // our vectorized copy kernel
  double memcpy_gbps = 0;        // cudaMemcpy device to device
  double copy_gbps = 0;          // the ceiling: the better of the two
  double fp32_fma_flops = 0;
  double sm_clock_during_fma_mhz = 0;  // 0 without NVML
  double sgemm_flops = 0;
  double fp16_tensor_flops = 0;
  double bf16_tensor_flops = 0;

  // One of these ceilings in SI units (bytes/s, FLOP/s), as award() grades against it.
  double si(Ceiling c) const {
    switch (c) {
      case Ceiling::copy_bandwidth: return units::bytes_per_s_from_gb(copy_gbps);
      case Ceiling::fp32_fma_peak: return fp32_fma_flops;
      case Ceiling::sgemm_peak: return sgemm_flops;
      case Ceiling::fp16_tensor_peak: return fp16_tensor_flops;
      case Ceiling::bf16_tensor_peak: return bf16_tensor_flops;
    }
    throw std::invalid_argument("no such ceiling (" + std::to_string(static_cast<int>(c)) + ")");
  }
  // Where these were measured, for results.json.
  std::string where() const { return "rooflab calibrate, " + device_name + ", " + measured_at; }
};

std::filesystem::path cache_dir();
std::filesystem::path ceilings_cache_path(const DeviceInfo& info);

// Measures every ceiling now (takes tens of seconds).
Ceilings measure_ceilings(int device = 0);

// The ceilings cached for this GPU/driver/clock, without measuring: none when nothing is cached, or when the
// cache is malformed (then *malformed, if given, says why).
std::optional<Ceilings> cached_ceilings(const DeviceInfo& info, std::string* malformed = nullptr);
// The cached ceilings for this GPU/driver/clock, measuring and caching them on first use.
// `remeasure` ignores the cache.
const Ceilings& ceilings(int device = 0, bool remeasure = false);

std::string ceilings_to_json(const Ceilings& c);
Ceilings ceilings_from_json(const std::string& text);  // throws std::runtime_error on a malformed cache

}  // namespace rooflab
