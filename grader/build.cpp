#include "build.hpp"

#include <fmt/format.h>

#include <sstream>
#include <thread>

namespace rooflab::grader {

ProcessResult configure(const BuildTree& tree, bool echo) {
  std::vector<std::string> argv = {"cmake", "-S", tree.source_dir.string(), "--preset", tree.preset,
                                   "-B", tree.build_dir.string()};
  for (const auto& [k, v] : tree.defs) argv.push_back(fmt::format("-D{}={}", k, v));
  ProcessOptions o;
  o.timeout_s = 600;
  o.echo = echo;
  o.cwd = tree.source_dir;
  return run_process(argv, o);
}

ProcessResult build_target(const std::filesystem::path& build_dir, const std::string& target, bool echo) {
  const unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  ProcessOptions o;
  o.timeout_s = 1800;
  o.echo = echo;
  return run_process({"cmake", "--build", build_dir.string(), "--target", target, "-j", std::to_string(jobs)}, o);
}

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

std::vector<std::string> assemble_submission(const std::vector<const Lab*>& labs,
                                             const std::filesystem::path& submission,
                                             const std::filesystem::path& dest) {
  namespace fs = std::filesystem;
  std::vector<std::string> notes;
  for (const Lab* lab : labs) {
    const fs::path out_dir = dest / lab->dir_name();
    fs::create_directories(out_dir);
    for (const auto& file : lab->student_files) {
      fs::path from = submission / lab->dir_name() / file;
      if (!fs::exists(from) && labs.size() == 1) from = submission / file;
      if (!fs::exists(from)) {
        from = lab->dir / file;
        notes.push_back(fmt::format("lab {}: {} is not in the submission; graded with the stub from labs/", lab->id, file));
      }
      fs::copy_file(from, out_dir / file, fs::copy_options::overwrite_existing);
    }
  }
  return notes;
}

}  // namespace rooflab::grader
