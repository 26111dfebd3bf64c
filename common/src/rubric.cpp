#include <rooflab/detail/rubric.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace rooflab::rubric {

namespace {

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  for (const auto& v : j.at(key)) out.push_back(v.get<std::string>());
  return out;
}

bool known_rubric_kind(std::string_view k) {
  return std::any_of(test_kinds().begin(), test_kinds().end(), [&](const Kind& row) {
    return std::find(row.rubric.begin(), row.rubric.end(), k) != row.rubric.end();
  });
}

// A rubric kind that only rows without points grade (race, static, dryrun, ...) must carry 0 points.
const Kind* pointless_row(std::string_view rubric_kind) {
  const Kind* found = nullptr;
  for (const auto& row : test_kinds()) {
    if (std::find(row.rubric.begin(), row.rubric.end(), rubric_kind) == row.rubric.end()) continue;
    if (row.earns_points) return nullptr;
    found = &row;
  }
  return found;
}

std::string rubric_kind_names() {
  std::set<std::string> names;
  for (const auto& row : test_kinds()) names.insert(row.rubric.begin(), row.rubric.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<Kind> parse_kinds(const std::string& json_text, const std::string& where) {
  std::vector<Kind> out;
  try {
    const auto table = nlohmann::json::parse(json_text);
    for (const auto& j : table.at("kinds")) {
      Kind k{j.at("kind").get<std::string>(), strings(j, "rubric"), j.at("binary").get<std::string>(),
             j.at("backend").get<std::string>(), j.at("heading").get<std::string>(), j.at("earns_points").get<bool>(),
             j.at("no_points").get<std::string>(), j.at("needs_gpu").get<bool>(), j.at("needs_toolkit").get<bool>(),
             strings(j, "schedules"), j.at("verified").get<bool>(), j.at("thresholds").get<bool>(),
             j.at("opt_in").get<bool>(), j.at("student_files").get<std::string>()};
      if (k.kind.empty() || k.binary.empty() || k.rubric.empty()) {
        throw std::runtime_error("a row without its kind, binary or rubric kinds");
      }
      if (!k.earns_points && k.no_points.empty()) {
        throw std::runtime_error(fmt::format("kind {}: say in no_points why it earns none", k.kind));
      }
      if (std::any_of(out.begin(), out.end(), [&](const Kind& o) { return o.kind == k.kind; })) {
        throw std::runtime_error(fmt::format("kind {} is listed twice", k.kind));
      }
      out.push_back(std::move(k));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed table of test kinds: {}", where, e.what()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: no test kinds", where));
  return out;
}

const std::vector<Kind>& test_kinds() {
  static const std::vector<Kind> table = [] {
    const auto file = data_dir() / "test_kinds.json";
    std::ifstream in(file);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read the table of test kinds", file.string()));
    std::stringstream s;
    s << in.rdbuf();
    return parse_kinds(s.str(), file.string());
  }();
  return table;
}

const Kind* find_kind(std::string_view kind) {
  for (const auto& row : test_kinds()) {
    if (row.kind == kind) return &row;
  }
  return nullptr;
}

std::vector<std::string> binary_kinds() {
  std::vector<std::string> out;
  for (const auto& row : test_kinds()) {
    if (std::find(out.begin(), out.end(), row.binary) == out.end()) out.push_back(row.binary);
  }
  return out;
}

bool holds(std::string_view binary_kind, std::string_view rubric_kind) {
  return std::any_of(test_kinds().begin(), test_kinds().end(), [&](const Kind& row) {
    return row.binary == binary_kind && std::find(row.rubric.begin(), row.rubric.end(), rubric_kind) != row.rubric.end();
  });
}

std::string graded_kind(std::string_view binary_kind, std::string_view rubric_kind) {
  for (const auto& row : test_kinds()) {
    if (row.binary == binary_kind && std::find(row.rubric.begin(), row.rubric.end(), rubric_kind) != row.rubric.end()) {
      return row.kind;
    }
  }
  return std::string(rubric_kind);
}

double graded_points(std::string_view binary_kind, const Entry& e) {
  const Kind* row = find_kind(graded_kind(binary_kind, e.kind));
  return row != nullptr && !row->earns_points ? 0.0 : e.points;
}

bool is_binary_kind(std::string_view binary_kind) {
  return std::any_of(test_kinds().begin(), test_kinds().end(), [&](const Kind& row) { return row.binary == binary_kind; });
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
        throw std::runtime_error(fmt::format("{}: unknown kind \"{}\" ({}; data/test_kinds.json)", e.test, e.kind,
                                             rubric_kind_names()));
      }
      if (!(e.points >= 0)) throw std::runtime_error(fmt::format("{}: negative points", e.test));
      if (const Kind* row = pointless_row(e.kind); row != nullptr && e.points != 0) {
        throw std::runtime_error(fmt::format("{}: {} tests carry no points ({})", e.test, e.kind, row->no_points));
      }
      for (const auto& q : t.value("thresholds", nlohmann::json::array())) e.thresholds.push_back(q.get<std::string>());
      const Kind* graded_as = find_kind(e.kind);
      if (!e.thresholds.empty() && (graded_as == nullptr || !graded_as->thresholds)) {
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

std::string mismatch(const Rubric& r, std::string_view binary_kind, const std::vector<std::string>& registered,
                     const std::vector<std::string>& leaves_out) {
  std::set<std::string> want, got(registered.begin(), registered.end());
  for (const auto& e : r.tests) {
    const bool left_out = std::find(leaves_out.begin(), leaves_out.end(), e.kind) != leaves_out.end();
    if (holds(binary_kind, e.kind) && !left_out) want.insert(e.test);
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
