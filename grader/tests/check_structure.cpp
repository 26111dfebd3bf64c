// The grader's structure, checked: a pipeline that reads top to bottom (docs/instructor-guide.md, "How the
// grader is built").
//
//   check_structure [--max LINES] DIR   reads DIR/*.cpp and DIR/*.hpp (not below) and fails (exit 1), naming each, on
//   - a function longer than 100 lines (a lambda counts with the function around it). A function whose
//     opening line is preceded by a line holding "structure: declarations" is exempt: a CLI's option
//     declarations read as a list, not as logic;
//   - a module (x.cpp with x.hpp) that is not a command including the header of one: commands (a header
//     that declares `int cmd_...(`) sit above the pipeline and the helpers, which never reach up;
//   - a cycle of includes between modules (a command that includes the header of one that includes it).
//
// A small scanner rather than a compiler: it blanks comments, string and character literals (raw strings
// too) and counts braces. It needs nothing but the standard library, so it builds in a second.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

int max_function_lines = 100;  // --max N: a lower bound, to see the check fail on the grader itself

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` with comments and literals replaced by blanks (newlines kept, so line numbers stay right).
std::string code_only(const std::string& text) {
  std::string out = text;
  const auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to && i < out.size(); ++i) {
      if (out[i] != '\n') out[i] = ' ';
    }
  };
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "//") == 0) {
      const std::size_t end = text.find('\n', i);
      blank(i, end);
      i = end == std::string::npos ? text.size() : end;
    } else if (text.compare(i, 2, "/*") == 0) {
      const std::size_t end = text.find("*/", i + 2);
      blank(i, end == std::string::npos ? text.size() : end + 2);
      i = end == std::string::npos ? text.size() : end + 2;
    } else if (text[i] == 'R' && i + 1 < text.size() && text[i + 1] == '"' &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
      // R"delim( ... )delim"
      const std::size_t paren = text.find('(', i + 2);
      const std::string close = ")" + text.substr(i + 2, paren - i - 2) + "\"";
      const std::size_t end = text.find(close, paren);
      const std::size_t stop = end == std::string::npos ? text.size() : end + close.size();
      blank(i, stop);
      i = stop;
    } else if (text[i] == '"' || (text[i] == '\'' && (i == 0 || !std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
      // A string or character literal (a digit separator, 1'000, is neither).
      const char q = text[i];
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != q && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

struct Finding {
  std::string where;
  std::string what;
};

// The text of the declaration a `{` at `at` opens: back to the previous ';', '{' or '}'.
std::string header_before(const std::string& code, std::size_t at) {
  std::size_t from = code.find_last_of(";{}", at == 0 ? 0 : at - 1);
  from = from == std::string::npos ? 0 : from + 1;
  return code.substr(from, at - from);
}

// A function body opens where a declaration ends in ')' (with const, noexcept, override, a trailing return
// type or a constructor's initializers after it); a namespace, class, enum or initializer list does not.
bool opens_function(const std::string& header) {
  static const std::regex scope(R"((^|\W)(namespace|class|struct|enum|union|extern)(\W|$))");
  if (header.find('(') == std::string::npos) return false;
  if (std::regex_search(header, scope) && header.find(')') == std::string::npos) return false;
  std::string h = header;
  h.erase(h.find_last_not_of(" \t\n\r") + 1);
  static const std::regex ends(R"(\)\s*(const|noexcept|override|final|mutable|\s)*(->\s*[\w:<>,\s*&]+)?$)");
  static const std::regex init(R"(\)\s*:\s*[\w:]+[({].*[)}]\s*$)");
  // `= {` at namespace scope is an initializer, even when a call comes before it on the line.
  if (std::regex_search(h, std::regex(R"(=\s*$)"))) return false;
  return std::regex_search(h, ends) || std::regex_search(h, init);
}

int line_of(const std::string& code, std::size_t at) {
  return 1 + static_cast<int>(std::count(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

void check_functions(const fs::path& file, const std::string& text, std::vector<Finding>& out) {
  const std::string code = code_only(text);
  struct Open {
    bool function;
    std::size_t at;
  };
  std::vector<Open> stack;
  int in_function = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '{') {
      const bool fn = in_function == 0 && opens_function(header_before(code, i));
      stack.push_back({fn, i});
      if (fn) ++in_function;
    } else if (code[i] == '}' && !stack.empty()) {
      const Open o = stack.back();
      stack.pop_back();
      if (!o.function) continue;
      --in_function;
      const int first = line_of(code, o.at), last = line_of(code, i);
      const std::size_t line_start = text.rfind('\n', o.at);
      const std::size_t prev_start = line_start == std::string::npos || line_start == 0 ? std::string::npos
                                                                                          : text.rfind('\n', line_start - 1);
      const std::string prev = line_start == std::string::npos ? "" : text.substr(prev_start + 1, line_start - prev_start - 1);
      if (last - first + 1 > max_function_lines && prev.find("structure: declarations") == std::string::npos) {
        std::string name = header_before(code, o.at);
        name = name.substr(0, name.find('('));
        name.erase(0, name.find_last_of(" \n*&") + 1);
        out.push_back({file.filename().string() + ":" + std::to_string(first),
                       "function " + name + " is " + std::to_string(last - first + 1) + " lines (at most " +
                           std::to_string(max_function_lines) + ")"});
      }
    }
  }
}

// ---- includes between modules ----

std::set<std::string> local_includes(const std::string& text) {
  static const std::regex inc(R"(^\s*#\s*include\s*"([^"/]+)\.hpp")");
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, inc)) out.insert(m[1]);
  }
  return out;
}

const std::regex& main_function() {
  static const std::regex r(R"(\bint\s+main\s*\()");
  return r;
}

// A file's module: x.cpp and x.hpp are module x; a .cpp without a header of its own (class_intake.cpp) is part
// of the module whose header it includes first (class_grading); a file with main() is its own module.
std::string module_of(const std::string& name, const std::string& text, const std::map<std::string, std::string>& texts) {
  const std::string stem = fs::path(name).stem().string();
  // A program's main file (main.cpp, a probe) is a module of its own, at the top.
  if (texts.count(stem + ".hpp") || std::regex_search(code_only(text), main_function())) return stem;
  static const std::regex first(R"(#\s*include\s*"([^"/]+)\.hpp")");
  std::smatch m;
  if (std::regex_search(text, m, first) && texts.count(m[1].str() + ".hpp")) return m[1];
  return stem;
}

void check_includes(const fs::path& dir, const std::map<std::string, std::string>& texts, std::vector<Finding>& out) {
  std::map<std::string, std::set<std::string>> uses;  // module -> modules whose header it includes
  std::set<std::string> commands;  // modules whose header declares a command
  std::set<std::string> programs;  // modules with main(): the top, above the commands
  static const std::regex cmd(R"(\bint\s+cmd_\w+\s*\()");
  for (const auto& [name, text] : texts) {
    const std::string module = module_of(name, text, texts);
    for (const auto& m : local_includes(text)) {
      if (m != module && texts.count(m + ".hpp")) uses[module].insert(m);
    }
    uses[module];
    if (name.ends_with(".hpp") && std::regex_search(code_only(text), cmd)) commands.insert(module);
    if (std::regex_search(code_only(text), main_function())) programs.insert(module);
  }
  for (const auto& [module, used] : uses) {
    for (const auto& m : used) {
      if (commands.count(m) && !commands.count(module) && !programs.count(module)) {
        out.push_back({module, "includes " + m + ".hpp, the header of a command: helpers sit below the commands"});
      }
    }
  }
  // A cycle: depth-first search, reporting each back edge once.
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& m) {
    state[m] = 1;
    path.push_back(m);
    for (const auto& n : uses[m]) {
      if (state[n] == 1) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), n); it != path.end(); ++it) cycle += *it + " -> ";
        out.push_back({m, "include cycle: " + cycle + n});
      } else if (state[n] == 0) {
        visit(n);
      }
    }
    path.pop_back();
    state[m] = 2;
  };
  for (const auto& [module, used] : uses) {
    if (state[module] == 0) visit(module);
  }
  (void)dir;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--max") {
    max_function_lines = std::stoi(argv[2]);
  } else if (argc != 2) {
    std::cerr << "usage: check_structure [--max LINES] DIR\n";
    return 2;
  }
  const fs::path dir = argv[argc - 1];
  std::map<std::string, std::string> texts;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".cpp" || ext == ".hpp")) texts[e.path().filename().string()] = read_file(e.path());
  }
  if (texts.empty()) {
    std::cerr << "check_structure: no .cpp or .hpp in " << dir << "\n";
    return 2;
  }
  std::vector<Finding> findings;
  for (const auto& [name, text] : texts) check_functions(dir / name, text, findings);
  check_includes(dir, texts, findings);
  for (const auto& f : findings) std::cout << f.where << ": " << f.what << "\n";
  std::cout << "check_structure: " << texts.size() << " files in " << dir.string() << ", " << findings.size()
            << " problem" << (findings.size() == 1 ? "" : "s") << "\n";
  return findings.empty() ? 0 : 1;
}
