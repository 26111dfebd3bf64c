// What a perf test is graded against: a ceiling, named in data/thresholds.json's `ceiling` field and typed
// here, with its value in SI units (bytes/s, FLOP/s) and where it was measured.
//
//   copy_bandwidth ... bf16_tensor_peak   measured once per GPU by `rooflab calibrate` (rooflab::Ceilings)
//   cublas_sgemm_same_run, ...            measured by the test itself, in the same run, at the same shape
//                                         (a GEMM rung against cuBLAS, a quantized GEMV against rooflab's FP16
//                                         GEMV, a flash kernel against the naive attention path): the test
//                                         hands the value to award()
//
// The grader writes the ceilings a test used into results.json (CeilingInForce), as data.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rooflab {

enum class Ceiling {
  copy_bandwidth,    // bytes/s: the better of our copy kernel and cudaMemcpy, read + write
  fp32_fma_peak,     // FLOP/s: our FMA kernel
  sgemm_peak,        // FLOP/s: cuBLAS SGEMM 8192^3
  fp16_tensor_peak,  // FLOP/s: cuBLAS GemmEx FP16 on tensor cores, FP32 accumulate, 8192^3
  bf16_tensor_peak,  // FLOP/s: the same in BF16
  cublas_sgemm_same_run,  // FLOP/s: cuBLAS SGEMM timed by the test at its own shape
  cublas_hgemm_same_run,  // FLOP/s: cuBLAS half-precision GEMM timed by the test at its own shape
  // B/s: the weight bytes per second of rooflab's FP16 GEMV (rooflab/testing/gemv_fp16.hpp) timed by the test at its
  // own shape. A quantized GEMV's weight bytes per second over it is its speedup x its bytes / FP16's bytes.
  fp16_gemv_same_run,
  naive_attention_same_run,  // FLOP/s: the naive attention path (cuBLAS QK^T, softmax, cuBLAS PV) timed by the
                             // test at its own shape (Lab 05's flash kernel against it)
};

// Every ceiling, in declaration order (for messages and tests).
std::span<const Ceiling> all_ceilings();
std::string_view to_string(Ceiling c);                     // the name thresholds.json uses
std::optional<Ceiling> parse_ceiling(std::string_view name);  // nullopt: no such ceiling
std::string_view si_unit(Ceiling c);                        // "B/s" or "FLOP/s"
// True for the ceilings a test measures in the same run (award() takes their value from the test);
// false for those `rooflab calibrate` measures once per GPU (award() reads them itself).
bool measured_in_the_test(Ceiling c);
// True for a ceiling no honest result exceeds (a roof, cuBLAS at the same shape); false for a baseline the
// result is meant to beat (naive_attention_same_run: Lab 05's Flash kernel against the naive path;
// fp16_gemv_same_run: Lab 08's quantized GEMVs may stream their fewer bytes faster than rooflab's FP16 GEMV
// streams its own). A baseline's threshold may set full_at above 1, and award() applies no implausible-above
// check to it: its test checks the result against a roof instead.
bool caps_the_result(Ceiling c);

// A ceiling as one perf test used it: results.json carries these (per test, and the set at the top).
struct CeilingInForce {
  std::string name;      // to_string(Ceiling)
  double value = 0;      // in `unit`
  std::string unit;      // SI: "B/s" or "FLOP/s"
  std::string measured;  // where: "rooflab calibrate, <GPU>, <UTC time>" or "in this test, this run"
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CeilingInForce, name, value, unit, measured)

// Units for people: what the notes and plots print (decimal, as datasheets count).
namespace units {
constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;
constexpr double gb_per_s(double bytes_per_s) { return bytes_per_s / kGiga; }
constexpr double tb_per_s(double bytes_per_s) { return bytes_per_s / kTera; }
constexpr double tflop_per_s(double flop_per_s) { return flop_per_s / kTera; }
constexpr double bytes_per_s_from_gb(double gb_per_s) { return gb_per_s * kGiga; }
constexpr double flop_per_s_from_tflop(double tflop_per_s) { return tflop_per_s * kTera; }
// "1234.5 GB/s" or "19.5 TFLOP/s": an SI value in the unit its size reads best in.
std::string readable(double value_si, std::string_view si_unit);
}  // namespace units

}  // namespace rooflab
