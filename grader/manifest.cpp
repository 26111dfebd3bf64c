#include "manifest.hpp"


#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace rooflab::grader {

std::vector<DeclaredTest> declared_tests(const rubric::Rubric& r, const std::string& binary_kind,
                                         const std::vector<std::string>& leaves_out) {
  std::vector<DeclaredTest> out;
  for (const auto& e : r.tests) {
    if (!rubric::holds(binary_kind, e.kind)) continue;
    if (std::find(leaves_out.begin(), leaves_out.end(), e.kind) != leaves_out.end()) continue;
    const auto dot = e.test.find('.');
    out.push_back({e.test.substr(0, dot), e.test.substr(dot + 1), rubric::graded_kind(binary_kind, e.kind),
                   rubric::graded_points(binary_kind, e)});
  }
  return out;
}

const Variant& Lab::variant(const std::string& n) const {
  for (const auto& v : variants) {
    if (v.name == n) return v;
  }
  std::string known;
  for (const auto& v : variants) known += " " + v.name;
  throw std::runtime_error(fmt::format("lab {} has no variant '{}' (built:{})", id, n, known));
}

const Lab& Manifest::lab(const std::string& key) const {
  for (const auto& l : labs) {
    if (key == l.id || key == l.name || key == l.dir_name() || (key.size() == 1 && "0" + key == l.id)) return l;
  }
  std::string known;
  for (const auto& l : labs) known += fmt::format("\n  {}  {}", l.id, l.title);
  throw std::invalid_argument(fmt::format("no lab '{}'. The labs are:{}", key, known));
}

Manifest load_manifest(const std::filesystem::path& build_dir) {
  const auto path = build_dir / "rooflab" / "labs.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{} is missing: configure the build first", path.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
    Manifest m;
    m.source_dir = j.at("source_dir").get<std::string>();
    m.build_dir = j.at("build_dir").get<std::string>();
    m.student_dir = j.at("student_dir").get<std::string>();
    m.have_cuda = j.at("have_cuda").get<bool>();
    m.have_emu = j.at("have_emu").get<bool>();
    for (const auto& jl : j.at("labs")) {
      Lab lab;
      lab.id = jl.at("id").get<std::string>();
      lab.name = jl.at("name").get<std::string>();
      lab.title = jl.at("title").get<std::string>();
      lab.dir = jl.at("dir").get<std::string>();
      lab.rubric = jl.at("rubric").get<std::string>();
      const rubric::Rubric rub = rubric::load(lab.rubric);
      lab.student_files = jl.at("student_files").get<std::vector<std::string>>();
      for (const auto& [vname, jv] : jl.at("variants").items()) {
        Variant v;
        v.name = vname;
        v.student_dir = jv.at("student_dir").get<std::string>();
        v.expect = jv.at("expect").get<std::string>();
        for (const auto& jb : jv.at("binaries")) {
          Binary b;
          b.kind = jb.at("kind").get<std::string>();
          b.target = jb.at("target").get<std::string>();
          b.path = jb.at("path").get<std::string>();
          b.unavailable = jb.value("unavailable", "");
          b.objects_from = jb.value("objects_from", std::vector<std::string>{});
          b.coverage_target = jb.value("coverage_target", "");
          b.coverage_path = jb.value("coverage_path", "");
          b.capture_dir = jb.value("capture_dir", "");
          b.leaves_out = jb.value("leaves_out", std::vector<std::string>{});
          b.declared = declared_tests(rub, b.kind, b.leaves_out);
          v.binaries.push_back(std::move(b));
        }
        lab.variants.push_back(std::move(v));
      }
      m.labs.push_back(std::move(lab));
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed lab manifest: {}", path.string(), e.what()));
  }
}

int count_todos(const std::filesystem::path& student_dir, const std::vector<std::string>& files) {
  static const std::regex todo(R"(ROOFLAB_TODO\(|rooflab::unused\()");
  int n = 0;
  for (const auto& f : files) {
    std::ifstream in(student_dir / f);
    for (std::string line; std::getline(in, line);) {
      if (std::regex_search(line, todo) && line.find("#define") == std::string::npos) ++n;
    }
  }
  return n;
}

}  // namespace rooflab::grader
