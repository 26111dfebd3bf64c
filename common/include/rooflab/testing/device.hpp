// Is there a device to run on? Works for both backends (the CPU backend always has its pretend GPU).
#pragma once

#include <rooflab/cuda.hpp>

#include <string>

namespace rooflab {

// True when a CUDA device can run kernels; otherwise `why` says what is missing (no driver, no GPU).
inline bool device_available(std::string* why = nullptr) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error so later checks do not trip on it
    if (why != nullptr) *why = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return false;
  }
  if (count == 0) {
    if (why != nullptr) *why = "no CUDA device found";
    return false;
  }
  return true;
}

}  // namespace rooflab
