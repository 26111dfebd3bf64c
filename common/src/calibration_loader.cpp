// The calibration kernels from a fatbinary instead of their source: what a student copy of the course
// (./rooflab release) runs on a GPU. The copy leaves calibration_kernels.cu out (its kernels are close to Lab
// 01's and Lab 02's answers) and ships them compiled, SASS per architecture plus the newest PTX
// (common/calibration_fatbin.cmake). The fatbinary is embedded in this object when it is compiled, so no file
// has to be found or opened at run time (the doctor's probe runs in the grading sandbox), and is loaded once,
// on first use: with the runtime's library API where the toolkit has it (CUDA 12.5 and later), else with the
// driver's module API (CUDA 12.0-12.4, whose runtime headers lack cudaLibraryLoadData; the build then links
// libcuda). The full course builds this file too, for a test of exactly what a copy runs
// (common/tests/test_calibration_fatbin.cpp).
//
// CMake defines:
//   ROOFLAB_CALIB_FATBIN   the fatbinary's path, read by the assembler (.incbin)
//   ROOFLAB_CALIB_TOOLKIT  the CUDA toolkit version that made it ("13.0"), for the load error
//   ROOFLAB_CALIB_ARCHS    its SASS architectures ("75;80;..."), likewise
#include "calibration_kernels.hpp"

#include <rooflab/check.hpp>
#include <rooflab/launch.hpp>

#include <string>
#include <utility>

#if CUDART_VERSION < 12050
#include <cuda.h>
#define ROOFLAB_CALIB_DRIVER_API 1
#endif

#if !defined(ROOFLAB_CALIB_FATBIN) || !defined(ROOFLAB_CALIB_TOOLKIT) || !defined(ROOFLAB_CALIB_ARCHS)
#error "calibration_loader.cpp needs ROOFLAB_CALIB_FATBIN, ROOFLAB_CALIB_TOOLKIT and ROOFLAB_CALIB_ARCHS"
#endif

// The fatbinary's bytes, in read-only data. The runtime wants the image 8-byte aligned; 64 costs nothing.
asm(".pushsection .rodata\n"
    ".balign 64\n"
    ".globl rooflab_calib_fatbin\n"
    ".hidden rooflab_calib_fatbin\n"
    "rooflab_calib_fatbin:\n"
    ".incbin \"" ROOFLAB_CALIB_FATBIN "\"\n"
    ".popsection\n");
extern "C" const unsigned char rooflab_calib_fatbin[];

namespace rooflab::calib {

namespace {

#if defined(ROOFLAB_CALIB_DRIVER_API)
using KernelHandle = CUfunction;
#else
using KernelHandle = cudaKernel_t;
#endif

struct Kernels {
  KernelHandle copy = nullptr;
  KernelHandle fma = nullptr;
};

// What this machine can say about itself for the load error: the driver's CUDA version and the GPU's
// architecture, each only when it can be queried.
std::string machine_facts() {
  int driver = 0;
  std::string out = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0
                        ? "Its driver supports CUDA up to " + std::to_string(driver / 1000) + "." +
                              std::to_string(driver % 1000 / 10) + "."
                        : std::string("No CUDA driver answered.");
  int device = 0;
  int major = 0;
  int minor = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
    out += " This GPU is sm_" + std::to_string(major * 10 + minor) + ".";
  }
  cudaGetLastError();  // the queries' own failures are not the caller's error
  return out;
}

// Why the kernels would not load, and what to do: the usual cause is a driver older than the toolkit that
// made the copy (it cannot read that toolkit's code), the other a GPU with neither SASS nor usable PTX here.
std::string load_failure(const std::string& error) {
  return "rooflab: the calibration kernels (common/prebuilt/calibration_kernels.fatbin, made with CUDA toolkit "
         ROOFLAB_CALIB_TOOLKIT " for sm " ROOFLAB_CALIB_ARCHS " and PTX of the newest) could not be loaded: " +
         error + ". " + machine_facts() +
         " A driver older than the toolkit " ROOFLAB_CALIB_TOOLKIT
         " cannot load its code: update the GPU driver, or ask your instructor for a copy of the course made "
         "with an older CUDA toolkit (docs/instructor-guide.md, \"release\").";
}

#if defined(ROOFLAB_CALIB_DRIVER_API)
// CUDA 12.0-12.4: the module API of the driver, in the runtime's primary context (which cudaFree(nullptr)
// makes current), the context every runtime call of the harness uses.
std::string describe(CUresult err) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(err, &name);
  cuGetErrorString(err, &text);
  return std::string(name ? name : "CUDA driver error " + std::to_string(static_cast<int>(err))) + " (" +
         (text ? text : "no description") + ")";
}

// The runtime's error for a driver's failure to load or find code, for CudaError's code.
constexpr cudaError_t kLoadFailed = cudaErrorInvalidKernelImage;

Kernels load() {
  ROOFLAB_CUDA_CHECK(cudaFree(nullptr));
  CUmodule module = nullptr;
  if (const CUresult err = cuModuleLoadData(&module, rooflab_calib_fatbin); err != CUDA_SUCCESS) {
    throw CudaError(kLoadFailed, load_failure(describe(err)));
  }
  Kernels k;
  for (auto [handle, name] : {std::pair{&k.copy, kCopyKernelName}, std::pair{&k.fma, kFmaKernelName}}) {
    if (const CUresult err = cuModuleGetFunction(handle, module, name); err != CUDA_SUCCESS) {
      throw CudaError(kLoadFailed, load_failure(describe(err)));
    }
    // As in the runtime branch: under lazy loading the code reaches the GPU at its first use, so use it now.
    int registers = 0;
    if (const CUresult err = cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, *handle);
        err != CUDA_SUCCESS) {
      throw CudaError(kLoadFailed, load_failure(describe(err)));
    }
  }
  return k;
}

void launch_handle(KernelHandle kernel, unsigned blocks, unsigned threads, void** args, cudaStream_t stream) {
  if (const CUresult err = cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, stream, args, nullptr);
      err != CUDA_SUCCESS) {
    throw CudaError(cudaErrorLaunchFailure, "rooflab: a calibration kernel's launch failed: " + describe(err));
  }
  ROOFLAB_LAUNCH_CHECK();
}
#else
std::string describe(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

Kernels load() {
  cudaLibrary_t library = nullptr;
  // Kept loaded for the life of the process: every calibration and probe launch uses it.
  const cudaError_t err =
      cudaLibraryLoadData(&library, rooflab_calib_fatbin, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky, but leave no error for the next check to misreport
    throw CudaError(err, load_failure(describe(err)));
  }
  Kernels k;
  ROOFLAB_CUDA_CHECK(cudaLibraryGetKernel(&k.copy, library, kCopyKernelName));
  ROOFLAB_CUDA_CHECK(cudaLibraryGetKernel(&k.fma, library, kFmaKernelName));
  // Under lazy loading (the default since CUDA 12.2) the code reaches the GPU at its first use: ask for each
  // kernel's attributes now, so that a driver or GPU that cannot run it is reported here, saying what to do,
  // and not as a bare launch error.
  for (cudaKernel_t kernel : {k.copy, k.fma}) {
    cudaFuncAttributes attributes{};
    const cudaError_t used = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
    if (used != cudaSuccess) {
      cudaGetLastError();
      throw CudaError(used, load_failure(describe(used)));
    }
  }
  return k;
}

// A launch through the kernel handle: the runtime takes a cudaKernel_t where it takes a kernel's address.
void launch_handle(KernelHandle kernel, unsigned blocks, unsigned threads, void** args, cudaStream_t stream) {
  ROOFLAB_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(threads), args, 0,
                                      stream));
  ROOFLAB_LAUNCH_CHECK();
}
#endif

// Loaded on first use (a failed load throws, and is tried again at the next use).
const Kernels& kernels() {
  static const Kernels k = load();
  return k;
}

}  // namespace

void copy_vec4(const float4* in, float4* out, std::size_t n4, int sms, cudaStream_t stream) {
  const unsigned blocks = grid_for(n4, kCopyBlock, kCopyBlocksPerSm * static_cast<unsigned>(sms));
  // The kernel's parameters, in order: (const float4* in, float4* out, std::size_t n4).
  void* args[] = {&in, &out, &n4};
  launch_handle(kernels().copy, blocks, kCopyBlock, args, stream);
}

double fma_peak(float a, float b, int iterations, float* out, unsigned blocks, unsigned threads,
                cudaStream_t stream) {
  // (float a, float b, int iterations, float* out)
  void* args[] = {&a, &b, &iterations, &out};
  launch_handle(kernels().fma, blocks, threads, args, stream);
  return fma_flops(iterations, blocks, threads);
}

}  // namespace rooflab::calib
