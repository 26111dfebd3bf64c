// cuBLAS error checking and an RAII handle (GPU builds only).
#pragma once

#include <cublas_v2.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace rooflab {

inline void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                             cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
  }
}

inline bool warn_cublas(cublasStatus_t status, const char* expr, const char* file, int line) noexcept {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "rooflab: warning: %s:%d: %s failed: %s\n", file, line, expr, cublasGetStatusName(status));
  return false;
}

class CublasHandle {
 public:
  CublasHandle() { check_cublas(cublasCreate(&handle_), "cublasCreate", __FILE__, __LINE__); }
  ~CublasHandle() {
    if (handle_ != nullptr) warn_cublas(cublasDestroy(handle_), "cublasDestroy", __FILE__, __LINE__);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const noexcept { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace rooflab

#define ROOFLAB_CUBLAS_CHECK(expr) ::rooflab::check_cublas((expr), #expr, __FILE__, __LINE__)
#define ROOFLAB_CUBLAS_WARN(expr) ::rooflab::warn_cublas((expr), #expr, __FILE__, __LINE__)
