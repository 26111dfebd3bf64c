// data/gpus.json, models.json and thresholds.json: they load, every number is sourced, the figures agree
// with each other and with the architecture (FP32 peak = SMs x lanes x 2 x clock, tensor rates per clock,
// the ratios between data types), lookups work, and malformed files fail naming the file and the field.
//
// The checks derive what they expect from independent facts (the hardware formulas, docs/sources.md) rather
// than repeating the data file, so a wrong figure in the file fails here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <rooflab/testing/roofline.hpp>
#include <rooflab/specs.hpp>
#include <regex>
#include <set>

namespace {

using nlohmann::json;

// ---- helpers ----

json read_data(const char* file) {
  std::ifstream in(rooflab::data_dir() / file);
  return json::parse(in);
}

// A scratch copy of a data file, removed when the test ends.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_(std::filesystem::temp_directory_path() / ("rooflab-specs-" + std::to_string(getpid()) + "-" + name)) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The DataError message of f(), or "" when it does not throw one.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rooflab::DataError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool is_geforce(const rooflab::GpuSpec& g) { return contains(g.name, "GeForce"); }

double within(double got, double want) { return std::abs(got / want - 1.0); }

// ---- the GPU list ----

TEST(Gpus, EveryGpuOfTheReferenceLoads) {
  // docs/sources.md, "GPU specifications": the GPUs of data/gpus.json, in order.
  const std::vector<std::string> want = {"v100-sxm2",
                                         "a100-40gb-sxm4",
                                         "a100-80gb-sxm4",
                                         "a100-80gb-pcie",
                                         "h100-sxm",
                                         "h100-pcie",
                                         "h200-sxm",
                                         "l4",
                                         "l40s",
                                         "t4",
                                         "a10",
                                         "rtx-3090",
                                         "rtx-4090",
                                         "b200"};
  std::vector<std::string> got;
  for (const auto& g : rooflab::gpus()) got.push_back(g.id);
  EXPECT_EQ(got, want);
}

TEST(Gpus, SaneRanges) {
  for (const auto& g : rooflab::gpus()) {
    SCOPED_TRACE(g.id);
    EXPECT_FALSE(g.name.empty());
    EXPECT_FALSE(g.cuda_names.empty());
    EXPECT_GE(g.bandwidth_gbps, 100);
    EXPECT_LE(g.bandwidth_gbps, 10000);
    EXPECT_GE(g.fp32_tflops, 1);
    EXPECT_LE(g.fp32_tflops, 200);
    EXPECT_GE(g.memory_gb, 8);
    EXPECT_LE(g.memory_gb, 300);
    EXPECT_GE(g.cc_major, 7);
    if (g.sms) {
      EXPECT_TRUE(*g.sms >= 20 && *g.sms <= 200) << *g.sms;
    }
    if (g.boost_clock_mhz) {
      EXPECT_TRUE(*g.boost_clock_mhz >= 1000 && *g.boost_clock_mhz <= 3000);
    }
    if (g.l2_mb) {
      EXPECT_TRUE(*g.l2_mb >= 1 && *g.l2_mb <= 256) << *g.l2_mb;
    }
    EXPECT_TRUE(g.smem_per_sm_kb >= 64 && g.smem_per_sm_kb <= 256) << g.smem_per_sm_kb;
    // HBM parts have the bandwidth of HBM; GDDR parts do not reach 1.1 TB/s.
    if (contains(g.memory_type, "HBM")) {
      EXPECT_GE(g.bandwidth_gbps, 800);
    }
    if (contains(g.memory_type, "GDDR")) {
      EXPECT_LE(g.bandwidth_gbps, 1100);
    }
    // Tensor cores beat CUDA cores; every ridge point is a sensible intensity.
    for (const auto type : {rooflab::DType::fp32, rooflab::DType::fp16, rooflab::DType::bf16, rooflab::DType::tf32}) {
      const auto peak = rooflab::peak_flops(g, type);
      if (!peak) continue;
      if (type != rooflab::DType::fp32) {
        EXPECT_GE(*peak, g.fp32_tflops * 1e12);
      }
      const double ridge = rooflab::roofline::ridge_point(*peak, rooflab::roofline::from_gbps(g.bandwidth_gbps));
      EXPECT_GT(ridge, 1);
      EXPECT_LT(ridge, 1000);
    }
    if (g.fp64_tflops) {
      EXPECT_LE(*g.fp64_tflops, g.fp32_tflops);
    }
  }
}

// docs/sources.md, "GPU specifications": FP32 lanes per SM are 64 on sm_70/sm_75/sm_80 (A100 has 64, not 128) and 128 after.
TEST(Gpus, Fp32LanesFollowTheComputeCapability) {
  for (const auto& g : rooflab::gpus()) {
    const bool narrow = g.cc_major == 7 || (g.cc_major == 8 && g.cc_minor == 0);
    EXPECT_EQ(g.fp32_lanes_per_sm, narrow ? 64 : 128) << g.id;
  }
}

// FP32 peak = SMs x FP32 lanes x 2 FLOP (one FMA) x boost clock. Exceptions, each with its reason:
//   b200: NVIDIA publishes no boost clock (and 80 TFLOPS would need about 2.1 GHz at 148 x 128 lanes).
TEST(Gpus, Fp32PeakFollowsSmsLanesAndClock) {
  const std::set<std::string> no_clock = {"b200"};
  int checked = 0;
  for (const auto& g : rooflab::gpus()) {
    if (no_clock.count(g.id) != 0) {
      EXPECT_FALSE(g.boost_clock_mhz.has_value()) << g.id << " now has a clock: remove it from the exceptions";
      continue;
    }
    ASSERT_TRUE(g.sms && g.boost_clock_mhz) << g.id;
    const double derived = *g.sms * g.fp32_lanes_per_sm * 2.0 * *g.boost_clock_mhz * 1e6 / 1e12;
    EXPECT_LT(within(derived, g.fp32_tflops), 0.03) << g.id << ": " << derived << " derived vs " << g.fp32_tflops;
    ++checked;
  }
  EXPECT_EQ(checked, 13);
}

// Dense FP16 tensor FLOP per clock per SM, from the architecture whitepapers (tensor cores per SM x FMA per
// core per clock x 2): Volta/Turing 8 x 64, GA100 4 x 256, GA10x/Ada 4 x 128, Hopper 4 x 512. GeForce
// runs FP32-accumulate at half rate. This catches a sparse figure stored as dense (2x) or a wrong clock.
// Exceptions: h100-pcie (its tensor clock is unpublished; 756 implies about 1620 MHz), b200 (no clock).
TEST(Gpus, TensorPeakFollowsTheArchitecture) {
  auto per_clock = [](const rooflab::GpuSpec& g) -> double {
    const int cc = g.cc_major * 10 + g.cc_minor;
    const double full = cc == 80 ? 2048 : cc == 90 ? 4096 : 1024;
    return is_geforce(g) ? full / 2 : full;
  };
  const std::set<std::string> unknown_clock = {"h100-pcie", "b200"};
  int checked = 0;
  for (const auto& g : rooflab::gpus()) {
    if (unknown_clock.count(g.id) != 0 || !g.fp16_tflops) continue;
    const double clock = g.tensor_clock_mhz.value_or(g.boost_clock_mhz.value());
    const double derived = *g.sms * per_clock(g) * clock * 1e6 / 1e12;
    EXPECT_LT(within(derived, *g.fp16_tflops), 0.03) << g.id << ": " << derived << " derived vs " << *g.fp16_tflops;
    ++checked;
  }
  EXPECT_EQ(checked, 12);
  // docs/sources.md, "GPU specifications": H100's tensor peak is quoted at 1830 MHz, below its 1980 MHz boost.
  EXPECT_EQ(rooflab::gpu("h100-sxm").tensor_clock_mhz.value_or(0), 1830);
}

// The data types of one GPU keep the ratios the tensor cores are built with.
TEST(Gpus, DataTypeRatiosAgree) {
  for (const auto& g : rooflab::gpus()) {
    SCOPED_TRACE(g.id);
    if (!g.fp16_tflops) continue;
    const double fp16 = *g.fp16_tflops;
    if (g.bf16_tflops) {
      EXPECT_LT(within(*g.bf16_tflops, fp16), 0.01);  // BF16 runs at the FP16 rate
    }
    if (g.tf32_tflops) {
      EXPECT_LT(within(*g.tf32_tflops, fp16 / 2), 0.03);  // TF32 at half of it
    }
    if (g.fp8_tflops) {
      EXPECT_LT(within(*g.fp8_tflops, 2 * fp16), 0.03);  // FP8 at twice
    }
    // INT8 is twice FP16; on GeForce four times the stored (half-rate FP32-accumulate) FP16 figure.
    if (g.int8_tops) {
      EXPECT_LT(within(*g.int8_tops, (is_geforce(g) ? 4 : 2) * fp16), 0.03);
    }
  }
  // half2 on the CUDA cores: 1x FP32 (GA10x, Ada), 2x (Volta, Hopper) or 4x (A100).
  int checked = 0;
  for (const auto& g : rooflab::gpus()) {
    if (!g.fp16_nontensor_tflops) continue;
    const double ratio = *g.fp16_nontensor_tflops / g.fp32_tflops;
    EXPECT_TRUE(within(ratio, 1) < 0.02 || within(ratio, 2) < 0.02 || within(ratio, 4) < 0.02) << g.id << ": " << ratio;
    ++checked;
  }
  EXPECT_GE(checked, 6);
  // Architectures without a unit have none: Volta and Turing have no TF32/BF16/FP8 tensor cores.
  for (const char* id : {"v100-sxm2", "t4"}) {
    const auto& g = rooflab::gpu(id);
    EXPECT_FALSE(g.tf32_tflops || g.bf16_tflops || g.fp8_tflops) << id;
  }
}

// The occupancy limits hang together the way the CUDA guide defines them.
TEST(Gpus, OccupancyLimitsAreConsistent) {
  for (const auto& g : rooflab::gpus()) {
    SCOPED_TRACE(g.id);
    EXPECT_EQ(g.max_threads_per_sm, 32 * g.max_warps_per_sm);
    EXPECT_GE(g.max_threads_per_sm / g.max_blocks_per_sm, 32)
        << "a block of one warp must be able to fill the SM's block slots";
    EXPECT_EQ(g.max_threads_per_block, 1024);
    EXPECT_EQ(g.registers_per_sm, 65536);  // NVIDIA's architecture whitepapers: 64K 32-bit registers per SM
    EXPECT_EQ(g.max_registers_per_thread, 255);
    EXPECT_EQ(g.register_alloc_unit, 256);
    EXPECT_EQ(g.warp_alloc_granularity, 4);
    // From sm_80 on, 1 KB per block is reserved, so the opt-in maximum is the SM's capacity minus 1 KB.
    const bool reserves = g.cc_major >= 8;
    EXPECT_EQ(g.reserved_smem_per_block_bytes, reserves ? 1024 : 0);
    EXPECT_DOUBLE_EQ(g.smem_max_per_block_kb, g.smem_per_sm_kb - (reserves ? 1 : 0));
    EXPECT_EQ(g.smem_alloc_unit_bytes, reserves ? 128 : 256);
    EXPECT_EQ(std::fmod(g.smem_per_sm_kb * 1024, g.smem_alloc_unit_bytes), 0.0);
  }
  // NVIDIA's H100 whitepaper: shared memory up to 228 KB per SM on H100.
  EXPECT_EQ(rooflab::gpu("h100-sxm").smem_per_sm_kb, 228);
  EXPECT_EQ(rooflab::gpu("h100-sxm").arch(), "sm_90");
  EXPECT_EQ(rooflab::gpu("b200").arch(), "sm_100");
}

TEST(Gpus, EveryNumberHasASource) {
  const json j = read_data("gpus.json");
  const json& sources = j.at("sources");
  int numbers = 0;
  auto check = [&](const json& entry, const std::string& where) {
    for (const auto& [key, value] : entry.items()) {
      if (!value.is_object() || !value.contains("value")) continue;
      ++numbers;
      SCOPED_TRACE(where + "." + key);
      ASSERT_TRUE(value.contains("source"));
      EXPECT_TRUE(sources.contains(value["source"].get<std::string>())) << value["source"];
      if (value["value"].is_null()) {
        EXPECT_TRUE(value.contains("note")) << "a null needs a note saying why";
      }
    }
  };
  for (const auto& g : j.at("gpus")) check(g, g.at("id").get<std::string>());
  for (const auto& [cc, a] : j.at("architectures").items()) check(a, "architectures[" + cc + "]");
  EXPECT_EQ(numbers, 14 * 16 + 7 * 11);  // 16 figures per GPU, 11 limits per compute capability
  // ... and the loaded structs say where each figure came from.
  for (const auto& g : rooflab::gpus()) {
    for (const char* field :
         {"bandwidth_gbps", "fp32_tflops", "fp16_tflops", "sms", "max_warps_per_sm", "smem_alloc_unit_bytes"}) {
      EXPECT_FALSE(g.sources.count(field) == 0 || g.sources.at(field).empty()) << g.id << "." << field;
    }
  }
  EXPECT_TRUE(contains(rooflab::gpu("h100-sxm").sources.at("fp16_tflops"), "H100"));
  EXPECT_TRUE(contains(rooflab::gpu("t4").sources.at("max_warps_per_sm"), "Programming Guide"));
}

// The figures the classic exercises (docs/sources.md) and common confusions quote.
TEST(Gpus, ReferenceFigures) {
  EXPECT_NEAR(*rooflab::gpu("a100-40gb-sxm4").fp16_tflops, 312, 0.5);  // exercise 1
  EXPECT_NEAR(rooflab::gpu("h100-sxm").bandwidth_gbps, 3350, 0.5);     // exercises 3, 5
  EXPECT_NEAR(*rooflab::gpu("h100-sxm").fp16_tflops, 989, 1);          // "989 dense, 1979 sparse"
  EXPECT_EQ(rooflab::gpu("a100-40gb-sxm4").fp32_lanes_per_sm, 64);     // "A100 has 64, not 128"
  // BabelStream's A100-40GB triad of 1377 GB/s is 88.6% of the datasheet bandwidth.
  EXPECT_NEAR(1377 / rooflab::gpu("a100-40gb-sxm4").bandwidth_gbps, 0.886, 0.001);
}

// ---- lookups ----

TEST(Gpus, LookupByCudaName) {
  for (const auto& g : rooflab::gpus()) {
    for (const auto& n : g.cuda_names) {
      SCOPED_TRACE(n);
      const auto* exact = rooflab::find_gpu_by_cuda_name(n);
      ASSERT_NE(exact, nullptr);
      EXPECT_EQ(exact->id, g.id);
      // Variants the exact list lacks go through the tolerant match and must land on the same GPU.
      std::string lowered = n;
      for (auto& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const std::string& variant : {lowered, n + " MIG 1g.10gb", "  " + n + "  "}) {
        const auto* tolerant = rooflab::find_gpu_by_cuda_name(variant);
        ASSERT_NE(tolerant, nullptr) << variant;
        EXPECT_EQ(tolerant->id, g.id) << variant;
      }
    }
  }
  auto id_of = [](const char* name) -> std::string {
    const auto* g = rooflab::find_gpu_by_cuda_name(name);
    return g ? g->id : "none";
  };
  EXPECT_EQ(id_of("NVIDIA H100 80GB HBM3 MIG 3g.40gb"), "h100-sxm");
  EXPECT_EQ(id_of("NVIDIA A100-PCIE-80GB"), "a100-80gb-pcie");
  EXPECT_EQ(id_of("A100-SXM4-80GB"), "a100-80gb-sxm4");
  EXPECT_EQ(id_of("GeForce RTX 4090"), "rtx-4090");
  // Neighbours that are different GPUs must not be mistaken for ours.
  for (const char* other :
       {"NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA A10G", "NVIDIA L40", "NVIDIA A100-PCIE-40GB",
        "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 4090 Laptop GPU",
        "Tesla V100-PCIE-32GB", "NVIDIA GH200 480GB", "Some Other GPU", ""}) {
    EXPECT_EQ(id_of(other), "none") << other;
  }
}

TEST(Gpus, UnknownIdListsTheKnownIds) {
  try {
    rooflab::gpu("h1000");
    FAIL() << "an unknown id was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "h1000")) << what;
    for (const auto& g : rooflab::gpus()) EXPECT_TRUE(contains(what, g.id)) << what;
  }
  EXPECT_THROW(rooflab::model("llama-5"), std::invalid_argument);
}

TEST(Specs, DataDirComesFromTheEnvironmentFirst) {
  const char* before = std::getenv("ROOFLAB_DATA_DIR");
  const std::string saved = before ? before : "";
  ::setenv("ROOFLAB_DATA_DIR", "/tmp/somewhere-else", 1);
  EXPECT_EQ(rooflab::data_dir(), std::filesystem::path("/tmp/somewhere-else"));
  if (before) {
    ::setenv("ROOFLAB_DATA_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("ROOFLAB_DATA_DIR");
    EXPECT_TRUE(std::filesystem::exists(rooflab::data_dir() / "gpus.json")) << rooflab::data_dir();
  }
}

// ---- malformed files ----

TEST(Gpus, MalformedFilesNameTheFileAndTheField) {
  const std::string missing = error_of([] { rooflab::load_gpus("/nonexistent/gpus.json"); });
  EXPECT_TRUE(contains(missing, "/nonexistent/gpus.json")) << missing;

  const TempFile bad_json("bad.json", "{\n  \"gpus\": [\n    {\"id\": }\n");
  const std::string parse = error_of([&] { rooflab::load_gpus(bad_json.path()); });
  EXPECT_TRUE(contains(parse, bad_json.path().string()) && contains(parse, "line 3")) << parse;

  // Take the real file and break one thing at a time.
  auto broken = [](const std::function<void(json&)>& edit) {
    json j = read_data("gpus.json");
    edit(j);
    const TempFile f("broken.json", j.dump(1));
    const std::string e = error_of([&] { rooflab::load_gpus(f.path()); });
    EXPECT_TRUE(contains(e, f.path().string())) << e;
    return e;
  };
  std::string e = broken([](json& j) { j["gpus"][3]["bandwidth_gbps"]["value"] = "fast"; });
  EXPECT_TRUE(contains(e, "gpus[3].bandwidth_gbps.value: expected a number, got string")) << e;
  e = broken([](json& j) { j["gpus"][5].erase("name"); });
  EXPECT_TRUE(contains(e, "gpus[5].name: missing")) << e;
  e = broken([](json& j) { j["gpus"][2]["fp32_tflops"]["source"] = "a blog"; });
  EXPECT_TRUE(contains(e, "gpus[2].fp32_tflops.source")) << e;
  e = broken([](json& j) { j["gpus"][1]["l2_mb"]["value"] = nullptr; });
  EXPECT_TRUE(contains(e, "gpus[1].l2_mb.note")) << e;
  e = broken([](json& j) { j["gpus"][0]["bandwidth_gbps"]["value"] = nullptr; });
  EXPECT_TRUE(contains(e, "gpus[0].bandwidth_gbps.value: must not be null")) << e;
  e = broken([](json& j) { j["gpus"][4]["sms"]["value"] = 132.5; });
  EXPECT_TRUE(contains(e, "gpus[4].sms.value: expected an integer")) << e;
  e = broken([](json& j) { j["gpus"][4]["cuda_names"] = "NVIDIA H100"; });
  EXPECT_TRUE(contains(e, "gpus[4].cuda_names: expected an array")) << e;
  e = broken([](json& j) { j["gpus"][7]["compute_capability"] = "8.7"; });
  EXPECT_TRUE(contains(e, "architectures[8.7]: missing")) << e;
  e = broken([](json& j) { j["architectures"]["9.0"]["max_warps_per_sm"]["value"] = "64"; });
  EXPECT_TRUE(contains(e, "architectures[9.0].max_warps_per_sm.value")) << e;
  e = broken([](json& j) { j["gpus"][6]["id"] = j["gpus"][5]["id"]; });
  EXPECT_TRUE(contains(e, "gpus[6].id: duplicate")) << e;
}

// ---- models ----

TEST(Models, LoadAndHangTogether) {
  EXPECT_EQ(rooflab::models().size(), 7u);
  for (const auto& m : rooflab::models()) {
    SCOPED_TRACE(m.id);
    EXPECT_EQ(m.hidden, m.heads * m.head_dim);
    EXPECT_EQ(m.heads % m.kv_heads, 0);
    EXPECT_TRUE(contains(m.source, "huggingface.co") && contains(m.source, "config.json")) << m.source;
  }
  // Meta's config.json (data/models.json): Llama-3-70B has 64 query heads and 8 KV heads.
  EXPECT_EQ(rooflab::model("llama-3-70b").heads, 64);
  EXPECT_EQ(rooflab::model("llama-3-70b").kv_heads, 8);
  EXPECT_EQ(rooflab::model("mistral-7b-v0.1").sliding_window.value_or(0), 4096);
  EXPECT_TRUE(rooflab::model("qwen2.5-7b").qkv_bias);
  EXPECT_EQ(rooflab::model("mixtral-8x7b").experts, 8);
  EXPECT_EQ(rooflab::model("mixtral-8x7b").experts_per_token, 2);
}

// The published parameter counts follow from the config: embeddings (x2 when untied), per layer Q and O
// (hidden^2 each), K and V (hidden x kv_heads x head_dim each), optional QKV biases, the SwiGLU FFN (3 x hidden
// x ffn per expert) and router, two RMSNorms; plus the final norm. A wrong layer count or FFN size fails here.
TEST(Models, ParameterCountsFollowFromTheConfig) {
  auto count = [](const rooflab::ModelSpec& m, int experts) {
    const double h = m.hidden, kv = static_cast<double>(m.kv_heads) * m.head_dim;
    double layer = 2 * h * h + 2 * h * kv + 3 * h * m.ffn * experts + 2 * h;
    if (m.qkv_bias) layer += h + 2 * kv;
    if (m.experts > 1) layer += h * m.experts;  // router
    const double embeddings = static_cast<double>(m.vocab) * h * (m.tie_word_embeddings ? 1 : 2);
    return (m.layers * layer + embeddings + h) / 1e9;
  };
  for (const auto& m : rooflab::models()) {
    EXPECT_LT(within(count(m, m.experts), m.params_b), 0.005)
        << m.id << ": " << count(m, m.experts) << " vs " << m.params_b;
    if (m.active_params_b) {
      EXPECT_LT(within(count(m, m.experts_per_token), *m.active_params_b), 0.005) << m.id;
    }
  }
}

// vLLM issue 12330 (docs/sources.md, "Model configurations"): Llama-3-8B on an A100 40GB: 11.12 GiB of KV cache held 5691
// blocks of 16 tokens at 128 KiB per token in BF16. The data must reproduce it (Lab 06 grades the arithmetic).
TEST(Models, VllmCheckCase) {
  const auto& m = rooflab::model("llama-3-8b");
  const double per_token = 2.0 * m.layers * m.kv_heads * m.head_dim * 2;
  EXPECT_DOUBLE_EQ(per_token, 131072);
  EXPECT_NEAR(5691 * 16 * per_token / (1u << 30), 11.12, 0.01);
  // docs/sources.md, exercise 6: a Llama-70B-class cache (80 layers, 8 KV heads, head dim 128, FP16).
  const auto& llama70 = rooflab::model("llama-2-70b");
  EXPECT_EQ(llama70.layers * llama70.kv_heads * llama70.head_dim, 80 * 8 * 128);
  // GQA saves in proportion to heads / kv_heads: Llama-2-7B (MHA) caches 4x what Llama-3-8B does.
  const auto& llama2 = rooflab::model("llama-2-7b");
  EXPECT_EQ(llama2.layers * llama2.kv_heads * llama2.head_dim, 4 * m.layers * m.kv_heads * m.head_dim);
}

TEST(Models, MalformedFileNamesTheField) {
  json j = read_data("models.json");
  j["models"][2]["layers"] = "thirty-two";
  const TempFile f("models.json", j.dump());
  const std::string e = error_of([&] { rooflab::load_models(f.path()); });
  EXPECT_TRUE(contains(e, f.path().string()) && contains(e, "models[2].layers: expected an integer")) << e;
  j = read_data("models.json");
  j["models"][0]["params_b"].erase("source");
  const TempFile g("models2.json", j.dump());
  EXPECT_TRUE(contains(error_of([&] { rooflab::load_models(g.path()); }), "models[0].params_b.source: missing"));
}

// ---- thresholds ----

// Every lab folder's rules, loaded from its own thresholds.json.
std::vector<rooflab::Threshold> every_lab_rule() {
  std::vector<rooflab::Threshold> out;
  for (const auto& e : std::filesystem::directory_iterator(rooflab::labs_dir())) {
    if (!std::filesystem::exists(e.path() / "thresholds.json")) continue;
    const std::string lab = e.path().filename().string().substr(0, 2);
    for (const auto& t : rooflab::lab_thresholds(lab)) out.push_back(t);
  }
  return out;
}

TEST(Thresholds, EveryRuleIsWellFormed) {
  const auto rules = every_lab_rule();
  EXPECT_GE(rules.size(), 20u);
  // Every graded quantity the labs ask for has a rule.
  const std::vector<std::pair<std::string, std::string>> required = {
      {"01", "copy"},      {"01", "scale"},      {"01", "add"},
      {"01", "triad"},     {"01", "triad_vec4"}, {"01", "strided_ratio_max"},
      {"02", "fma_fp32"},  {"03", "unfused"},    {"03", "fusion_speedup"},
      {"03", "sweep_far"}, {"03", "sweep_near"}, {"05", "flash_vs_naive"}, {"05", "softmax"}};
  for (const auto& [lab, quantity] : required) {
    EXPECT_NO_THROW(rooflab::threshold(lab, quantity)) << lab << "/" << quantity;
  }
  for (const auto& t : rules) {
    SCOPED_TRACE(t.lab + "/" + t.quantity);
    // An estimate says why and from what; a measurement where, when and what the reference solution
    // reached, and why the threshold sits where it does against that figure; a prediction the same of the
    // performance model's figure (common.perf_model.rule_figures recomputes each from the model).
    if (t.provenance.kind == "measured" || t.provenance.kind == "predicted") {
      EXPECT_FALSE(t.provenance.gpu.empty());
      EXPECT_TRUE(std::regex_match(t.provenance.date, std::regex(R"(\d{4}-\d{2}-\d{2})"))) << t.provenance.date;
      EXPECT_GT(t.provenance.figure.value_or(0), 0);
    } else {
      EXPECT_EQ(t.provenance.kind, "analytic estimate");
    }
    // Where GPU runs exist (sm_90: the H100 and the H200), the rule in force there rests on what they measured
    // or on the model's prediction for today's reference against what they measured, not on an estimate alone.
    // A range for other architectures may still be an estimate until a GPU of its kind runs the labs.
    EXPECT_NE(t.on_architecture(90).provenance.kind, "analytic estimate")
        << "the rule in force on sm_90 needs a measured or predicted provenance (GPU, date, figure)";
    EXPECT_FALSE(t.provenance.reasoning.empty());
    EXPECT_FALSE(t.provenance.source.empty());
    // Numbers per architecture: each with its reason and its provenance, measured or predicted (GPU, date, figure).
    for (const auto& a : t.by_architecture) {
      SCOPED_TRACE(a.range());
      EXPECT_FALSE(a.why.empty());
      EXPECT_TRUE(a.provenance.kind == "measured" || a.provenance.kind == "predicted") << a.provenance.kind;
      EXPECT_FALSE(a.provenance.gpu.empty());
      EXPECT_GT(a.provenance.figure.value_or(0), 0);
      EXPECT_FALSE(a.provenance.reasoning.empty());
      EXPECT_LT(a.zero_at, a.full_at);
    }
    if (t.sliding()) {
      EXPECT_LT(t.zero_at, t.full_at);
      // A fraction of a roof is at most 1; a baseline to beat (the naive attention path) is beaten by more.
      if (t.caps()) {
        EXPECT_LE(t.full_at, 1.0);
      }
      if (t.kind == "ceiling_fraction") {
        EXPECT_NE(t.ceiling.has_value(), t.baseline.has_value()) << "a ceiling or a baseline, not both";
      }
    } else {
      EXPECT_FALSE(t.description.empty()) << "a ratio rule must say what ratio it bounds";
    }
  }
  // Lab 01's streams are judged against the measured copy ceiling; the vectorized triad asks a little more.
  for (const char* q : {"copy", "scale", "add", "triad", "triad_vec4"}) {
    EXPECT_EQ(rooflab::threshold("01", q).ceiling, rooflab::Ceiling::copy_bandwidth) << q;
  }
  EXPECT_GE(rooflab::threshold("01", "triad_vec4").full_at, rooflab::threshold("01", "triad").full_at);
  EXPECT_EQ(rooflab::threshold("02", "fma_fp32").ceiling, rooflab::Ceiling::fp32_fma_peak);
  EXPECT_EQ(rooflab::threshold("03", "fusion_speedup").reference, "predicted_byte_ratio");
  EXPECT_GT(rooflab::threshold("03", "sweep_far").ratio_min(), rooflab::threshold("03", "sweep_near").ratio_min());
  // At stride 32 at most 1/8 of each 32-byte sector is useful: the bound must sit between 1/8 and 1.
  const double strided = rooflab::threshold("01", "strided_ratio_max").ratio_max();
  EXPECT_TRUE(strided >= 0.125 && strided < 1) << strided;
  EXPECT_THROW(rooflab::threshold("01", "triad").ratio_max(), rooflab::DataError);
  EXPECT_DOUBLE_EQ(rooflab::implausible_above(), 1.05);
}

TEST(Thresholds, SlidingScale) {
  const std::vector<std::pair<std::string, std::string>> sliding = {
      {"01", "triad"}, {"02", "fma_fp32"}, {"03", "unfused"}};
  for (const auto& [lab, quantity] : sliding) {
    const auto& t = rooflab::threshold(lab, quantity);
    SCOPED_TRACE(t.quantity);
    const double lo = t.zero_at, hi = t.full_at;
    EXPECT_EQ(rooflab::sliding_score(t, 0.0), 0.0);
    EXPECT_EQ(rooflab::sliding_score(t, lo - 0.01), 0.0);
    EXPECT_EQ(rooflab::sliding_score(t, lo), 0.0);
    EXPECT_EQ(rooflab::sliding_score(t, hi), 1.0);
    EXPECT_EQ(rooflab::sliding_score(t, 1.04), 1.0);
    EXPECT_NEAR(rooflab::sliding_score(t, lo + 0.25 * (hi - lo)), 0.25, 1e-12);
    EXPECT_NEAR(rooflab::sliding_score(t, (lo + hi) / 2), 0.5, 1e-12);
    EXPECT_EQ(rooflab::sliding_score(t, std::nan("")), 0.0);
    double previous = -1;
    for (double f = 0; f <= 1.1; f += 0.01) {
      const double s = rooflab::sliding_score(t, f);
      EXPECT_GE(s, previous);
      previous = s;
    }
  }
  EXPECT_THROW(rooflab::sliding_score(rooflab::threshold("01", "strided_ratio_max"), 0.5), std::invalid_argument);
  try {
    rooflab::threshold("01", "no_such_quantity");
    FAIL() << "an unknown quantity was accepted";
  } catch (const rooflab::DataError& e) {
    EXPECT_TRUE(contains(e.what(), "triad")) << "the error should list the lab's quantities: " << e.what();
  }
}

TEST(Thresholds, MalformedFileNamesTheField) {
  // Edits Lab 01's (or Lab 04's) rules as JSON and loads the result from a file of its own.
  auto broken_in = [](const char* lab, const std::function<void(json&)>& edit) {
    std::ifstream in(rooflab::lab_dir(lab) / "thresholds.json");
    json j = json::parse(in);
    edit(j);
    const TempFile f("thresholds.json", j.dump());
    const std::string e = error_of([&] { rooflab::load_lab_thresholds(f.path(), lab); });
    EXPECT_TRUE(contains(e, f.path().string())) << e;
    return e;
  };
  auto broken = [&](const std::function<void(json&)>& edit) { return broken_in("01", edit); };
  EXPECT_TRUE(contains(broken([](json& j) { j["copy"]["zero_at"] = 0.95; }), "copy: expected 0 <= zero_at < full_at"));
  // A fraction of a roof cannot be earned above 1 (a baseline to beat can: test_award.cpp).
  EXPECT_TRUE(contains(broken([](json& j) { j["copy"]["full_at"] = 1.5; }), "copy: expected 0 <= zero_at < full_at <= 1"));
  EXPECT_TRUE(contains(broken([](json& j) { j["copy"]["ceiling"] = "copy_bw"; }), "copy.ceiling"));
  EXPECT_TRUE(contains(broken([](json& j) { j["copy"]["ceiling"] = "cublas_sgemm_same_run"; }),
                       "a reference the test times itself is a \"baseline\""));
  EXPECT_TRUE(contains(broken([](json& j) { j["copy"]["full_at"] = "0.9"; }), "copy.full_at: expected a number"));
  EXPECT_TRUE(contains(broken([](json& j) { j["add"]["kind"] = "fraction"; }), "add.kind"));
  // An analytic estimate needs its reasoning and its source.
  EXPECT_TRUE(contains(broken([](json& j) {
                         j["add"]["provenance"] = {{"kind", "analytic estimate"}, {"reasoning", "the anchor's fraction"}};
                       }),
                       "add.provenance.source: missing"));
  // A measured provenance needs the GPU, the date and the figure.
  EXPECT_TRUE(contains(broken([](json& j) {
                         j["copy"]["provenance"] = {{"kind", "measured"}, {"gpu", "h100-sxm"}, {"date", "2025-01-01"}};
                       }),
                       "copy.provenance.figure: missing"));
  // A baseline is declared in full, and a rule names one reference, not two.
  EXPECT_TRUE(contains(broken_in("04", [](json& j) { j["blocktile"]["baseline"].erase("caps"); }),
                       "blocktile.baseline.caps: missing"));
  EXPECT_TRUE(contains(broken_in("04", [](json& j) { j["blocktile"]["baseline"]["unit"] = "GB/s"; }),
                       "blocktile.baseline.unit: expected B/s or FLOP/s"));
  EXPECT_TRUE(contains(broken_in("04", [](json& j) { j["blocktile"]["ceiling"] = "sgemm_peak"; }),
                       "blocktile: expected exactly one of"));
  // Numbers per architecture: ranges named sm_NN that do not overlap, each checked as the rule's own numbers are,
  // with its reason and provenance (a prediction too: the model's figure, its GPU and date); sliding rules only.
  const json predicted = {{"kind", "predicted"}, {"gpu", "h100-sxm"}, {"date", "2026-01-01"}, {"figure", 0.3}};
  const json arch = {{"from", "sm_90"}, {"full_at", 0.4}, {"zero_at", 0.15}, {"why", "wgmma"}, {"provenance", predicted}};
  {
    std::ifstream in(rooflab::lab_dir("04") / "thresholds.json");
    json j = json::parse(in);
    j["wmma"]["by_architecture"] = {arch, arch};
    j["wmma"]["by_architecture"][0]["from"] = "sm_80";
    j["wmma"]["by_architecture"][0]["before"] = "sm_90";
    const TempFile f("thresholds.json", j.dump());
    const auto rules = rooflab::load_lab_thresholds(f.path(), "04");
    const auto wmma = std::find_if(rules.begin(), rules.end(), [](const auto& t) { return t.quantity == "wmma"; });
    ASSERT_NE(wmma, rules.end());
    ASSERT_EQ(wmma->by_architecture.size(), 2u);
    EXPECT_EQ(wmma->by_architecture[0].range(), "from sm_80, before sm_90");
    EXPECT_EQ(wmma->by_architecture[1].range(), "sm_90 and later");
    EXPECT_EQ(wmma->architecture_rule(75), nullptr);
    EXPECT_EQ(wmma->architecture_rule(89), &wmma->by_architecture[0]);
    EXPECT_EQ(wmma->architecture_rule(120), &wmma->by_architecture[1]);
  }
  EXPECT_TRUE(contains(broken_in("04", [&](json& j) { j["wmma"]["by_architecture"] = {arch}; j["wmma"]["by_architecture"][0]["from"] = "90"; }),
                       "wmma.by_architecture[0].from: expected an architecture such as \"sm_90\""));
  EXPECT_TRUE(contains(broken_in("04", [&](json& j) { j["wmma"]["by_architecture"] = {arch}; j["wmma"]["by_architecture"][0]["before"] = "sm_80"; }),
                       "wmma.by_architecture[0]: expected \"before\" after \"from\""));
  EXPECT_TRUE(contains(broken_in("04", [&](json& j) { j["wmma"]["by_architecture"] = {arch}; j["wmma"]["by_architecture"][0]["zero_at"] = 0.5; }),
                       "wmma.by_architecture[0]: expected 0 <= zero_at < full_at <= 1"));
  EXPECT_TRUE(contains(broken_in("04", [&](json& j) { j["wmma"]["by_architecture"] = {arch}; j["wmma"]["by_architecture"][0].erase("why"); }),
                       "wmma.by_architecture[0].why: missing"));
  EXPECT_TRUE(contains(broken_in("04", [&](json& j) { j["wmma"]["by_architecture"] = {arch}; j["wmma"]["by_architecture"][0]["provenance"].erase("figure"); }),
                       "wmma.by_architecture[0].provenance.figure: missing"));
  EXPECT_TRUE(contains(broken_in("04", [&](json& j) {
                         json later = arch;
                         later["from"] = "sm_100";
                         j["wmma"]["by_architecture"] = {arch, later};
                       }),
                       "wmma.by_architecture[1]: sm_100 and later overlaps sm_90 and later"));
  EXPECT_TRUE(contains(broken_in("06", [&](json& j) { j["gqa_time_ratio"]["by_architecture"] = {arch}; }),
                       "gqa_time_ratio.by_architecture: only a sliding rule"));
  EXPECT_TRUE(contains(broken([&](json& j) { j["copy"]["provenance"] = predicted; j["copy"]["provenance"]["kind"] = "guessed"; }),
                       "copy.provenance.kind: expected \"analytic estimate\", \"measured\" or \"predicted\""));
  // A cap on the student's own baseline: a share of its roof in (0, 1], with its reasoning, and only on a rule whose
  // reference is not a roof (a ratio, or a baseline to beat).
  const json cap = {{"roof_fraction", 0.5}, {"reasoning", "honest baselines reach more"}};
  EXPECT_TRUE(contains(broken_in("06", [&](json& j) { j["gqa_time_ratio"]["student_baseline"] = cap; j["gqa_time_ratio"]["student_baseline"]["roof_fraction"] = 1.5; }),
                       "gqa_time_ratio.student_baseline.roof_fraction: expected a share of the baseline's roof in (0, 1]"));
  EXPECT_TRUE(contains(broken_in("06", [&](json& j) { j["gqa_time_ratio"]["student_baseline"] = {{"roof_fraction", 0.5}}; }),
                       "gqa_time_ratio.student_baseline.reasoning: missing"));
  EXPECT_TRUE(contains(broken([&](json& j) { j["copy"]["student_baseline"] = cap; }),
                       "copy.student_baseline: a baseline the student runs is one to beat or to compare with"));
  // The global policy file: implausible_above, and no lab's rules.
  auto broken_policy = [](const std::function<void(json&)>& edit) {
    json j = read_data("thresholds.json");
    edit(j);
    const TempFile f("thresholds.json", j.dump());
    return error_of([&] { rooflab::load_implausible_above(f.path()); });
  };
  EXPECT_TRUE(contains(broken_policy([](json& j) { j.erase("implausible_above"); }), "implausible_above: missing"));
  EXPECT_TRUE(contains(broken_policy([](json& j) { j["labs"] = json::object(); }), "labs/NN-name/thresholds.json"));
}

TEST(Thresholds, ALabsFolderIsFoundByItsId) {
  EXPECT_EQ(rooflab::lab_dir("04").filename(), "04-gemm");
  EXPECT_EQ(rooflab::lab_dir("04").parent_path(), rooflab::labs_dir());
  EXPECT_TRUE(contains(error_of([] { rooflab::lab_dir("99"); }), "expected one folder 99-<name>"));
  const auto& t = rooflab::threshold("04", "wmma");
  ASSERT_TRUE(t.baseline.has_value());
  EXPECT_EQ(t.baseline->name, "cublas_hgemm_same_run");
  EXPECT_TRUE(t.caps());
  EXPECT_FALSE(rooflab::threshold("05", "flash_vs_naive").caps());
}

}  // namespace
