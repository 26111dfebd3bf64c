// Is there a device to run on? Works for both backends (the CPU backend always has its pretend GPU).
#pragma once

#include <rooflab/check.hpp>
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

// Waits for the work of the stream a launcher was given, and only that stream (nullptr: the legacy default stream,
// whose next operation, the copy that reads the output back, also waits for the blocking streams' earlier work).
// The correctness tests call it after a launcher, not cudaDeviceSynchronize(): a launcher that leaves its work on a
// non-blocking stream of its own, unordered with the one it was given, is read back unfinished, as a GPU would read
// it; the CPU backend reports that copy and gives it the poison (common/emu/src/ordering.cpp). A device-wide wait
// would cover it, and the launcher would keep its correctness points.
inline void synchronize_given(cudaStream_t stream) { ROOFLAB_CUDA_CHECK(cudaStreamSynchronize(stream)); }

}  // namespace rooflab
