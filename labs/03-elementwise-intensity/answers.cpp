// Lab 03: elementwise intensity - the analytic questions. Handout: README.md, "Counting elementwise work".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab03 {

Cost relu(std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q1)
  // TODO(lab03.q1): Cost{flops, bytes} by the counting rules in lab.hpp (and the handout's "Counting
  //   elementwise work"): what is read, what is written, at elem_bytes each. (1 line)
  ROOFLAB_TODO("lab03.q1", n, elem_bytes);
  // STUDENT END
}

Cost add(std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q2)
  // TODO(lab03.q2): Cost{flops, bytes} of y = a + b, by the same rules. (1 line)
  ROOFLAB_TODO("lab03.q2", n, elem_bytes);
  // STUDENT END
}

Cost bias_relu(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q3)
  // TODO(lab03.q3): do not forget the bias. (2 lines)
  ROOFLAB_TODO("lab03.q3", rows, cols, elem_bytes);
  // STUDENT END
}

Cost gelu(std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q4)
  // TODO(lab03.q4): Cost{flops, bytes} of y = gelu(x); lab.hpp gives GELU's FLOPs per element. (1 line)
  ROOFLAB_TODO("lab03.q4", n, elem_bytes);
  // STUDENT END
}

Cost layernorm(std::size_t b, std::size_t l, std::size_t d, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q5)
  // TODO(lab03.q5): x in, y out, gamma and beta. (2 lines)
  ROOFLAB_TODO("lab03.q5", b, l, d, elem_bytes);
  // STUDENT END
}

Cost adam_step(std::size_t params) {
  // STUDENT BEGIN (lab03.q6)
  // TODO(lab03.q6): which FP32 arrays does an Adam step read, which does it write? (1 line)
  ROOFLAB_TODO("lab03.q6", params);
  // STUDENT END
}

double intensity(const Cost& c) {
  // STUDENT BEGIN (lab03.q7)
  // TODO(lab03.q7): FLOPs per byte of a Cost. (1 line)
  ROOFLAB_TODO("lab03.q7", c);
  // STUDENT END
}

double predicted_time_s(const Cost& c, const rooflab::GpuSpec& gpu, rooflab::DType type) {
  // STUDENT BEGIN (lab03.q8)
  // TODO(lab03.q8): the roofline floor, max(bytes / bandwidth, FLOPs / peak), with gpu.bandwidth_gbps
  //   (decimal GB/s) and rooflab::peak_flops(gpu, type) (a std::optional). (1 line)
  ROOFLAB_TODO("lab03.q8", c, gpu, type);
  // STUDENT END
}

Cost chain_unfused(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q9)
  // TODO(lab03.q9): add up what each of the three kernels reads and writes. (3 lines)
  ROOFLAB_TODO("lab03.q9", rows, cols, elem_bytes);
  // STUDENT END
}

Cost chain_fused(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q10)
  // TODO(lab03.q10): what does the fused kernel read and write? (2 lines)
  ROOFLAB_TODO("lab03.q10", rows, cols, elem_bytes);
  // STUDENT END
}

double fusion_speedup(std::size_t rows, std::size_t cols, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab03.q11)
  // TODO(lab03.q11): both chains are memory-bound: the ratio of chain_unfused's bytes to chain_fused's
  //   (both above). (1 line)
  ROOFLAB_TODO("lab03.q11", rows, cols, elem_bytes);
  // STUDENT END
}

}  // namespace lab03
