// The cuBLAS subset the labs use, and cuBLASLt's matmul (at the end), on the CPU backend
// (rooflab::emu_cublas): GEMMs computed on the host,
// defined against the toolkit's own declarations (cublas_v2.h / cublas_api.h). The real libcublas is never
// linked into a CPU-backend binary, so a cuBLAS function not defined here is a link error. The library is
// compiled with hidden visibility (CMakeLists.txt): code that calls it by name links, but nothing finds it
// at run time (dlsym, dlvsym, a walk of the dynamic symbol tables), so a lab that forbids cuBLAS and refuses
// its names in the student's objects cannot be worked around through the exported symbols of a test binary.
//
//   handles    cublasCreate, cublasDestroy, cublasSetStream, cublasGetStream, cublasSetMathMode,
//              cublasGetMathMode, cublasGetStatusName, cublasGetStatusString
//   GEMMs      cublasSgemm, cublasHgemm, cublasGemmEx, cublasSgemmStridedBatched, cublasGemmStridedBatchedEx
//
// Semantics are cuBLAS's: column-major, op(A) m x k, op(B) k x n, C = alpha op(A) op(B) + beta C, and
// C is not read when beta is 0 (it may hold NaN). Checked before anything is touched, as a GPU cannot:
// cuBLAS's own argument rules (CUBLAS_STATUS_INVALID_VALUE for a leading dimension smaller than the rows
// of the matrix as stored, negative sizes, ...), and that every byte a call would read or write lies inside
// one device allocation. A failure prints its reason once per kind and returns the status; the reason is
// also appended to cublasGetStatusString() of that status, so ROOFLAB_CUBLAS_CHECK's exception shows it.
//
// Arithmetic: inputs are widened to float and every dot product accumulates in float, whatever the compute
// type (the _FAST_16F/_FAST_16BF/_FAST_TF32 modes and CUBLAS_COMPUTE_16F differ from a GPU only within their
// own tolerances). Streams are synchronous, as everywhere on the CPU backend; each GEMM is issued on its handle's
// stream (cublasSetStream; cublasLtMatmul's argument) in the streams' order (ordering.hpp), as a kernel is, so a
// copy that nothing orders after a GEMM on a non-blocking stream is reported and gets the poison, and a timed
// interval that leaves the GEMM out says so.
#include <rooflab/emu/runtime.hpp>

#include "ordering.hpp"  // after the backend's runtime, which defines CUDA's keywords first

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace rooflab::emu {
bool find_allocation(const void* p, const void** start, std::size_t* size, bool* device);  // runtime_api.cpp
}  // namespace rooflab::emu

// The handle's state (cublas_api.h declares the struct and leaves it to the library).
struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
};

namespace {

std::mutex g_handles_mutex;
std::set<const cublasContext*> g_handles;  // live handles: a destroyed or made-up handle is refused

// Why the last failing call on this thread failed, for cublasGetStatusString.
thread_local cublasStatus_t tl_failed_status = CUBLAS_STATUS_SUCCESS;
thread_local std::string tl_failure;

cublasStatus_t fail(cublasStatus_t status, const char* format, ...) __attribute__((format(printf, 2, 3)));
cublasStatus_t fail(cublasStatus_t status, const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  tl_failed_status = status;
  tl_failure = text;
  // Printed the first few times (a loop of failing calls must not flood the output).
  static std::atomic<int> printed{0};
  if (printed++ < 8) std::fprintf(stderr, "rooflab emu: %s\n", text);
  return status;
}

cublasStatus_t check_handle(const char* fn, cublasHandle_t handle) {
  tl_failed_status = CUBLAS_STATUS_SUCCESS;
  tl_failure.clear();
  std::lock_guard lock(g_handles_mutex);
  if (handle == nullptr || g_handles.count(handle) == 0) {
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, "%s: the handle %p is not a live cublasCreate handle (never "
                                               "created, or already destroyed)", fn, static_cast<void*>(handle));
  }
  return CUBLAS_STATUS_SUCCESS;
}

// ---- element types ----

std::size_t element_bytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16F: return 2;
    case CUDA_R_16BF: return 2;
    default: return 0;
  }
}

const char* type_name(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_R_64F: return "CUDA_R_64F";
    case CUDA_R_8I: return "CUDA_R_8I";
    case CUDA_R_32I: return "CUDA_R_32I";
    default: return "a cudaDataType the CPU backend does not emulate";
  }
}

float load(const void* base, std::size_t index, cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return __half2float(static_cast<const __half*>(base)[index]);
    case CUDA_R_16BF: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    default: return static_cast<const float*>(base)[index];
  }
}

void store(void* base, std::size_t index, cudaDataType t, float v) {
  switch (t) {
    case CUDA_R_16F: static_cast<__half*>(base)[index] = __float2half_rn(v); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(base)[index] = v;
  }
}

// ---- one GEMM call, described once for every entry point ----

struct Matrix {
  char name;         // 'A', 'B' or 'C'
  const void* data;
  cudaDataType type;
  int rows, cols;    // as stored (column-major), i.e. after undoing the transpose
  int ld;
  long long stride;  // elements between batches
};

struct Gemm {
  const char* fn;
  cublasOperation_t transa, transb;
  int m, n, k;
  float alpha, beta;
  Matrix a, b, c;
  int batches;
};

const char* op_name(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : op == CUBLAS_OP_T ? "T" : "C"; }

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// cuBLAS's argument rules, then the memory every batch touches: inside one allocation, for A, B and C.
cublasStatus_t validate(const Gemm& g) {
  if (!valid_op(g.transa) || !valid_op(g.transb)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: transa = %d, transb = %d: each must be CUBLAS_OP_N, CUBLAS_OP_T or "
                                             "CUBLAS_OP_C", g.fn, static_cast<int>(g.transa), static_cast<int>(g.transb));
  }
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batches < 0) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: m = %d, n = %d, k = %d, batchCount = %d: none may be negative", g.fn,
                g.m, g.n, g.k, g.batches);
  }
  for (const Matrix* x : {&g.a, &g.b, &g.c}) {
    if (x->ld < std::max(1, x->rows)) {
      const char lower = static_cast<char>(x->name - 'A' + 'a');
      const cublasOperation_t op = x->name == 'A' ? g.transa : g.transb;
      const char* rows_are = x->name == 'A' ? (op == CUBLAS_OP_N ? "m" : "k")
                             : x->name == 'B' ? (op == CUBLAS_OP_N ? "k" : "n")
                                              : "m";
      char how[64] = "";
      if (x->name != 'C') std::snprintf(how, sizeof how, ", trans%c = CUBLAS_OP_%s", lower, op_name(op));
      return fail(CUBLAS_STATUS_INVALID_VALUE,
                  "%s: ld%c = %d is less than %s = %d, the rows of %c as stored (column-major%s); cuBLAS requires "
                  "ld%c >= max(1, %s)", g.fn, lower, x->ld, rows_are, x->rows, x->name, how, lower, rows_are);
    }
  }
  if (g.m == 0 || g.n == 0 || g.batches == 0) return CUBLAS_STATUS_SUCCESS;  // nothing is touched
  for (const Matrix* x : {&g.a, &g.b, &g.c}) {
    // C is always written; A and B are read only when there are products to add.
    const bool touched = x->name == 'C' || (g.k > 0 && g.alpha != 0.0f);
    if (!touched || x->rows == 0 || x->cols == 0) continue;
    if (x->data == nullptr) {
      return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: matrix %c is a null pointer", g.fn, x->name);
    }
    // Elements from the first to the last one touched, over every batch (a stride may be 0 or negative).
    const long long span = static_cast<long long>(x->cols - 1) * x->ld + x->rows;
    const long long last = static_cast<long long>(g.batches - 1) * x->stride;
    const long long lo = std::min(0ll, last), hi = std::max(0ll, last) + span;
    const std::size_t bytes = element_bytes(x->type);
    const auto* first = static_cast<const unsigned char*>(x->data) + lo * static_cast<long long>(bytes);
    const std::size_t extent = static_cast<std::size_t>(hi - lo) * bytes;
    const void* start = nullptr;
    std::size_t size = 0;
    bool device = false;
    char shape[160];
    std::snprintf(shape, sizeof shape, "matrix %c (%d x %d as stored, ld%c = %d%s)", x->name, x->rows, x->cols,
                  static_cast<char>(x->name - 'A' + 'a'), x->ld, g.batches > 1 ? ", over every batch" : "");
    if (!rooflab::emu::find_allocation(first, &start, &size, &device)) {
      return fail(CUBLAS_STATUS_INVALID_VALUE,
                  "%s: %s starts at %p, which is not inside a cudaMalloc allocation (a host pointer, or freed "
                  "memory? cuBLAS takes device pointers)", g.fn, shape, static_cast<const void*>(first));
    }
    const std::size_t offset = static_cast<std::size_t>(first - static_cast<const unsigned char*>(start));
    if (offset + extent > size) {
      return fail(CUBLAS_STATUS_INVALID_VALUE,
                  "%s: %s spans %zu bytes from byte %zu of a %zu-byte %s allocation: it runs %zu bytes past the "
                  "end (on a GPU cuBLAS would %s out of bounds)", g.fn, shape, extent, offset, size,
                  device ? "cudaMalloc" : "cudaMallocHost", offset + extent - size,
                  x->name == 'C' ? "write" : "read");
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

// C = alpha op(A) op(B) + beta C for each batch. op(A) is copied to rows and op(B) to columns of float, so
// each element of C is one contiguous dot product (float accumulation in 8 independent partial sums).
void compute(const Gemm& g) {
  // Device memory is closed to host code outside kernels (runtime_api.cpp); this emulated library call is
  // the device's work, so it opens it while it computes.
  const rooflab::emu::detail::DeviceMemoryOpen open;
  const std::size_t k = static_cast<std::size_t>(g.k);
  std::vector<float> a_rows(static_cast<std::size_t>(g.m) * k), b_cols(static_cast<std::size_t>(g.n) * k);
  const std::size_t ea = element_bytes(g.a.type), eb = element_bytes(g.b.type), ec = element_bytes(g.c.type);
  for (int batch = 0; batch < g.batches; ++batch) {
    const auto* a = static_cast<const unsigned char*>(g.a.data) + batch * g.a.stride * static_cast<long long>(ea);
    const auto* b = static_cast<const unsigned char*>(g.b.data) + batch * g.b.stride * static_cast<long long>(eb);
    auto* c = static_cast<unsigned char*>(const_cast<void*>(g.c.data)) + batch * g.c.stride * static_cast<long long>(ec);
    const bool products = g.k > 0 && g.alpha != 0.0f;  // cuBLAS reads neither A nor B otherwise
    if (products) {
      const auto lda = static_cast<std::size_t>(g.a.ld), ldb = static_cast<std::size_t>(g.b.ld);
      for (std::size_t i = 0; i < static_cast<std::size_t>(g.m); ++i) {
        for (std::size_t p = 0; p < k; ++p) {
          a_rows[i * k + p] = load(a, g.transa == CUBLAS_OP_N ? i + p * lda : p + i * lda, g.a.type);
        }
      }
      for (std::size_t j = 0; j < static_cast<std::size_t>(g.n); ++j) {
        for (std::size_t p = 0; p < k; ++p) {
          b_cols[j * k + p] = load(b, g.transb == CUBLAS_OP_N ? p + j * ldb : j + p * ldb, g.b.type);
        }
      }
    }
    const auto ldc = static_cast<std::size_t>(g.c.ld);
    for (std::size_t j = 0; j < static_cast<std::size_t>(g.n); ++j) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(g.m); ++i) {
        float dot = 0.0f;
        if (products) {
          const float* x = &a_rows[i * k];
          const float* y = &b_cols[j * k];
          float part[8] = {};
          std::size_t p = 0;
          for (; p + 8 <= k; p += 8) {
            for (int u = 0; u < 8; ++u) part[u] += x[p + u] * y[p + u];
          }
          for (; p < k; ++p) part[0] += x[p] * y[p];
          dot = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
        }
        const std::size_t at = i + j * ldc;
        // beta == 0: C is written without being read (it may be uninitialized or NaN).
        const float old = g.beta == 0.0f ? 0.0f : g.beta * load(c, at, g.c.type);
        store(c, at, g.c.type, g.alpha * dot + old);
      }
    }
  }
}

Matrix operand(char name, const void* data, cudaDataType type, cublasOperation_t op, int rows_of_op, int cols_of_op,
               int ld, long long stride) {
  const bool transposed = op != CUBLAS_OP_N;
  return {name, data, type, transposed ? cols_of_op : rows_of_op, transposed ? rows_of_op : cols_of_op, ld, stride};
}

cublasStatus_t run(Gemm& g, cudaStream_t stream) {
  if (const cublasStatus_t s = validate(g); s != CUBLAS_STATUS_SUCCESS) return s;
  if (g.m > 0 && g.n > 0) {
    // The GEMM runs as host code on device memory, which is closed to host code outside kernels.
    const rooflab::emu::detail::DeviceMemoryOpen open;
    compute(g);
    rooflab::emu::ordering::issue(stream, g.fn, {{g.a.data, false}, {g.b.data, false}, {g.c.data, true}});
  }
  return CUBLAS_STATUS_SUCCESS;
}

// alpha and beta are read on the host (the default pointer mode; cublasSetPointerMode is not emulated).
cublasStatus_t read_scalars(const char* fn, const void* alpha, const void* beta, bool half, float* a, float* b) {
  if (alpha == nullptr || beta == nullptr) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: alpha and beta must not be null", fn);
  }
  const void* start = nullptr;
  std::size_t size = 0;
  bool device = false;
  for (const void* p : {alpha, beta}) {
    if (rooflab::emu::find_allocation(p, &start, &size, &device) && device) {
      return fail(CUBLAS_STATUS_INVALID_VALUE,
                  "%s: %s points to device memory, but the pointer mode is CUBLAS_POINTER_MODE_HOST (pass the "
                  "address of a host variable)", fn, p == alpha ? "alpha" : "beta");
    }
  }
  *a = half ? __half2float(*static_cast<const __half*>(alpha)) : *static_cast<const float*>(alpha);
  *b = half ? __half2float(*static_cast<const __half*>(beta)) : *static_cast<const float*>(beta);
  return CUBLAS_STATUS_SUCCESS;
}

// GemmEx's type rules: A and B of one type; C in FP32 or the inputs' type; FP32 compute types (FP32
// arithmetic here) or CUBLAS_COMPUTE_16F with FP16 throughout. Sets *half_scalars for the latter.
cublasStatus_t check_types(const char* fn, cudaDataType at, cudaDataType bt, cudaDataType ct,
                           cublasComputeType_t compute, bool* half_scalars) {
  const bool fp32_compute = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
                            compute == CUBLAS_COMPUTE_32F_FAST_16F || compute == CUBLAS_COMPUTE_32F_FAST_16BF ||
                            compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  const bool fp16_compute = compute == CUBLAS_COMPUTE_16F || compute == CUBLAS_COMPUTE_16F_PEDANTIC;
  if (!fp32_compute && !fp16_compute) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: computeType %d is not emulated by the CPU backend (CUBLAS_COMPUTE_32F "
                                             "and its _PEDANTIC/_FAST_16F/_FAST_16BF/_FAST_TF32 forms, and "
                                             "CUBLAS_COMPUTE_16F, are)", fn, static_cast<int>(compute));
  }
  const bool inputs_ok = at == bt && element_bytes(at) != 0;
  const bool output_ok = ct == CUDA_R_32F || ct == at;
  const bool fp16_ok = !fp16_compute || (at == CUDA_R_16F && ct == CUDA_R_16F);
  if (!inputs_ok || !output_ok || !fp16_ok) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED,
                "%s: Atype %s, Btype %s, Ctype %s with computeType %d: cuBLAS (and the CPU backend) take A and B of "
                "one type among CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF, and C in CUDA_R_32F or that type (all "
                "CUDA_R_16F for CUBLAS_COMPUTE_16F)", fn, type_name(at), type_name(bt), type_name(ct),
                static_cast<int>(compute));
  }
  *half_scalars = fp16_compute;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t gemm(const char* fn, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                    int n, int k, const void* alpha, const void* a, cudaDataType at, int lda, long long stride_a,
                    const void* b, cudaDataType bt, int ldb, long long stride_b, const void* beta, void* c,
                    cudaDataType ct, int ldc, long long stride_c, int batches, bool half_scalars) {
  if (const cublasStatus_t s = check_handle(fn, handle); s != CUBLAS_STATUS_SUCCESS) return s;
  Gemm g{fn, transa, transb, m, n, k, 0.0f, 0.0f,
         operand('A', a, at, transa, m, k, lda, stride_a),
         operand('B', b, bt, transb, k, n, ldb, stride_b),
         Matrix{'C', c, ct, m, n, ldc, stride_c}, batches};
  if (const cublasStatus_t s = read_scalars(fn, alpha, beta, half_scalars, &g.alpha, &g.beta);
      s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  return run(g, handle->stream);
}

}  // namespace

// ---- handles ----

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasCreate: the handle pointer is null");
  auto* h = new cublasContext;
  std::lock_guard lock(g_handles_mutex);
  g_handles.insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (const cublasStatus_t s = check_handle("cublasDestroy", handle); s != CUBLAS_STATUS_SUCCESS) return s;
  {
    std::lock_guard lock(g_handles_mutex);
    g_handles.erase(handle);
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (const cublasStatus_t s = check_handle("cublasSetStream", handle); s != CUBLAS_STATUS_SUCCESS) return s;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (const cublasStatus_t s = check_handle("cublasGetStream", handle); s != CUBLAS_STATUS_SUCCESS) return s;
  if (stream == nullptr) return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasGetStream: the stream pointer is null");
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

// The math mode is kept and reported back; it does not change the arithmetic here (always FP32).
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (const cublasStatus_t s = check_handle("cublasSetMathMode", handle); s != CUBLAS_STATUS_SUCCESS) return s;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (const cublasStatus_t s = check_handle("cublasGetMathMode", handle); s != CUBLAS_STATUS_SUCCESS) return s;
  if (mode == nullptr) return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasGetMathMode: the mode pointer is null");
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

// ---- status text ----

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

// The status's meaning; for the status of this thread's last failed call, followed by why it failed.
const char* cublasGetStatusString(cublasStatus_t status) {
  const char* text = "an unknown cuBLAS status";
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: text = "success"; break;
    case CUBLAS_STATUS_NOT_INITIALIZED: text = "the library was not initialized"; break;
    case CUBLAS_STATUS_ALLOC_FAILED: text = "the resource allocation failed"; break;
    case CUBLAS_STATUS_INVALID_VALUE: text = "an invalid value was used as an argument"; break;
    case CUBLAS_STATUS_ARCH_MISMATCH: text = "an absent device architectural feature is required"; break;
    case CUBLAS_STATUS_MAPPING_ERROR: text = "an access to GPU memory space failed"; break;
    case CUBLAS_STATUS_EXECUTION_FAILED: text = "the GPU program failed to execute"; break;
    case CUBLAS_STATUS_INTERNAL_ERROR: text = "an internal operation failed"; break;
    case CUBLAS_STATUS_NOT_SUPPORTED: text = "the functionality requested is not supported"; break;
    case CUBLAS_STATUS_LICENSE_ERROR: text = "an error was detected when checking the current licensing"; break;
  }
  if (status == CUBLAS_STATUS_SUCCESS || status != tl_failed_status || tl_failure.empty()) return text;
  thread_local std::string with_reason;
  with_reason = std::string(text) + "; rooflab emu: " + tl_failure;
  return with_reason.c_str();
}

// ---- GEMMs ----

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb, 0, beta,
              C, CUDA_R_32F, ldc, 0, 1, false);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const __half* alpha, const __half* A, int lda, const __half* B, int ldb,
                           const __half* beta, __half* C, int ldc) {
  return gemm("cublasHgemm", handle, transa, transb, m, n, k, alpha, A, CUDA_R_16F, lda, 0, B, CUDA_R_16F, ldb, 0, beta,
              C, CUDA_R_16F, ldc, 0, 1, true);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb, long long int strideB,
                                         const float* beta, float* C, int ldc, long long int strideC, int batchCount) {
  return gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, strideA, B,
              CUDA_R_32F, ldb, strideB, beta, C, CUDA_R_32F, ldc, strideC, batchCount, false);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t /*algo: any is accepted*/) {
  if (const cublasStatus_t s = check_handle("cublasGemmEx", handle); s != CUBLAS_STATUS_SUCCESS) return s;
  bool half_scalars = false;
  if (const cublasStatus_t s = check_types("cublasGemmEx", Atype, Btype, Ctype, computeType, &half_scalars);
      s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  return gemm("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype,
              ldc, 0, 1, half_scalars);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t /*algo*/) {
  const char* fn = "cublasGemmStridedBatchedEx";
  if (const cublasStatus_t s = check_handle(fn, handle); s != CUBLAS_STATUS_SUCCESS) return s;
  bool half_scalars = false;
  if (const cublasStatus_t s = check_types(fn, Atype, Btype, Ctype, computeType, &half_scalars);
      s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  return gemm(fn, handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
              ldc, strideC, batchCount, half_scalars);
}

// ---- cuBLASLt: the matmul API (cublasLt.h) on the same arithmetic ----
//
//   handles      cublasLtCreate, cublasLtDestroy, cublasLtGetStatusName/String, cublasLtGetVersion
//   descriptors  cublasLtMatmulDescCreate/Destroy/SetAttribute (TRANSA, TRANSB, EPILOGUE, BIAS_POINTER,
//                BIAS_DATA_TYPE, POINTER_MODE host only), cublasLtMatrixLayoutCreate/Destroy/SetAttribute
//                (ORDER col or row, BATCH_COUNT, STRIDED_BATCH_OFFSET), cublasLtMatmulPreferenceCreate/Destroy/
//                SetAttribute (accepted), cublasLtMatmulAlgoGetHeuristic (one algorithm, no workspace)
//   matmul       cublasLtMatmul: D = epilogue(alpha op(A) op(B) + beta C [+ bias]), FP32/FP16/BF16 inputs,
//                C/D in FP32 or the inputs' type, epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS
//
// Each descriptor lives in the opaque storage cublasLt.h gives it. Every matrix's extent (rows, cols, ld,
// order, batches) and the bias vector are checked against their allocations before anything is touched.
struct cublasLtContext {};

namespace {

std::set<const cublasLtContext*> g_lt_handles;  // under g_handles_mutex

struct LtLayout {
  cudaDataType type;
  std::uint64_t rows, cols;
  std::int64_t ld;
  std::int32_t order = CUBLASLT_ORDER_COL;
  std::int32_t batches = 1;
  std::int64_t stride = 0;
  // Element (r, c) of batch `batch`.
  std::size_t at(std::uint64_t r, std::uint64_t c, int batch) const {
    const auto ldu = static_cast<std::uint64_t>(ld);
    return static_cast<std::size_t>(batch * stride) + (order == CUBLASLT_ORDER_ROW ? r * ldu + c : r + c * ldu);
  }
};
struct LtDesc {
  cublasComputeType_t compute;
  cudaDataType scale;
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  cudaDataType bias_type = static_cast<cudaDataType>(-1);  // -1: D's type
  cublasLtPointerMode_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
};
static_assert(sizeof(LtLayout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "LtLayout fits the opaque layout");
static_assert(sizeof(LtDesc) <= sizeof(cublasLtMatmulDescOpaque_t), "LtDesc fits the opaque descriptor");

LtLayout& layout(cublasLtMatrixLayout_t l) { return *std::launder(reinterpret_cast<LtLayout*>(l->data)); }
LtDesc& desc(cublasLtMatmulDesc_t d) { return *std::launder(reinterpret_cast<LtDesc*>(d->data)); }

// Copies an attribute's value of type T from (buf, size), or fails with the attribute's name.
template <typename T>
cublasStatus_t take(const char* fn, const char* attr, const void* buf, std::size_t size, T* out) {
  if (buf == nullptr || size != sizeof(T)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "%s(%s): the value must be %zu bytes, not %zu", fn, attr, sizeof(T), size);
  }
  std::memcpy(out, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

// The bytes one matrix (or the bias) spans, checked to lie inside one allocation.
cublasStatus_t check_extent(const char* name, const void* data, std::size_t first_to_last, cudaDataType type) {
  if (first_to_last == 0) return CUBLAS_STATUS_SUCCESS;
  if (data == nullptr) return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul: %s is a null pointer", name);
  const void* start = nullptr;
  std::size_t size = 0;
  bool device = false;
  if (!rooflab::emu::find_allocation(data, &start, &size, &device)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul: %s at %p is not inside a cudaMalloc allocation", name,
                data);
  }
  const std::size_t offset = static_cast<std::size_t>(static_cast<const unsigned char*>(data) -
                                                      static_cast<const unsigned char*>(start));
  const std::size_t bytes = first_to_last * element_bytes(type);
  if (offset + bytes > size) {
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasLtMatmul: %s spans %zu bytes from byte %zu of a %zu-byte allocation: it runs %zu bytes past "
                "the end (on a GPU cuBLASLt would touch memory out of bounds)", name, bytes, offset, size,
                offset + bytes - size);
  }
  return CUBLAS_STATUS_SUCCESS;
}

// Elements from a layout's first to its last, over every batch.
std::size_t span(const LtLayout& l) {
  if (l.rows == 0 || l.cols == 0) return 0;
  return l.at(l.rows - 1, l.cols - 1, l.batches - 1) + 1;
}

cublasStatus_t check_layouts(const LtDesc& d, const LtLayout& a, const LtLayout& b, const LtLayout& c,
                             const LtLayout& dl) {
  const std::uint64_t m = dl.rows, n = dl.cols;
  const std::uint64_t k = d.transa == CUBLAS_OP_N ? a.cols : a.rows;
  const bool a_ok = (d.transa == CUBLAS_OP_N ? a.rows : a.cols) == m;
  const bool b_ok = (d.transb == CUBLAS_OP_N ? b.rows : b.cols) == k && (d.transb == CUBLAS_OP_N ? b.cols : b.rows) == n;
  if (!a_ok || !b_ok || c.rows != m || c.cols != n) {
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasLtMatmul: shapes do not agree: A %llu x %llu (trans%s), B %llu x %llu (trans%s), C %llu x %llu, "
                "D %llu x %llu; op(A) must be m x k, op(B) k x n, C and D m x n",
                static_cast<unsigned long long>(a.rows), static_cast<unsigned long long>(a.cols), op_name(d.transa),
                static_cast<unsigned long long>(b.rows), static_cast<unsigned long long>(b.cols), op_name(d.transb),
                static_cast<unsigned long long>(c.rows), static_cast<unsigned long long>(c.cols),
                static_cast<unsigned long long>(m), static_cast<unsigned long long>(n));
  }
  for (const LtLayout* l : {&a, &b, &c, &dl}) {
    const std::uint64_t inner = l->order == CUBLASLT_ORDER_ROW ? l->cols : l->rows;
    if (l->ld < static_cast<std::int64_t>(std::max<std::uint64_t>(1, inner))) {
      return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul: ld = %lld is less than the %llu %s of a %s matrix",
                  static_cast<long long>(l->ld), static_cast<unsigned long long>(inner),
                  l->order == CUBLASLT_ORDER_ROW ? "columns" : "rows",
                  l->order == CUBLASLT_ORDER_ROW ? "row-major" : "column-major");
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

float gelu(float x) {  // the tanh approximation cuBLASLt's GELU epilogue uses
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

void lt_compute(const LtDesc& d, float alpha, float beta, const void* A, const LtLayout& a, const void* B,
                const LtLayout& b, const void* C, const LtLayout& c, void* D, const LtLayout& dl) {
  const std::uint64_t k = d.transa == CUBLAS_OP_N ? a.cols : a.rows;
  const bool bias = (d.epilogue & CUBLASLT_EPILOGUE_BIAS) != 0;
  const cudaDataType bias_type = static_cast<int>(d.bias_type) == -1 ? dl.type : d.bias_type;
  for (int batch = 0; batch < dl.batches; ++batch) {
    for (std::uint64_t i = 0; i < dl.rows; ++i) {
      for (std::uint64_t j = 0; j < dl.cols; ++j) {
        float dot = 0.0f;
        for (std::uint64_t p = 0; p < k; ++p) {
          const float x = load(A, d.transa == CUBLAS_OP_N ? a.at(i, p, batch) : a.at(p, i, batch), a.type);
          const float y = load(B, d.transb == CUBLAS_OP_N ? b.at(p, j, batch) : b.at(j, p, batch), b.type);
          dot += x * y;
        }
        float v = alpha * dot + (beta == 0.0f ? 0.0f : beta * load(C, c.at(i, j, batch), c.type));
        if (bias) v += load(d.bias, i, bias_type);  // one bias per row of D, broadcast over its columns
        if (d.epilogue == CUBLASLT_EPILOGUE_RELU || d.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) v = std::max(v, 0.0f);
        if (d.epilogue == CUBLASLT_EPILOGUE_GELU || d.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS) v = gelu(v);
        store(D, dl.at(i, j, batch), dl.type, v);
      }
    }
  }
}

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext;
  std::lock_guard lock(g_handles_mutex);
  g_lt_handles.insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  std::lock_guard lock(g_handles_mutex);
  if (g_lt_handles.erase(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasLtGetStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }
const char* cublasLtGetStatusString(cublasStatus_t status) { return cublasGetStatusString(status); }
size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmul_desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (matmul_desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *matmul_desc = new cublasLtMatmulDescOpaque_t{};
  new ((*matmul_desc)->data) LtDesc{compute, scale};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmul_desc) {
  delete matmul_desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmul_desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  const char* fn = "cublasLtMatmulDescSetAttribute";
  if (matmul_desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  LtDesc& d = desc(matmul_desc);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return take(fn, "TRANSA", buf, size, &d.transa);
    case CUBLASLT_MATMUL_DESC_TRANSB: return take(fn, "TRANSB", buf, size, &d.transb);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return take(fn, "EPILOGUE", buf, size, &d.epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return take(fn, "BIAS_POINTER", buf, size, &d.bias);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return take(fn, "BIAS_DATA_TYPE", buf, size, &d.bias_type);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return take(fn, "POINTER_MODE", buf, size, &d.pointer_mode);
    default:
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: attribute %d is not emulated by the CPU backend (TRANSA, TRANSB, "
                                               "EPILOGUE, BIAS_POINTER, BIAS_DATA_TYPE and POINTER_MODE are)",
                  fn, static_cast<int>(attr));
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* mat_layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (mat_layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (element_bytes(type) == 0) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatrixLayoutCreate: type %s is not emulated (CUDA_R_32F, "
                                             "CUDA_R_16F and CUDA_R_16BF are)", type_name(type));
  }
  *mat_layout = new cublasLtMatrixLayoutOpaque_t{};
  new ((*mat_layout)->data) LtLayout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t mat_layout) {
  delete mat_layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t mat_layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  const char* fn = "cublasLtMatrixLayoutSetAttribute";
  if (mat_layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  LtLayout& l = layout(mat_layout);
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return take(fn, "ORDER", buf, size, &l.order);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return take(fn, "BATCH_COUNT", buf, size, &l.batches);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return take(fn, "STRIDED_BATCH_OFFSET", buf, size, &l.stride);
    default:
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: attribute %d is not emulated by the CPU backend (ORDER, "
                                               "BATCH_COUNT and STRIDED_BATCH_OFFSET are)", fn, static_cast<int>(attr));
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = new cublasLtMatmulPreferenceOpaque_t{};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

// Workspace limits and search modes: accepted (the CPU needs no workspace).
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t,
                                                    const void* buf, size_t) {
  return pref == nullptr || buf == nullptr ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  {
    std::lock_guard lock(g_handles_mutex);
    if (g_lt_handles.count(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  if (requested < 1 || results == nullptr || returned == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t compute_desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t a_desc, const void* B, cublasLtMatrixLayout_t b_desc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t c_desc, void* D,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t*, void*, size_t,
                              cudaStream_t stream) {
  const char* fn = "cublasLtMatmul";
  tl_failed_status = CUBLAS_STATUS_SUCCESS;
  {
    std::lock_guard lock(g_handles_mutex);
    if (g_lt_handles.count(handle) == 0) {
      return fail(CUBLAS_STATUS_NOT_INITIALIZED, "%s: the handle was not made by cublasLtCreate", fn);
    }
  }
  if (compute_desc == nullptr || a_desc == nullptr || b_desc == nullptr || c_desc == nullptr || d_desc == nullptr) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: a null descriptor", fn);
  }
  const LtDesc& d = desc(compute_desc);
  const LtLayout &a = layout(a_desc), &b = layout(b_desc), &c = layout(c_desc), &dl = layout(d_desc);
  if (d.pointer_mode != CUBLASLT_POINTER_MODE_HOST) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: only CUBLASLT_POINTER_MODE_HOST is emulated", fn);
  }
  const int e = static_cast<int>(d.epilogue);
  if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_RELU && e != CUBLASLT_EPILOGUE_BIAS &&
      e != CUBLASLT_EPILOGUE_RELU_BIAS && e != CUBLASLT_EPILOGUE_GELU && e != CUBLASLT_EPILOGUE_GELU_BIAS) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: epilogue %d is not emulated (DEFAULT, RELU, BIAS, RELU_BIAS, GELU and "
                                             "GELU_BIAS are)", fn, e);
  }
  bool half_scalars = false;
  if (const cublasStatus_t s = check_types(fn, a.type, b.type, dl.type, d.compute, &half_scalars);
      s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  if (c.type != dl.type) return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: C and D must have one type", fn);
  if (const cublasStatus_t s = check_layouts(d, a, b, c, dl); s != CUBLAS_STATUS_SUCCESS) return s;
  float al = 0.0f, be = 0.0f;
  if (const cublasStatus_t s = read_scalars(fn, alpha, beta, half_scalars, &al, &be); s != CUBLAS_STATUS_SUCCESS) {
    return s;
  }
  const bool bias = (d.epilogue & CUBLASLT_EPILOGUE_BIAS) != 0;
  const cudaDataType bias_type = static_cast<int>(d.bias_type) == -1 ? dl.type : d.bias_type;
  for (const auto& [name, data, l] : {std::tuple{"matrix A", A, &a}, std::tuple{"matrix B", B, &b},
                                      std::tuple{"matrix C", C, &c}, std::tuple{"matrix D", static_cast<const void*>(D), &dl}}) {
    if (name[7] == 'C' && be == 0.0f) continue;  // C is not read when beta is 0
    if (const cublasStatus_t s = check_extent(name, data, span(*l), l->type); s != CUBLAS_STATUS_SUCCESS) return s;
  }
  if (bias) {
    if (const cublasStatus_t s = check_extent("the bias vector", d.bias, dl.rows, bias_type); s != CUBLAS_STATUS_SUCCESS) {
      return s;
    }
  }
  const rooflab::emu::detail::DeviceMemoryOpen open;  // the library's work runs as host code on device memory
  lt_compute(d, al, be, A, a, B, b, C, c, D, dl);
  rooflab::emu::ordering::issue(stream, fn, {{A, false}, {B, false}, {C, false}, {bias ? d.bias : nullptr, false},
                                             {D, true}});
  return CUBLAS_STATUS_SUCCESS;
}
