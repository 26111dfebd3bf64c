// GPU, model and threshold data (data/*.json): loaded once, looked up by id or by the name CUDA reports.
//
//   const rooflab::GpuSpec& h100 = rooflab::gpu("h100-sxm");        // "what would this be on an H100?"
//   const rooflab::GpuSpec* here = rooflab::find_gpu_by_cuda_name(prop.name);
//   rooflab::peak_flops(h100, rooflab::DType::fp16);                  // FLOP/s, dense
//
// Units are the datasheets' (decimal GB/s, TFLOP/s); every number in the files carries its source.
// A malformed file throws rooflab::DataError naming the file and the JSON path of the bad field.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GpuSpec {
  std::string id;    // "h100-sxm"
  std::string name;  // "NVIDIA H100 SXM5"
  std::vector<std::string> cuda_names;
  int cc_major = 0;
  int cc_minor = 0;
  std::optional<int> sms;
  std::optional<double> boost_clock_mhz;
  int fp32_lanes_per_sm = 0;
  double fp32_tflops = 0;
  std::optional<double> fp64_tflops;
  std::optional<double> tf32_tflops;
  std::optional<double> fp16_tflops;  // tensor cores, dense, FP32 accumulate
  std::optional<double> bf16_tflops;
  std::optional<double> fp8_tflops;
  std::optional<double> int8_tops;
  double bandwidth_gbps = 0;
  double memory_gb = 0;
  std::string memory_type;
  std::optional<double> l2_mb;
  double smem_per_sm_kb = 0;
  // Per-SM limits of the compute capability (CUDA C++ Programming Guide).
  int max_threads_per_sm = 0;
  int max_threads_per_block = 1024;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;
  int max_registers_per_thread = 255;
  double smem_max_per_block_kb = 0;
  int reserved_smem_per_block_bytes = 0;
  std::string notes;

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

struct ModelSpec {
  std::string id;
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;
  int vocab = 0;
  double params_b = 0;  // billions
  std::optional<double> active_params_b;
  std::string source;
};

struct Threshold {
  std::string lab;
  std::string quantity;
  std::string kind;     // ceiling_fraction | ratio_max | ratio_min
  std::string ceiling;  // for ceiling_fraction: copy_bandwidth, fp32_fma_peak, ...
  double full_at = 0;
  double zero_at = 0;
  double value = 0;     // for ratio_max / ratio_min
  std::string provenance;
  double ratio_max() const;  // the value of a ratio_max rule (throws for other kinds)
};

enum class DType { fp64, fp32, tf32, fp16, bf16, fp8, int8 };

std::filesystem::path data_dir();

std::vector<GpuSpec> load_gpus(const std::filesystem::path& file);
std::vector<ModelSpec> load_models(const std::filesystem::path& file);
std::vector<Threshold> load_thresholds(const std::filesystem::path& file, double* implausible_above = nullptr);

const std::vector<GpuSpec>& gpus();
const GpuSpec& gpu(std::string_view id);  // throws std::invalid_argument listing the known ids
const GpuSpec* find_gpu_by_cuda_name(std::string_view cuda_name);
const std::vector<ModelSpec>& models();
const ModelSpec& model(std::string_view id);
const Threshold& threshold(std::string_view lab, std::string_view quantity);
double implausible_above();

// Peak FLOP/s (dense) for a data type on a GPU; nullopt when the GPU has no such unit or it is unpublished.
std::optional<double> peak_flops(const GpuSpec& gpu, DType type);

// Fraction of a quantity's points earned at `fraction_of_ceiling`: 0 at or below zero_at, 1 at or above
// full_at, linear between.
double sliding_score(const Threshold& t, double fraction_of_ceiling);

}  // namespace rooflab
