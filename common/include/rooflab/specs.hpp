// GPU, model and threshold data (data/*.json and each lab's labs/NN-name/thresholds.json): loaded once, looked up
// by id or by the name CUDA reports.
//
//   const rooflab::GpuSpec& h100 = rooflab::gpu("h100-sxm");        // "what would this be on an H100?"
//   const rooflab::GpuSpec* here = rooflab::find_gpu_by_cuda_name(prop.name);  // nullptr: not in the data
//   rooflab::peak_flops(h100, rooflab::DType::fp16);                  // FLOP/s, dense; nullopt: no such unit
//   rooflab::sliding_score(rooflab::threshold("01", "triad"), 0.8);   // points earned at 80% of the ceiling
//
// Units are the data files' (decimal GB/s and TFLOP/s, KB = 1024 bytes for shared memory); every number in
// the files carries its source (GpuSpec::sources says which). A missing or malformed file throws
// rooflab::DataError naming the file, the JSON path of the bad field and what was expected.
#pragma once

#include <rooflab/testing/ceiling.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab {

// A data file is missing, is not JSON, or has a missing or mistyped field.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- GPUs (data/gpus.json) ----

struct GpuSpec {
  std::string id;                           // "h100-sxm": stable, used on command lines and in tests
  std::string name;                         // "NVIDIA H100 SXM5"
  std::vector<std::string> cuda_names;      // exactly as cudaGetDeviceProperties().name reports them
  std::vector<std::string> match_tokens;    // tolerant lookup: every token must appear in the name...
  std::vector<std::string> exclude_tokens;  // ...and none of these (H100 vs H100 NVL)
  int cc_major = 0;
  int cc_minor = 0;

  // Datasheet figures; empty where the vendor publishes none or it is unconfirmed (the file says why).
  std::optional<int> sms;
  std::optional<double> boost_clock_mhz;
  std::optional<double> tensor_clock_mhz;  // where tensor peaks are quoted at another clock (H100: 1830)
  int fp32_lanes_per_sm = 0;               // FP32 FMA per clock per SM: 64 on sm_70/75/80, 128 after
  double fp32_tflops = 0;
  std::optional<double> fp64_tflops;            // CUDA cores (not FP64 tensor)
  std::optional<double> tf32_tflops;            // tensor cores, dense
  std::optional<double> fp16_tflops;            // tensor cores, dense, FP32 accumulate (half rate on GeForce)
  std::optional<double> bf16_tflops;            // tensor cores, dense, FP32 accumulate
  std::optional<double> fp8_tflops;             // tensor cores, dense, FP32 accumulate
  std::optional<double> int8_tops;              // tensor cores, dense
  std::optional<double> fp16_nontensor_tflops;  // half2 FMA on the CUDA cores
  double bandwidth_gbps = 0;
  double memory_gb = 0;
  std::string memory_type;  // HBM2, HBM2e, HBM3, HBM3e, GDDR6, GDDR6X
  std::optional<double> l2_mb;
  double smem_per_sm_kb = 0;

  // Limits of the compute capability (CUDA C++ Programming Guide, Compute Capabilities; allocation
  // granularities from the toolkit's cuda_occupancy.h), for occupancy arithmetic.
  int max_threads_per_sm = 0;
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int max_threads_per_block = 1024;
  int registers_per_sm = 0;
  int max_registers_per_thread = 0;
  int register_alloc_unit = 0;       // registers per warp are rounded up to this
  int warp_alloc_granularity = 0;    // warps per block are rounded up to this for the register limit
  double smem_max_per_block_kb = 0;  // with the opt-in attribute
  int smem_alloc_unit_bytes = 0;
  int reserved_smem_per_block_bytes = 0;

  std::string notes;
  std::map<std::string, std::string> sources;  // field name -> full citation of its source

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

enum class DType { fp64, fp32, tf32, fp16, bf16, fp8, int8, fp16_nontensor };

// Peak FLOP/s (dense; OP/s for int8) for a data type on a GPU; nullopt when the GPU has no such unit or
// the figure is unpublished. fp16/bf16/fp8/tf32/int8 are tensor-core figures.
std::optional<double> peak_flops(const GpuSpec& gpu, DType type);

// ---- models (data/models.json) ----

struct ModelSpec {
  std::string id;    // "llama-3-8b"
  std::string name;  // "Llama-3-8B"
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;  // per expert for mixtures of experts
  int vocab = 0;
  bool tie_word_embeddings = false;
  double params_b = 0;                    // billions, as published
  std::optional<double> active_params_b;  // mixtures of experts: per token
  int experts = 1;
  int experts_per_token = 1;
  std::optional<int> sliding_window;
  bool qkv_bias = false;
  std::string source;  // the config.json the fields come from
  std::string notes;
  // (No KV-cache arithmetic here: it is Lab 06's first question.)
};

// ---- thresholds (labs/NN-name/thresholds.json; the global policy in data/thresholds.json) ----

struct Provenance {
  std::string kind;              // "analytic estimate", "measured" or "predicted"
  std::string reasoning;         // analytic estimate: why these fractions (the others: optional)
  std::string source;            // analytic estimate: where the anchor comes from
  std::string gpu;               // measured, predicted: on which GPU ...
  std::string date;              // ... when ...
  std::optional<double> figure;  // ... and what the reference solution reached (predicted: the performance
                                 // model's figure for it, docs/measurements.md, before a GPU measured it)
};

// The numbers of a sliding rule on a range of architectures where the instruction class's ceiling differs
// ("by_architecture": mma.sync and WMMA against cuBLAS's wgmma from sm_90 on, say): from compute capability
// `from_cc` (90 for sm_90) up to, not including, `before_cc` (0: no end). Each says why its numbers hold there.
struct ArchRule {
  int from_cc = 0;
  int before_cc = 0;
  double full_at = 0;
  double zero_at = 0;
  std::string why;
  Provenance provenance;
  bool covers(int cc) const { return cc >= from_cc && (before_cc == 0 || cc < before_cc); }
  std::string range() const;  // "sm_90 and later", "sm_80 to sm_89"
};

// A reference the test times itself, in the same run at the same shape (cuBLAS at the rung's shape, the naive
// attention path, cuBLAS's FP16 GEMV), declared by the lab's rule: award() takes the test's value for it, and
// a lab with a new baseline adds nothing to common/.
struct Baseline {
  std::string name;   // what results.json records as the reference in force, e.g. "cublas_sgemm_same_run"
  std::string unit;   // SI: "B/s" or "FLOP/s"
  bool caps = true;   // true: a roof no honest result passes (cuBLAS at the same shape); false: one to beat
  std::string what;   // what the test times, in words
};

// A baseline the student's own code runs (the naive attention path, batch 1, GQA 1), against which a rule grades a
// ratio: a student could slow it on purpose and make the ratio look better. The rule caps it: the baseline counts
// as no slower than its roofline time on the grading GPU over `roof_fraction` (rooflab::grading::capped_baseline_s),
// so a ratio that passes also bounds the graded kernel's own speed against its roof.
struct StudentBaseline {
  double roof_fraction = 0;  // in (0, 1]: the share of its roof below which the baseline is taken as slowed
  std::string reasoning;     // why this share: what honest baselines reach, on which GPUs
};

struct Threshold {
  std::string lab;       // "01"
  std::string quantity;  // "triad"
  // ceiling_fraction: scored against `ceiling` measured on the grading GPU, or `baseline` timed in the run;
  // prediction_fraction: scored against the analytic prediction named by `reference`;
  // ratio_max / ratio_min: a pass/fail bound `value` on a ratio the lab measures (`description`).
  std::string kind;
  std::optional<Ceiling> ceiling;    // ceiling_fraction: a calibrated ceiling (rooflab/testing/ceiling.hpp) ...
  std::optional<Baseline> baseline;  // ... or a baseline the test measures (exactly one of the two)
  std::string reference;  // prediction_fraction only, e.g. predicted_byte_ratio
  double full_at = 0;     // sliding kinds: fraction earning full points
  double zero_at = 0;     // sliding kinds: fraction at or below which nothing is earned
  double value = 0;       // ratio kinds: the bound
  std::string description;
  Provenance provenance;
  std::optional<StudentBaseline> student_baseline;  // "student_baseline": the ratio's baseline is the student's
  // Sliding kinds: other numbers on some architectures (the first that covers a GPU's compute capability wins;
  // on any other, full_at and zero_at above). Their ranges do not overlap (checked as the file loads).
  std::vector<ArchRule> by_architecture;

  bool sliding() const { return kind == "ceiling_fraction" || kind == "prediction_fraction"; }
  // The rule as it grades on a GPU of compute capability `cc` (86 for sm_86): its by_architecture numbers where
  // one covers cc, else itself.
  Threshold on_architecture(int cc) const;
  const ArchRule* architecture_rule(int cc) const;
  // The result cannot honestly exceed the reference: full_at <= 1 and award() rejects a result above
  // implausible_above() x it. False only for a baseline declared with "caps": false.
  bool caps() const { return !baseline || baseline->caps; }
  double ratio_max() const;  // the bound of a ratio_max rule; throws DataError for other kinds
  double ratio_min() const;  // the bound of a ratio_min rule; throws DataError for other kinds
};

// ---- loading ----

// ROOFLAB_DATA_DIR from the environment if set, else the build's ROOFLAB_DATA_DIR (the source tree's data/).
std::filesystem::path data_dir();
// ROOFLAB_LABS_DIR from the environment if set, else the build's ROOFLAB_LABS_DIR (the source tree's labs/):
// where each lab's own data (its thresholds) is read, never the student folder a submission comes from.
std::filesystem::path labs_dir();
// The folder of lab `lab` ("01"): the one directory of labs_dir() named "01-...". Throws DataError.
std::filesystem::path lab_dir(std::string_view lab);

std::vector<GpuSpec> load_gpus(const std::filesystem::path& file);
std::vector<ModelSpec> load_models(const std::filesystem::path& file);
// data/thresholds.json: the policy every lab shares (implausible_above).
double load_implausible_above(const std::filesystem::path& file);
// A lab's thresholds.json: an object of quantity -> rule, validated as it loads; `lab` fills Threshold::lab.
std::vector<Threshold> load_lab_thresholds(const std::filesystem::path& file, std::string_view lab);

// ---- cached lookups in data_dir() (loaded on first use, thread-safe) ----

const std::vector<GpuSpec>& gpus();
const GpuSpec& gpu(std::string_view id);  // throws std::invalid_argument listing the known ids
// Exact match on cuda_names first, then the tolerant match (case-insensitive whole tokens: every
// match_token present, no exclude_token; the GPU with most tokens wins, a tie is no match).
const GpuSpec* find_gpu_by_cuda_name(std::string_view cuda_name);
const std::vector<ModelSpec>& models();
const ModelSpec& model(std::string_view id);  // throws std::invalid_argument listing the known ids
const Threshold& threshold(std::string_view lab, std::string_view quantity);  // throws DataError
const std::vector<Threshold>& lab_thresholds(std::string_view lab);             // lab_dir(lab)/thresholds.json
double implausible_above();

// Points earned (0..1) by a result at `fraction_of_ceiling` on a sliding threshold: 0 at or below zero_at,
// 1 at or above full_at, linear between; NaN earns 0. Throws std::invalid_argument for ratio kinds.
double sliding_score(const Threshold& t, double fraction_of_ceiling);

}  // namespace rooflab
