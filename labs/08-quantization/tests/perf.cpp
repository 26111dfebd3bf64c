// Lab 08 graders on the GPU: the int8 and int4 GEMVs at N = K = 8192 against cuBLAS's FP16 GEMV timed in the
// same run (cublasGemmEx with n = 1: a library's answer, not a lab's, so a student copy holds no answer in
// grader code), each also against the copy ceiling on its packed bytes (informational); and the plot of time
// against bits per weight. The baseline is declared in the lab's thresholds.json ("baseline").
//
// The weights and activations are random, quantized here by the reference (lab08::quantize_ref): a GEMV gets
// the packed weights and nothing else, and its output is checked after timing on every 97th row against a
// double-precision reference, so a kernel cannot skip work or detect constant data. A GEMV that keeps a
// dequantized FP16 copy of the weights on the device fails (the device's free memory is compared).
//
// The same file runs as a dry run on the CPU backend (sizes scaled by rooflab::perf_scale(), timings
// meaningless): tests/dryrun.cpp and docs/cpu-mode.md say what that proves.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/cublas.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/half.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

// One n x k layer: random FP16 weights and activations on the device, and the output y.
struct Layer {
  explicit Layer(int side)
      : n(side),
        k(side),
        w(rooflab::random_floats(static_cast<std::size_t>(side) * side, rooflab::test_seed() + 80)),
        x(rooflab::random_floats(static_cast<std::size_t>(side), rooflab::test_seed() + 81)),
        dx(x.size()),
        dy(static_cast<std::size_t>(side)) {
    for (auto& v : w) v = lab08::fp16_round(v);
    for (auto& v : x) v = lab08::fp16_round(v);
    dx.upload(rooflab::to_half(x));
  }
  int n, k;
  std::vector<float> w, x;
  rooflab::DeviceBuffer<__half> dx, dy;
};

// y = W x by cuBLAS in FP16 with FP32 accumulation. cuBLAS is column-major: the row-major n x k W is the
// column-major k x n W^T, so y is (W^T)^T x, a GEMM of n x 1 over k with A transposed.
void cublas_gemv_fp16(cublasHandle_t h, const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t s) {
  const float alpha = 1.0f, beta = 0.0f;
  ROOFLAB_CUBLAS_CHECK(cublasSetStream(h, s));
  ROOFLAB_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, 1, k, &alpha, w, CUDA_R_16F, k, x, CUDA_R_16F, k,
                                    &beta, y, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The layer's weights in one format, packed by the reference, on the device; bits 16 is FP16 itself, which
// cuBLAS multiplies (the baseline).
struct Packed {
  Packed(const Layer& l, int bits_, int group_) : bits(bits_), group(group_) {
    if (bits == 16) {
      fp16 = rooflab::DeviceBuffer<__half>(l.w.size());
      fp16.upload(rooflab::to_half(l.w));
      weight_bytes = lab08::perf::fp16_weight_bytes(l.n, l.k);
      cublas.emplace();
      return;
    }
    lab08::quantize_ref(l.w, group, bits == 8 ? lab08::kInt8Max : lab08::kInt4Max, q, scales);
    const auto bytes = lab08::pack_ref(q, bits);
    weight_bytes = bits == 8 ? lab08::perf::int8_weight_bytes(l.n, l.k) : lab08::int4_bytes(l.n, l.k, group);
    packed = rooflab::DeviceBuffer<std::uint8_t>(bytes.size());
    packed.upload(bytes);
    dscales = rooflab::DeviceBuffer<__half>(scales.size());
    dscales.upload(rooflab::to_half(scales));
  }
  std::string name() const { return bits == 16 ? "FP16" : fmt::format("int{} (group {})", bits, group); }
  void launch(Layer& l, cudaStream_t s) const {
    if (bits == 16) {
      cublas_gemv_fp16(cublas->get(), fp16.data(), l.dx.data(), l.dy.data(), l.n, l.k, s);
    } else if (bits == 8) {
      lab08::gemv_int8(reinterpret_cast<const std::int8_t*>(packed.data()), dscales.data(), l.dx.data(), l.dy.data(),
                       l.n, l.k, s);
    } else {
      lab08::gemv_int4(packed.data(), dscales.data(), l.dx.data(), l.dy.data(), l.n, l.k, group, s);
    }
  }
  // `rows` rows of y (about 84 after timing, a few after every sample; the first and the last among them) against
  // the double-precision GEMV of the weights this format holds. The rows are drawn when the check runs, from the
  // operating system's entropy (rooflab::sampled_indices): rows at a fixed stride would let a GEMV compute only those.
  ::testing::AssertionResult check(const Layer& l, std::size_t rows = 84) const {
    const auto y = l.dy.download();
    for (const std::size_t row : rooflab::sampled_indices(static_cast<std::size_t>(l.n), rows)) {
      const int j = static_cast<int>(row);
      double want = 0;
      for (int i = 0; i < l.k; ++i) {
        const std::size_t at = static_cast<std::size_t>(j) * l.k + i;
        const double wv =
            bits == 16 ? l.w[at] : static_cast<double>(scales[at / static_cast<std::size_t>(group)]) * q[at];
        want += wv * l.x[i];
      }
      const double got = __half2float(y[static_cast<std::size_t>(j)]);
      if (!(std::abs(got - want) <= 2e-3 * std::sqrt(static_cast<double>(l.k)) + 2e-3 * std::abs(want))) {
        return ::testing::AssertionFailure()
               << name() << " GEMV: wrong output " << got << " at row " << j << " after timing (n = " << l.n
               << ", k = " << l.k << "): a timed kernel must do all the work";
      }
    }
    return ::testing::AssertionSuccess();
  }
  // What a timed launch must read (the dry run counts it): the weights in this format, their scales, and x.
  // A library call is not asked (as in Lab 04).
  // x is declared with its host copy, so benchmark() moves both between samples (rooflab::InputMotion): every
  // sample multiplies a vector no earlier call saw, and the check after timing reads the last one.
  std::vector<rooflab::TimedRead> inputs(Layer& l) const {
    if (bits == 16) return {};
    return {rooflab::timed_input(packed, "packed weights"), rooflab::timed_input(dscales, "scales"),
            rooflab::timed_input(l.dx, l.x, "x")};
  }
  int bits, group;
  std::vector<int> q;
  std::vector<float> scales;
  double weight_bytes = 0;
  rooflab::DeviceBuffer<__half> fp16, dscales;
  rooflab::DeviceBuffer<std::uint8_t> packed;
  std::optional<rooflab::CublasHandle> cublas;  // bits 16 only
};

std::size_t free_device_bytes() {
  std::size_t free_bytes = 0, total = 0;
  ROOFLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

// Times one format's GEMV; checks its output after timing and that it left no copy of the weights behind.
rooflab::Measurement time_gemv(Layer& l, const Packed& p, double max_seconds = 3.0) {
  l.dy.poison();
  const std::size_t free_before = free_device_bytes();
  // The quantized GEMVs must start a kernel of the lab's registry (the FP16 baseline is cuBLAS's).
  const auto kernels = p.bits == 16 ? std::vector<std::string>{} : rooflab::registry_kernels(lab08::kKernels);
  auto m = rooflab::benchmark([&](cudaStream_t s) { p.launch(l, s); }, lab08::perf::gemv_work(l.n, l.k, p.weight_bytes),
                              rooflab::checking_each_sample({.max_seconds = max_seconds, .kernels = kernels},
                                                            [&] { return p.check(l, 4); }),
                              {rooflab::timed_output(l.dy)}, p.inputs(l));
  EXPECT_TRUE(p.check(l));
  // cuBLAS keeps a workspace it allocates on its first call: the check is about the students' GEMVs.
  if (p.bits == 16) return m;
  const std::size_t free_after = free_device_bytes();
  // An FP16 copy of the weights is 4x the int4 weights and 2x the int8 ones: a quarter of it cannot be noise.
  EXPECT_LT(static_cast<double>(free_before - std::min(free_before, free_after)), lab08::fp16_bytes(l.n, l.k) / 4)
      << p.name()
      << " GEMV: the device has less free memory after timing than before; a GEMV gets the packed "
         "weights and keeps no copy of them (an FP16 copy is not a quantized GEMV)";
  return m;
}

// The quantized GEMV against cuBLAS's FP16 GEMV in this run. award() counts both in the layer's FP16 weight
// bytes per second (the rule's baseline), so the fraction it grades is the speedup the rule is about; the
// note also puts each against the copy ceiling on the bytes it actually reads.
void grade_against_fp16(const char* quantity, int bits, int group) {
  const int side = lab08::perf::gemv_side();
  Layer l(side);
  const Packed fp16(l, 16, 1), quantized(l, bits, group);
  const auto t16 = time_gemv(l, fp16);
  const auto tq = time_gemv(l, quantized);
  if (::testing::Test::HasFailure()) return;
  const double copy = rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  const double fp16_bps = fp16.weight_bytes / t16.min_s, q_bps = quantized.weight_bytes / tq.min_s;
  rooflab::grading::note(fmt::format(
      "{} x {}: cuBLAS FP16 GEMV {:.1f} us ({:.0f} GB/s, {:.0f}% of the copy ceiling); {} GEMV {:.1f} us ({:.2f} MB of "
      "packed weights, {:.0f} GB/s, {:.0f}% of the copy ceiling): {:.2f}x the FP16 GEMV's speed, {:.2f}x at most "
      "from the bytes",
      side, side, t16.min_s * 1e6, fp16_bps / 1e9, 100 * fp16_bps / copy, quantized.name(), tq.min_s * 1e6,
      quantized.weight_bytes / 1e6, q_bps / 1e9, 100 * q_bps / copy, t16.min_s / tq.min_s,
      fp16.weight_bytes / quantized.weight_bytes));
  // The FP16 GEMV is a baseline to beat, not a roof ("caps": false in thresholds.json): the roof a quantized
  // GEMV cannot pass is the copy ceiling on its packed bytes.
  EXPECT_TRUE(rooflab::grading::speed_verdict(q_bps <= rooflab::implausible_above() * copy,
                                              "packed bytes per second within the copy ceiling"))
      << quantized.name() << " GEMV streams its weights faster than this GPU copies memory: check the work";
  rooflab::grading::award(ROOFLAB_LAB_ID, quantity, fp16.weight_bytes / tq.min_s, fp16_bps);
}

}  // namespace

ROOFLAB_TEST(Lab08Perf, Int8GemvAgainstFp16) {
  ROOFLAB_REQUIRE_GPU();
  grade_against_fp16("int8_gemv", 8, lab08::kInt8Group);
}

ROOFLAB_TEST(Lab08Perf, Int4GemvAgainstFp16) {
  ROOFLAB_REQUIRE_GPU();
  grade_against_fp16("int4_gemv", 4, lab08::perf::kInt4PerfGroup);
}

ROOFLAB_TEST(Lab08Perf, BitsPerWeightAgainstTime) {
  ROOFLAB_REQUIRE_GPU();
  const auto info = rooflab::query_device();
  const double copy = rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  const int side = lab08::perf::gemv_side();
  Layer l(side);
  const double weights = static_cast<double>(side) * side;
  rooflab::Plot p{
      .title = fmt::format("Batch-1 GEMV {} x {} on {}: time against bits per weight", side, side, info.name),
      .xlabel = "bits per weight (scales included)",
      .ylabel = "time (us)",
      .y_from_zero = true,
      .xmin = 0,
      .xmax = 17};
  rooflab::Series roof{"roofline: the weights' bytes at the copy ceiling", {}, "lines"};
  for (const double b : {0.0, 17.0}) roof.points.emplace_back(b, b / 8 * weights / copy * 1e6);
  p.series.push_back(roof);
  std::string table;
  for (const auto& [bits, group] :
       {std::pair{16, 1}, std::pair{8, lab08::kInt8Group}, std::pair{4, 32}, std::pair{4, 128}}) {
    const Packed packed(l, bits, group);
    const auto m = time_gemv(l, packed, 1.0);
    const double bpw = packed.weight_bytes * 8 / weights, floor = packed.weight_bytes / copy;
    p.series.push_back({packed.name(), {{bpw, m.min_s * 1e6}}, "points"});
    table += fmt::format("  {:<18} {:>6.3f} bits/weight: {:>8.1f} us ({:.0f}% of the floor's speed, {:.1f} us)\n",
                         packed.name(), bpw, m.min_s * 1e6, 100 * floor / m.min_s, floor * 1e6);
  }
  rooflab::grading::note("GEMV time against bits per weight (the floor: packed bytes at the copy ceiling):\n" + table);
  rooflab::grading::save_plot(p, "lab08-bits-per-weight");
}
