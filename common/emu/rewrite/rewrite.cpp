// rooflab_emu_rewrite IN.cu OUT.cpp: the CPU backend's view of a CUDA source file.
//
// The host compiler cannot parse three CUDA constructs, so this tool rewrites them, and nothing else, into
// calls of the backend (common/emu/include/rooflab/emu/launch.hpp and runtime.hpp):
//
//   k<<<grid, block[, smem[, stream]]>>>(args)
//       -> ::rooflab::emu::detail::launch_site(&k, "k", "x,y,n", [&](auto... a) { k(a...); }, grid, block ...)(args)
//          ("x,y,n": the parameter names of the __global__ k declared in this file, for reports; "" if none)
//          (`nullptr` instead of `&k` when k is a kernel template launched without template arguments: the
//          call in the lambda deduces them from the arguments, as nvcc does)
//   extern __shared__ T name[];          -> name points at the block's dynamic shared memory
//   __shared__ T name[dims];  (in a function body)
//       -> name refers to this declaration's storage in the block's shared memory, fresh and poisoned for
//          every block, ending against a guard page
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

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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

class Rewriter {
 public:
  Rewriter(std::string_view src, std::vector<Token> tokens) : src_(src), t_(std::move(tokens)) {}

  // The names of the __global__ functions the file declares, "a,b,c" (after run()).
  std::string kernel_names() const {
    std::string out;
    for (const auto& name : kernel_names_) out += (out.empty() ? "" : ",") + name;
    return out;
  }

  std::string run() {
    find_kernels();
    enum class Scope { other, function };
    std::vector<Scope> scopes;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& tok = t_[i];
      if (tok.kind == Kind::directive) {
        if (tok.text.find("<<<") != std::string_view::npos || contains_word(tok.text, "__shared__")) {
          throw ParseError(tok.line, "a kernel launch or __shared__ declaration inside a preprocessor directive "
                                     "(a macro) cannot be rewritten for the CPU backend: write it in the code");
        }
        continue;
      }
      if (is(i, "{")) {
        const bool in_function = !scopes.empty() && scopes.back() == Scope::function;
        scopes.push_back(in_function || opens_function_body(i) ? Scope::function : Scope::other);
      } else if (is(i, "}")) {
        if (scopes.empty()) throw ParseError(tok.line, "'}' without a matching '{'");
        scopes.pop_back();
      } else if (is(i, "<") && is(i + 1, "<") && is(i + 2, "<") && adjacent(i, i + 1) && adjacent(i + 1, i + 2) &&
                 !(i > 0 && is(i - 1, "operator"))) {
        i = rewrite_launch(i);
      } else if (tok.kind == Kind::identifier && tok.text == "__shared__") {
        i = rewrite_shared(i, !scopes.empty() && scopes.back() == Scope::function);
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
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (t_[i].kind != Kind::identifier || t_[i].text != "__global__") continue;
      std::size_t start = i;
      while (start > 0 && !is(start - 1, ";") && !is(start - 1, "{") && !is(start - 1, "}") &&
             t_[start - 1].kind != Kind::directive) {
        --start;
      }
      for (std::size_t k = i + 1; k < t_.size() && !is(k, ";") && !is(k, "{"); ++k) {
        if (is(k, "__launch_bounds__") || is(k, "__attribute__")) {
          k = matching(k + 1);
          continue;
        }
        if (is(k, "(") && t_[k - 1].kind == Kind::identifier) {
          const std::string name(t_[k - 1].text);
          kernel_names_.insert(name);
          if (is(start, "template")) kernel_templates_.insert(name);
          note_parameters(name, parameter_names(k, matching(k)));
          break;
        }
      }
    }
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
    const auto [it, inserted] = kernel_parameters_.emplace(kernel, names);
    if (!inserted && it->second != names) conflicting_.insert(kernel);
    if (conflicting_.count(kernel) != 0) it->second.clear();
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

  // `<<<` at index i: the kernel expression before it, the configuration up to `>>>`, then `(`.
  std::size_t rewrite_launch(std::size_t i) {
    const int line = t_[i].line;
    // The kernel: a name, qualified (a::b, ::b) or not, with or without explicit template arguments.
    std::size_t first = i;
    bool explicit_args = false;
    if (i > 0 && is(i - 1, ">")) {
      // Back to the `<` that opens the template argument list (parentheses may hide comparisons).
      int angles = 0, parens = 0;
      std::size_t q = i - 1;
      for (;; --q) {
        if (is(q, ")") || is(q, "]")) ++parens;
        if (is(q, "(") || is(q, "[")) --parens;
        if (parens == 0 && is(q, ">")) ++angles;
        if (parens == 0 && is(q, "<") && --angles == 0) break;
        if (q == 0 || is(q, ";") || is(q, "{") || is(q, "}")) {
          throw ParseError(line, "cannot find where the kernel's template argument list before <<< begins");
        }
      }
      explicit_args = true;
      first = q;
    }
    if (first == 0 || t_[first - 1].kind != Kind::identifier) {
      throw ParseError(line, "expected a kernel name before <<< (a name, a qualified name or a template-id such as "
                             "gemm<128, 8>; a more complex expression is not a launch the CPU backend can rewrite)");
    }
    --first;
    const std::string last_name(t_[first].text);
    while (first >= 1 && is(first - 1, "::")) {
      if (first >= 2 && t_[first - 2].kind == Kind::identifier && !is(first - 2, "return")) {
        first -= 2;
      } else {
        first -= 1;  // ::kernel, in the global namespace
        break;
      }
    }
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
    const bool deduced = !explicit_args && kernel_templates_.count(last_name) != 0;
    const auto named = kernel_parameters_.find(last_name);
    const std::string parameters = named != kernel_parameters_.end() ? named->second : std::string();
    replace(t_[first].begin, t_[i + 2].end,
            "::rooflab::emu::detail::launch_site(" + (deduced ? std::string("nullptr") : "&" + kernel) + ", \"" +
                kernel + "\", \"" + parameters + "\", [&](auto... rooflab_emu_args_) { " + kernel +
                "(rooflab_emu_args_...); }, ");
    replace(t_[close].begin, t_[close + 2].end, ")");
    return close + 2;
  }

  // `__shared__` at index i: the whole declaration it belongs to.
  std::size_t rewrite_shared(std::size_t i, bool in_function) {
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
        if (bounds.size() != 1 || bounds[0].second != bounds[0].first + 1) {
          throw ParseError(line, "extern __shared__ " + name + ": dynamic shared memory is declared as an array of "
                                 "unknown size, `extern __shared__ T " + name + "[];`");
        }
        out += in_function ? "[[maybe_unused]] auto* const " + name + " = ::rooflab::emu::detail::dynamic_shared<" +
                                 type + ">(); "
                           : "[[maybe_unused]] static ::rooflab::emu::detail::DynamicSharedArray<" + type + "> " + name +
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

  std::string apply() const {
    std::string out;
    std::size_t at = 0;
    for (const Edit& e : edits_) {  // made in source order, never overlapping
      out.append(src_.substr(at, e.begin - at));
      out += e.text;
      at = e.end;
    }
    out.append(src_.substr(at));
    return out;
  }

  std::string_view src_;
  std::vector<Token> t_;
  std::vector<Edit> edits_;
  std::set<std::string> kernel_templates_;
  std::set<std::string> kernel_names_;  // every __global__ function declared, for the backend's kernels_defined()
  std::map<std::string, std::string> kernel_parameters_;  // kernel name -> "a,b,n" (see parameter_names)
  std::set<std::string> conflicting_;                      // kernels whose overloads name parameters differently
};

std::string quoted_path(const std::string& path) {
  std::string q = "\"";
  for (char c : path) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rooflab_emu_rewrite IN.cu OUT.cpp\n");
    return 2;
  }
  const std::string in_path = argv[1];
  std::ifstream in(in_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "rooflab_emu_rewrite: cannot read %s\n", in_path.c_str());
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string src = buffer.str();
  std::string body;
  std::string kernels;
  try {
    Rewriter rewriter(src, Lexer(src).run());
    body = rewriter.run();
    kernels = rewriter.kernel_names();
  } catch (const ParseError& e) {
    std::fprintf(stderr, "%s:%d: error: %s [rooflab_emu_rewrite, CPU backend]\n", in_path.c_str(), e.line, e.what());
    return 1;
  }
  std::ostringstream out;
  out << "// Generated by rooflab_emu_rewrite from " << in_path << " for the CPU backend (docs/cpu-mode.md).\n"
      << "#include <rooflab/emu/runtime.hpp>\n"
      << "#include <rooflab/emu/rewritten.hpp>\n"
      << "#line 1 " << quoted_path(in_path) << "\n"
      << body;
  if (!body.empty() && body.back() != '\n') out << '\n';
  // After the last line (line numbers stay those of the .cu): the file's kernel names, so that the backend can
  // tell which compiled functions are kernels (rooflab::emu::kernels_defined()).
  if (!kernels.empty()) {
    out << "[[maybe_unused]] static const int rooflab_emu_kernels_registered_ =\n"
        << "    ::rooflab::emu::detail::register_kernels(" << quoted_path(in_path) << ", \"" << kernels << "\");\n";
  }
  // Write only when the text changed: an unchanged wrapper does not recompile.
  const std::string text = out.str();
  {
    std::ifstream old(argv[2], std::ios::binary);
    std::stringstream old_text;
    old_text << old.rdbuf();
    if (old && old_text.str() == text) return 0;
  }
  std::ofstream file(argv[2], std::ios::binary | std::ios::trunc);
  file << text;
  if (!file) {
    std::fprintf(stderr, "rooflab_emu_rewrite: cannot write %s\n", argv[2]);
    return 2;
  }
  return 0;
}
