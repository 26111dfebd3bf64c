#include "build.hpp"

#include "util.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace rooflab::grader {

namespace fs = std::filesystem;

std::optional<fs::path> shared_harness() {
  const char* dir = std::getenv("ROOFLAB_HARNESS");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  const fs::path build = fs::absolute(dir);
  if (!fs::is_regular_file(build / "harness" / "targets.cmake")) {
    throw std::invalid_argument(fmt::format("ROOFLAB_HARNESS={}: not a build of rooflab (no harness/targets.cmake); "
                                            "unset it to compile the harness in each tree", dir));
  }
  return build;
}

std::vector<fs::path> harness_dirs() {
  const auto build = shared_harness();
  if (!build) return {};
  return {*build / "common", *build / "harness"};
}

ProcessResult configure(const BuildTree& tree, bool echo, const std::optional<Sandbox>& sandbox) {
  std::vector<std::string> argv = {"cmake", "-S", tree.source_dir.string(), "--preset", tree.preset,
                                   "-B", tree.build_dir.string()};
  for (const auto& [k, v] : tree.defs) argv.push_back(fmt::format("-D{}={}", k, v));
  // Always given, empty included: a tree configured once with an imported harness compiles its own again.
  const auto harness = shared_harness();
  argv.push_back("-DROOFLAB_HARNESS_TARGETS=" + (harness ? (*harness / "harness" / "targets.cmake").string() : ""));
  ProcessOptions o;
  o.timeout_s = 600;
  o.echo = echo;
  o.cwd = tree.source_dir;
  o.sandbox = sandbox;
  if (sandbox) fs::create_directories(tree.build_dir);  // a rule can only name what exists
  return run_process(argv, o);
}

namespace {
constexpr const char* kStampName = ".rooflab-configured";
}  // namespace

std::string configure_inputs(const BuildTree& tree) {
  std::string s = fmt::format("source {}\npreset {}\nbuild {}\n", tree.source_dir.string(), tree.preset,
                              tree.build_dir.string());
  for (const auto& [k, v] : tree.defs) s += fmt::format("-D{}={}\n", k, v);
  // What the compiler and package checks of a configure see.
  for (const char* var : {"CXX", "CC", "CUDACXX", "CUDAARCHS", "CMAKE_PREFIX_PATH", "CPATH", "LIBRARY_PATH",
                          "ROOFLAB_DEPS_PREFIX", "PATH", "ROOFLAB_HARNESS"}) {
    const char* v = std::getenv(var);
    s += fmt::format("env {}={}\n", var, v == nullptr ? "(unset)" : v);
  }
  // A student file that is missing when CMake configures is built from its lab's fallback (the stub, or the
  // solution): which files the student folder holds is read by a configure too (a grade of one lab's
  // submission leaves the other labs' files out of it).
  if (const auto it = tree.defs.find("ROOFLAB_STUDENT_DIR"); it != tree.defs.end() && !it->second.empty()) {
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::directory_iterator lab(it->second, ec), end; !ec && lab != end; lab.increment(ec)) {
      if (!lab->is_directory(ec)) continue;
      for (fs::directory_iterator f(lab->path(), ec); !ec && f != end; f.increment(ec)) {
        files.push_back("student file " + (lab->path().filename() / f->path().filename()).string());
      }
      ec.clear();
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) s += f + "\n";
  }
  // The hidden tests are globbed at configure time: a file added, removed or edited there changes the stamp.
  if (const auto it = tree.defs.find("ROOFLAB_HIDDEN_TESTS"); it != tree.defs.end() && !it->second.empty()) {
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::recursive_directory_iterator i(it->second, ec), end; !ec && i != end; i.increment(ec)) {
      if (!i->is_regular_file(ec)) continue;
      files.push_back("hidden " + file_identity(i->path()));
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) s += f + "\n";
  }
  return s;
}

std::optional<std::string> configure_needed(const BuildTree& tree) {
  for (const char* f : {"CMakeCache.txt", "build.ninja", kStampName}) {
    if (!fs::exists(tree.build_dir / f)) return fmt::format("its first configure: no {}", f);
  }
  if (read_all(tree.build_dir / kStampName) != configure_inputs(tree)) {
    return std::string("configured with other options before");
  }
  return std::nullopt;
}

void write_configure_stamp(const BuildTree& tree) {
  std::ofstream(tree.build_dir / kStampName, std::ios::binary | std::ios::trunc) << configure_inputs(tree);
}

ProcessResult configure_if_needed(const BuildTree& tree, bool echo, const std::optional<Sandbox>& sandbox,
                                  bool* configured) {
  const bool needed = configure_needed(tree).has_value();
  if (configured != nullptr) *configured = needed;
  if (!needed) {
    // CMake's own check: it configures again only if a CMake file or rubric it read has changed.
    ProcessOptions o;
    o.timeout_s = 600;
    o.echo = echo;
    o.sandbox = sandbox;
    ProcessResult r = run_process({"cmake", "--build", tree.build_dir.string(), "--target", "build.ninja"}, o);
    if (r.ok()) return r;
  }
  std::error_code ec;
  fs::remove(tree.build_dir / kStampName, ec);  // a configure that fails half way leaves no stamp
  ProcessResult r = configure(tree, echo, sandbox);
  if (r.ok()) write_configure_stamp(tree);
  return r;
}

std::string first_build_estimate(unsigned cores) {
  // Measured: the default preset's first build, about 28 core-minutes of compiling (14 minutes on 2 cores
  // shared with other work); a range, since load and the CUDA toolkit change it.
  cores = std::max(1u, cores);
  const double minutes = 28.0 / cores;
  const auto lo = static_cast<int>(std::max(1L, std::lround(minutes * 0.7)));
  const auto hi = static_cast<int>(std::lround(minutes * 1.45));
  return fmt::format("{}-{} minutes on {} core{}", lo, std::max(lo + 1, hi), cores, cores == 1 ? "" : "s");
}

bool first_build(const fs::path& build_dir) {
  std::error_code ec;
  return !fs::exists(build_dir / "labs" / "bin", ec) || fs::is_empty(build_dir / "labs" / "bin", ec);
}

ProcessResult build_target(const std::filesystem::path& build_dir, const std::string& target, bool echo,
                           const std::optional<Sandbox>& sandbox) {
  const unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  ProcessOptions o;
  o.timeout_s = 1800;
  o.echo = echo;
  o.sandbox = sandbox;
  // A progress line while it builds ("[12/57] lab01_emu"), on a terminal only: the first build of a tree
  // compiles the whole harness and takes minutes on 2 cores; later ones rebuild what an edit touched.
  static const bool tty = isatty(STDOUT_FILENO) != 0;
  bool shown = false;
  if (tty && !echo) {
    static const std::regex step(R"(^\[([0-9]+)/([0-9]+)\])");
    o.on_line = [&](const std::string& line) {
      std::smatch m;
      if (!std::regex_search(line, m, step)) return;
      std::printf("\r\033[K  [%s/%s] building %s", m[1].str().c_str(), m[2].str().c_str(), target.c_str());
      std::fflush(stdout);
      shown = true;
    };
  }
  ProcessResult r = run_process({"cmake", "--build", build_dir.string(), "--target", target, "-j", std::to_string(jobs)}, o);
  if (shown) std::printf("\r\033[K");
  return r;
}

TreeLock::TreeLock(const fs::path& build_dir) {
  fs::create_directories(build_dir);
  fd_ = open((build_dir / ".rooflab-lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("cannot lock the build tree {}: {}", build_dir.string(), std::strerror(errno)));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    std::printf("rooflab: another grader is using the build tree %s; waiting for it ...\n", build_dir.c_str());
    std::fflush(stdout);
    if (flock(fd_, LOCK_EX) != 0) {
      close(fd_);
      throw std::runtime_error(fmt::format("cannot lock the build tree {}: {}", build_dir.string(), std::strerror(errno)));
    }
  }
}

TreeLock::~TreeLock() { close(fd_); }

namespace {
// A compiler diagnostic ("file:12:5: error: ...", nvcc's "file.cu(12): error: ...", a linker's "undefined
// reference"), not the build tool's echo of a command line (which contains -Werror and file names that
// contain "error").
bool is_error_line(const std::string& l) {
  if (l.rfind("FAILED:", 0) == 0 || l.rfind("[", 0) == 0 || l.rfind("ninja:", 0) == 0) return false;
  const bool command = l.find(" -o ") != std::string::npos && (l.find(" -c ") != std::string::npos ||
                                                                l.find("-Werror") != std::string::npos);
  if (command) return false;
  return l.find("error:") != std::string::npos || l.find("error :") != std::string::npos ||
         l.find("undefined reference") != std::string::npos || l.find("fatal error") != std::string::npos;
}
}  // namespace

std::string compile_errors(const std::string& output, int max_lines) {
  std::istringstream in(output);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  int kept = 0;
  for (std::size_t i = 0; i < lines.size() && kept < max_lines; ++i) {
    const auto& l = lines[i];
    if (!is_error_line(l)) continue;
    // The error line and the two after it (the source line and the caret, under gcc and nvcc).
    for (std::size_t k = i; k < lines.size() && k < i + 3 && kept < max_lines; ++k, ++kept) out += lines[k] + "\n";
    i += 2;
  }
  if (out.empty()) out = tail_lines(output, max_lines);
  return out;
}

// ---- reading an upload ----

std::optional<std::string> read_student_file(const fs::path& root, const fs::path& rel, std::string& text) {
  if (rel.is_absolute()) return fmt::format("{} is an absolute path", rel.string());
  fs::path at = root;
  for (auto part = rel.begin(); part != rel.end(); ++part) {
    if (*part == "..") return fmt::format("{} has a `..` component", rel.string());
    at /= *part;
    if (std::next(part) == rel.end()) break;
    std::error_code ec;
    const auto st = fs::symlink_status(at, ec);
    if (fs::is_symlink(st)) return fmt::format("{} is a symbolic link", at.lexically_relative(root).string());
    if (!fs::is_directory(st)) return fmt::format("{} is not a directory", at.lexically_relative(root).string());
  }
  // Everything is decided on the opened file, so it cannot be swapped between the checks and the read.
  const int fd = open(at.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) return fmt::format("{} is a symbolic link (links are never followed)", rel.string());
    return fmt::format("{} cannot be read: {}", rel.string(), std::strerror(errno));
  }
  struct stat st{};
  std::optional<std::string> refused;
  if (fstat(fd, &st) != 0) {
    refused = fmt::format("{} cannot be read: {}", rel.string(), std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    refused = fmt::format("{} is not a regular file", rel.string());
  } else if (st.st_nlink > 1) {
    refused = fmt::format("{} has {} hard links (another name of it may lie outside the upload)", rel.string(),
                          st.st_nlink);
  } else if (static_cast<std::uintmax_t>(st.st_size) > kMaxStudentFileBytes) {
    refused = fmt::format("{} is {} bytes, over the limit of {} KiB per file", rel.string(), st.st_size,
                          kMaxStudentFileBytes >> 10);
  }
  text.clear();
  char buf[65536];
  for (ssize_t n; !refused && (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      refused = fmt::format("{} cannot be read: {}", rel.string(), std::strerror(errno));
    } else {
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > kMaxStudentFileBytes) refused = fmt::format("{} grew past the size limit", rel.string());
    }
  }
  close(fd);
  return refused;
}

// ---- the include policy ----

namespace {

// The logical lines of a C++ source as its preprocessor sees them: line continuations joined, comments
// replaced by a space (a block comment does not end a line), string, character and raw string literals kept
// whole (a "//" inside one is no comment, and a raw string may span lines). Each line keeps the number of its
// first physical line.
class LogicalLines {
 public:
  struct Line {
    int number;
    std::string text;
  };

  explicit LogicalLines(const std::string& text) : s_(text) {}

  // Returns false (and why) for source the compiler would reject anyway in ways that would make the scan
  // unreliable (a raw string literal that never ends).
  bool scan(std::vector<Line>& out, std::string& why) {
    Line cur{1, ""};
    while (peek() != '\0' || i_ < s_.size()) {
      const char c = peek();
      if (c == '\n') {
        advance();
        out.push_back(std::move(cur));
        cur = {line_, ""};
      } else if (c == '/' && peek2() == '/') {
        while (i_ < s_.size() && peek() != '\n') advance();
        cur.text += ' ';
      } else if (c == '/' && peek2() == '*') {
        advance();
        advance();
        while (i_ < s_.size() && !(peek() == '*' && peek2() == '/')) advance();
        advance();
        advance();
        cur.text += ' ';
      } else if (ident_start(c)) {
        std::string id;
        while (ident_char(peek())) {
          id += peek();
          advance();
        }
        cur.text += id;
        if (peek() == '"' && (id == "R" || id == "LR" || id == "uR" || id == "UR" || id == "u8R")) {
          if (!raw_string(cur.text, why)) return false;
        }
      } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && std::isdigit(static_cast<unsigned char>(peek2())))) {
        pp_number(cur.text);
      } else if (c == '"' || c == '\'') {
        quoted(c, cur.text);
      } else {
        cur.text += c;
        advance();
      }
    }
    out.push_back(std::move(cur));
    return true;
  }

 private:
  // The length of a backslash-newline at `i` (GCC also takes blanks between the two), 0 if there is none.
  std::size_t splice_at(std::size_t i) const {
    if (i >= s_.size() || s_[i] != '\\') return 0;
    std::size_t j = i + 1;
    while (j < s_.size() && (s_[j] == ' ' || s_[j] == '\t')) ++j;
    if (j < s_.size() && s_[j] == '\r') ++j;
    return j < s_.size() && s_[j] == '\n' ? j + 1 - i : 0;
  }
  char peek() {
    for (std::size_t n; (n = splice_at(i_)) != 0; i_ += n) ++line_;
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  char peek2() {
    peek();
    std::size_t j = i_ + 1;
    for (std::size_t n; (n = splice_at(j)) != 0;) j += n;
    return j < s_.size() ? s_[j] : '\0';
  }
  void advance() {
    peek();
    if (i_ >= s_.size()) return;
    if (s_[i_] == '\n') ++line_;
    ++i_;
  }
  static bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || static_cast<unsigned char>(c) >= 0x80;
  }
  static bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

  // A preprocessing number: 1'000'000 and 0x1p-3 are one token (a ' inside one opens no character literal).
  void pp_number(std::string& out) {
    while (true) {
      const char c = peek();
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (peek2() == '+' || peek2() == '-')) {
        out += c;
        advance();
        out += peek();
        advance();
      } else if (ident_char(c) || c == '.' || (c == '\'' && ident_char(peek2()))) {
        out += c;
        advance();
      } else {
        return;
      }
    }
  }

  // "..." or '...': ends at the closing quote or, unterminated, before the end of the line.
  void quoted(char quote, std::string& out) {
    out += quote;
    advance();
    while (i_ < s_.size()) {
      const char c = peek();
      if (c == '\n' || c == '\0') return;
      out += c;
      advance();
      if (c == quote) return;
      if (c == '\\' && peek() != '\n') {
        out += peek();
        advance();
      }
    }
  }

  // R"delim( ... )delim": line continuations are not joined inside (the standard reverts them there).
  bool raw_string(std::string& out, std::string& why) {
    advance();  // the quote
    const std::size_t open = s_.find('(', i_);
    const std::string delim = open == std::string::npos ? "" : s_.substr(i_, open - i_);
    if (open == std::string::npos || delim.size() > 16 ||
        delim.find_first_of(" \t\n\\)\"") != std::string::npos) {
      why = fmt::format("line {}: a raw string literal with an invalid delimiter", line_);
      return false;
    }
    const std::size_t close = s_.find(")" + delim + "\"", open);
    if (close == std::string::npos) {
      why = fmt::format("line {}: a raw string literal that never ends", line_);
      return false;
    }
    const std::size_t end = close + delim.size() + 2;
    for (std::size_t k = i_; k < end; ++k) {
      if (s_[k] == '\n') ++line_;
      out += s_[k] == '\n' ? ' ' : s_[k];
    }
    i_ = end;
    return true;
  }

  const std::string& s_;
  std::size_t i_ = 0;
  int line_ = 1;
};

std::string trim_blanks(const std::string& s) {  // spaces and tabs, not newlines
  const auto b = s.find_first_not_of(" \t\r\f\v");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\f\v") - b + 1);
}

// Why an included name is refused, or nullopt.
std::optional<std::string> refuse_include_name(const std::string& name, bool quoted, const fs::path& lab_dir) {
  if (name.empty()) return "an empty name";
  if (name.front() == '/') return "an absolute path";
  if (name.find('\\') != std::string::npos) return "a backslash in the name";
  const fs::path p(name);
  for (const auto& part : p) {
    if (part == "..") return "a `..` component";
    if (part == "solutions") return "a path into solutions/";
  }
  if (quoted) {
    std::error_code ec;
    if (name.find('/') != std::string::npos || !fs::is_regular_file(fs::symlink_status(lab_dir / name, ec))) {
      return fmt::format("\"{}\" is not a file of the lab; a quoted #include may name only the lab's own files "
                         "(such as \"lab.hpp\"), and <...> is for <rooflab/...>, system and CUDA headers", name);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> include_policy_violation(const std::string& text, const fs::path& lab_dir) {
  std::vector<LogicalLines::Line> lines;
  std::string why;
  if (!LogicalLines(text).scan(lines, why)) return why;
  for (const auto& line : lines) {
    const std::string code = trim_blanks(line.text);
    const auto refuse = [&](const std::string& reason) {
      return fmt::format("line {}: `{}`: {}", line.number, code, reason);
    };
    // The assembler reads files too: asm(".incbin \"...\"").
    for (const char* directive : {".incbin", ".include"}) {
      if (code.find(directive) != std::string::npos) return refuse(fmt::format("assembler {} is not allowed", directive));
    }
    std::size_t at = 0;
    if (code.rfind('#', 0) == 0) {
      at = 1;
    } else if (code.rfind("%:", 0) == 0) {  // the digraph of #
      at = 2;
    } else {
      continue;
    }
    std::string rest = trim_blanks(code.substr(at));
    std::size_t n = 0;
    while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
    const std::string directive = rest.substr(0, n);
    if (directive != "include" && directive != "include_next" && directive != "import" && directive != "embed") continue;
    rest = trim_blanks(rest.substr(n));
    const char open = rest.empty() ? '\0' : rest.front();
    const char close = open == '"' ? '"' : '>';
    const std::size_t end = rest.find(close, 1);
    if ((open != '"' && open != '<') || end == std::string::npos) {
      return refuse("the name of an #include must be written out (\"...\" or <...>), not come from a macro");
    }
    if (!trim_blanks(rest.substr(end + 1)).empty()) return refuse("text after the included name");
    if (auto bad = refuse_include_name(rest.substr(1, end - 1), open == '"', lab_dir)) return refuse(*bad);
  }
  return std::nullopt;
}

bool binary_uses(const Binary& binary, const std::string& student_file) {
  const bool kernels = fs::path(student_file).extension() == ".cu";
  return kernels ? binary.kind != "analytic" : binary.kind == "analytic";
}

std::vector<RefusedFile> check_student_files(const std::vector<const Lab*>& labs, const fs::path& student_dir) {
  std::vector<RefusedFile> refused;
  for (const Lab* lab : labs) {
    for (const auto& file : lab->student_files) {
      std::string text;
      auto why = read_student_file(student_dir, fs::path(lab->dir_name()) / file, text);
      if (!why) why = include_policy_violation(text, lab->dir);
      if (why) refused.push_back({lab->id, file, *why});
    }
  }
  return refused;
}

bool looks_like_stub(const std::string& text) {
  static const std::regex comment(R"(//[^\n]*|/\*[\s\S]*?\*/)");
  static const std::regex allowed(R"((ROOFLAB_TODO|rooflab::unused)\s*\([^;]*\)\s*;)");
  static const std::regex fence(R"(STUDENT BEGIN[^\n]*\n([\s\S]*?)//\s*STUDENT END)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), fence); it != std::sregex_iterator(); ++it) {
    std::string body = std::regex_replace((*it)[1].str(), comment, "");
    body = std::regex_replace(body, allowed, "");
    if (body.find_first_not_of(" \t\r\n") != std::string::npos) return false;
  }
  return true;
}

Stub committed_stub(const Lab& lab, const std::string& file) {
  Stub stub;
  const std::string shown = fmt::format("labs/{}/{}", lab.dir_name(), file);
  const ProcessResult git = run_process({"git", "-C", lab.dir.string(), "show", "HEAD:./" + file});
  if (git.ok()) {
    stub.text = git.output;
    stub.from = "the committed stub";
  } else {
    std::ifstream in(lab.dir / file, std::ios::binary);
    stub.text.assign(std::istreambuf_iterator<char>(in), {});
    stub.from = "the stub in labs/ (no git history to take it from)";
  }
  if (!looks_like_stub(stub.text)) {
    stub.why_not = fmt::format("{} is filled in ({}), so it is no stub: grading a missing file with it would give "
                               "its answers away; restore the course's stub (git checkout {})",
                               shown, git.ok() ? "committed so" : "in this checkout", shown);
    stub.text.clear();
  }
  return stub;
}

namespace {

// Writes `text` unless the file holds exactly that already: an unchanged student file keeps its time, so a
// grade again, or the next student of a class handing in the same file, does not compile it again.
void write_unless_same(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(path, ec)) && read_all(path) == text) return;
  fs::remove(path, ec);  // whatever else is there (nothing the grader wrote is a link, but be sure)
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Removes from `dest` (lab folders, and the files in them) whatever this assembly did not write: another
// student's file, another lab's folder.
void remove_unwritten(const fs::path& dest, const std::set<fs::path>& written) {
  std::error_code ec;
  for (const auto& lab : fs::directory_iterator(dest, ec)) {
    bool kept = false;
    for (const auto& f : fs::directory_iterator(lab.path(), ec)) {
      if (written.count(f.path()) != 0) {
        kept = true;
      } else {
        fs::remove_all(f.path(), ec);
      }
    }
    if (!kept) fs::remove_all(lab.path(), ec);
  }
}

}  // namespace

AssembledSubmission assemble_submission(const std::vector<const Lab*>& labs, const fs::path& submission,
                                        const fs::path& dest) {
  AssembledSubmission out;
  std::set<fs::path> written;
  // Files at the top of a submission graded for several labs belong to none: say where they must go.
  if (labs.size() > 1) {
    std::set<std::string> names;
    for (const Lab* lab : labs) names.insert(lab->student_files.begin(), lab->student_files.end());
    for (const auto& name : names) {
      std::error_code ec;
      if (fs::symlink_status(submission / name, ec).type() == fs::file_type::not_found) continue;
      std::vector<std::string> where;
      for (const Lab* lab : labs) where.push_back((fs::path(lab->dir_name()) / name).string());
      out.notes.push_back(fmt::format("{} is at the top of the submission, which grades {} labs: it was not graded. "
                                      "Put each lab's files in the lab's folder ({})",
                                      name, labs.size(), fmt::format("{}", fmt::join(where, ", "))));
    }
  }
  for (const Lab* lab : labs) {
    const fs::path out_dir = dest / lab->dir_name();
    fs::create_directories(out_dir);
    for (const auto& file : lab->student_files) {
      // Where it is: <lab dir>/<file>, or at the top when one lab is graded. A link counts as present (and
      // is refused below), so that it never silently falls back to another copy.
      const auto present = [&](const fs::path& rel) {
        std::error_code ec;
        return fs::symlink_status(submission / rel, ec).type() != fs::file_type::not_found;
      };
      fs::path rel = fs::path(lab->dir_name()) / file;
      if (!present(rel) && labs.size() == 1 && present(file)) rel = file;
      std::string text;
      std::optional<std::string> why;
      if (present(rel)) {
        why = read_student_file(submission, rel, text);
        if (!why) why = include_policy_violation(text, lab->dir);
        if (!why) {
          write_unless_same(out_dir / file, text);
          written.insert(out_dir / file);
          continue;
        }
        out.refused.push_back({lab->id, file, *why});
      }
      // Graded as the stub the course ships, never as what labs/ of this checkout holds.
      const Stub stub = committed_stub(*lab, file);
      const std::string as = stub.why_not ? "as a file that does not compile: " + *stub.why_not : "with " + stub.from;
      out.notes.push_back(why ? fmt::format("lab {}: {} was refused ({}); graded as missing, {}", lab->id, file, *why, as)
                              : fmt::format("lab {}: {} is not in the submission; graded {}", lab->id, file, as));
      const std::string no_stub = "#error \"not in the submission, and no stub to grade it with (see the report)\"\n";
      write_unless_same(out_dir / file, stub.why_not ? no_stub : stub.text);
      written.insert(out_dir / file);
    }
  }
  remove_unwritten(dest, written);
  return out;
}

}  // namespace rooflab::grader
