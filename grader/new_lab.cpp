#include "new_lab.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// The template's two halves and where each goes: the lab folder students get, and its solution beside the
// known-bad cases that patch it.
const std::pair<const char*, const char*> kHalves[] = {{"lab", "labs"}, {"solution", "solutions"}};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_new_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + p.string());
}

// The id or name of a lab folder "NN-name" (empty when the folder is not named like one).
std::pair<std::string, std::string> split_lab_dir(const std::string& dir) {
  static const std::regex lab_dir(R"(([0-9]{2})-(.+))");
  std::smatch m;
  if (!std::regex_match(dir, m, lab_dir)) return {};
  return {m[1], m[2]};
}

// Every lab folder the course has: labs/ and solutions/ entries, and labs/CMakeLists.txt's registrations.
std::vector<std::string> existing_lab_dirs(const fs::path& root) {
  std::vector<std::string> dirs;
  for (const char* top : {"labs", "solutions"}) {
    std::error_code ec;
    for (fs::directory_iterator it(root / top, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec)) dirs.push_back(it->path().filename().string());
    }
  }
  static const std::regex registered(R"(add_subdirectory\(\s*([^)\s]+)\s*\))");
  const std::string cmake = fs::exists(root / "labs" / "CMakeLists.txt") ? read_text(root / "labs" / "CMakeLists.txt") : "";
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), registered); it != std::sregex_iterator(); ++it) {
    dirs.push_back((*it)[1]);
  }
  return dirs;
}

// "scale-demo" -> "Scale demo".
std::string title_from_name(const std::string& name) {
  std::string t = name;
  for (char& c : t) c = c == '-' ? ' ' : c;
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return t;
}

std::string lab_dir_name(const NewLabArgs& a) { return a.id + "-" + a.name; }

// Copies one half of the template into `to`, placeholders filled; returns the files written.
std::vector<fs::path> copy_half(const fs::path& from, const fs::path& to, const std::map<std::string, std::string>& values) {
  std::vector<fs::path> written;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(from)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const fs::path rel = fs::relative(f, from);
    const fs::path out = to / fill_placeholders(rel.string(), values, f.string());
    write_new_text(out, fill_placeholders(read_text(f), values, f.string()));
    written.push_back(out);
  }
  return written;
}

// What to fill in, in the order a lab author meets the files (docs/adding-a-lab.md says more).
void print_next_steps(const NewLabArgs& a, const std::vector<fs::path>& written) {
  const std::string dir = lab_dir_name(a);
  fmt::print("rooflab new-lab: lab {} \"{}\" scaffolded ({} files):\n", a.id, a.title, written.size());
  for (const auto& f : written) fmt::print("  {}\n", fs::relative(f, a.root).string());
  fmt::print("  labs/CMakeLists.txt: add_subdirectory({})\n\n", dir);
  fmt::print("It builds and grades as it is: ./rooflab grade {0} (the stub scores 0), ./rooflab grade {0} --solutions\n"
             "(full marks). Then replace the scale kernel with your lab, file by file (docs/adding-a-lab.md):\n"
             "  labs/{1}/README.md, lab.hpp, kernels.hpp, the stubs kernels.cu and answers.cpp, tests/,\n"
             "  rubric.json and thresholds.json; solutions/{1}/ and its selftest/ cases. Every \"fill in\" mark\n"
             "  is a place to write.\n", a.id, dir);
}

}  // namespace

std::string new_lab_refusal(const NewLabArgs& a) {
  static const std::regex id(R"([0-9]{2})");
  static const std::regex name(R"([a-z0-9]+(-[a-z0-9]+)*)");
  if (!std::regex_match(a.id, id)) {
    return fmt::format("the lab id \"{}\" is not two digits (as in 09): it names the folder labs/NN-name and "
                       "orders the course", a.id);
  }
  if (!std::regex_match(a.name, name)) {
    return fmt::format("the lab name \"{}\" must be lower-case letters, digits and single dashes ([a-z0-9-], as in "
                       "scale-demo): it is the folder's name after the id and what students type", a.name);
  }
  if (!fs::is_directory(a.root / "templates" / "lab")) {
    return fmt::format("{} has no templates/lab/ (the template new-lab copies)", a.root.string());
  }
  for (const auto& dir : existing_lab_dirs(a.root)) {
    const auto [other_id, other_name] = split_lab_dir(dir);
    if (other_id == a.id) return fmt::format("lab id {} is taken by {}", a.id, dir);
    if (other_name == a.name) return fmt::format("the name {} is taken by {} (a lab is found by id or by name)", a.name, dir);
  }
  return "";
}

std::map<std::string, std::string> new_lab_placeholders(const NewLabArgs& a) {
  return {{"@LAB_ID@", a.id},          {"@LAB_NAME@", a.name},      {"@LAB_DIR@", lab_dir_name(a)},
          {"@LAB_NS@", "lab" + a.id}, {"@LAB_SUITE@", "Lab" + a.id}, {"@LAB_TITLE@", a.title.empty() ? title_from_name(a.name) : a.title}};
}

std::string fill_placeholders(const std::string& text, const std::map<std::string, std::string>& values,
                              const std::string& where) {
  std::string out = text;
  for (const auto& [key, value] : values) {
    for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + value.size())) {
      out.replace(at, key.size(), value);
    }
  }
  static const std::regex left(R"(@LAB_[A-Z_]+@)");
  std::smatch m;
  if (std::regex_search(out, m, left)) {
    throw std::runtime_error(fmt::format("{}: placeholder {} is not one new-lab fills in", where, m.str()));
  }
  return out;
}

std::string with_registration(const std::string& labs_cmake, const std::string& dir) {
  static const std::regex line(R"(add_subdirectory\(\s*([^)\s]+)\s*\)[^\n]*\n?)");
  const std::string new_line = fmt::format("add_subdirectory({})\n", dir);
  std::size_t insert_at = std::string::npos;
  std::size_t first = std::string::npos;
  for (auto it = std::sregex_iterator(labs_cmake.begin(), labs_cmake.end(), line); it != std::sregex_iterator(); ++it) {
    const std::size_t pos = static_cast<std::size_t>(it->position(0));
    if (first == std::string::npos) first = pos;
    if ((*it)[1].str() < dir) insert_at = pos + static_cast<std::size_t>(it->length(0));
  }
  if (first == std::string::npos) throw std::runtime_error("labs/CMakeLists.txt has no add_subdirectory line");
  if (insert_at == std::string::npos) insert_at = first;  // before every other lab
  std::string out = labs_cmake;
  if (insert_at == out.size() && out.back() != '\n') {  // the last line had no newline of its own
    out += '\n';
    insert_at = out.size();
  }
  out.insert(insert_at, new_line);
  return out;
}

int cmd_new_lab(const NewLabArgs& given) {
  NewLabArgs a = given;
  if (a.title.empty()) a.title = title_from_name(a.name);
  if (const std::string why = new_lab_refusal(a); !why.empty()) throw std::invalid_argument("new-lab: " + why);
  const auto values = new_lab_placeholders(a);
  const fs::path labs_cmake = a.root / "labs" / "CMakeLists.txt";
  const std::string registration = with_registration(read_text(labs_cmake), lab_dir_name(a));
  std::vector<fs::path> made;  // folders to remove if anything fails half-way
  try {
    std::vector<fs::path> written;
    for (const auto& [half, top] : kHalves) {
      const fs::path to = a.root / top / lab_dir_name(a);
      made.push_back(to);
      const auto files = copy_half(a.root / "templates" / "lab" / half, to, values);
      written.insert(written.end(), files.begin(), files.end());
    }
    // The registration last, whole or not at all: a half-written lab is never registered.
    const fs::path tmp = labs_cmake.string() + ".new-lab";
    write_new_text(tmp, registration);
    fs::rename(tmp, labs_cmake);
    print_next_steps(a, written);
  } catch (...) {
    for (const auto& dir : made) fs::remove_all(dir);
    throw;
  }
  return 0;
}

}  // namespace rooflab::grader
