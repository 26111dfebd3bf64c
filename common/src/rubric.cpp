#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace rooflab::rubric {

namespace {

struct KindRow {
  std::string_view binary;
  std::string_view rubric;
  std::string_view graded;
};

// Which tests each binary holds, and the kind they are graded as there.
constexpr KindRow kKinds[] = {
    {"analytic", "analytic", "analytic"},  // tests/analytic.cpp + answers.cpp, no device
    {"emu", "correctness", "emu"},         // tests/correctness.cpp + kernels on the CPU backend
    {"gpu", "correctness", "gpu"},         // tests/correctness.cpp + tests/perf.cpp under nvcc
    {"gpu", "perf", "perf"},
    {"static", "static", "static"},        // tests/static.cpp on the captured PTX and ptxas report
    {"race", "race", "race"},              // tests/race.cpp under ThreadSanitizer on the CPU backend
    {"traffic", "traffic", "traffic"},     // tests/traffic.cpp, the kernels' memory accesses recorded on the CPU
    // tests/perf.cpp + tests/dryrun.cpp, kernels and timing harness on the CPU backend at scaled-down sizes:
    // proves the perf tests, calibration and plots run to the end; worth nothing, never a GPU figure.
    {"dryrun", "perf", "dryrun"},
    {"dryrun", "dryrun", "dryrun"},
};

bool known_rubric_kind(std::string_view k) {
  return std::any_of(std::begin(kKinds), std::end(kKinds), [&](const KindRow& r) { return r.rubric == k; });
}

}  // namespace

bool holds(std::string_view binary_kind, std::string_view rubric_kind) {
  return std::any_of(std::begin(kKinds), std::end(kKinds),
                     [&](const KindRow& r) { return r.binary == binary_kind && r.rubric == rubric_kind; });
}

double graded_points(std::string_view binary_kind, const Entry& e) {
  return graded_kind(binary_kind, e.kind) == "dryrun" ? 0.0 : e.points;
}

std::string graded_kind(std::string_view binary_kind, std::string_view rubric_kind) {
  for (const auto& r : kKinds) {
    if (r.binary == binary_kind && r.rubric == rubric_kind) return std::string(r.graded);
  }
  return std::string(rubric_kind);
}

bool is_binary_kind(std::string_view binary_kind) {
  return std::any_of(std::begin(kKinds), std::end(kKinds), [&](const KindRow& r) { return r.binary == binary_kind; });
}

Rubric parse(const std::string& json_text, const std::string& where) {
  Rubric r;
  try {
    const auto j = nlohmann::json::parse(json_text);
    r.lab = j.at("lab").get<std::string>();
    std::set<std::string> seen;
    for (const auto& t : j.at("tests")) {
      Entry e{t.at("test").get<std::string>(), t.at("kind").get<std::string>(), t.at("points").get<double>(),
              t.at("checks").get<std::string>(), {}};
      const auto dot = e.test.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == e.test.size()) {
        throw std::runtime_error(fmt::format("test \"{}\" is not Suite.Name", e.test));
      }
      if (!known_rubric_kind(e.kind)) {
        throw std::runtime_error(fmt::format("{}: unknown kind \"{}\" (analytic, correctness, perf, static, race, dryrun, traffic)",
                                             e.test, e.kind));
      }
      if (!(e.points >= 0)) throw std::runtime_error(fmt::format("{}: negative points", e.test));
      if ((e.kind == "static" || e.kind == "race") && e.points != 0) {
        throw std::runtime_error(fmt::format("{}: {} tests are hints and carry no points", e.test, e.kind));
      }
      if (e.kind == "dryrun" && e.points != 0) {
        throw std::runtime_error(fmt::format("{}: dry-run tests prove that code runs and carry no points", e.test));
      }
      for (const auto& q : t.value("thresholds", nlohmann::json::array())) e.thresholds.push_back(q.get<std::string>());
      if (!e.thresholds.empty() && e.kind != "perf") {
        throw std::runtime_error(fmt::format("{}: only perf tests are graded by thresholds", e.test));
      }
      if (e.checks.empty()) throw std::runtime_error(fmt::format("{}: say in \"checks\" what it checks", e.test));
      if (!seen.insert(e.test).second) throw std::runtime_error(fmt::format("{} is listed twice", e.test));
      r.tests.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed rubric: {}", where, e.what()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
  return r;
}

Rubric load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read the rubric", file.string()));
  std::stringstream s;
  s << in.rdbuf();
  return parse(s.str(), file.string());
}

std::string mismatch(const Rubric& r, std::string_view binary_kind, const std::vector<std::string>& registered) {
  std::set<std::string> want, got(registered.begin(), registered.end());
  for (const auto& e : r.tests) {
    if (holds(binary_kind, e.kind)) want.insert(e.test);
  }
  std::string out;
  for (const auto& t : want) {
    if (!got.count(t)) out += fmt::format("  in the rubric, not in the binary: {}\n", t);
  }
  for (const auto& t : got) {
    if (!want.count(t)) out += fmt::format("  in the binary, not in the rubric: {}\n", t);
  }
  return out;
}

}  // namespace rooflab::rubric
