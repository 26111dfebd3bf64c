// data/gpus.json, models.json and thresholds.json: they load, every number is sane and sourced, the
// figures agree with each other, lookups work, and malformed files fail with the file and field named.
#include <rooflab/roofline.hpp>
#include <rooflab/specs.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <unistd.h>
#include <set>

namespace {

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("rooflab-specs-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rooflab::DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Gpus, LoadWithSaneRanges) {
  const auto& all = rooflab::gpus();
  ASSERT_GE(all.size(), 14u);
  std::set<std::string> ids;
  for (const auto& g : all) {
    EXPECT_TRUE(ids.insert(g.id).second) << "duplicate id " << g.id;
    EXPECT_FALSE(g.cuda_names.empty()) << g.id;
    EXPECT_GE(g.bandwidth_gbps, 100) << g.id;
    EXPECT_LE(g.bandwidth_gbps, 10000) << g.id;
    EXPECT_GT(g.fp32_tflops, 1) << g.id;
    if (g.fp16_tflops) {
      EXPECT_GE(*g.fp16_tflops, g.fp32_tflops) << g.id << ": tensor FP16 below FP32";
    }
    const double ridge = rooflab::roofline::ridge_point(g.fp32_tflops * 1e12, g.bandwidth_gbps * 1e9);
    EXPECT_GT(ridge, 1) << g.id;
    EXPECT_LT(ridge, 1000) << g.id;
    EXPECT_TRUE(g.fp32_lanes_per_sm == 64 || g.fp32_lanes_per_sm == 128) << g.id;
    EXPECT_GT(g.max_threads_per_sm, 0) << g.id;
    EXPECT_EQ(g.registers_per_sm, 65536) << g.id;
  }
}

// FP32 peak = SMs x FP32 lanes x 2 FLOP (an FMA) x boost clock: the datasheet figure must follow.
TEST(Gpus, Fp32PeakMatchesSmsLanesAndClock) {
  for (const auto& g : rooflab::gpus()) {
    if (!g.sms || !g.boost_clock_mhz) continue;  // unpublished (B200): nothing to check
    const double derived = *g.sms * g.fp32_lanes_per_sm * 2.0 * *g.boost_clock_mhz * 1e6 / 1e12;
    EXPECT_NEAR(derived / g.fp32_tflops, 1.0, 0.03) << g.id << ": " << derived << " vs " << g.fp32_tflops;
  }
  // A100 has 64 FP32 lanes per SM, not 128 (a common tool error); sm_86 parts have 128.
  EXPECT_EQ(rooflab::gpu("a100-80gb-sxm4").fp32_lanes_per_sm, 64);
  EXPECT_EQ(rooflab::gpu("a10").fp32_lanes_per_sm, 128);
}

TEST(Gpus, EveryNumberHasASource) {
  std::ifstream in(rooflab::data_dir() / "gpus.json");
  const auto j = nlohmann::json::parse(in);
  int numbers = 0;
  for (const auto& g : j["gpus"]) {
    for (const auto& [key, value] : g.items()) {
      if (!value.is_object()) continue;
      ++numbers;
      ASSERT_TRUE(value.contains("source")) << g["id"] << "." << key;
      EXPECT_FALSE(value["source"].get<std::string>().empty()) << g["id"] << "." << key;
      if (value["value"].is_null()) {
        EXPECT_TRUE(value.contains("note") || g.contains("notes")) << g["id"] << "." << key << " is null without a note";
      }
    }
  }
  EXPECT_GT(numbers, 150);
}

TEST(Gpus, LookupByIdAndCudaName) {
  for (const auto& g : rooflab::gpus()) {
    for (const auto& n : g.cuda_names) {
      const auto* found = rooflab::find_gpu_by_cuda_name(n);
      ASSERT_NE(found, nullptr) << n;
      EXPECT_EQ(found->id, g.id) << n;
    }
  }
  const auto* mig = rooflab::find_gpu_by_cuda_name("NVIDIA H100 80GB HBM3 MIG 1g.10gb");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->id, "h100-sxm");
  EXPECT_EQ(rooflab::find_gpu_by_cuda_name("Some Other GPU"), nullptr);
  EXPECT_EQ(rooflab::gpu("h100-sxm").arch(), "sm_90");
  try {
    rooflab::gpu("h1000");
    FAIL() << "unknown id accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm"), std::string::npos) << "the error should list the ids";
  }
}

TEST(Gpus, MalformedFilesNameTheFileAndField) {
  EXPECT_NE(error_of([] { rooflab::load_gpus("/nonexistent/gpus.json"); }).find("/nonexistent/gpus.json"), std::string::npos);
  const auto bad_json = temp_file("bad.json", "{\"gpus\": [");
  EXPECT_NE(error_of([&] { rooflab::load_gpus(bad_json); }).find("not valid JSON"), std::string::npos);
  // Take the real file and break one field.
  std::ifstream in(rooflab::data_dir() / "gpus.json");
  auto j = nlohmann::json::parse(in);
  j["gpus"][3]["bandwidth_gbps"]["value"] = "fast";
  const auto wrong_type = temp_file("type.json", j.dump());
  const std::string e1 = error_of([&] { rooflab::load_gpus(wrong_type); });
  EXPECT_NE(e1.find("gpus[3].bandwidth_gbps.value"), std::string::npos) << e1;
  j["gpus"][3]["bandwidth_gbps"].erase("source");
  j["gpus"][3]["bandwidth_gbps"]["value"] = 1;
  const auto no_source = temp_file("source.json", j.dump());
  EXPECT_NE(error_of([&] { rooflab::load_gpus(no_source); }).find("gpus[3].bandwidth_gbps.source"), std::string::npos);
  j["gpus"][3]["bandwidth_gbps"]["source"] = "a datasheet";
  j["gpus"][5].erase("name");
  const auto missing = temp_file("missing.json", j.dump());
  EXPECT_NE(error_of([&] { rooflab::load_gpus(missing); }).find("gpus[5].name: missing"), std::string::npos);
  for (const auto& p : {bad_json, wrong_type, no_source, missing}) std::filesystem::remove(p);
}

TEST(Models, LoadAndTheVllmCheckCase) {
  const auto& m = rooflab::model("llama-3-8b");
  // KV cache bytes per token: 2 (K and V) x layers x KV heads x head dim x 2 bytes (BF16) = 128 KiB.
  EXPECT_EQ(2 * m.layers * m.kv_heads * m.head_dim * 2, 131072);
  EXPECT_EQ(rooflab::model("llama-3-70b").heads / rooflab::model("llama-3-70b").kv_heads, 8);  // GQA groups
  for (const auto& x : rooflab::models()) {
    EXPECT_EQ(x.hidden, x.heads * x.head_dim) << x.id;
    EXPECT_FALSE(x.source.empty()) << x.id;
  }
}

TEST(Thresholds, SlidingScale) {
  const auto& t = rooflab::threshold("01", "triad");
  EXPECT_EQ(t.ceiling, "copy_bandwidth");
  EXPECT_DOUBLE_EQ(rooflab::sliding_score(t, t.zero_at - 0.1), 0.0);
  EXPECT_DOUBLE_EQ(rooflab::sliding_score(t, t.zero_at), 0.0);
  EXPECT_DOUBLE_EQ(rooflab::sliding_score(t, t.full_at), 1.0);
  EXPECT_DOUBLE_EQ(rooflab::sliding_score(t, 1.2), 1.0);
  EXPECT_NEAR(rooflab::sliding_score(t, (t.zero_at + t.full_at) / 2), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(rooflab::threshold("01", "strided_ratio_max").ratio_max(), 0.25);
  EXPECT_THROW(rooflab::threshold("01", "triad").ratio_max(), rooflab::DataError);
  EXPECT_THROW(rooflab::threshold("01", "no_such_quantity"), rooflab::DataError);
  EXPECT_DOUBLE_EQ(rooflab::implausible_above(), 1.05);
  for (const auto& q : {"copy", "scale", "add", "triad", "triad_vec4"}) {
    EXPECT_FALSE(rooflab::threshold("01", q).provenance.empty()) << q;
  }
}
