// Loading data/gpus.json, models.json, thresholds.json and each lab's thresholds.json into the structs of
// specs.hpp.
//
// Every field goes through one Reader that knows the file and the JSON path it is at, so a bad file fails
// with "data/gpus.json: gpus[3].bandwidth_gbps.value: expected a number, got string" instead of a bare
// nlohmann type_error. The files are validated as they load (sources resolve, fractions ordered, ceilings
// known), so a typo fails every test run rather than one grade months later.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <rooflab/specs.hpp>

namespace rooflab {
namespace {

using nlohmann::json;

// ---- reading with the JSON path in every error ----

class Reader {
 public:
  explicit Reader(const std::filesystem::path& file) : file_(file.string()) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw DataError(fmt::format("{}: {}: {}", file_, path.empty() ? "(top level)" : path, what));
  }

  json parse() const {
    std::ifstream in(file_);
    if (!in) throw DataError(fmt::format("{}: cannot open the file", file_));
    try {
      return json::parse(in);
    } catch (const json::parse_error& e) {
      // nlohmann's message carries the line and column: "parse error at line 3, column 7: ...".
      throw DataError(fmt::format("{}: not valid JSON: {}", file_, e.what()));
    }
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  const json& at(const json& j, const std::string& path, const std::string& key) const {
    if (!j.is_object()) fail(path, "expected an object");
    const auto it = j.find(key);
    if (it == j.end()) fail(join(path, key), "missing");
    return *it;
  }

  std::string str(const json& j, const std::string& path, const std::string& key) const {
    const json& v = at(j, path, key);
    if (!v.is_string()) fail(join(path, key), fmt::format("expected a string, got {}", v.type_name()));
    return v.get<std::string>();
  }

  std::string str_or(const json& j, const std::string& path, const std::string& key, std::string fallback) const {
    return j.contains(key) ? str(j, path, key) : fallback;
  }

  bool boolean_or(const json& j, const std::string& path, const std::string& key, bool fallback) const {
    if (!j.contains(key)) return fallback;
    const json& v = j.at(key);
    if (!v.is_boolean()) fail(join(path, key), fmt::format("expected true or false, got {}", v.type_name()));
    return v.get<bool>();
  }

  double num(const json& j, const std::string& path, const std::string& key) const {
    return number(at(j, path, key), join(path, key));
  }

  int integer(const json& j, const std::string& path, const std::string& key) const {
    return integer(at(j, path, key), join(path, key));
  }

  double number(const json& v, const std::string& path) const {
    if (!v.is_number()) fail(path, fmt::format("expected a number, got {}", v.type_name()));
    return v.get<double>();
  }

  int integer(const json& v, const std::string& path) const {
    if (!v.is_number_integer()) fail(path, fmt::format("expected an integer, got {}", describe(v)));
    return v.get<int>();
  }

  std::vector<std::string> strings(const json& j, const std::string& path, const std::string& key,
                                   bool required) const {
    std::vector<std::string> out;
    if (!required && !j.contains(key)) return out;
    const json& a = at(j, path, key);
    const std::string p = join(path, key);
    if (!a.is_array()) fail(p, fmt::format("expected an array of strings, got {}", a.type_name()));
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) fail(fmt::format("{}[{}]", p, i), "expected a string");
      out.push_back(a[i].get<std::string>());
    }
    return out;
  }

  // A sourced number: {"value": x or null, "source": key of `sources`[, "note": ...]}. Null needs a note.
  // Returns the value and records the source's citation under `key` in `cited`.
  std::optional<double> sourced(const json& j, const std::string& path, const std::string& key, bool nullable,
                                const json& sources, std::map<std::string, std::string>& cited) const {
    const json& o = at(j, path, key);
    const std::string p = join(path, key);
    if (!o.is_object()) fail(p, "expected {\"value\": ..., \"source\": ...}");
    cited[key] = citation(o, p, sources);
    const json& v = at(o, p, "value");
    if (v.is_null()) {
      if (!nullable) fail(p + ".value", "must not be null");
      if (!o.contains("note")) fail(p + ".note", "a null value needs a note saying why");
      return std::nullopt;
    }
    const double x = number(v, p + ".value");
    if (!(x > 0)) fail(p + ".value", fmt::format("expected a positive number, got {}", x));
    return x;
  }

  // The full citation behind o.source, which must be a key of the file's `sources` table.
  std::string citation(const json& o, const std::string& path, const json& sources) const {
    const std::string key = str(o, path, "source");
    const auto s = sources.find(key);
    if (s == sources.end() || !s->is_string())
      fail(path + ".source", fmt::format("\"{}\" is not a key of `sources`", key));
    return s->get<std::string>();
  }

  std::optional<int> sourced_int(const json& j, const std::string& path, const std::string& key, bool nullable,
                                 const json& sources, std::map<std::string, std::string>& cited) const {
    const auto x = sourced(j, path, key, nullable, sources, cited);
    if (!x) return std::nullopt;
    if (*x != std::floor(*x)) fail(join(path, key) + ".value", fmt::format("expected an integer, got {}", *x));
    return static_cast<int>(*x);
  }

 private:
  static std::string describe(const json& v) {
    return v.is_number() ? fmt::format("{}", v.get<double>()) : std::string(v.type_name());
  }
  std::string file_;
};

// ---- tolerant name matching ----

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "NVIDIA A100-SXM4-80GB" -> {nvidia, a100, sxm4, 80gb}: whole tokens, so "L4" does not match "L40S"
// and "A10" does not match "A100".
std::vector<std::string> tokens_of(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// ---- the cached data ----

struct Data {
  std::vector<GpuSpec> gpus;
  std::vector<ModelSpec> models;
  double implausible_above = 0;
};

const Data& data() {
  // A function-local static: initialized once, thread-safe; a throw leaves it to be retried next call.
  static const Data d = [] {
    const auto dir = data_dir();
    return Data{load_gpus(dir / "gpus.json"), load_models(dir / "models.json"),
                load_implausible_above(dir / "thresholds.json")};
  }();
  return d;
}

// Each lab's thresholds, loaded the first time a test asks for one of them. The vectors are never moved once
// stored (unique_ptr), so the references threshold() hands out stay valid.
const std::vector<Threshold>& cached_lab_thresholds(std::string_view lab) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const std::vector<Threshold>>, std::less<>> by_lab;
  const std::lock_guard lock(mutex);
  if (const auto it = by_lab.find(lab); it != by_lab.end()) return *it->second;
  auto loaded = std::make_unique<const std::vector<Threshold>>(load_lab_thresholds(lab_dir(lab) / "thresholds.json", lab));
  return *by_lab.emplace(std::string(lab), std::move(loaded)).first->second;
}

template <typename T>
const T& by_id(const std::vector<T>& all, std::string_view id, const char* what) {
  std::string known;
  for (const auto& x : all) {
    if (x.id == id) return x;
    known += (known.empty() ? "" : ", ") + x.id;
  }
  throw std::invalid_argument(fmt::format("no {} '{}' in {}; known: {}", what, id, data_dir().string(), known));
}

}  // namespace

// ---- paths ----

std::filesystem::path data_dir() {
  if (const char* d = std::getenv("ROOFLAB_DATA_DIR"); d != nullptr && *d != '\0') return d;
#if defined(ROOFLAB_DATA_DIR)
  return ROOFLAB_DATA_DIR;
#else
  return "data";
#endif
}

std::filesystem::path labs_dir() {
  if (const char* d = std::getenv("ROOFLAB_LABS_DIR"); d != nullptr && *d != '\0') return d;
#if defined(ROOFLAB_LABS_DIR)
  return ROOFLAB_LABS_DIR;
#else
  return "labs";
#endif
}

std::filesystem::path lab_dir(std::string_view lab) {
  const std::filesystem::path root = labs_dir();
  const std::string prefix = std::string(lab) + "-";
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    if (e.is_directory() && e.path().filename().string().starts_with(prefix)) found.push_back(e.path());
  }
  if (ec) throw DataError(fmt::format("{}: cannot list the labs: {}", root.string(), ec.message()));
  if (found.size() != 1) {
    throw DataError(fmt::format("{}: expected one folder {}<name> for lab {}, found {}", root.string(), prefix, lab,
                                found.size()));
  }
  return found.front();
}

// ---- gpus.json ----

std::vector<GpuSpec> load_gpus(const std::filesystem::path& file) {
  const Reader r(file);
  const json root = r.parse();
  const json& sources = r.at(root, "", "sources");
  if (!sources.is_object()) r.fail("sources", "expected an object of key -> citation");
  const json& archs = r.at(root, "", "architectures");
  const json& list = r.at(root, "", "gpus");
  if (!list.is_array() || list.empty()) r.fail("gpus", "expected a non-empty array");

  std::vector<GpuSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    const std::string p = fmt::format("gpus[{}]", i);
    GpuSpec g;
    auto& c = g.sources;
    g.id = r.str(j, p, "id");
    g.name = r.str(j, p, "name");
    g.cuda_names = r.strings(j, p, "cuda_names", true);
    g.match_tokens = r.strings(j, p, "match_tokens", true);
    if (g.match_tokens.empty()) r.fail(p + ".match_tokens", "needs at least one token");
    for (auto& t : g.match_tokens) t = lower(t);
    g.exclude_tokens = r.strings(j, p, "exclude_tokens", false);
    for (auto& t : g.exclude_tokens) t = lower(t);
    const std::string cc = r.str(j, p, "compute_capability");
    char dot = 0;
    char rest = 0;
    if (std::sscanf(cc.c_str(), "%d%c%d%c", &g.cc_major, &dot, &g.cc_minor, &rest) != 3 || dot != '.') {
      r.fail(p + ".compute_capability", fmt::format("expected \"major.minor\", got \"{}\"", cc));
    }
    g.sms = r.sourced_int(j, p, "sms", true, sources, c);
    g.boost_clock_mhz = r.sourced(j, p, "boost_clock_mhz", true, sources, c);
    g.tensor_clock_mhz = r.sourced(j, p, "tensor_clock_mhz", true, sources, c);
    g.fp32_lanes_per_sm = *r.sourced_int(j, p, "fp32_lanes_per_sm", false, sources, c);
    g.fp32_tflops = *r.sourced(j, p, "fp32_tflops", false, sources, c);
    g.fp64_tflops = r.sourced(j, p, "fp64_tflops", true, sources, c);
    g.tf32_tflops = r.sourced(j, p, "tf32_tflops", true, sources, c);
    g.fp16_tflops = r.sourced(j, p, "fp16_tflops", true, sources, c);
    g.bf16_tflops = r.sourced(j, p, "bf16_tflops", true, sources, c);
    g.fp8_tflops = r.sourced(j, p, "fp8_tflops", true, sources, c);
    g.int8_tops = r.sourced(j, p, "int8_tops", true, sources, c);
    g.fp16_nontensor_tflops = r.sourced(j, p, "fp16_nontensor_tflops", true, sources, c);
    g.bandwidth_gbps = *r.sourced(j, p, "bandwidth_gbps", false, sources, c);
    g.memory_gb = *r.sourced(j, p, "memory_gb", false, sources, c);
    g.l2_mb = r.sourced(j, p, "l2_mb", true, sources, c);
    g.smem_per_sm_kb = *r.sourced(j, p, "smem_per_sm_kb", false, sources, c);
    g.memory_type = r.str(j, p, "memory_type");
    static const std::vector<std::string> memory_types = {"HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR6", "GDDR6X"};
    if (std::find(memory_types.begin(), memory_types.end(), g.memory_type) == memory_types.end()) {
      r.fail(p + ".memory_type",
             fmt::format("expected one of HBM2, HBM2e, HBM3, HBM3e, GDDR6, GDDR6X, got \"{}\"", g.memory_type));
    }
    g.notes = r.str_or(j, p, "notes", "");

    // The limits of the GPU's compute capability, from the shared per-capability table.
    if (!archs.is_object() || !archs.contains(cc)) {
      r.fail(fmt::format("architectures[{}]", cc), fmt::format("missing (needed by {}.compute_capability)", p));
    }
    const json& a = archs.at(cc);
    const std::string ap = fmt::format("architectures[{}]", cc);
    auto limit = [&](const char* key) { return *r.sourced_int(a, ap, key, false, sources, c); };
    g.max_threads_per_sm = limit("max_threads_per_sm");
    g.max_warps_per_sm = limit("max_warps_per_sm");
    g.max_blocks_per_sm = limit("max_blocks_per_sm");
    g.max_threads_per_block = limit("max_threads_per_block");
    g.registers_per_sm = limit("registers_per_sm");
    g.max_registers_per_thread = limit("max_registers_per_thread");
    g.register_alloc_unit = limit("register_alloc_unit");
    g.warp_alloc_granularity = limit("warp_alloc_granularity");
    g.smem_max_per_block_kb = *r.sourced(a, ap, "smem_max_per_block_kb", false, sources, c);
    g.smem_alloc_unit_bytes = limit("smem_alloc_unit_bytes");
    // Zero is a real value here (no reservation before sm_80), so it is read without the positivity check.
    const std::string rp = ap + ".reserved_smem_per_block_bytes";
    const json& reserved = r.at(a, ap, "reserved_smem_per_block_bytes");
    g.reserved_smem_per_block_bytes = r.integer(reserved, rp, "value");
    if (g.reserved_smem_per_block_bytes < 0) r.fail(rp + ".value", "must not be negative");
    c["reserved_smem_per_block_bytes"] = r.citation(reserved, rp, sources);

    for (const auto& other : out) {
      if (other.id == g.id) r.fail(p + ".id", fmt::format("duplicate id \"{}\"", g.id));
    }
    out.push_back(std::move(g));
  }
  return out;
}

// ---- models.json ----

std::vector<ModelSpec> load_models(const std::filesystem::path& file) {
  const Reader r(file);
  const json root = r.parse();
  const json& list = r.at(root, "", "models");
  if (!list.is_array() || list.empty()) r.fail("models", "expected a non-empty array");
  std::vector<ModelSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    const std::string p = fmt::format("models[{}]", i);
    ModelSpec m;
    m.id = r.str(j, p, "id");
    m.name = r.str(j, p, "name");
    m.source = r.str(j, p, "source");
    m.layers = r.integer(j, p, "layers");
    m.hidden = r.integer(j, p, "hidden");
    m.heads = r.integer(j, p, "heads");
    m.kv_heads = r.integer(j, p, "kv_heads");
    m.head_dim = r.integer(j, p, "head_dim");
    m.ffn = r.integer(j, p, "ffn");
    m.vocab = r.integer(j, p, "vocab");
    m.tie_word_embeddings = r.boolean_or(j, p, "tie_word_embeddings", false);
    // Model numbers cite a URL or a derivation directly, not a key of a sources table.
    auto sourced_text = [&](const char* key) -> std::optional<double> {
      if (!j.contains(key)) return std::nullopt;
      const json& o = j.at(key);
      const std::string kp = Reader::join(p, key);
      if (!o.is_object()) r.fail(kp, "expected {\"value\": ..., \"source\": ...}");
      if (r.str(o, kp, "source").empty()) r.fail(kp + ".source", "must not be empty");
      return r.num(o, kp, "value");
    };
    if (!j.contains("params_b")) r.fail(p + ".params_b", "missing");
    m.params_b = *sourced_text("params_b");
    m.active_params_b = sourced_text("active_params_b");
    if (j.contains("experts")) m.experts = r.integer(j, p, "experts");
    if (j.contains("experts_per_token")) m.experts_per_token = r.integer(j, p, "experts_per_token");
    if (j.contains("sliding_window")) m.sliding_window = r.integer(j, p, "sliding_window");
    m.qkv_bias = r.boolean_or(j, p, "qkv_bias", false);
    m.notes = r.str_or(j, p, "notes", "");
    if (m.heads % m.kv_heads != 0) r.fail(p + ".kv_heads", "must divide heads (each KV head serves a whole group)");
    out.push_back(std::move(m));
  }
  return out;
}

// ---- thresholds.json ----

double load_implausible_above(const std::filesystem::path& file) {
  const Reader r(file);
  const json root = r.parse();
  const double v = r.num(r.at(root, "", "implausible_above"), "implausible_above", "value");
  if (!(v >= 1.0)) r.fail("implausible_above.value", "expected a factor of at least 1");
  if (root.contains("labs")) {
    r.fail("labs", "a lab's thresholds live in its own folder, labs/NN-name/thresholds.json");
  }
  return v;
}

namespace {

// What a ceiling_fraction rule is a fraction of: a calibrated `ceiling` or a `baseline` the test times.
void read_reference(const Reader& r, const json& j, const std::string& p, Threshold& t) {
  const bool has_ceiling = j.contains("ceiling"), has_baseline = j.contains("baseline");
  if (has_ceiling == has_baseline) {
    r.fail(p, "expected exactly one of \"ceiling\" (calibrated) and \"baseline\" (timed by the test in its run)");
  }
  if (has_ceiling) {
    const std::string name = r.str(j, p, "ceiling");
    t.ceiling = parse_ceiling(name);
    if (!t.ceiling) {
      std::vector<std::string_view> names;
      for (const Ceiling c : all_ceilings()) names.push_back(to_string(c));
      r.fail(p + ".ceiling", fmt::format("\"{}\" is not a calibrated ceiling (known: {}); a reference the test "
                                         "times itself is a \"baseline\"", name, fmt::join(names, ", ")));
    }
    return;
  }
  const json& bj = r.at(j, p, "baseline");
  const std::string bp = p + ".baseline";
  Baseline b;
  b.name = r.str(bj, bp, "name");
  b.unit = r.str(bj, bp, "unit");
  b.what = r.str(bj, bp, "what");
  const json& caps = r.at(bj, bp, "caps");
  if (!caps.is_boolean()) r.fail(bp + ".caps", "expected true (a roof) or false (a baseline to beat)");
  b.caps = caps.get<bool>();
  if (b.unit != "B/s" && b.unit != "FLOP/s") r.fail(bp + ".unit", fmt::format("expected B/s or FLOP/s, got \"{}\"", b.unit));
  if (parse_ceiling(b.name)) r.fail(bp + ".name", fmt::format("\"{}\" is a calibrated ceiling's name", b.name));
  t.baseline = std::move(b);
}

void read_provenance(const Reader& r, const json& j, const std::string& p, Provenance& out) {
  const json& pj = r.at(j, p, "provenance");
  const std::string pp = p + ".provenance";
  out.kind = r.str(pj, pp, "kind");
  if (out.kind == "analytic estimate") {
    out.reasoning = r.str(pj, pp, "reasoning");
    out.source = r.str(pj, pp, "source");
  } else if (out.kind == "measured" || out.kind == "predicted") {
    // predicted: the performance model's figure for the reference solution on that GPU, recorded in
    // docs/measurements.md before a GPU measured it (a model, until a run replaces it with a measurement).
    out.gpu = r.str(pj, pp, "gpu");
    out.date = r.str(pj, pp, "date");
    out.figure = r.num(pj, pp, "figure");
    out.reasoning = r.str_or(pj, pp, "reasoning", "");
    out.source = r.str_or(pj, pp, "source", "");
  } else {
    r.fail(pp + ".kind",
           fmt::format("expected \"analytic estimate\", \"measured\" or \"predicted\", got \"{}\"", out.kind));
  }
}

// A sliding rule's numbers (its own, or one architecture's): 0 <= zero_at < full_at, and full_at <= 1 when the
// reference is a roof (a baseline to beat is beaten by more).
void check_sliding_numbers(const Reader& r, const std::string& path, const Threshold& t, double zero_at, double full_at) {
  if (!(zero_at >= 0 && zero_at < full_at && (!t.caps() || full_at <= 1.0))) {
    r.fail(path, fmt::format("expected 0 <= zero_at < full_at{}, got zero_at {} and full_at {}", t.caps() ? " <= 1" : "",
                             zero_at, full_at));
  }
}

// "sm_90" -> 90 (two or three digits after sm_), or the reader's error naming `path`.
int read_arch(const Reader& r, const json& j, const std::string& path, const std::string& key) {
  const std::string text = r.str(j, path, key);
  const bool ok = text.size() >= 5 && text.size() <= 6 && text.rfind("sm_", 0) == 0 &&
                  std::all_of(text.begin() + 3, text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!ok) r.fail(path + "." + key, fmt::format("expected an architecture such as \"sm_90\", got \"{}\"", text));
  return std::stoi(text.substr(3));
}

// A sliding rule's "by_architecture": each entry's range, numbers (as the rule's own are checked), reason and
// provenance; the ranges may not overlap, so that one rule is in force on each GPU.
void read_by_architecture(const Reader& r, const json& j, const std::string& p, Threshold& t) {
  if (!j.contains("by_architecture")) return;
  const std::string bp = p + ".by_architecture";
  const json& list = r.at(j, p, "by_architecture");
  if (!t.sliding()) r.fail(bp, "only a sliding rule (ceiling_fraction, prediction_fraction) has numbers per architecture");
  if (!list.is_array() || list.empty()) r.fail(bp, "expected a list of architecture ranges");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string ep = fmt::format("{}[{}]", bp, i);
    if (!e.is_object()) r.fail(ep, "expected an object");
    ArchRule a;
    a.from_cc = read_arch(r, e, ep, "from");
    if (e.contains("before")) a.before_cc = read_arch(r, e, ep, "before");
    if (a.before_cc != 0 && a.before_cc <= a.from_cc) {
      r.fail(ep, fmt::format("expected \"before\" after \"from\", got sm_{} to sm_{}", a.from_cc, a.before_cc));
    }
    a.full_at = r.num(e, ep, "full_at");
    a.zero_at = r.num(e, ep, "zero_at");
    check_sliding_numbers(r, ep, t, a.zero_at, a.full_at);
    a.why = r.str(e, ep, "why");
    read_provenance(r, e, ep, a.provenance);
    for (const auto& b : t.by_architecture) {
      const bool apart = (a.before_cc != 0 && a.before_cc <= b.from_cc) || (b.before_cc != 0 && b.before_cc <= a.from_cc);
      if (!apart) r.fail(ep, fmt::format("{} overlaps {}", a.range(), b.range()));
    }
    t.by_architecture.push_back(std::move(a));
  }
}

Threshold read_rule(const Reader& r, const json& j, const std::string& p) {
  Threshold t;
  t.kind = r.str(j, p, "kind");
  t.description = r.str_or(j, p, "description", "");
  if (t.sliding()) {
    if (t.kind == "ceiling_fraction") {
      read_reference(r, j, p, t);
    } else {
      t.reference = r.str(j, p, "reference");
    }
    t.full_at = r.num(j, p, "full_at");
    t.zero_at = r.num(j, p, "zero_at");
    check_sliding_numbers(r, p, t, t.zero_at, t.full_at);
  } else if (t.kind == "ratio_max" || t.kind == "ratio_min") {
    t.value = r.num(j, p, "value");
    if (!(t.value > 0)) r.fail(p + ".value", "expected a positive ratio");
  } else {
    r.fail(p + ".kind",
           fmt::format("expected ceiling_fraction, prediction_fraction, ratio_max or ratio_min, got \"{}\"", t.kind));
  }
  read_provenance(r, j, p, t.provenance);
  read_by_architecture(r, j, p, t);
  if (j.contains("student_baseline")) {
    const json& sj = r.at(j, p, "student_baseline");
    const std::string sp = p + ".student_baseline";
    StudentBaseline b;
    b.roof_fraction = r.num(sj, sp, "roof_fraction");
    b.reasoning = r.str(sj, sp, "reasoning");
    if (!(b.roof_fraction > 0 && b.roof_fraction <= 1)) {
      r.fail(sp + ".roof_fraction", fmt::format("expected a share of the baseline's roof in (0, 1], got {}", b.roof_fraction));
    }
    if (t.sliding() && t.caps()) r.fail(sp, "a baseline the student runs is one to beat or to compare with: it needs \"caps\": false or a ratio rule");
    t.student_baseline = std::move(b);
  }
  return t;
}

}  // namespace

std::vector<Threshold> load_lab_thresholds(const std::filesystem::path& file, std::string_view lab) {
  const Reader r(file);
  const json root = r.parse();
  if (!root.is_object()) r.fail("", "expected an object of quantity -> rule");
  std::vector<Threshold> out;
  for (const auto& [quantity, j] : root.items()) {
    Threshold t = read_rule(r, j, quantity);
    t.lab = lab;
    t.quantity = quantity;
    out.push_back(std::move(t));
  }
  return out;
}

std::string ArchRule::range() const {
  if (before_cc == 0) return fmt::format("sm_{} and later", from_cc);
  return fmt::format("from sm_{}, before sm_{}", from_cc, before_cc);
}

const ArchRule* Threshold::architecture_rule(int cc) const {
  for (const auto& a : by_architecture) {
    if (a.covers(cc)) return &a;
  }
  return nullptr;
}

Threshold Threshold::on_architecture(int cc) const {
  Threshold t = *this;
  if (const ArchRule* a = architecture_rule(cc)) {
    t.full_at = a->full_at;
    t.zero_at = a->zero_at;
    t.provenance = a->provenance;
  }
  return t;
}

double Threshold::ratio_max() const {
  if (kind != "ratio_max")
    throw DataError(fmt::format("threshold {}/{} is a {} rule, not ratio_max", lab, quantity, kind));
  return value;
}

double Threshold::ratio_min() const {
  if (kind != "ratio_min")
    throw DataError(fmt::format("threshold {}/{} is a {} rule, not ratio_min", lab, quantity, kind));
  return value;
}

// ---- cached lookups ----

const std::vector<GpuSpec>& gpus() { return data().gpus; }
const std::vector<ModelSpec>& models() { return data().models; }
double implausible_above() { return data().implausible_above; }
const std::vector<Threshold>& lab_thresholds(std::string_view lab) { return cached_lab_thresholds(lab); }

const GpuSpec& gpu(std::string_view id) { return by_id(gpus(), id, "GPU"); }
const ModelSpec& model(std::string_view id) { return by_id(models(), id, "model"); }

const GpuSpec* find_gpu_by_cuda_name(std::string_view cuda_name) {
  for (const auto& g : gpus()) {
    for (const auto& n : g.cuda_names) {
      if (n == cuda_name) return &g;
    }
  }
  // Tolerant match for names the list lacks: a MIG suffix, an older driver's spelling, other case.
  const auto words = tokens_of(cuda_name);
  auto has = [&](const std::string& t) { return std::find(words.begin(), words.end(), t) != words.end(); };
  const GpuSpec* best = nullptr;
  std::size_t best_tokens = 0;
  bool tie = false;
  for (const auto& g : gpus()) {
    if (!std::all_of(g.match_tokens.begin(), g.match_tokens.end(), has)) continue;
    if (std::any_of(g.exclude_tokens.begin(), g.exclude_tokens.end(), has)) continue;
    if (g.match_tokens.size() > best_tokens) {
      best = &g;
      best_tokens = g.match_tokens.size();
      tie = false;
    } else if (g.match_tokens.size() == best_tokens) {
      tie = true;
    }
  }
  return tie ? nullptr : best;  // two equally good candidates: better "unknown GPU" than the wrong one
}

const Threshold& threshold(std::string_view lab, std::string_view quantity) {
  std::string known;
  for (const auto& t : lab_thresholds(lab)) {
    if (t.quantity == quantity) return t;
    known += (known.empty() ? "" : ", ") + t.quantity;
  }
  throw DataError(fmt::format("{}: no threshold for quantity {} (lab {} has: {})",
                              (lab_dir(lab) / "thresholds.json").string(), quantity, lab,
                              known.empty() ? "none" : known));
}

std::optional<double> peak_flops(const GpuSpec& g, DType type) {
  std::optional<double> tflops;
  switch (type) {
    case DType::fp64:
      tflops = g.fp64_tflops;
      break;
    case DType::fp32:
      tflops = g.fp32_tflops;
      break;
    case DType::tf32:
      tflops = g.tf32_tflops;
      break;
    case DType::fp16:
      tflops = g.fp16_tflops;
      break;
    case DType::bf16:
      tflops = g.bf16_tflops;
      break;
    case DType::fp8:
      tflops = g.fp8_tflops;
      break;
    case DType::int8:
      tflops = g.int8_tops;
      break;
    case DType::fp16_nontensor:
      tflops = g.fp16_nontensor_tflops;
      break;
  }
  if (!tflops) return std::nullopt;
  return *tflops * 1e12;
}

double sliding_score(const Threshold& t, double fraction) {
  if (!t.sliding()) {
    throw std::invalid_argument(fmt::format("threshold {}/{} is a {} rule: it passes or fails, it has no sliding score",
                                            t.lab, t.quantity, t.kind));
  }
  if (std::isnan(fraction)) return 0.0;  // a broken measurement never earns points
  if (fraction >= t.full_at) return 1.0;
  if (fraction <= t.zero_at) return 0.0;
  return (fraction - t.zero_at) / (t.full_at - t.zero_at);
}

}  // namespace rooflab
