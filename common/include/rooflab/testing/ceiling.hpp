// What a perf test is graded against: a ceiling `rooflab calibrate` measures once per GPU (rooflab::Ceilings),
// named in a lab's thresholds.json `ceiling` field and typed here, with its value in SI units (bytes/s,
// FLOP/s) and where it was measured.
//
// A reference the test times itself in the same run (cuBLAS at a GEMM rung's shape, the naive attention path,
// cuBLAS's FP16 GEMV) is not a Ceiling: the lab's rule declares it as a `baseline` (rooflab::Baseline in
// rooflab/specs.hpp: name, unit, whether it caps the result), and the test hands its value to award(). A lab
// with a new baseline changes nothing here.
//
// The grader writes the references a test used into results.json (CeilingInForce), as data.
#pragma once

// The declarations only: this header reaches every kernel file the CPU backend compiles (rooflab/specs.hpp, in
// its precompiled prelude), where json.hpp's conversions cost 0.9 s of template instantiation per file.
#include <nlohmann/json_fwd.hpp>

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
};

// Every ceiling, in declaration order (for messages and tests).
std::span<const Ceiling> all_ceilings();
std::string_view to_string(Ceiling c);                     // the name thresholds.json uses
std::optional<Ceiling> parse_ceiling(std::string_view name);  // nullopt: no such ceiling
std::string_view si_unit(Ceiling c);                        // "B/s" or "FLOP/s"

// A ceiling or a baseline as one perf test used it: results.json carries these (per test, and the set at the
// top).
struct CeilingInForce {
  std::string name;      // to_string(Ceiling), or the baseline's name in the lab's thresholds.json
  double value = 0;      // in `unit`
  std::string unit;      // SI: "B/s" or "FLOP/s"
  std::string measured;  // where: "rooflab calibrate, <GPU>, <UTC time>" or "in this test, this run"
};
void to_json(nlohmann::json& j, const CeilingInForce& c);  // {"name", "value", "unit", "measured"}
void from_json(const nlohmann::json& j, CeilingInForce& c);

// What a perf test measured and judged against a ceiling or a baseline (award() on a GPU): results.json carries
// these per test ("rooflab_measures"), as data a GPU run is read from.
struct Measure {
  std::string quantity;   // the threshold it was judged by, in the lab's thresholds.json
  double value = 0;       // in `unit`
  std::string unit;       // SI: "B/s" or "FLOP/s"
  std::string against;    // the ceiling's or baseline's name (CeilingInForce::name)
  double reference = 0;   // its value, in `unit`
  double fraction = 0;    // value / reference
  int architecture = 0;   // the GPU's compute capability that picked the rule's numbers (90: sm_90; 0: unknown)
};
// {"quantity", "value", "unit", "against", "reference", "fraction", "architecture"}
void to_json(nlohmann::json& j, const Measure& m);
void from_json(const nlohmann::json& j, Measure& m);

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
