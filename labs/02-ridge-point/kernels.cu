// Lab 02: the ridge point - kernels that find this GPU's compute roofs.
//
//   fma_fp32_kernel    FP32 FMAs in kChains independent chains per thread: the FP32 CUDA-core roof
//   fma_half2_kernel   the same with __half2: two FP16 FMAs per instruction (the FP16 CUDA-core roof)
//   tensor_gemm        cuBLAS cublasGemmEx on the tensor cores: the FP16/BF16 tensor roofs
//
// The FMA kernels read nothing from memory and store one value per thread: their intensity is enormous,
// so they sit far right of every ridge point and measure the compute roof alone. Handout: README.md,
// sections "Latency and independent chains", "Keeping the work alive" and "cuBLAS".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>

#include <rooflab/cublas.hpp>

namespace lab02 {

// ---- PROVIDED: do not modify ----

using rooflab::global_thread;  // this thread's index in the grid (rooflab/grid.hpp)

// ---- FP32 FMA throughput ----

__global__ void fma_fp32_kernel(float a, float b, int iterations, float* __restrict__ out) {
  // STUDENT BEGIN (lab02.fma)
  // TODO(lab02.fma.1): no grid-stride loop: one thread, one output, t = global_thread(). kChains independent
  //   chains in registers (a float array of kChains, every loop over it unrolled with #pragma unroll). Chain
  //   c of thread t starts at (t % 1024) + c.
  // TODO(lab02.fma.2): a loop of `iterations` steps around an unrolled loop over the chains c: x[c] =
  //   fmaf(x[c], a, b).
  // TODO(lab02.fma.3): store the chains' sum (in order c = 0, 1, ...) to out[t]. Without the store the compiler
  //   deletes the whole loop. About 12 lines. Handout: "Latency and independent chains".
  rooflab::unused(a, b, iterations, out);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- FP16 (half2) FMA throughput ----

__global__ void fma_half2_kernel(__half2 a, __half2 b, int iterations, __half2* __restrict__ out) {
  // STUDENT BEGIN (lab02.fma_half2)
  // TODO(lab02.fma_half2): the same loops with __half2 (cuda_fp16.h): t = global_thread(), chain c starts at
  //   __float2half2_rn((t % 64 + c) / 64.0f), updates with __hfma2, and the chains are summed in order with
  //   __hadd2 into out[t]. About 12 lines. Handout: "Latency and independent chains".
  rooflab::unused(a, b, iterations, out);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

double fma_fp32(float a, float b, int iterations, float* out, std::size_t threads, cudaStream_t stream) {
  // STUDENT BEGIN (lab02.fma.launch)
  // TODO(lab02.fma.launch): launch fma_fp32_kernel<<<blocks, kBlock, 0, stream>>>(...) on threads / kBlock
  //   blocks, check it with ROOFLAB_LAUNCH_CHECK(), and return the FLOPs the launch performs (each FMA is 2).
  //   Three lines.
  ROOFLAB_TODO("lab02.fma.launch", a, b, iterations, out, threads, stream);
  // STUDENT END
}

double fma_half2(__half2 a, __half2 b, int iterations, __half2* out, std::size_t threads, cudaStream_t stream) {
  // STUDENT BEGIN (lab02.fma_half2.launch)
  // TODO(lab02.fma_half2.launch): fma_half2_kernel<<<threads / kBlock, kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(); return the FLOPs (an __hfma2 is 4). Three lines.
  ROOFLAB_TODO("lab02.fma_half2.launch", a, b, iterations, out, threads, stream);
  // STUDENT END
}

void tensor_gemm(rooflab::DType type, int n, const void* a, const void* b, float* c, cudaStream_t stream) {
  // STUDENT BEGIN (lab02.cublas)
  // TODO(lab02.cublas): one cublasGemmEx call on a rooflab::CublasHandle (keep it static: creating a handle
  //   is slow; cublasSetStream(handle.get(), stream) binds it to `stream`), every call wrapped in ROOFLAB_CUBLAS_CHECK(...)
  //   (rooflab/cublas.hpp). cuBLAS is column-major: how do you get a row-major C = A B out of it?
  //   Inputs CUDA_R_16F or CUDA_R_16BF by `type`, output CUDA_R_32F, CUBLAS_COMPUTE_32F. About 8 lines.
  //   Handout: "cuBLAS".
  ROOFLAB_TODO("lab02.cublas", type, n, a, b, c, stream);
  // STUDENT END
}

}  // namespace lab02
