// FP16 on the host: the conversions every FP16 lab's tests make, rounding to nearest-even as the device's
// __float2half does, so that a reference computed from `to_float(to_half(x))` sees exactly what a kernel sees.
#pragma once

#include <cuda_fp16.h>

#include <vector>

namespace rooflab {

inline float as_float(float v) { return v; }
inline float as_float(__half v) { return __half2float(v); }

inline std::vector<__half> to_half(const std::vector<float>& v) {
  std::vector<__half> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __float2half(v[i]);
  return out;
}

inline std::vector<float> to_float(const std::vector<__half>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __half2float(v[i]);
  return out;
}

}  // namespace rooflab
