// The branches of a CUDA source file's conditional directives that each compilation takes, compared between
// nvcc and the CPU backend (rooflab_emu_branches, branches.cpp; the lab's static capture runs it).
//
// The CPU backend compiles a .cu file with the host compiler, under its own macros and headers; nvcc compiles
// it twice, a host pass and a device pass per architecture, under nvcc's. The rewriter gives the file's own
// conditionals on the macros it knows (__CUDACC__, ROOFLAB_EMU ...) nvcc's branch, but a conditional can tell
// the two apart in ways no list of names closes: `__has_include` of a backend header, a guard macro one side's
// headers define, a macro of nvcc's command line the list lacks, a name defined as __CUDACC__ and tested later.
// So the branches themselves are compared, whatever decided them:
//
// - The file is cut into segments at its conditional directives (#if, #ifdef, #ifndef, #elif, #elifdef,
//   #elifndef, #else, #endif): the preprocessor keeps or drops a segment whole.
// - Each compilation's preprocessed text (GCC with -fdirectives-only: directives done, macros not expanded,
//   every kept line on its own line number) says which segments it kept: those with a line of text, or an
//   #include, at one of their line numbers.
// - Each segment is held to the pass of nvcc that decides it, by where the directive that opens it stands (the
//   rewriter lists each directive's place beside the wrapper, Rewriter::directive_contexts): in a host
//   function, the CPU backend keeps what nvcc's host pass keeps; at file scope what either pass keeps (its one
//   program holds the host code and the declarations for the GPU); in the body of a __global__
//   or __device__ function that is not __host__, what its device pass for the CPU backend's pretend GPU (sm_80)
//   keeps. In a __host__ __device__ function, which the backend compiles once as host code, nvcc's passes may
//   disagree (`#ifdef __CUDA_ARCH__`): there a segment both of nvcc's passes keep must be kept, and one neither
//   keeps must not be. Without the list, every segment is held to that last rule.
//
// And a macro's value, where no directive reads it: the same texts hold every #define and #undef the compilations
// made (GCC writes them with -fdirectives-only, nvcc's command line and the headers' included), so each one's
// macros at the end of the file are known. A name the file uses outside its conditional directives (in code, in a
// #define) that nvcc's host pass and the CPU backend define differently, or __CUDA_ARCH__ there (its device pass
// defines it, the backend never), is a value one compiler sees and the other does not: `XS(__CUDACC__)` through
// two stringizing macros is "1" under nvcc and "__CUDACC__" on the backend. CUDA's own keywords (__global__,
// __shared__, __launch_bounds__ ...), which every compiler defines its own way, are the exception.
//
// Header-only, so that the tool and its tests share it.
#pragma once

// GCC 12 reports a false -Wrestrict inside std::string's operator+ at -O3 (GCC bug 105329), as in rewrite.cpp.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <istream>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab::emu::branches {

// The tag of the line that lists a file's directives' places (rooflab_emu_rewrite --contexts writes it).
inline constexpr std::string_view kDirectiveContexts = "rooflab_emu_rewrite directive contexts:";

// A run of lines [first, last] (1-based) between two conditional directives; `opened_by`: the first line of
// the directive before it (0: the file's start).
struct Segment {
  int first = 0;
  int last = 0;
  int opened_by = 0;
};

// Where a directive stands: `h` host code (file scope, a host function), `d` a device-only function's body,
// `b` a __host__ __device__ function's body; by the directive's first line.
using Contexts = std::map<int, char>;

// The places a contexts file lists ("// <tag> 12:d 40:h ..."); empty when it lists none.
inline Contexts directive_contexts(std::istream& listed) {
  Contexts out;
  std::string line;
  while (std::getline(listed, line)) {
    const std::size_t at = line.find(kDirectiveContexts);
    if (line.rfind("// ", 0) != 0 || at != 3) continue;
    std::istringstream items(line.substr(at + kDirectiveContexts.size()));
    for (std::string item; items >> item;) {
      const std::size_t colon = item.find(':');
      if (colon == std::string::npos || colon + 1 >= item.size()) continue;
      out[std::stoi(item.substr(0, colon))] = item[colon + 1];
    }
  }
  return out;
}

inline std::string_view trim_left(std::string_view s) {
  std::size_t k = 0;
  while (k < s.size() && (s[k] == ' ' || s[k] == '\t' || s[k] == '\f' || s[k] == '\v')) ++k;
  return s.substr(k);
}

// The directive a line holds ("ifdef" of `  #  ifdef X`), "" for a line that holds none.
inline std::string_view directive_name(std::string_view line) {
  std::string_view s = trim_left(line);
  if (s.empty() || s[0] != '#') return {};
  s = trim_left(s.substr(1));
  std::size_t n = 0;
  while (n < s.size() && std::isalpha(static_cast<unsigned char>(s[n])) != 0) ++n;
  return s.substr(0, n);
}

// Whether a directive is one of the conditionals that cut a file into segments.
inline bool conditional_directive(std::string_view name) {
  static constexpr std::string_view kConditionals[] = {"if",      "ifdef",    "ifndef", "elif",
                                                       "elifdef", "elifndef", "else",   "endif"};
  return std::find(std::begin(kConditionals), std::end(kConditionals), name) != std::end(kConditionals);
}

// The file's lines, without their line ends (\n or \r\n).
inline std::vector<std::string> split_lines(std::istream& in) {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// The segments of a source file between its conditional directives, and only those with something in them
// other than blanks and directives (a segment of blank lines is kept or dropped alike by every compilation).
// A directive continued by a backslash ends on its last continued line. (A directive written inside a block
// comment cuts a segment where the compiler does not: a finer cut only compares more precisely.)
inline std::vector<Segment> conditional_segments(const std::vector<std::string>& lines) {
  std::vector<Segment> out;
  Segment current{1, 0, 0};
  bool has_text = false;
  const auto close = [&](int last) {
    current.last = last;
    if (has_text && current.last >= current.first) out.push_back(current);
    has_text = false;
  };
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    std::string_view s = trim_left(lines[static_cast<std::size_t>(i)]);
    const bool directive = !s.empty() && s[0] == '#';
    if (!directive) {
      if (!s.empty()) has_text = true;
      continue;
    }
    const std::string_view name = directive_name(s);
    int end = i;  // the directive's last line (continuations)
    while (end + 1 < static_cast<int>(lines.size()) && !lines[static_cast<std::size_t>(end)].empty() &&
           lines[static_cast<std::size_t>(end)].back() == '\\') {
      ++end;
    }
    if (conditional_directive(name)) {
      close(i);  // the segment ends before the directive (last = i, 1-based: the line before it)
      current = Segment{end + 2, 0, i + 1};
    } else if (name == "include" || name == "define" || name == "pragma" || name == "undef") {
      has_text = true;  // a directive that leaves a trace in the preprocessed text
    }
    i = end;
  }
  close(static_cast<int>(lines.size()));
  return out;
}

// The lines of `file` that a preprocessed text (GCC's -E output with its line markers) holds: a line with text
// on it, or one whose #include entered another file. `same_file(name)` says whether a line marker's file name
// is `file`. Lines past `max_line` are left out (the rewriter appends its registration of kernels there).
template <class SameFile>
std::set<int> kept_lines(std::istream& preprocessed, SameFile same_file, int max_line) {
  std::set<int> kept;
  bool in_file = false;
  int line = 0;
  std::string text;
  while (std::getline(preprocessed, text)) {
    // A line marker: `# N "name" flags` (flag 1: a file entered, 2: returned to).
    if (text.size() > 2 && text[0] == '#' && text[1] == ' ' && std::isdigit(static_cast<unsigned char>(text[2])) != 0) {
      const std::size_t q1 = text.find('"'), q2 = text.rfind('"');
      if (q1 != std::string::npos && q2 > q1) {
        const std::string name = text.substr(q1 + 1, q2 - q1 - 1);
        const bool entering = text.find(" 1", q2) != std::string::npos;
        // An #include of the file enters another one: the line that holds it is kept.
        if (in_file && entering && line >= 1 && line <= max_line) kept.insert(line);
        in_file = same_file(name);
        line = std::stoi(text.substr(2));
        continue;
      }
    }
    if (in_file && line >= 1 && line <= max_line && !trim_left(text).empty()) kept.insert(line);
    ++line;
  }
  return kept;
}

// The first line of a segment with text on it, trimmed and cut to about 100 characters, for a finding to quote.
inline std::string first_text(const std::vector<std::string>& lines, const Segment& s) {
  for (int l = s.first; l <= s.last && l <= static_cast<int>(lines.size()); ++l) {
    std::string_view t = trim_left(lines[static_cast<std::size_t>(l - 1)]);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (t.empty()) continue;
    return t.size() > 100 ? std::string(t.substr(0, 97)) + "..." : std::string(t);
  }
  return "";
}

// The macros defined at the end of a preprocessed text, name -> definition (parameters and replacement, as GCC
// writes them), from its #define and #undef lines in order (-fdirectives-only writes both, the command line's too).
inline std::map<std::string, std::string> macros_at_end(std::istream& preprocessed) {
  std::map<std::string, std::string> out;
  std::string text;
  while (std::getline(preprocessed, text)) {
    std::string_view s = trim_left(text);
    if (s.empty() || s[0] != '#') continue;
    s = trim_left(s.substr(1));
    const bool define = s.rfind("define", 0) == 0, undef = s.rfind("undef", 0) == 0;
    if (!define && !undef) continue;
    s = trim_left(s.substr(define ? 6 : 5));
    std::size_t n = 0;
    while (n < s.size() && (std::isalnum(static_cast<unsigned char>(s[n])) != 0 || s[n] == '_')) ++n;
    if (n == 0) continue;
    const std::string name(s.substr(0, n));
    if (undef) {
      out.erase(name);
    } else {
      out[name] = std::string(s.substr(n));
    }
  }
  return out;
}

// CUDA's keywords, which nvcc and the backend each define for their own compiler (CUDA C++ Programming Guide:
// execution and memory space specifiers, launch bounds and the other function attributes): a name the rule of
// macro values leaves alone.
inline bool cuda_keyword(std::string_view name) {
  static constexpr std::string_view kKeywords[] = {
      "__global__", "__device__", "__host__", "__shared__", "__constant__", "__managed__", "__grid_constant__",
      "__launch_bounds__", "__maxnreg__", "__cluster_dims__", "__forceinline__", "__noinline__", "__inline_hint__",
      "__align__", "__restrict__"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), name) != std::end(kKeywords);
}

// Each identifier the file names outside its conditional directives and its #include lines (code, #define
// bodies, #pragma), with the first line that names it; comments, string and character literals left out.
inline std::map<std::string, int> names_outside_conditionals(const std::vector<std::string>& lines) {
  std::map<std::string, int> out;
  bool in_comment = false;
  bool skipping = false;  // a conditional or #include directive, through its continuations
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    const std::string& line = lines[static_cast<std::size_t>(i)];
    if (!in_comment && !skipping) {
      const std::string_view name = directive_name(line);
      skipping = conditional_directive(name) || name == "include";
    }
    if (skipping) {
      skipping = !line.empty() && line.back() == '\\';
      continue;
    }
    for (std::size_t k = 0; k < line.size();) {
      if (in_comment) {
        const std::size_t end = line.find("*/", k);
        if (end == std::string::npos) break;
        in_comment = false;
        k = end + 2;
      } else if (line.compare(k, 2, "//") == 0) {
        break;
      } else if (line.compare(k, 2, "/*") == 0) {
        in_comment = true;
        k += 2;
      } else if (line[k] == '"' || line[k] == '\'') {
        const char quote = line[k++];
        while (k < line.size() && line[k] != quote) k += line[k] == '\\' ? 2 : 1;
        ++k;
      } else if (std::isalpha(static_cast<unsigned char>(line[k])) != 0 || line[k] == '_') {
        std::size_t e = k;
        while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) != 0 || line[e] == '_')) ++e;
        out.try_emplace(line.substr(k, e - k), i + 1);
        k = e;
      } else {
        ++k;
      }
    }
  }
  return out;
}

// The names the file uses outside its conditionals whose value differs between nvcc and the CPU backend (the rule
// above), one finding a name: "FILE:LINE (`text`): ...".
inline std::vector<std::string> macro_value_differences(std::string_view file, const std::vector<std::string>& lines,
                                                        const std::map<std::string, std::string>& nvcc_host,
                                                        const std::map<std::string, std::string>& backend) {
  std::vector<std::string> out;
  const auto shown = [](const std::map<std::string, std::string>& m, const std::string& n) {
    const auto it = m.find(n);
    if (it == m.end()) return std::string("leaves it undefined");
    std::string body(trim_left(it->second));
    if (body.size() > 60) body = body.substr(0, 57) + "...";
    return "defines it as `" + body + "`";
  };
  for (const auto& [name, line] : names_outside_conditionals(lines)) {
    if (cuda_keyword(name)) continue;
    const auto h = nvcc_host.find(name), b = backend.find(name);
    const bool h_defined = h != nvcc_host.end(), b_defined = b != backend.end();
    const bool same = h_defined == b_defined && (!h_defined || h->second == b->second);
    if (same && name != "__CUDA_ARCH__") continue;
    const std::string where =
        std::string(file) + ":" + std::to_string(line) + " (`" + first_text(lines, Segment{line, line, 0}) + "`)";
    out.push_back(where + ": names " + name + " outside a conditional directive, where its value differs between "
                  "the compilers (" + (name == "__CUDA_ARCH__"
                                           ? std::string("nvcc's device pass defines it, the CPU backend never")
                                           : "nvcc's host pass " + shown(nvcc_host, name) + ", the CPU backend " +
                                                 shown(backend, name)) +
                  "): test it in an #if or #ifdef, where the CPU backend takes nvcc's branch");
  }
  return out;
}

inline bool segment_kept(const Segment& s, const std::set<int>& kept) {
  const auto it = kept.lower_bound(s.first);
  return it != kept.end() && *it <= s.last;
}


// What differs, one line per segment: "FILE:A-B (`first line`): ..." (empty: the compilations keep the same
// code). `lines`: the file's text, quoted.
inline std::vector<std::string> differences(std::string_view file, const std::vector<std::string>& lines,
                                            const std::vector<Segment>& segments, const std::set<int>& nvcc_host,
                                            const std::set<int>& nvcc_device, const std::set<int>& backend,
                                            std::string_view device_arch, const Contexts& contexts = {}) {
  std::vector<std::string> out;
  const std::string arch(device_arch);
  for (const Segment& s : segments) {
    const bool host = segment_kept(s, nvcc_host), device = segment_kept(s, nvcc_device), cpu = segment_kept(s, backend);
    const std::string where = std::string(file) + ":" + std::to_string(s.first) +
                              (s.last > s.first ? "-" + std::to_string(s.last) : std::string()) + " (`" +
                              first_text(lines, s) + "`)";
    const auto place = contexts.find(s.opened_by);
    const char context = contexts.empty() ? 'b' : s.opened_by == 0 || place == contexts.end() ? 'f' : place->second;
    // At file scope the backend compiles what either of nvcc's passes compiles (a __device__ helper under
    // `#if __CUDA_ARCH__ >= 700` as well as the host code): its one program holds both.
    if (context == 'f' && device && !host && !cpu) {
      out.push_back(where + ": nvcc's device pass for " + arch + " compiles these lines (at file scope) and the CPU "
                    "backend does not: declarations only a GPU build compiles, which no CPU test sees (the backend "
                    "keeps a group that names __CUDA_ARCH__ where either pass keeps it, but an #else or #elif "
                    "of the same group, which only nvcc's host pass keeps, cannot also stand)");
      continue;
    }
    if (context == 'f' && !host && device && cpu) continue;
    if ((context == 'h' || context == 'f') && host != cpu) {
      out.push_back(where + (host ? ": nvcc's host pass compiles these lines (host code) and the CPU backend does not: "
                                    "code only a GPU build runs, which no CPU test sees"
                                  : ": the CPU backend compiles these lines (host code) and nvcc's host pass does not: "
                                    "code the CPU tests grade that a GPU build never runs"));
    } else if (context == 'd' && device != cpu) {
      out.push_back(where + (device ? ": nvcc's device pass for " + arch + " compiles these lines (in a __global__ or "
                                      "__device__ function) and the CPU backend does not: code only a GPU runs, "
                                      "which no CPU test sees"
                                    : ": the CPU backend compiles these lines (in a __global__ or __device__ function) "
                                      "and nvcc's device pass for " + arch + " does not: code the CPU tests grade "
                                      "that a GPU never runs"));
    } else if (context != 'b') {
      continue;
    } else if (host && device && !cpu) {
      out.push_back(where + ": nvcc compiles these lines (its host pass and its device pass for " +
                    arch + ") and the CPU backend does not: code only a GPU runs, which no CPU "
                    "test sees");
    } else if (!host && !device && cpu) {
      out.push_back(where + ": the CPU backend compiles these lines and nvcc does not (in neither its host pass nor "
                    "its device pass for " + arch + "): code the CPU tests grade that a GPU never runs");
    }
  }
  return out;
}

}  // namespace rooflab::emu::branches
