// Line and branch coverage of the student's .cu files: see rooflab/detail/coverage.hpp.
#include <rooflab/detail/coverage.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

// libgcov's entry point that writes the counters now (GCC >= 11). Weak: a binary without --coverage has none.
extern "C" void __gcov_dump() __attribute__((weak));  // NOLINT(bugprone-reserved-identifier)

extern char** environ;

namespace rooflab::coverage {

namespace fs = std::filesystem;

#ifndef ROOFLAB_GCOV
#define ROOFLAB_GCOV "gcov"
#endif

bool instrumented() { return __gcov_dump != nullptr; }

std::optional<fs::path> begin() {
  if (!instrumented()) return std::nullopt;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/rooflab-coverage-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return std::nullopt;
  // libgcov reads these when it writes (GCC 12: allocate_filename_struct at dump time): every .gcda lands at
  // <dir>/<the object's absolute path>, never in the build tree (read-only in a grade, shared between runs).
  setenv("GCOV_PREFIX", templ.c_str(), 1);
  setenv("GCOV_PREFIX_STRIP", "0", 1);
  return fs::path(templ);
}

namespace {

// Runs argv, returns its standard output; throws when it cannot start or exits non-zero.
std::string run_capture(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    throw std::runtime_error(fmt::format("cannot run {}: {}", argv[0], std::generic_category().message(rc)));
  }
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(fmt::format("{} failed (status {})", argv[0], status));
  }
  return out;
}

bool reported_file(const std::string& path) {
  const auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.ends_with(s); };
  return ends(".cu") || ends(".cuh");
}

std::string trimmed_line(const std::string& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 0; i < line && std::getline(in, text); ++i) {
  }
  const auto b = text.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  text = text.substr(b);
  if (text.size() > 100) text = text.substr(0, 97) + "...";
  return text;
}

// A function-local static's declaration: its branch outcomes are the compiler's guard of the one-time
// initialization (another thread initializing it at the same moment, a constructor that throws), which no input
// reaches and no student could act on. A conditional in its initializer is the source's own, and still counts.
bool static_local_guard(const std::string& text) {
  return text.starts_with("static ") && text.find('?') == std::string::npos &&
         text.find("&&") == std::string::npos && text.find("||") == std::string::npos;
}

}  // namespace

void merge_gcov_json(const nlohmann::json& gcov, std::map<std::string, FileCounts>& files) {
  for (const auto& f : gcov.at("files")) {
    const std::string name = f.at("file").get<std::string>();
    if (!reported_file(name)) continue;
    FileCounts& counts = files[name];
    // A line appears once per function instance that has code on it (a template's instances, a kernel and
    // its launch stub): a line ran if any instance ran it, an outcome was taken if any instance took it.
    for (const auto& l : f.at("lines")) {
      LineCounts& c = counts[l.at("line_number").get<int>()];
      c.count += l.at("count").get<long long>();
      std::size_t k = 0;
      for (const auto& b : l.value("branches", nlohmann::json::array())) {
        if (b.value("throw", false)) continue;  // the edge an exception would take: not the source's branch
        if (c.outcomes.size() <= k) c.outcomes.resize(k + 1, 0);
        c.outcomes[k++] += b.at("count").get<long long>();
      }
    }
  }
}

std::vector<Gap> gaps_of(const std::map<std::string, FileCounts>& files) {
  std::vector<Gap> out;
  for (const auto& [file, lines] : files) {
    bool in_run = false;  // out.back() is a never-run stretch that the next never-run line extends
    for (const auto& [line, c] : lines) {
      if (c.count == 0) {
        // Consecutive instrumented lines that never ran are one stretch (lines in between hold no code).
        if (in_run) {
          out.back().last = line;
        } else {
          out.push_back({file, line, line, 0, 0, trimmed_line(file, line), ""});
          in_run = true;
        }
        continue;
      }
      in_run = false;
      const auto untaken = std::count(c.outcomes.begin(), c.outcomes.end(), 0LL);
      if (untaken > 0 && !static_local_guard(trimmed_line(file, line))) {
        out.push_back({file, line, line, static_cast<int>(untaken), static_cast<int>(c.outcomes.size()),
                       trimmed_line(file, line), ""});
      }
    }
  }
  return out;
}

std::vector<Gap> collect(const fs::path& dir) {
  if (__gcov_dump != nullptr) __gcov_dump();
  std::map<std::string, FileCounts> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().extension() != ".gcda") continue;
    // The notes file (.gcno) the compiler wrote beside the object, copied beside the counters for gcov.
    const fs::path gcda = it->path();
    fs::path gcno = "/" / gcda.lexically_relative(dir);
    gcno.replace_extension(".gcno");
    fs::copy_file(gcno, fs::path(gcda).replace_extension(".gcno"), fs::copy_options::overwrite_existing, ec);
    if (ec) throw std::runtime_error(fmt::format("cannot read the coverage notes {}: {}", gcno.string(), ec.message()));
    const std::string json = run_capture({ROOFLAB_GCOV, "--json-format", "--stdout", "--branch-counts",
                                          "--object-directory", gcda.parent_path().string(), gcda.string()});
    try {
      merge_gcov_json(nlohmann::json::parse(json), files);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}'s output for {} is not the JSON it should be: {}", ROOFLAB_GCOV,
                                           gcda.string(), e.what()));
    }
  }
  if (ec) throw std::runtime_error(fmt::format("cannot read {}: {}", dir.string(), ec.message()));
  return gaps_of(files);
}

void end(const fs::path& dir) {
  // Written now, so that nothing is written after the directory is gone (libgcov writes once per process).
  if (__gcov_dump != nullptr) __gcov_dump();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

std::vector<std::string> apply_allow_list(std::vector<Gap>& gaps, const nlohmann::json& allow) {
  std::vector<std::string> stale;
  if (!allow.is_object() || !allow.contains("allow") || !allow.at("allow").is_array()) {
    throw std::invalid_argument("a coverage allow list is {\"allow\": [{\"line\": ..., \"why\": ...}]}");
  }
  for (const auto& entry : allow.at("allow")) {
    const std::string line = entry.at("line").get<std::string>();
    const std::string why = entry.at("why").get<std::string>();
    if (line.empty() || why.empty()) throw std::invalid_argument("an allow entry needs a line and a reason");
    bool used = false;
    for (auto& g : gaps) {
      if (g.text.find(line) == std::string::npos) continue;
      g.allowed_by = why;
      used = true;
    }
    if (!used) stale.push_back(line);
  }
  return stale;
}

std::string describe(const std::vector<Gap>& gaps) {
  std::string out;
  for (const auto& g : gaps) {
    const std::string where = fs::path(g.file).filename().string() + ":" +
                              (g.last > g.first ? fmt::format("{}-{}", g.first, g.last) : std::to_string(g.first));
    if (g.untaken == 0) {
      out += fmt::format("  {} never run: `{}`", where, g.text);
    } else {
      out += fmt::format("  {}: {} of {} branch outcomes never taken: `{}`", where, g.untaken, g.outcomes, g.text);
    }
    if (!g.allowed_by.empty()) out += " (allowed: " + g.allowed_by + ")";
    out += "\n";
  }
  return out;
}

nlohmann::json to_json(const std::vector<Gap>& gaps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : gaps) {
    out.push_back({{"file", g.file}, {"first", g.first}, {"last", g.last}, {"untaken", g.untaken},
                   {"outcomes", g.outcomes}, {"text", g.text}});
  }
  return out;
}

std::vector<Gap> from_json(const nlohmann::json& j) {
  std::vector<Gap> out;
  for (const auto& g : j) {
    out.push_back({g.at("file").get<std::string>(), g.at("first").get<int>(), g.at("last").get<int>(),
                   g.at("untaken").get<int>(), g.at("outcomes").get<int>(), g.at("text").get<std::string>(), ""});
  }
  return out;
}

}  // namespace rooflab::coverage
