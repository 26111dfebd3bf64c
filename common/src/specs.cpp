#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace rooflab {
namespace {

using nlohmann::json;

// Reads one file; parse errors name the file and where nlohmann found the problem.
json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw DataError(fmt::format("{}: cannot open the file", file.string()));
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw DataError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
}

// Field access with the JSON path in every error: "gpus.json: gpus[3].bandwidth_gbps.value: expected a number".
class Reader {
 public:
  Reader(const std::filesystem::path& file) : file_(file.filename().string()) {}
  const json& at(const json& j, const std::string& path, const std::string& key) const {
    if (!j.is_object() || !j.contains(key)) fail(path + "." + key, "missing");
    return j.at(key);
  }
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw DataError(fmt::format("{}: {}: {}", file_, path, what));
  }
  std::string str(const json& j, const std::string& path, const std::string& key) const {
    const json& v = at(j, path, key);
    if (!v.is_string()) fail(path + "." + key, "expected a string");
    return v.get<std::string>();
  }
  double num(const json& j, const std::string& path, const std::string& key) const {
    const json& v = at(j, path, key);
    if (!v.is_number()) fail(path + "." + key, "expected a number");
    return v.get<double>();
  }
  // A sourced number: {"value": x or null, "source": "..."}; null only where `optional`.
  std::optional<double> sourced(const json& j, const std::string& path, const std::string& key, bool optional) const {
    const json& o = at(j, path, key);
    const std::string p = path + "." + key;
    if (!o.is_object()) fail(p, "expected {\"value\": ..., \"source\": ...}");
    if (!o.contains("source") || !o["source"].is_string() || o["source"].get<std::string>().empty()) {
      fail(p + ".source", "every number needs a source");
    }
    const json& v = at(o, p, "value");
    if (v.is_null()) {
      if (!optional) fail(p + ".value", "must not be null");
      return std::nullopt;
    }
    if (!v.is_number()) fail(p + ".value", "expected a number");
    return v.get<double>();
  }

 private:
  std::string file_;
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

struct Data {
  std::vector<GpuSpec> gpus;
  std::vector<ModelSpec> models;
  std::vector<Threshold> thresholds;
  double implausible = 1.05;
};

const Data& data() {
  static const Data d = [] {
    Data x;
    x.gpus = load_gpus(data_dir() / "gpus.json");
    x.models = load_models(data_dir() / "models.json");
    x.thresholds = load_thresholds(data_dir() / "thresholds.json", &x.implausible);
    return x;
  }();
  return d;
}

}  // namespace

std::filesystem::path data_dir() {
  if (const char* d = std::getenv("ROOFLAB_DATA_DIR"); d != nullptr && *d != '\0') return d;
#if defined(ROOFLAB_DATA_DIR)
  return ROOFLAB_DATA_DIR;
#else
  return "data";
#endif
}

std::vector<GpuSpec> load_gpus(const std::filesystem::path& file) {
  const json root = read_json(file);
  const Reader r(file);
  const json& archs = r.at(root, "", "architectures");
  const json& list = r.at(root, "", "gpus");
  if (!list.is_array() || list.empty()) r.fail("gpus", "expected a non-empty array");
  std::vector<GpuSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    const std::string p = fmt::format("gpus[{}]", i);
    GpuSpec g;
    g.id = r.str(j, p, "id");
    g.name = r.str(j, p, "name");
    const json& names = r.at(j, p, "cuda_names");
    if (!names.is_array()) r.fail(p + ".cuda_names", "expected an array of strings");
    for (const auto& n : names) g.cuda_names.push_back(n.get<std::string>());
    const std::string cc = r.str(j, p, "compute_capability");
    if (std::sscanf(cc.c_str(), "%d.%d", &g.cc_major, &g.cc_minor) != 2) r.fail(p + ".compute_capability", "expected \"M.m\"");
    if (auto v = r.sourced(j, p, "sms", true)) g.sms = static_cast<int>(*v);
    g.boost_clock_mhz = r.sourced(j, p, "boost_clock_mhz", true);
    g.fp32_lanes_per_sm = static_cast<int>(*r.sourced(j, p, "fp32_lanes_per_sm", false));
    g.fp32_tflops = *r.sourced(j, p, "fp32_tflops", false);
    g.fp64_tflops = r.sourced(j, p, "fp64_tflops", true);
    g.tf32_tflops = r.sourced(j, p, "tf32_tflops", true);
    g.fp16_tflops = r.sourced(j, p, "fp16_tflops", true);
    g.bf16_tflops = r.sourced(j, p, "bf16_tflops", true);
    g.fp8_tflops = r.sourced(j, p, "fp8_tflops", true);
    g.int8_tops = r.sourced(j, p, "int8_tops", true);
    g.bandwidth_gbps = *r.sourced(j, p, "bandwidth_gbps", false);
    g.memory_gb = *r.sourced(j, p, "memory_gb", false);
    g.memory_type = r.str(j, p, "memory_type");
    g.l2_mb = r.sourced(j, p, "l2_mb", true);
    g.smem_per_sm_kb = *r.sourced(j, p, "smem_per_sm_kb", false);
    if (j.contains("notes")) g.notes = r.str(j, p, "notes");
    // The compute capability's limits.
    const json& a = r.at(archs, "architectures", cc);
    const std::string ap = "architectures." + cc;
    g.max_threads_per_sm = static_cast<int>(r.num(a, ap, "max_threads_per_sm"));
    g.max_threads_per_block = static_cast<int>(r.num(a, ap, "max_threads_per_block"));
    g.max_blocks_per_sm = static_cast<int>(r.num(a, ap, "max_blocks_per_sm"));
    g.registers_per_sm = static_cast<int>(r.num(a, ap, "registers_per_sm"));
    g.max_registers_per_thread = static_cast<int>(r.num(a, ap, "max_registers_per_thread"));
    g.smem_max_per_block_kb = r.num(a, ap, "smem_max_per_block_kb");
    g.reserved_smem_per_block_bytes = static_cast<int>(r.num(a, ap, "reserved_smem_per_block_bytes"));
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<ModelSpec> load_models(const std::filesystem::path& file) {
  const json root = read_json(file);
  const Reader r(file);
  const json& list = r.at(root, "", "models");
  if (!list.is_array()) r.fail("models", "expected an array");
  std::vector<ModelSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    const std::string p = fmt::format("models[{}]", i);
    ModelSpec m;
    m.id = r.str(j, p, "id");
    m.name = r.str(j, p, "name");
    m.layers = static_cast<int>(r.num(j, p, "layers"));
    m.hidden = static_cast<int>(r.num(j, p, "hidden"));
    m.heads = static_cast<int>(r.num(j, p, "heads"));
    m.kv_heads = static_cast<int>(r.num(j, p, "kv_heads"));
    m.head_dim = static_cast<int>(r.num(j, p, "head_dim"));
    m.ffn = static_cast<int>(r.num(j, p, "ffn"));
    m.vocab = static_cast<int>(r.num(j, p, "vocab"));
    m.params_b = r.num(j, p, "params_b");
    if (j.contains("active_params_b")) m.active_params_b = r.num(j, p, "active_params_b");
    m.source = r.str(j, p, "source");
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Threshold> load_thresholds(const std::filesystem::path& file, double* implausible) {
  const json root = read_json(file);
  const Reader r(file);
  if (implausible != nullptr) *implausible = r.num(r.at(root, "", "implausible_above"), "implausible_above", "value");
  std::vector<Threshold> out;
  for (const auto& [lab, quantities] : r.at(root, "", "labs").items()) {
    for (const auto& [quantity, j] : quantities.items()) {
      const std::string p = "labs." + lab + "." + quantity;
      Threshold t;
      t.lab = lab;
      t.quantity = quantity;
      t.kind = r.str(j, p, "kind");
      t.provenance = r.str(j, p, "provenance");
      if (t.kind == "ceiling_fraction") {
        t.ceiling = r.str(j, p, "ceiling");
        t.full_at = r.num(j, p, "full_at");
        t.zero_at = r.num(j, p, "zero_at");
        if (!(t.zero_at < t.full_at)) r.fail(p, "zero_at must be below full_at");
      } else if (t.kind == "ratio_max" || t.kind == "ratio_min") {
        t.value = r.num(j, p, "value");
      } else {
        r.fail(p + ".kind", "expected ceiling_fraction, ratio_max or ratio_min");
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

double Threshold::ratio_max() const {
  if (kind != "ratio_max") throw DataError(fmt::format("threshold {}/{} is a {} rule, not ratio_max", lab, quantity, kind));
  return value;
}

const std::vector<GpuSpec>& gpus() { return data().gpus; }
const std::vector<ModelSpec>& models() { return data().models; }
double implausible_above() { return data().implausible; }

const GpuSpec& gpu(std::string_view id) {
  std::string known;
  for (const auto& g : gpus()) {
    if (g.id == id) return g;
    known += " " + g.id;
  }
  throw std::invalid_argument(fmt::format("no GPU '{}' in data/gpus.json; known:{}", id, known));
}

const GpuSpec* find_gpu_by_cuda_name(std::string_view cuda_name) {
  for (const auto& g : gpus()) {
    for (const auto& n : g.cuda_names) {
      if (n == cuda_name) return &g;
    }
  }
  // Tolerant match: every word of one of our CUDA names appears in the reported name (case-insensitive),
  // e.g. "NVIDIA H100 80GB HBM3 (MIG 1g.10gb)"; the longest such name wins.
  const std::string reported = lower(cuda_name);
  const GpuSpec* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& g : gpus()) {
    for (const auto& n : g.cuda_names) {
      const std::string name = lower(n);
      bool all = true;
      std::size_t start = 0;
      while (start < name.size()) {
        const std::size_t end = std::min(name.find(' ', start), name.size());
        if (reported.find(name.substr(start, end - start)) == std::string::npos) all = false;
        start = end + 1;
      }
      if (all && name.size() > best_len) {
        best = &g;
        best_len = name.size();
      }
    }
  }
  return best;
}

const ModelSpec& model(std::string_view id) {
  std::string known;
  for (const auto& m : models()) {
    if (m.id == id) return m;
    known += " " + m.id;
  }
  throw std::invalid_argument(fmt::format("no model '{}' in data/models.json; known:{}", id, known));
}

const Threshold& threshold(std::string_view lab, std::string_view quantity) {
  for (const auto& t : data().thresholds) {
    if (t.lab == lab && t.quantity == quantity) return t;
  }
  throw DataError(fmt::format("data/thresholds.json has no threshold for lab {} quantity {}", lab, quantity));
}

std::optional<double> peak_flops(const GpuSpec& g, DType type) {
  std::optional<double> tflops;
  switch (type) {
    case DType::fp64: tflops = g.fp64_tflops; break;
    case DType::fp32: tflops = g.fp32_tflops; break;
    case DType::tf32: tflops = g.tf32_tflops; break;
    case DType::fp16: tflops = g.fp16_tflops; break;
    case DType::bf16: tflops = g.bf16_tflops; break;
    case DType::fp8: tflops = g.fp8_tflops; break;
    case DType::int8: tflops = g.int8_tops; break;
  }
  if (!tflops) return std::nullopt;
  return *tflops * 1e12;
}

double sliding_score(const Threshold& t, double fraction) {
  if (fraction >= t.full_at) return 1.0;
  if (fraction <= t.zero_at) return 0.0;
  return (fraction - t.zero_at) / (t.full_at - t.zero_at);
}

}  // namespace rooflab
