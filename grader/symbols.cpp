#include "symbols.hpp"

#include "build.hpp"
#include "process.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

namespace rooflab::grader {

namespace fs = std::filesystem;

std::vector<ForbiddenLibrary> forbidden_libraries(const Lab& lab) {
  std::ifstream in(lab.rubric);
  if (!in) return {};
  std::vector<ForbiddenLibrary> out;
  try {
    const auto j = nlohmann::json::parse(in);
    if (!j.contains("forbidden_symbols")) return {};
    for (const auto& e : j.at("forbidden_symbols")) {
      ForbiddenLibrary f{e.at("library").get<std::string>(), e.at("pattern").get<std::string>()};
      std::regex check(f.pattern);  // a bad pattern is the lab author's error: say so now, not per student
      out.push_back(std::move(f));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed \"forbidden_symbols\" ({}); each entry is "
                                         "{{\"library\": NAME, \"pattern\": REGEX}}", lab.rubric.string(), e.what()));
  }
  return out;
}

std::vector<fs::path> student_objects(const fs::path& build_dir, const Lab& lab, const Binary& binary,
                                      const std::string& student_file) {
  std::vector<fs::path> out;
  if (binary.target.empty() || !binary_uses(binary, student_file)) return out;
  // CMake puts a target's objects under CMakeFiles/<target>.dir of the lab's build folder: the student file's
  // own (kernels.cu.o, answers.cpp.o, at any depth: a submission's files lie outside the source tree) or the
  // CPU backend's wrapper of it (emu/<target>/kernels-<8 hex>.emu.cpp.o), in the binary's own target or in
  // the object library of kernels it shares with the other CPU kinds (objects_from).
  const std::string stem = fs::path(student_file).stem().string();
  const std::regex wrapper(stem + "-[0-9a-f]{8}\\.emu\\.cpp\\.o");
  std::vector<std::string> targets{binary.target};
  targets.insert(targets.end(), binary.objects_from.begin(), binary.objects_from.end());
  for (const auto& target : targets) {
    const fs::path dir = build_dir / "labs" / lab.dir_name() / "CMakeFiles" / (target + ".dir");
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it) {
      if (!it->is_regular_file()) continue;
      const std::string name = it->path().filename().string();
      const std::string rel = it->path().lexically_relative(dir).string();
      if (rel.starts_with("tests/")) continue;  // the lab's tests, never student code
      if (name == student_file + ".o" || std::regex_match(name, wrapper)) out.push_back(it->path());
    }
  }
  return out;
}

namespace {

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

// Every symbol an object defines or needs, demangled; nullopt when nm cannot read it.
std::optional<std::vector<std::string>> symbols_of(const fs::path& object) {
  // POSIX format: "name type [value size]", one per line, names as in the object (mangled: no blanks).
  const ProcessResult r = run_process({"nm", "-P", object.string()}, {.timeout_s = 60, .sandbox = std::nullopt});
  if (!r.ok()) return std::nullopt;
  std::vector<std::string> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    const auto blank = line.find(' ');
    if (blank == std::string::npos || blank == 0) continue;
    out.push_back(demangle(line.substr(0, blank)));
  }
  return out;
}

std::string shortened(const std::string& s) { return s.size() > 120 ? s.substr(0, 117) + "..." : s; }

bool names_loader_symbol(const std::string& symbol, std::string_view name) {
  return symbol == name || (symbol.starts_with(name) && symbol.size() > name.size() && symbol[name.size()] == '@');
}

}  // namespace

const std::vector<LoaderSymbol>& loader_symbols() {
  static constexpr std::string_view load = "loads a shared library by name at run time";
  static constexpr std::string_view find = "looks a function up by name at run time";
  static constexpr std::string_view walk = "walks the objects loaded in the process, to a library's symbol table";
  static const std::vector<LoaderSymbol> symbols = {
      {"dlopen", load},
      {"dlmopen", load},
      {"__libc_dlopen_mode", load},
      {"dlsym", find},
      {"dlvsym", find},
      {"__libc_dlsym", find},
      {"__libc_dlvsym", find},
      {"_dl_sym", find},
      {"_dl_vsym", find},
      {"dl_iterate_phdr", walk},
      {"dlinfo", walk},
      {"dladdr", walk},
      {"dladdr1", walk},
      {"_dl_find_object", walk},
      {"_r_debug", walk},
      {"_DYNAMIC", walk},
      {"__ehdr_start", walk},
      {"getauxval", walk},
      {"syscall", "makes system calls past the C library (openat and mmap of a library's file)"},
  };
  return symbols;
}

std::vector<std::string> forbidden_findings(const std::vector<ForbiddenLibrary>& libraries, const std::string& file,
                                            const std::vector<std::string>& symbols) {
  std::vector<std::string> out;
  if (libraries.empty()) return out;
  std::vector<std::regex> patterns;
  for (const auto& l : libraries) patterns.emplace_back(l.pattern);
  for (const auto& s : symbols) {
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      if (std::regex_search(s, patterns[i])) out.push_back(fmt::format("{} uses {} ({})", file, shortened(s), libraries[i].library));
    }
    for (const auto& l : loader_symbols()) {
      if (names_loader_symbol(s, l.name)) {
        out.push_back(fmt::format("{} uses {} (the dynamic loader: it {}, so no name in the compiled code says which "
                                  "library it reaches)", file, s, l.why));
      }
    }
  }
  return out;
}

std::string forbidden_symbols_in(const fs::path& build_dir, const Lab& lab, const Binary& binary) {
  const auto libraries = forbidden_libraries(lab);
  if (libraries.empty()) return "";
  std::set<std::string> findings;  // sorted, each once
  for (const auto& file : lab.student_files) {
    for (const auto& object : student_objects(build_dir, lab, binary, file)) {
      const auto symbols = symbols_of(object);
      if (!symbols) continue;
      for (auto& f : forbidden_findings(libraries, file, *symbols)) findings.insert(std::move(f));
    }
  }
  if (findings.empty()) return "";
  std::string libs;
  for (const auto& l : libraries) libs += (libs.empty() ? "" : ", ") + l.library;
  std::string out = fmt::format("refused: lab {} forbids {}; the student's compiled code uses them, or the dynamic "
                                "loader, refused in every lab that forbids a library:\n", lab.id, libs);
  int shown = 0;
  for (const auto& f : findings) {
    if (++shown > 10) {
      out += fmt::format("  ... and {} more\n", findings.size() - 10);
      break;
    }
    out += "  " + f + "\n";
  }
  return out + "Write the kernels yourself: the lab grades your code, not a library's.";
}

std::optional<TestResult> forbidden_symbols_check(const fs::path& build_dir, const Lab& lab,
                                                  const std::vector<Binary>& binaries) {
  if (forbidden_libraries(lab).empty()) return std::nullopt;
  TestResult r;
  r.lab = lab.id;
  r.id = fmt::format("Lab{}Static.NoForbiddenLibraries", lab.id);
  r.kind = "static";
  r.backend = "compiler output";
  r.status = Status::passed;
  std::set<std::string> seen;
  std::set<fs::path> checked;  // each object once: the kinds of the CPU backend share the kernels' objects
  for (const auto& b : binaries) {
    if (!b.unavailable.empty() || !fs::exists(b.path)) continue;
    for (const auto& f : lab.student_files) {
      for (auto& object : student_objects(build_dir, lab, b, f)) checked.insert(std::move(object));
    }
    const std::string found = forbidden_symbols_in(build_dir, lab, b);
    if (!found.empty() && seen.insert(found).second) {
      r.status = Status::failed;
      r.output += fmt::format("in {} ({} tests): {}\n", b.target, b.kind, found);
    }
  }
  if (r.status == Status::passed) {
    r.output = fmt::format("{} compiled student objects checked: no forbidden library", checked.size());
  }
  return r;
}

}  // namespace rooflab::grader
