// The backend's cuBLAS is linked, never looked up (CMakeLists.txt: hidden visibility). This binary, like every
// lab binary on the backend, exports its symbols (ENABLE_EXPORTS, for dladdr): cuBLAS must not be among them,
// or code a lab forbids cuBLAS to could reach it with dlsym/dlvsym, with no cuBLAS name in its object.
#include <cublas_v2.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

namespace {

TEST(CublasHidden, CalledByNameButNotFoundByName) {
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);  // linked: the library is in this binary
  EXPECT_EQ(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS);
  for (const char* name : {"cublasCreate_v2", "cublasSgemm_v2", "cublasHgemm", "cublasGemmEx",
                           "cublasGemmStridedBatchedEx", "cublasSgemmStridedBatched", "cublasSetStream_v2"}) {
    EXPECT_EQ(dlsym(RTLD_DEFAULT, name), nullptr) << name << " is exported by the test binary";
    EXPECT_EQ(dlvsym(RTLD_DEFAULT, name, "libcublas.so.13"), nullptr) << name;
  }
  // The exports the backend relies on are still there (the runtime API is found by name, for one).
  EXPECT_NE(dlsym(RTLD_DEFAULT, "cudaMalloc"), nullptr);
}

}  // namespace
