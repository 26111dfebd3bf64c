// Error checking for CUDA runtime calls and kernel launches.
//
//   ROOFLAB_CUDA_CHECK(cudaMalloc(&p, n));   throws rooflab::CudaError naming the expression, the error's
//                                            name and message, file and line
//   ROOFLAB_CUDA_WARN(cudaFree(p));          the no-throw twin for destructors: prints, never throws
//   ROOFLAB_LAUNCH_CHECK();                  after every launch: picks up launch errors (bad configuration,
//                                            too much shared memory); with ROOFLAB_SYNC_LAUNCH_CHECK it also
//                                            synchronizes so a faulting kernel is reported at its launch
//
// Checks are never compiled out, and nothing here calls exit(): a failing test must let the others run.
#pragma once

#include <rooflab/cuda.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace rooflab {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

inline std::string describe_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " + cudaGetErrorName(err) +
         " (" + cudaGetErrorString(err) + ")";
}

inline void check_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) {
    throw CudaError(err, describe_cuda_error(err, expr, file, line));
  }
}

inline bool warn_cuda(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  if (err == cudaSuccess) return true;
  std::fprintf(stderr, "rooflab: warning: %s\n", describe_cuda_error(err, expr, file, line).c_str());
  return false;
}

inline void check_launch(const char* what, const char* file, int line) {
  // cudaGetLastError both reads and clears the sticky launch error.
  check_cuda(cudaGetLastError(), what, file, line);
#if defined(ROOFLAB_SYNC_LAUNCH_CHECK)
  check_cuda(cudaDeviceSynchronize(), what, file, line);
#endif
}

}  // namespace rooflab

#define ROOFLAB_CUDA_CHECK(expr) ::rooflab::check_cuda((expr), #expr, __FILE__, __LINE__)
#define ROOFLAB_CUDA_WARN(expr) ::rooflab::warn_cuda((expr), #expr, __FILE__, __LINE__)
#define ROOFLAB_LAUNCH_CHECK() ::rooflab::check_launch("kernel launch", __FILE__, __LINE__)
