// rooflab_emu_rewrite IN.cu OUT.cpp [--headers DIR] [--depfile FILE] [--contexts FILE] [-I DIR]... [--skip DIR]...: the CPU
// backend's view of a CUDA source file and of the project headers it includes.
//
// The host compiler cannot parse three CUDA constructs, so this tool rewrites them into calls of the backend
// (common/emu/include/rooflab/emu/launch.hpp, rewritten.hpp and runtime.hpp), and checks one more that it
// parses but would run differently (a misaligned vector pointer):
//
//   k<<<grid, block[, smem[, stream]]>>>(args)
//       -> ::rooflab::emu::detail::launch_site(&k, "k", "x,y,n", [&](auto... a) { k(a...); }, grid, block ...)(args)
//          ("x,y,n": the parameter names of the __global__ k declared in this file, for reports; "" if none)
//          (`nullptr` instead of `&k` when k is a kernel template launched without template arguments: the
//          call in the lambda deduces them from the arguments, as nvcc does)
//   extern __shared__ T name[];          -> name points at the block's dynamic shared memory
//   extern __shared__ T name[][N];       -> name points at it as rows of N
//   __shared__ T name[dims];  (in a function body)
//       -> name refers to this declaration's storage in the block's shared memory, fresh and poisoned for
//          every block, ending against a guard page
//
//   f<<<grid, block>>>(args), f not a kernel's name (a pointer variable, table[i], (c ? a : b), pick(x))
//       -> ::rooflab::emu::detail::launch_pointer(f, "f", grid, block ...)(args): f evaluated once
//   cudaLaunchCooperativeKernel((void*)k, grid, block, args ...)  (in a function body)
//       -> ::rooflab::emu::detail::cooperative_launch(k, grid, block, args ...): k's type is known again
//   reinterpret_cast<T*>(e)[i], *reinterpret_cast<T*>(e), reinterpret_cast<T*>(e)->m  (in a function body)
//       -> ::rooflab::emu::detail::aligned_reinterpret_cast<T*>(e, "T*"): a kernel that accesses memory
//          through a pointer misaligned for T is reported, as a GPU faults on the access
//
//   clock() in the body of a __global__ or __device__ function (not __host__ __device__)
//       -> static_cast<clock_t>(::rooflab::emu::detail::device_clock()): the SM's cycle counter, as on a GPU
//
//   #if / #elif / #ifdef / #ifndef naming __CUDACC__, __NVCC__, __CUDACC_VER_*__ or ROOFLAB_EMU*
//       -> the branch nvcc takes: these macros are defined there (1, and the toolkit's version from
//          CUDART_VERSION), so the CPU backend compiles the program nvcc compiles. Inside the body of a
//          __global__ or __device__ function (not __host__ __device__), __CUDA_ARCH__ too, as nvcc's device
//          pass for the pretend GPU (sm_80) defines it; in a host function it stays undefined, as in the host
//          pass. At file scope a group with no #else or #elif that names __CUDA_ARCH__ keeps its lines where
//          either pass keeps them (a __device__ helper only the device pass compiles); one with an alternative
//          takes the host pass's branch.
//          The backend's own macros (ROOFLAB_EMU, ROOFLAB_EMU_*) are undefined there, as under nvcc: code
//          cannot hide from the CPU backend behind `#ifndef ROOFLAB_EMU` either.
//          Only in the files this tool reads (the user's, not the toolkit's, the backend's or rooflab's own
//          headers, which keep their host-compiler paths).
//
// --contexts FILE: where each preprocessor directive of IN.cu stands, by line (file scope or a host function, a
// device-only function's body, a __host__ __device__ one), for rooflab_emu_branches (branches.hpp).
//
// Headers: with --headers, each #include of the file that names a header under a -I directory (or, quoted,
// beside the including file) and not under a --skip directory (system, toolkit, backend) is followed. A
// header with something to rewrite (or including one that has) is written to DIR as its own rewritten copy,
// starting with `#line 1 "its/path.cuh"`, and the #include is pointed at the copy. --depfile lists every
// file read, for the build's incremental rebuilds.
//
// The output starts with the backend's prelude, then `#line 1 "IN.cu"`, then the rewritten text. Every
// replacement stays on the line where its construct began and the newlines it swallowed follow it, so each
// line of the output is the same line of IN.cu: compiler messages, __builtin_LINE() and the backend's
// reports name the student's file and line. What the tool cannot parse is an error with file:line (exit
// status 1), never a silent pass-through.
//
// The tokenizer knows comments, string and character literals (raw strings too), preprocessor directives
// (copied as they are) and line splices; it tracks braces and whether each one opens a function body.
// GCC 12 reports a false -Wrestrict inside std::string's operator+ at -O3 (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "branches.hpp"  // the directive contexts' tag, read back by rooflab_emu_branches

namespace {

enum class Kind { identifier, number, literal, punct, directive };

struct Token {
  Kind kind;
  std::string_view text;
  std::size_t begin;  // offsets into the source
  std::size_t end;
  int line;
};

// A problem in the input, reported as file:line.
struct ParseError : std::runtime_error {
  int line;
  ParseError(int l, const std::string& what) : std::runtime_error(what), line(l) {}
};

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : s_(src) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool line_start = true;  // only whitespace and comments so far on this line: a '#' starts a directive
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        line_start = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
        continue;
      }
      if (c == '\\' && i_ + 1 < s_.size() && (s_[i_ + 1] == '\n' || s_[i_ + 1] == '\r')) {  // line splice
        i_ += s_[i_ + 1] == '\r' && i_ + 2 < s_.size() && s_[i_ + 2] == '\n' ? 3 : 2;
        ++line_;
        continue;
      }
      if (c == '/' && peek(1) == '/') {
        skip_line_comment();
        continue;
      }
      if (c == '/' && peek(1) == '*') {
        skip_block_comment();
        continue;
      }
      const std::size_t begin = i_;
      const int line = line_;
      if (c == '#' && line_start) {
        skip_directive();
        out.push_back({Kind::directive, s_.substr(begin, i_ - begin), begin, i_, line});
        continue;
      }
      line_start = false;
      if (ident_start(c)) {
        while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
        const std::string_view word = s_.substr(begin, i_ - begin);
        if (i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'') && is_literal_prefix(word)) {
          if (word.back() == 'R' && s_[i_] == '"') {
            skip_raw_string(line);
          } else {
            skip_quoted(s_[i_], line);
          }
          out.push_back({Kind::literal, s_.substr(begin, i_ - begin), begin, i_, line});
        } else {
          out.push_back({Kind::identifier, word, begin, i_, line});
        }
        continue;
      }
      if (digit(c) || (c == '.' && digit(peek(1)))) {
        while (i_ < s_.size()) {
          const char d = s_[i_];
          if ((d == '+' || d == '-') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E' || s_[i_ - 1] == 'p' || s_[i_ - 1] == 'P')) {
            ++i_;
          } else if (ident_char(d) || d == '.' || d == '\'') {
            ++i_;
          } else {
            break;
          }
        }
        out.push_back({Kind::number, s_.substr(begin, i_ - begin), begin, i_, line});
        continue;
      }
      if (c == '"' || c == '\'') {
        skip_quoted(c, line);
        out.push_back({Kind::literal, s_.substr(begin, i_ - begin), begin, i_, line});
        continue;
      }
      // Punctuation: `::` and `->` are single tokens; every `<` and `>` is its own token, so that `>>>`
      // closing three template argument lists and `>>>` closing a launch are told apart by the parser.
      std::size_t len = 1;
      if ((c == ':' && peek(1) == ':') || (c == '-' && peek(1) == '>')) len = 2;
      i_ += len;
      out.push_back({Kind::punct, s_.substr(begin, len), begin, i_, line});
    }
    return out;
  }

 private:
  char peek(std::size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }

  static bool is_literal_prefix(std::string_view w) {
    for (const char* p : {"L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R"}) {
      if (w == p) return true;
    }
    return false;
  }

  void skip_line_comment() {
    while (i_ < s_.size() && s_[i_] != '\n') {
      if (s_[i_] == '\\' && peek(1) == '\n') {  // a spliced line continues the comment
        ++line_;
        ++i_;
      }
      ++i_;
    }
  }

  void skip_block_comment() {
    const int line = line_;
    i_ += 2;
    while (i_ < s_.size() && !(s_[i_] == '*' && peek(1) == '/')) {
      if (s_[i_] == '\n') ++line_;
      ++i_;
    }
    if (i_ >= s_.size()) throw ParseError(line, "unterminated /* comment");
    i_ += 2;
  }

  void skip_quoted(char quote, int line) {
    ++i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\\') {
        if (peek(1) == '\n') ++line_;
        ++i_;
      } else if (s_[i_] == '\n') {
        throw ParseError(line, std::string("unterminated ") + (quote == '"' ? "string" : "character") + " literal");
      }
      ++i_;
    }
    if (i_ >= s_.size()) throw ParseError(line, "unterminated literal");
    ++i_;
  }

  void skip_raw_string(int line) {
    const std::size_t open = s_.find('(', i_);
    if (open == std::string_view::npos) throw ParseError(line, "malformed raw string literal");
    const std::string close = ")" + std::string(s_.substr(i_ + 1, open - i_ - 1)) + "\"";
    const std::size_t end = s_.find(close, open);
    if (end == std::string_view::npos) throw ParseError(line, "unterminated raw string literal");
    for (std::size_t k = i_; k < end; ++k) line_ += s_[k] == '\n';
    i_ = end + close.size();
  }

  // A directive runs to the end of its line, spliced lines and block comments included.
  void skip_directive() {
    while (i_ < s_.size() && s_[i_] != '\n') {
      if (s_[i_] == '\\' && (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n'))) {
        i_ += peek(1) == '\r' ? 3 : 2;
        ++line_;
        continue;
      }
      if (s_[i_] == '/' && peek(1) == '*') {
        skip_block_comment();
        continue;
      }
      if (s_[i_] == '/' && peek(1) == '/') {
        skip_line_comment();
        continue;
      }
      if (s_[i_] == '"' || s_[i_] == '\'') {
        skip_quoted(s_[i_], line_);
        continue;
      }
      ++i_;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int line_ = 1;
};

struct Edit {
  std::size_t begin, end;  // source range replaced
  std::string text;
};

// What the rewriter learns about kernels, across the .cu file and the headers it includes (a kernel declared
// in a header and launched in the .cu is launched as a kernel, with its parameter names).
struct KernelTable {
  std::set<std::string> templates;                // kernel templates (launched without template arguments)
  std::set<std::string> names;                    // every __global__ function declared
  std::map<std::string, std::string> parameters;  // kernel name -> "a,b,n" (see parameter_names)
  std::set<std::string> conflicting;              // kernels whose overloads name parameters differently
  std::set<std::string> host_namesakes;           // kernels a host function of the same name overloads

  // "a,b,c", for the backend's kernels_defined().
  std::string joined() const {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
    return out;
  }
};

class Rewriter {
 public:
  // `includes`: replacements of #include directives (by token index), decided by the caller.
  Rewriter(std::string_view src, std::vector<Token> tokens, KernelTable& kernels,
           std::map<std::size_t, std::string> includes = {})
      : src_(src), t_(std::move(tokens)), k_(kernels), includes_(std::move(includes)) {}

  // Rewrites of CUDA constructs made (include redirections not counted), after run().
  std::size_t constructs() const { return constructs_; }

  // Where each preprocessor directive of the file stands, after run(): "LINE:C" for each, space-separated, C
  // being `f` (file scope: nvcc's host pass evaluates it, and the device pass keeps its own declarations there),
  // `h` (a host function's body: nvcc's host pass), `d` (the body of a
  // __global__ or __device__ function that is not __host__: its device pass) or `b` (a __host__ __device__
  // body: both). The branch comparison (branches.hpp) holds the backend to the pass of each.
  std::string directive_contexts() const { return directive_contexts_; }

  std::string run() {
    find_kernels();
    // A scope is a function body or not; `device`: the body of a __global__ or __device__ function that is
    // not also __host__ (and what it nests), where nvcc's device pass defines __CUDA_ARCH__.
    struct Scope {
      bool function = false;
      bool device = false;
      bool both = false;  // a __host__ __device__ function's body
    };
    std::vector<Scope> scopes;
    const auto in_function = [&] { return !scopes.empty() && scopes.back().function; };
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& tok = t_[i];
      if (tok.kind == Kind::directive) {
        const bool file_scope = !in_function();  // a namespace's or class's braces too
        const char context = file_scope ? 'f' : scopes.back().device ? 'd' : scopes.back().both ? 'b' : 'h';
        directive_contexts_ += (directive_contexts_.empty() ? "" : " ") + std::to_string(tok.line) + ":" + context;
        if (tok.text.find("<<<") != std::string_view::npos || contains_word(tok.text, "__shared__")) {
          throw ParseError(tok.line, "a kernel launch or __shared__ declaration inside a preprocessor directive "
                                     "(a macro) cannot be rewritten for the CPU backend: write it in the code");
        }
        if (const auto inc = includes_.find(i); inc != includes_.end()) {
          replace(tok.begin, tok.end, inc->second);
        } else if (auto pass = file_scope ? file_scope_pass(i) : nvcc_pass(tok.text, scopes.back().device)) {
          replace(tok.begin, tok.end, std::move(*pass));
          ++constructs_;
        }
        continue;
      }
      if (is(i, "{")) {
        if (in_function()) {
          scopes.push_back(scopes.back());
        } else if (opens_function_body(i)) {
          const auto [device, host] = execution_space(i);
          scopes.push_back({true, device && !host, device && host});
          // A kernel declared __launch_bounds__(N, ...): a GPU refuses a launch of more than N threads a block,
          // which the backend would otherwise run (the macro is empty here). The body starts by checking its
          // block, where the bound's names (a template's parameters) mean what they mean to nvcc, and, where the
          // kernel has one address to take, by naming a static that registers the bound as the program starts
          // (every instance of a template the program uses): find_kernels writes both, on the same line.
          if (const auto bound = bounded_bodies_.find(i); bound != bounded_bodies_.end()) {
            replace(tok.begin, tok.end, "{ " + bound->second);
            ++constructs_;
          }
        } else {
          scopes.push_back({});
        }
      } else if (is(i, "}")) {
        if (scopes.empty()) throw ParseError(tok.line, "'}' without a matching '{'");
        scopes.pop_back();
      } else if (is(i, "<") && is(i + 1, "<") && is(i + 2, "<") && adjacent(i, i + 1) && adjacent(i + 1, i + 2) &&
                 !(i > 0 && is(i - 1, "operator"))) {
        i = rewrite_launch(i);
      } else if (tok.kind == Kind::identifier && tok.text == "__shared__") {
        i = rewrite_shared(i, in_function());
      } else if (tok.kind == Kind::identifier && tok.text == "reinterpret_cast" && in_function()) {
        rewrite_pointer_cast(i);
      } else if (tok.kind == Kind::identifier && tok.text == "clock" && in_function() && scopes.back().device &&
                 is(i + 1, "(") && is(i + 2, ")") && !(i > 0 && (is(i - 1, ".") || is(i - 1, "->")))) {
        // clock() in device code reads the SM's cycle counter, not the C library's process time: the backend's
        // device clock, counting the pretend GPU's cycles (a spin for `ms * clockRate` ticks lasts ms).
        const bool global = i > 0 && is(i - 1, "::");
        if (!(global && i > 1 && t_[i - 2].kind == Kind::identifier)) {  // std::clock() stays the C library's
          replace(global ? t_[i - 1].begin : tok.begin, t_[i + 2].end,
                  "static_cast<clock_t>(::rooflab::emu::detail::device_clock())");
          ++constructs_;
          i += 2;
        }
      } else if (tok.kind == Kind::identifier && tok.text == "cudaLaunchCooperativeKernel" && in_function()) {
        rewrite_cooperative_launch(i);
      }
    }
    if (!scopes.empty()) throw ParseError(t_.back().line, "a '{' is never closed");
    return apply();
  }

 private:
  bool is(std::size_t i, std::string_view text) const { return i < t_.size() && t_[i].text == text && t_[i].kind != Kind::literal; }
  bool adjacent(std::size_t a, std::size_t b) const { return t_[a].end == t_[b].begin; }

  static bool contains_word(std::string_view text, std::string_view word) {
    for (std::size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
      const bool left = p == 0 || !ident_char(text[p - 1]);
      const bool right = p + word.size() >= text.size() || !ident_char(text[p + word.size()]);
      if (left && right) return true;
    }
    return false;
  }

  // Whether the function whose body opens at `brace` is declared __global__ or __device__ and not __host__:
  // the declaration's words back to the `;`, `{` or `}` before it (outside parentheses: __launch_bounds__).
  bool device_only_declaration(std::size_t brace) const {
    const auto [device, host] = execution_space(brace);
    return device && !host;
  }
  // The execution space words of the declaration whose body opens at `brace`: {__global__ or __device__, __host__}.
  std::pair<bool, bool> execution_space(std::size_t brace) const {
    bool device = false, host = false;
    int depth = 0;
    for (std::size_t k = brace; k-- > 0;) {
      const Token& p = t_[k];
      if (p.kind == Kind::directive || p.kind == Kind::literal) continue;
      if (p.text == ")") ++depth;
      if (p.text == "(") --depth;
      if (depth == 0 && (p.text == ";" || p.text == "{" || p.text == "}")) break;
      if (p.kind == Kind::identifier) {
        device = device || p.text == "__global__" || p.text == "__device__";
        host = host || p.text == "__host__";
      }
    }
    return {device, host};
  }

  // The architecture the CPU backend's pretend GPU has by default (sm_80, common/emu/src/device_props.cpp):
  // __CUDA_ARCH__ in a device function's own conditionals, as nvcc's device pass for that GPU defines it.
  static constexpr std::string_view kDeviceArch = "800";

  // The macros nvcc defines, as a conditional directive reads them ("" for another name): in its host pass,
  // and in a device function's body (`device`), also __CUDA_ARCH__.
  static std::string nvcc_macro(std::string_view name, bool device) {
    if (device && name == "__CUDA_ARCH__") return std::string(kDeviceArch);
    if (name == "__CUDACC__" || name == "__NVCC__") return "1";
    if (name == "__CUDACC_VER_MAJOR__") return "(CUDART_VERSION / 1000)";
    if (name == "__CUDACC_VER_MINOR__") return "(CUDART_VERSION % 1000 / 10)";
    if (name == "__CUDACC_VER_BUILD__") return "0";
    return "";
  }
  // The CPU backend's own macros (ROOFLAB_EMU, and ROOFLAB_EMU_TSAN and the like of its builds), which nvcc
  // does not define: a conditional on one of them takes the branch nvcc takes, the one for "undefined".
  static bool backend_macro(std::string_view name) { return name == "ROOFLAB_EMU" || name.starts_with("ROOFLAB_EMU_"); }

  // A conditional directive that names one of nvcc's macros, with each use replaced by its value in nvcc's
  // pass (`defined(__CUDACC__)` and `__CUDACC__` by 1, `#ifdef __CUDACC__` by `#if 1`; in a device function,
  // `__CUDA_ARCH__` by kDeviceArch); nullopt for any other directive. One line: the splices and any newline
  // of a comment inside go (replace() puts the newlines back after it).
  // A directive on one line: its splices and the newlines of a comment inside it gone.
  static std::string one_line(std::string_view directive) {
    std::string d;
    for (std::size_t k = 0; k < directive.size(); ++k) {
      if (directive[k] == '\\' && k + 1 < directive.size() && (directive[k + 1] == '\n' || directive[k + 1] == '\r')) {
        k += directive[k + 1] == '\r' && k + 2 < directive.size() && directive[k + 2] == '\n' ? 2 : 1;
        continue;
      }
      d += directive[k] == '\n' || directive[k] == '\r' ? ' ' : directive[k];
    }
    return d;
  }

  static std::optional<std::string> nvcc_pass(std::string_view directive, bool device) {
    const std::string d = one_line(directive);
    std::size_t k = 1;  // after '#'
    const auto skip_blanks = [&] { while (k < d.size() && (d[k] == ' ' || d[k] == '\t')) ++k; };
    const auto word = [&] {
      const std::size_t b = k;
      while (k < d.size() && ident_char(d[k])) ++k;
      return d.substr(b, k - b);
    };
    skip_blanks();
    const std::string name = word();
    if (name == "ifdef" || name == "ifndef" || name == "elifdef" || name == "elifndef") {
      skip_blanks();
      const std::string macro = word();
      const bool backend = backend_macro(macro);
      if (!backend && nvcc_macro(macro, device).empty()) return std::nullopt;
      const bool defined = (name == "ifdef" || name == "elifdef") != backend;  // nvcc: defined, or not
      return std::string(name.starts_with("el") ? "#elif " : "#if ") + (defined ? "1" : "0") + d.substr(k);
    }
    if (name != "if" && name != "elif") return std::nullopt;
    std::string out = d.substr(0, k);
    bool changed = false;
    while (k < d.size()) {
      if (d[k] == '/' && k + 1 < d.size() && (d[k + 1] == '/' || d[k + 1] == '*')) {  // a comment: kept as it is
        out += d.substr(k);
        break;
      }
      if (!ident_start(d[k])) {
        out += d[k++];
        continue;
      }
      const std::size_t at = k;
      const std::string id = word();
      if (id == "defined") {  // defined X, defined(X)
        std::size_t j = k;
        while (j < d.size() && (d[j] == ' ' || d[j] == '\t')) ++j;
        const bool paren = j < d.size() && d[j] == '(';
        if (paren) ++j;
        while (j < d.size() && (d[j] == ' ' || d[j] == '\t')) ++j;
        std::size_t e = j;
        while (e < d.size() && ident_char(d[e])) ++e;
        std::size_t close = e;
        while (close < d.size() && (d[close] == ' ' || d[close] == '\t')) ++close;
        const std::string macro = d.substr(j, e - j);
        const bool backend = backend_macro(macro);
        if ((backend || !nvcc_macro(macro, device).empty()) && (!paren || (close < d.size() && d[close] == ')'))) {
          out += backend ? "0" : "1";
          k = paren ? close + 1 : e;
          changed = true;
          continue;
        }
        out += d.substr(at, k - at);
        continue;
      }
      if (const std::string value = backend_macro(id) ? "0" : nvcc_macro(id, device); !value.empty()) {
        out += value;
        changed = true;
      } else {
        out += id;
      }
    }
    if (!changed) return std::nullopt;
    return out;
  }

  // At file scope nvcc's two passes may keep different declarations: `#if __CUDA_ARCH__ >= 700` around a
  // __device__ helper that only its device pass compiles (and a kernel calls under the same test), or around a
  // template's specialization for newer GPUs. The CPU backend compiles what both passes compile as one program,
  // so a group with no #else or #elif keeps its lines where either pass keeps them: `#if (host) || (device)`.
  // A group with an alternative takes the host pass's branch (two definitions of one name cannot both stand).
  std::optional<std::string> file_scope_pass(std::size_t i) const {
    const std::string_view text = t_[i].text;
    auto host = nvcc_pass(text, false);
    const auto device = nvcc_pass(text, true);
    const std::string_view word = rooflab::emu::branches::directive_name(text);
    if (!device || (word != "if" && word != "ifdef" && word != "ifndef") || group_has_alternative(i)) return host;
    const std::string h = condition_of(host ? *host : std::string(text)), d = condition_of(*device);
    if (h == d) return host;
    return "#if (" + h + ") || (" + d + ")";
  }

  // Whether the conditional group that the directive at token `open` begins has an #else or #elif of its own.
  bool group_has_alternative(std::size_t open) const {
    int depth = 0;
    for (std::size_t k = open + 1; k < t_.size(); ++k) {
      if (t_[k].kind != Kind::directive) continue;
      const std::string_view w = rooflab::emu::branches::directive_name(t_[k].text);
      if (w == "if" || w == "ifdef" || w == "ifndef") {
        ++depth;
      } else if (w == "endif") {
        if (depth-- == 0) return false;
      } else if (depth == 0 && (w == "else" || w.starts_with("elif"))) {
        return true;
      }
    }
    return false;
  }

  // The condition of an #if, #ifdef or #ifndef as an #if expression, on one line, without comments.
  static std::string condition_of(std::string_view directive) {
    const std::string line = one_line(directive);
    std::string d;  // without comments
    for (std::size_t k = 0; k < line.size(); ++k) {
      if (line[k] == '/' && k + 1 < line.size() && line[k + 1] == '/') break;
      if (line[k] == '/' && k + 1 < line.size() && line[k + 1] == '*') {
        const std::size_t end = line.find("*/", k + 2);
        if (end == std::string::npos) break;
        d += ' ';
        k = end + 1;
        continue;
      }
      d += line[k];
    }
    const std::string word(rooflab::emu::branches::directive_name(d));
    std::size_t k = d.find(word) + word.size();
    while (k < d.size() && (d[k] == ' ' || d[k] == '\t')) ++k;
    std::string rest = d.substr(k);
    while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.pop_back();
    if (word == "ifdef") return "defined(" + rest + ")";
    if (word == "ifndef") return "!defined(" + rest + ")";
    return rest;
  }

  // Index of the bracket that closes the one at `open` ((, [, {), or t_.size().
  std::size_t matching(std::size_t open) const {
    int depth = 0;
    for (std::size_t k = open; k < t_.size(); ++k) {
      if (t_[k].kind != Kind::punct) continue;
      const char c = t_[k].text[0];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (--depth == 0) return k;
      }
    }
    return t_.size();
  }

  // A `{` at namespace or class scope opens a function body when what precedes it ends a parameter list:
  // `)` (possibly followed by const, noexcept, override, a trailing return type ...), or a lambda's `]`.
  bool opens_function_body(std::size_t brace) const {
    for (std::size_t k = brace; k-- > 0;) {
      const Token& p = t_[k];
      if (p.kind == Kind::directive) continue;
      if (p.text == ")") {
        // `noexcept(...)` and `__attribute__((...))` end in `)` too: either way a function body follows.
        return true;
      }
      if (p.text == "]") return true;
      if (p.text == ";" || p.text == "{" || p.text == "}" || p.text == "=") return false;
      // Trailing return type, or qualifiers after the parameter list: keep looking back for the `)`.
      if (p.text == "->") {
        continue;
      }
      if (p.kind == Kind::identifier) {
        static const std::set<std::string_view> qualifiers = {"const", "volatile", "noexcept", "override", "final",
                                                              "mutable", "constexpr", "consteval"};
        if (qualifiers.count(p.text) != 0) continue;
        // An identifier: a class/namespace name, or part of a trailing return type. Only the latter has
        // `->` before it after a `)`.
        for (std::size_t q = k; q-- > 0;) {
          if (t_[q].text == "->") return true;
          if (t_[q].text == ";" || t_[q].text == "{" || t_[q].text == "}" || t_[q].text == ")") return false;
        }
        return false;
      }
      if (p.text == "&" || p.text == "*" || p.text == "::" || p.text == "<" || p.text == ">" || p.text == ",") {
        continue;  // pieces of a trailing return type, or of a base-class list (then `->` is never found)
      }
      return false;
    }
    return false;
  }

  // The __global__ functions declared in this file: the names of kernel templates (launched without
  // template arguments, their arguments deduce them: there is no single `&k` to take) and every kernel's
  // parameter names, which out-of-bounds reports use to name the array (`y[1024]` rather than "a
  // 4096-byte allocation").
  void find_kernels() {
    struct Bounded {
      std::string name;
      std::size_t body;         // the `{` that opens its body
      std::string bounds;       // __launch_bounds__'s arguments, as written
      std::string arguments;    // a template's parameters as its arguments ("<D, G>"), "" for a kernel
      bool addressable = true;  // whether `&name arguments` names it here
    };
    std::vector<Bounded> bounded_definitions;
    std::map<std::string, int> definitions;  // kernel name -> definitions in this file
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (t_[i].kind != Kind::identifier || t_[i].text != "__global__") continue;
      std::size_t start = i;
      while (start > 0 && !is(start - 1, ";") && !is(start - 1, "{") && !is(start - 1, "}") &&
             t_[start - 1].kind != Kind::directive) {
        --start;
      }
      std::string bounds;  // __launch_bounds__'s arguments, as written
      for (std::size_t k = i + 1; k < t_.size() && !is(k, ";") && !is(k, "{"); ++k) {
        if (is(k, "__launch_bounds__") || is(k, "__attribute__")) {
          const std::size_t close = matching(k + 1);
          if (is(k, "__launch_bounds__") && is(k + 1, "(") && close < t_.size()) {
            bounds = argument_text(k + 1, close);
          }
          k = close;
          continue;
        }
        if (is(k, "(") && t_[k - 1].kind == Kind::identifier) {
          const std::string name(t_[k - 1].text);
          k_.names.insert(name);
          if (is(start, "template")) k_.templates.insert(name);
          note_parameters(name, parameter_names(k, matching(k)));
          // A definition's body starts by checking the block against the bound and registering it (run(); the
          // text is written below, once every definition's name is known).
          for (std::size_t b = matching(k) + 1; b < t_.size() && !is(b, ";"); ++b) {
            if (is(b, "{")) {
              ++definitions[name];
              if (!bounds.empty()) {
                // (Defined by a qualified name, `ns::k`, outside its namespace: `&k` may not name it there.)
                Bounded d{name, b, bounds, "", !is(k - 2, "::")};
                if (is(start, "template")) {
                  d.arguments = template_arguments(start + 1);
                  d.addressable = d.addressable && !d.arguments.empty();
                }
                bounded_definitions.push_back(std::move(d));
              }
              break;
            }
          }
          break;
        }
      }
    }
    // A host function defined with a kernel's name (`void scale(float* x, int n, int repeats)` launching
    // `scale<<<g, b>>>(x, n)`): `&scale` would name an overload set, so the launch lets the call pick.
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (!is(i, "{") || !opens_function_body(i) || device_only_declaration(i)) continue;
      if (const std::string name = function_name(i); !name.empty() && k_.names.count(name) != 0) {
        k_.host_namesakes.insert(name);
      }
    }
    // The body's first statements: the check, and the registration where `&name<arguments>` names one function
    // (not a name defined twice here, overloads or kernels of one name in two namespaces, nor a kernel that a
    // host function of its name overloads).
    for (const auto& d : bounded_definitions) {
      std::string text = "::rooflab::emu::detail::check_launch_bounds(::rooflab::emu::detail::first_bound(" + d.bounds +
                         "));";
      if (d.addressable && definitions[d.name] == 1 && (!d.arguments.empty() || k_.host_namesakes.count(d.name) == 0)) {
        text += " (void)::rooflab::emu::detail::LaunchBounds<&" + d.name + d.arguments +
                ", ::rooflab::emu::detail::first_bound(" + d.bounds + ")>::registered;";
      }
      bounded_bodies_[d.body] = text;
    }
  }

  // The parameters of the template whose `<` is at `open`, written as the arguments that name the template's
  // own instance inside its body: `template <int D, typename... T>` gives "<D, T...>" ("" for an explicit
  // specialization's `<>`, or a parameter without a name).
  std::string template_arguments(std::size_t open) const {
    if (!is(open, "<")) return {};
    std::string out;
    std::size_t depth = 0, name = 0, k = open + 1;
    bool pack = false, in_default = false;
    for (; k < t_.size(); ++k) {
      if (is(k, "(") || is(k, "[") || is(k, "{")) {
        k = matching(k);
        continue;
      }
      if (depth == 0 && (is(k, ",") || is(k, ">"))) {
        if (name == 0) return {};
        out += (out.empty() ? "" : ", ") + std::string(t_[name].text) + (pack ? "..." : "");
        if (is(k, ">")) break;
        name = 0, pack = false, in_default = false;
        continue;
      }
      if (is(k, "<")) ++depth;
      if (is(k, ">") && depth > 0) --depth;
      if (depth == 0 && is(k, "=")) in_default = true;
      if (depth == 0 && !in_default && is(k, ".") && is(k + 1, ".") && is(k + 2, ".")) pack = true;  // `...`: three tokens
      if (depth == 0 && !in_default && t_[k].kind == Kind::identifier && !is(k, "typename") && !is(k, "class")) name = k;
    }
    return k < t_.size() && !out.empty() ? "<" + out + ">" : std::string();
  }

  // The arguments between the parentheses at `open` and `close`, on one line and without the comments between
  // their tokens, so that they can be written into another line without moving the lines after it ("" when a
  // directive stands among them).
  std::string argument_text(std::size_t open, std::size_t close) const {
    std::string out;
    for (std::size_t k = open + 1; k < close; ++k) {
      if (t_[k].kind == Kind::directive) return {};
      // Tokens that touched in the source touch again (`==`, `>>` are two tokens here), others are one space apart.
      out += (k > open + 1 && t_[k].begin != t_[k - 1].end ? " " : "") + std::string(t_[k].text);
    }
    return out;
  }

  // The name of the function whose body the `{` at `brace` opens: the identifier before the `(` of the
  // parameter list that the last `)` before the brace closes ("" when there is none: a lambda).
  std::string function_name(std::size_t brace) const {
    std::size_t close = brace;
    while (close > 0 && !is(close - 1, ")")) {
      if (is(close - 1, ";") || is(close - 1, "}") || is(close - 1, "{")) return {};
      --close;
    }
    if (close == 0) return {};
    int depth = 0;
    for (std::size_t k = close; k-- > 0;) {
      if (is(k, ")")) ++depth;
      if (is(k, "(") && --depth == 0) {
        return k > 0 && t_[k - 1].kind == Kind::identifier ? std::string(t_[k - 1].text) : std::string();
      }
    }
    return {};
  }

  // "a,b,n" for the parameter list between the parentheses at `open` and `close`; an unnamed parameter
  // leaves its place empty ("a,,n").
  std::string parameter_names(std::size_t open, std::size_t close) const {
    std::string names;
    std::size_t begin = open + 1;
    int depth = 0, angles = 0;  // a comma inside ( ), [ ], { } or a template argument list separates nothing
    for (std::size_t k = open + 1; k <= close && k < t_.size(); ++k) {
      if (k == close || (depth == 0 && angles == 0 && is(k, ","))) {
        if (begin != open + 1) names += ',';
        names += declared_name(begin, k);
        begin = k + 1;
        continue;
      }
      if (is(k, "(") || is(k, "[") || is(k, "{")) ++depth;
      if (is(k, ")") || is(k, "]") || is(k, "}")) --depth;
      if (depth == 0 && is(k, "<")) ++angles;
      if (depth == 0 && is(k, ">")) --angles;
    }
    return names;
  }

  // The name one parameter declaration [a, b) declares: the last identifier before a default argument or
  // an array bound, when a type precedes it (`const float* __restrict__ x` -> x; `const float*` -> none).
  std::string declared_name(std::size_t a, std::size_t b) const {
    static const std::set<std::string_view> not_names = {
        "const", "volatile", "__restrict__", "__restrict", "restrict", "unsigned", "signed", "int",  "long",
        "short", "char",     "float",        "double",     "bool",     "void",     "auto",   "struct", "class"};
    for (std::size_t k = a; k < b; ++k) {
      if (is(k, "=") || is(k, "[")) {
        b = k;
        break;
      }
    }
    std::size_t typed = 0;  // tokens of a type seen before the candidate name
    for (std::size_t k = a; k < b; ++k) {
      const bool qualifier = is(k, "const") || is(k, "volatile") || is(k, "__restrict__") || is(k, "__restrict");
      if (k + 1 == b) {
        const bool name = t_[k].kind == Kind::identifier && not_names.count(t_[k].text) == 0;
        return name && typed > 0 && !is(k - 1, "::") ? std::string(t_[k].text) : std::string();
      }
      if (!qualifier) ++typed;
    }
    return {};
  }

  // A declaration without names (`__global__ void k(float*, int);`) names nothing; overloads that disagree
  // on their names leave the kernel unnamed (an empty list).
  void note_parameters(const std::string& kernel, const std::string& names) {
    if (names.find_first_not_of(',') == std::string::npos) return;
    const auto [it, inserted] = k_.parameters.emplace(kernel, names);
    if (!inserted && it->second != names) k_.conflicting.insert(kernel);
    if (k_.conflicting.count(kernel) != 0) it->second.clear();
  }

  // Joins tokens [a, b) into one line of text: a space only where two words would otherwise merge.
  std::string join(std::size_t a, std::size_t b) const {
    std::string s;
    for (std::size_t k = a; k < b; ++k) {
      if (!s.empty() && (ident_char(s.back()) && (ident_char(t_[k].text[0]) || t_[k].kind == Kind::literal))) s += ' ';
      s += t_[k].text;
    }
    return s;
  }

  // Replaces source [begin, end) by `text` followed by the newlines the range held.
  void replace(std::size_t begin, std::size_t end, std::string text) {
    for (std::size_t k = begin; k < end; ++k) {
      if (src_[k] == '\n') text += '\n';
    }
    edits_.push_back({begin, end, std::move(text)});
  }

  // Index of the bracket that opens the one that closes at `close` (`)` or `]`), or t_.size().
  std::size_t opening(std::size_t close) const {
    int depth = 0;
    for (std::size_t k = close + 1; k-- > 0;) {
      if (is(k, ")") || is(k, "]")) ++depth;
      if ((is(k, "(") || is(k, "[")) && --depth == 0) return k;
      if (is(k, ";") || is(k, "{") || is(k, "}")) break;
    }
    return t_.size();
  }

  // The first token of the expression that ends at `last` and names the kernel of a launch: a name,
  // qualified or not, with or without explicit template arguments, or a postfix expression that yields a
  // function pointer (`k`, `table[i]`, `s.kernel`, `p->kernel`, `(flag ? a : b)`, `pick(flag)`).
  // `*plain` tells whether it is a plain name (possibly with template arguments) that may be a kernel itself.
  std::size_t kernel_expression(std::size_t last, int line, bool* explicit_args, bool* plain) const {
    *explicit_args = false;
    *plain = true;
    std::size_t first = last + 1;  // one past the expression's end: `<<<`'s index
    if (is(last, ">")) {
      // Back to the `<` that opens the template argument list (parentheses may hide comparisons).
      int angles = 0, parens = 0;
      std::size_t q = last;
      for (;; --q) {
        if (is(q, ")") || is(q, "]")) ++parens;
        if (is(q, "(") || is(q, "[")) --parens;
        if (parens == 0 && is(q, ">")) ++angles;
        if (parens == 0 && is(q, "<") && --angles == 0) break;
        if (q == 0 || is(q, ";") || is(q, "{") || is(q, "}")) {
          throw ParseError(line, "cannot find where the kernel's template argument list before <<< begins");
        }
      }
      *explicit_args = true;
      first = q;
    }
    // Postfix pieces, right to left: (...) [...] .name ->name ::name name
    enum class Want { name_or_group, name, joiner };  // what may come before the piece taken last
    Want want = *explicit_args ? Want::name : Want::name_or_group;
    static const std::set<std::string_view> keywords = {"return", "else", "do", "case", "throw", "co_return"};
    while (first > 0) {
      const std::size_t prev = first - 1;
      const bool group = is(prev, ")") || is(prev, "]");
      const bool name = t_[prev].kind == Kind::identifier && keywords.count(t_[prev].text) == 0;
      const bool joiner = is(prev, "::") || is(prev, ".") || is(prev, "->");
      if (group && want == Want::name_or_group) {
        first = opening(prev);
        if (first >= t_.size()) throw ParseError(line, "unbalanced brackets in the kernel expression before <<<");
        *plain = false;
      } else if (name && want != Want::joiner) {
        first = prev;
        want = Want::joiner;
      } else if (joiner && want == Want::joiner) {
        first = prev;
        if (!is(prev, "::")) *plain = false;
        want = is(prev, "::") ? Want::name : Want::name_or_group;
      } else {
        break;
      }
    }
    if (first > last || (is(first, "::") && first == last)) {
      throw ParseError(line, "expected a kernel before <<< (a name, a qualified name, a template-id such as "
                             "gemm<128, 8>, or an expression that gives a __global__ function pointer)");
    }
    if (is(first, ".") || is(first, "->")) {
      throw ParseError(line, "cannot tell which kernel this <<< launches: the expression before it begins with " +
                                 std::string(t_[first].text) + " (name the kernel, or put it in a variable first)");
    }
    return first;
  }

  // `<<<` at index i: the kernel expression before it, the configuration up to `>>>`, then `(`.
  std::size_t rewrite_launch(std::size_t i) {
    const int line = t_[i].line;
    if (i == 0) throw ParseError(line, "expected a kernel before <<<");
    bool explicit_args = false, plain = true;
    const std::size_t first = kernel_expression(i - 1, line, &explicit_args, &plain);
    std::size_t name_at = first;  // a plain expression's last name before its template arguments: the kernel
    for (std::size_t k = first; k < i && !is(k, "<"); ++k) {
      if (t_[k].kind == Kind::identifier) name_at = k;
    }
    const std::string last_name(t_[name_at].text);
    // The configuration, up to the `>>>` at bracket depth 0.
    std::size_t close = i + 3;
    int depth = 0;
    for (;; ++close) {
      if (close + 2 >= t_.size() || (depth == 0 && (is(close, ";") || is(close, "{") || is(close, "}")))) {
        throw ParseError(line, "kernel launch <<< without a matching >>>");
      }
      if (t_[close].kind == Kind::directive) continue;
      if (is(close, "(") || is(close, "[") || is(close, "{")) ++depth;
      if (is(close, ")") || is(close, "]") || is(close, "}")) --depth;
      if (depth == 0 && is(close, ">") && is(close + 1, ">") && is(close + 2, ">") && adjacent(close, close + 1) &&
          adjacent(close + 1, close + 2)) {
        break;
      }
    }
    if (close == i + 3) throw ParseError(line, "kernel launch <<<>>> without a grid and a block");
    if (!is(close + 3, "(")) {
      throw ParseError(t_[close].line, "expected the kernel's arguments in parentheses after >>>");
    }
    const std::string kernel = join(first, i);
    // A name the .cu or its headers declare as a kernel: its address (nullptr for a template whose arguments
    // the call deduces), and a body that calls it by name, so that overloads and deduction work as in nvcc.
    const bool known = plain && k_.names.count(last_name) != 0;
    if (known) {
      // nullptr for a kernel template the call deduces, and for a kernel that a host function of the same
      // name overloads: no single `&k` to take, the call in the body picks the kernel as nvcc does.
      const bool deduced = (!explicit_args && k_.templates.count(last_name) != 0) || k_.host_namesakes.count(last_name) != 0;
      if (!deduced) null_constant_arguments(close + 3);
      const auto named = k_.parameters.find(last_name);
      const std::string parameters = named != k_.parameters.end() ? named->second : std::string();
      replace(t_[first].begin, t_[i + 2].end,
              "::rooflab::emu::detail::launch_site(" + (deduced ? std::string("nullptr") : "&" + kernel) + ", \"" +
                  escaped(kernel) + "\", \"" + parameters + "\", [&](auto... rooflab_emu_args_) { " + kernel +
                  "(rooflab_emu_args_...); }, ");
    } else {
      // Anything else (a function pointer variable, an element of a table of kernels, a conditional, a call):
      // evaluated once, and launch_pointer checks that it gives a __global__ function's address.
      replace(t_[first].begin, t_[i + 2].end,
              "::rooflab::emu::detail::launch_pointer(" + kernel + ", \"" + escaped(kernel) + "\", ");
    }
    replace(t_[close].begin, t_[close + 2].end, ")");
    ++constructs_;
    return close + 2;
  }

  // A literal `0` or `NULL` argument of a launch (the arguments' `(` at `open`): a null pointer constant for
  // a pointer parameter under nvcc, but an int once the launch forwards it. It becomes a value that converts
  // to a null pointer or a zero, whichever the kernel's parameter is (rooflab/emu/rewritten.hpp).
  void null_constant_arguments(std::size_t open) {
    const std::size_t close = matching(open);
    std::size_t begin = open + 1;
    int depth = 0;
    for (std::size_t k = open + 1; k <= close && k < t_.size(); ++k) {
      if (t_[k].kind == Kind::directive) continue;
      if (k == close || (depth == 0 && is(k, ","))) {
        if (k == begin + 1 && (is(begin, "0") || is(begin, "NULL"))) {
          replace(t_[begin].begin, t_[begin].end, "::rooflab::emu::detail::NullOrZero{}");
        }
        begin = k + 1;
        continue;
      }
      if (is(k, "(") || is(k, "[") || is(k, "{")) ++depth;
      if (is(k, ")") || is(k, "]") || is(k, "}")) --depth;
    }
  }

  static std::string escaped(const std::string& text) {
    std::string out;
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  }

  // `reinterpret_cast<T*>(e)` in a function body, dereferenced where it is made (`reinterpret_cast<T*>(e)[i]`,
  // `*reinterpret_cast<T*>(e)`, `reinterpret_cast<T*>(e)->x`): the backend checks that the pointer is aligned
  // for T when a kernel makes it (a GPU faults on the misaligned access, whatever instructions the host
  // compiler would use for it). A cast kept in a variable is left alone: code often makes a vector pointer
  // for a loop that may run zero times (the CPU's own alignment fault still reports an aligned SSE access
  // through it). Other reinterpret_casts (to integers, to references) are left alone too.
  void rewrite_pointer_cast(std::size_t i) {
    if (!is(i + 1, "<")) return;
    int angles = 0, parens = 0;
    std::size_t close = i + 1;
    for (; close < t_.size(); ++close) {
      if (is(close, "(") || is(close, "[")) ++parens;
      if (is(close, ")") || is(close, "]")) --parens;
      if (parens == 0 && is(close, "<")) ++angles;
      if (parens == 0 && is(close, ">") && --angles == 0) break;
      if (is(close, ";") || is(close, "{")) return;
    }
    if (close >= t_.size() || !is(close - 1, "*") || !is(close + 1, "(")) return;
    const std::size_t end = matching(close + 1);
    if (end >= t_.size() || !(is(end + 1, "[") || is(end + 1, "->") || unary_star_before(i))) return;
    const std::string type = join(i + 2, close);
    replace(t_[i].begin, t_[i].end, "::rooflab::emu::detail::aligned_reinterpret_cast");
    replace(t_[end].begin, t_[end].end, ", \"" + escaped(type) + "\")");
    ++constructs_;
  }

  // cudaLaunchCooperativeKernel(k, grid, block, args, ...) in a function body: the backend calls k with the
  // arguments args points at, so it needs k's type, which the usual spelling `(void*)k` hides. The call goes
  // to ::rooflab::emu::detail::cooperative_launch, and a cast of the first argument to void* (C-style,
  // reinterpret_cast or static_cast) is dropped; what remains must name the kernel (checked there).
  void rewrite_cooperative_launch(std::size_t i) {
    if (!is(i + 1, "(")) return;
    const std::size_t name_begin = i > 0 && is(i - 1, "::") ? i - 1 : i;
    replace(t_[name_begin].begin, t_[i].end, "::rooflab::emu::detail::cooperative_launch");
    ++constructs_;
    std::size_t a = i + 2;
    const auto void_pointer = [this](std::size_t k) {  // [const] void * [const], ending where it ends
      if (is(k, "const")) ++k;
      if (!is(k, "void") || !is(k + 1, "*")) return std::size_t{0};
      k += 2;
      if (is(k, "const")) ++k;
      return k;
    };
    if (is(a, "(")) {
      const std::size_t close = void_pointer(a + 1);
      if (close != 0 && is(close, ")")) replace(t_[a].begin, t_[close].end, "");
    } else if ((is(a, "reinterpret_cast") || is(a, "static_cast")) && is(a + 1, "<")) {
      const std::size_t close = void_pointer(a + 2);
      if (close != 0 && is(close, ">") && is(close + 1, "(")) replace(t_[a].begin, t_[close].end, "");  // keeps (k)
    }
  }

  // Whether a `*` before token i is a dereference: what precedes it cannot end an operand (a name, a number,
  // a literal, `)` or `]` would make it a multiplication).
  bool unary_star_before(std::size_t i) const {
    if (i == 0 || !is(i - 1, "*")) return false;
    if (i == 1) return true;
    const Token& p = t_[i - 2];
    const bool operand_end = p.kind == Kind::identifier || p.kind == Kind::number || p.kind == Kind::literal ||
                             is(i - 2, ")") || is(i - 2, "]");
    return !operand_end || is(i - 2, "return");
  }

  // `__shared__` at index i: the whole declaration it belongs to.
  std::size_t rewrite_shared(std::size_t i, bool in_function) {
    ++constructs_;  // a header with nothing but __shared__ declarations needs its rewritten copy too
    const int line = t_[i].line;
    std::size_t start = i;
    while (start > 0 && !is(start - 1, ";") && !is(start - 1, "{") && !is(start - 1, "}") &&
           t_[start - 1].kind != Kind::directive) {
      --start;
    }
    std::size_t end = i;
    for (int depth = 0; end < t_.size(); ++end) {
      if (is(end, "(") || is(end, "[")) ++depth;
      if (is(end, ")") || is(end, "]")) --depth;
      if (depth == 0 && is(end, ";")) break;
      if (depth == 0 && (is(end, "{") || is(end, "}") || is(end, "="))) {
        throw ParseError(line, "a __shared__ variable cannot have an initializer (CUDA never runs it: assign it in "
                               "the kernel, then __syncthreads())");
      }
    }
    if (end >= t_.size()) throw ParseError(line, "a __shared__ declaration without its ';'");

    // Drop the specifiers that mean nothing here; keep the alignment asked for.
    bool is_extern = false;
    std::string align = "0";
    std::vector<std::size_t> rest;  // token indices of the type and the declarators
    for (std::size_t k = start; k < end; ++k) {
      if (is(k, "__shared__") || is(k, "static") || is(k, "__device__")) continue;
      if (is(k, "extern")) {
        is_extern = true;
        continue;
      }
      if (is(k, "__align__") || is(k, "alignas")) {
        if (!is(k + 1, "(")) throw ParseError(line, "expected ( after " + std::string(t_[k].text));
        const std::size_t close = matching(k + 1);
        const std::string arg = join(k + 2, close);
        align = (close == k + 3 && t_[k + 2].kind == Kind::number) || is(k, "__align__") ? "(" + arg + ")" : "alignof(" + arg + ")";
        k = close;
        continue;
      }
      if (is(k, "__attribute__")) {
        const std::size_t close = matching(k + 1);
        for (std::size_t q = k; q < close; ++q) {
          if (is(q, "aligned") && is(q + 1, "(")) align = "(" + join(q + 2, matching(q + 1)) + ")";
        }
        k = close;
        continue;
      }
      if (is(k, "[") && is(k + 1, "[")) {  // [[attribute]]
        k = matching(k);
        continue;
      }
      rest.push_back(k);
    }
    // Split into declarators at commas outside brackets (template argument lists included).
    std::vector<std::vector<std::size_t>> parts(1);
    int depth = 0, angles = 0;  // angle brackets count only outside ( ) and [ ]: there they are comparisons
    for (std::size_t k : rest) {
      if (is(k, "(") || is(k, "[")) ++depth;
      if (is(k, ")") || is(k, "]")) --depth;
      if (depth == 0 && is(k, "<")) ++angles;
      if (depth == 0 && is(k, ">")) --angles;
      if (depth == 0 && angles == 0 && is(k, ",")) {
        parts.emplace_back();
        continue;
      }
      parts.back().push_back(k);
    }
    std::string type;
    std::string out;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const auto& part = parts[p];
      // From the end: array bounds, then the name; what comes before the first name is the type.
      std::size_t n = part.size();
      std::vector<std::pair<std::size_t, std::size_t>> bounds;  // [ and ] token indices, last first
      while (n > 0 && is(part[n - 1], "]")) {
        std::size_t open = n - 1;
        int d = 0;
        for (;; --open) {
          if (is(part[open], "]")) ++d;
          if (is(part[open], "[") && --d == 0) break;
          if (open == 0) throw ParseError(line, "unbalanced [ ] in a __shared__ declaration");
        }
        bounds.insert(bounds.begin(), {part[open], part[n - 1]});
        n = open;
      }
      if (n == 0 || t_[part[n - 1]].kind != Kind::identifier) {
        throw ParseError(line, "cannot parse this __shared__ declaration: expected `__shared__ T name[size];` or "
                               "`extern __shared__ T name[];`");
      }
      const std::string name(t_[part[n - 1]].text);
      if (p == 0) {
        if (n < 2) throw ParseError(line, "a __shared__ declaration without a type");
        type = join(part[0], part[n - 2] + 1);
      } else if (n != 1) {
        throw ParseError(line, "cannot parse the declarator of " + name + ": declare it in a statement of its own");
      }
      if (is_extern) {
        if (bounds.empty() || bounds[0].second != bounds[0].first + 1) {
          throw ParseError(line, "extern __shared__ " + name + ": dynamic shared memory is declared as an array of "
                                 "unknown size, `extern __shared__ T " + name + "[];` (or rows: `" + name + "[][N]`)");
        }
        // Rows of a fixed length (`name[][N]`): a pointer to arrays of N, as nvcc makes it.
        std::string row = type;
        for (std::size_t b = 1; b < bounds.size(); ++b) {
          if (bounds[b].second == bounds[b].first + 1) {
            throw ParseError(line, "extern __shared__ " + name + ": only the first bound may be left out");
          }
          row += "[" + join(bounds[b].first + 1, bounds[b].second) + "]";
        }
        out += in_function ? "[[maybe_unused]] auto* const " + name + " = ::rooflab::emu::detail::dynamic_shared<" +
                                 row + ">(); "
                           : "[[maybe_unused]] static ::rooflab::emu::detail::DynamicSharedArray<" + row + "> " + name +
                                 "; ";
        continue;
      }
      if (!in_function) {
        throw ParseError(line, "__shared__ " + name + " at namespace scope: the CPU backend supports __shared__ "
                               "variables declared inside the kernel (or device function) that uses them");
      }
      std::string dims;
      for (const auto& [open, close] : bounds) {
        if (close == open + 1) throw ParseError(line, "__shared__ " + name + "[] needs a size (or `extern`)");
        dims += "[" + join(open + 1, close) + "]";
      }
      out += "[[maybe_unused]] auto& " + name + " = ::rooflab::emu::detail::static_shared<" + type + dims +
             ">([] {}, \"" + name + "\", " + align + "); ";
    }
    out.pop_back();
    replace(t_[start].begin, t_[end].end, out);
    return end;
  }

  std::string apply() {
    // Never overlapping; a cast's closing parenthesis is edited after the casts nested inside its operand.
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
    std::string out;
    std::size_t at = 0;
    for (const Edit& e : edits_) {
      out.append(src_.substr(at, e.begin - at));
      out += e.text;
      at = e.end;
    }
    out.append(src_.substr(at));
    return out;
  }

  std::string_view src_;
  std::vector<Token> t_;
  KernelTable& k_;
  std::map<std::size_t, std::string> includes_;
  std::vector<Edit> edits_;
  std::size_t constructs_ = 0;
  std::string directive_contexts_;
  std::map<std::size_t, std::string> bounded_bodies_;  // a kernel body's `{` -> the statements that start it
};

std::string quoted_path(const std::string& path) {
  std::string q = "\"";
  for (char c : path) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// FNV-1a over `text`, continuing from `h`.
std::uint32_t fnv1a(const std::string& text, std::uint32_t h) {
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

// A problem in a file other than the one being rewritten (a header it includes).
struct FileError : std::runtime_error {
  std::string file;
  int line;
  FileError(std::string f, int l, const std::string& what) : std::runtime_error(what), file(std::move(f)), line(l) {}
};

bool read_file(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  *text = buffer.str();
  return true;
}

// Writes `text` unless the file already holds it: an unchanged output keeps its time stamp, so what
// depends on it is not rebuilt.
bool write_if_changed(const std::string& path, const std::string& text) {
  std::string old;
  if (read_file(path, &old) && old == text) return true;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  return static_cast<bool>(file);
}

struct Options {
  std::vector<std::string> include_dirs;  // -I: project-local directories searched for includes
  std::vector<std::string> skip_dirs;     // --skip: headers under these are never rewritten (system, toolkit)
  std::string header_dir;                 // --headers: where rewritten headers go ("": headers are not followed)
  std::string depfile;                    // --depfile: every file read, for incremental rebuilds
  std::string contexts;                   // --contexts: where each directive of the .cu stands (branches.hpp)
};

// The .cu file and the project-local headers it includes, directly or not. A header that declares
// __shared__ variables or launches kernels (or includes one that does) is rewritten into the header
// directory, starting with `#line 1 "its/own/path.cuh"` so that reports keep its name and lines, and the
// includes of it are redirected there. Headers under the skipped directories (the system's, the toolkit's,
// the backend's) and headers no -I directory or quoted include reaches are left alone.
class Project {
 public:
  explicit Project(Options options) : o_(std::move(options)) {}

  KernelTable kernels;
  std::vector<std::string> read;  // every file read, in order: the depfile's prerequisites
  std::string directive_contexts;  // the .cu file's (Rewriter::directive_contexts)
  // A hash of every rewritten header's text. The wrapper carries it, so that a header edit changes the
  // wrapper and recompiles it: Ninja learns of the rewritten copies only from the compiler's depfile, and
  // judges them with the time stamps it took before the rewrite ran.
  std::uint32_t headers_hash = 2166136261u;

  // The rewritten text of `path` (throws FileError for a problem in a header, ParseError for one in `path`).
  std::string rewrite_source(const std::string& path, const std::string& text) {
    done_[canonical(path)] = "";
    bool changed = false;
    return rewrite(path, text, /*header=*/false, &changed);
  }

  // For a header: the path its includers include instead ("" if it is used as it is).
  std::string header(const std::string& path) {
    const std::string key = canonical(path);
    if (const auto it = done_.find(key); it != done_.end()) return it->second;  // done, or being done (a cycle)
    done_[key] = "";
    std::string text;
    if (!read_file(key, &text)) return "";
    read.push_back(key);
    bool changed = false;
    std::string body;
    try {
      body = rewrite(key, text, /*header=*/true, &changed);
    } catch (const ParseError& e) {
      throw FileError(key, e.line, e.what());
    }
    if (!changed) return "";
    const std::string out = o_.header_dir + "/" + output_name(key);
    const std::string copy = "#line 1 " + quoted_path(key) + "\n" + body;
    if (!write_if_changed(out, copy)) throw std::runtime_error("cannot write " + out);
    headers_hash = fnv1a(copy, headers_hash);
    done_[key] = out;
    return out;
  }

 private:
  static std::string canonical(const std::string& path) {
    std::error_code ec;
    const auto c = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : c.string();
  }

  // `stem-<hash of the path>.ext`: headers of one name in two directories do not collide.
  static std::string output_name(const std::string& path) {
    const std::filesystem::path p(path);
    char tag[16];
    std::snprintf(tag, sizeof tag, "-%08x", fnv1a(path, 2166136261u));
    return p.stem().string() + tag + p.extension().string();
  }

  bool skipped(const std::string& path) const {
    for (const auto& dir : o_.skip_dirs) {
      if (!dir.empty() && path.compare(0, dir.size(), dir) == 0 && (path.size() == dir.size() || path[dir.size()] == '/')) {
        return true;
      }
    }
    return false;
  }

  // Where `#include "name"` (quoted) or `<name>` of a file in `dir` is found among the project's headers.
  std::string resolve(const std::string& dir, const std::string& name, bool quoted) const {
    std::vector<std::string> candidates;
    if (!name.empty() && name[0] == '/') {
      candidates.push_back(name);
    } else {
      if (quoted) candidates.push_back(dir + "/" + name);
      for (const auto& inc : o_.include_dirs) candidates.push_back(inc + "/" + name);
    }
    for (const auto& c : candidates) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(c, ec)) continue;
      const std::string found = canonical(c);
      return skipped(found) ? std::string() : found;
    }
    return "";
  }

  // The file named by an #include directive, and whether it is quoted; false if it is not an #include.
  static bool include_target(std::string_view d, std::string* name, bool* quoted) {
    std::size_t k = 1;
    while (k < d.size() && (d[k] == ' ' || d[k] == '\t')) ++k;
    if (d.compare(k, 7, "include") != 0) return false;
    k += 7;
    while (k < d.size() && (d[k] == ' ' || d[k] == '\t')) ++k;
    if (k >= d.size() || (d[k] != '"' && d[k] != '<')) return false;
    const char close = d[k] == '"' ? '"' : '>';
    const std::size_t end = d.find(close, k + 1);
    if (end == std::string_view::npos) return false;
    *name = std::string(d.substr(k + 1, end - k - 1));
    *quoted = close == '"';
    return true;
  }

  std::string rewrite(const std::string& path, const std::string& text, bool header, bool* changed) {
    std::vector<Token> tokens = Lexer(text).run();
    std::map<std::size_t, std::string> includes;
    bool redirected = false;
    const std::string dir = std::filesystem::path(path).parent_path().string();
    for (std::size_t i = 0; i < tokens.size() && !o_.header_dir.empty(); ++i) {
      std::string name;
      bool quoted = false;
      if (tokens[i].kind != Kind::directive || !include_target(tokens[i].text, &name, &quoted)) continue;
      const std::string found = resolve(dir, name, quoted);
      if (found.empty()) continue;
      const std::string rewritten = this->header(found);
      if (!rewritten.empty()) {
        includes[i] = "#include " + quoted_path(rewritten);
        redirected = true;
      } else if (header && quoted) {
        includes[i] = "#include " + quoted_path(found);  // found from the rewritten copy's directory too
      }
    }
    Rewriter rewriter(text, std::move(tokens), kernels, std::move(includes));
    std::string body = rewriter.run();
    *changed = redirected || rewriter.constructs() > 0;
    if (!header) directive_contexts = rewriter.directive_contexts();
    return body;
  }

  Options o_;
  std::map<std::string, std::string> done_;  // canonical header path -> its rewritten copy ("" if none)
};

// `target: a b c` with spaces escaped, as Make and Ninja read depfiles.
std::string depfile_text(const std::string& target, const std::vector<std::string>& prerequisites) {
  const auto escape = [](const std::string& p) {
    std::string out;
    for (char c : p) {
      if (c == ' ' || c == '#') out += '\\';
      if (c == '$') out += '$';
      out += c;
    }
    return out;
  };
  std::string out = escape(target) + ":";
  for (const auto& p : prerequisites) out += " \\\n  " + escape(p);
  return out + "\n";
}

int usage() {
  std::fprintf(stderr,
               "usage: rooflab_emu_rewrite IN.cu OUT.cpp [--headers DIR] [--depfile FILE] [--contexts FILE] [-I DIR]... [--skip DIR]...\n");
  return 2;
}

bool parse_options(int argc, char** argv, Options* o) {
  for (int k = 3; k < argc; ++k) {
    const std::string a = argv[k];
    const bool has_value = k + 1 < argc;
    if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      o->include_dirs.push_back(a.substr(2));
    } else if (a == "-I" && has_value) {
      o->include_dirs.push_back(argv[++k]);
    } else if (a == "--skip" && has_value) {
      std::error_code ec;  // compared with canonical header paths: symbolic links resolved
      const auto dir = std::filesystem::weakly_canonical(argv[++k], ec);
      o->skip_dirs.push_back(ec ? std::string(argv[k]) : dir.string());
    } else if (a == "--headers" && has_value) {
      o->header_dir = argv[++k];
    } else if (a == "--contexts" && has_value) {
      o->contexts = argv[++k];
    } else if (a == "--depfile" && has_value) {
      o->depfile = argv[++k];
    } else if (a.empty()) {
      continue;  // an empty generator expression
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (argc < 3 || !parse_options(argc, argv, &options)) return usage();
  const std::string in_path = argv[1];
  std::string src;
  if (!read_file(in_path, &src)) {
    std::fprintf(stderr, "rooflab_emu_rewrite: cannot read %s\n", in_path.c_str());
    return 2;
  }
  if (!options.header_dir.empty()) std::filesystem::create_directories(options.header_dir);
  Project project(options);
  std::string body;
  try {
    body = project.rewrite_source(in_path, src);
  } catch (const ParseError& e) {
    std::fprintf(stderr, "%s:%d: error: %s [rooflab_emu_rewrite, CPU backend]\n", in_path.c_str(), e.line, e.what());
    return 1;
  } catch (const FileError& e) {
    std::fprintf(stderr, "%s:%d: error: %s [rooflab_emu_rewrite, CPU backend; included from %s]\n", e.file.c_str(),
                 e.line, e.what(), in_path.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rooflab_emu_rewrite: %s\n", e.what());
    return 2;
  }
  const std::string kernels = project.kernels.joined();
  std::ostringstream out;
  out << "// Generated by rooflab_emu_rewrite from " << in_path << " for the CPU backend (docs/cpu-mode.md).\n"
      << "#include <rooflab/emu/runtime.hpp>\n"
      << "#include <rooflab/emu/rewritten.hpp>\n";
  if (project.headers_hash != 2166136261u) {
    char hash[16];
    std::snprintf(hash, sizeof hash, "%08x", project.headers_hash);
    out << "// Rewritten headers: " << hash << " (a header edit changes this line)\n";
  }
  out << "#line 1 " << quoted_path(in_path) << "\n" << body;
  if (!body.empty() && body.back() != '\n') out << '\n';
  // After the last line (line numbers stay those of the .cu): the file's kernel names, so that the backend can
  // tell which compiled functions are kernels (rooflab::emu::kernels_defined()).
  if (!kernels.empty()) {
    out << "[[maybe_unused]] static const int rooflab_emu_kernels_registered_ =\n"
        << "    ::rooflab::emu::detail::register_kernels(" << quoted_path(in_path) << ", \"" << kernels << "\");\n";
  }
  // Written only when the text changed: an unchanged wrapper does not recompile.
  if (!write_if_changed(argv[2], out.str())) {
    std::fprintf(stderr, "rooflab_emu_rewrite: cannot write %s\n", argv[2]);
    return 2;
  }
  // Where each directive of the .cu stands (host code, a device function, a __host__ __device__ one), for the
  // comparison of the branches the wrapper compiles with nvcc's passes (rooflab_emu_branches --contexts). Beside
  // the wrapper, not in it: the wrapper's text, and so its object, does not depend on it.
  if (!options.contexts.empty() &&
      !write_if_changed(options.contexts, "// " + std::string(rooflab::emu::branches::kDirectiveContexts) + " " +
                                              project.directive_contexts + "\n")) {
    std::fprintf(stderr, "rooflab_emu_rewrite: cannot write %s\n", options.contexts.c_str());
    return 2;
  }
  if (!options.depfile.empty()) {
    std::vector<std::string> prerequisites{in_path};
    prerequisites.insert(prerequisites.end(), project.read.begin(), project.read.end());
    if (!write_if_changed(options.depfile, depfile_text(argv[2], prerequisites))) {
      std::fprintf(stderr, "rooflab_emu_rewrite: cannot write %s\n", options.depfile.c_str());
      return 2;
    }
  }
  return 0;
}
