#include "util.hpp"

#include <rooflab/testing/random.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace rooflab::grader {

namespace fs = std::filesystem;

std::string utc_now(bool seconds) {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, seconds ? "%Y-%m-%d %H:%M:%S UTC" : "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

std::string local_clock() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  return buf;
}

void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << text;
  }
  fs::rename(tmp, path);  // a reader (a class collection step, a rerun) never sees half a file
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string file_identity(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return {};
  const auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  if (ec) return {};
  return fmt::format("{} {} {}", fs::absolute(path, ec).string(), size, mtime);
}

nlohmann::json read_json(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_all(path));
  } catch (const std::exception&) {
    return nullptr;
  }
}

fs::path own_build_dir() { return ROOFLAB_BUILD_DIR; }

fs::path source_dir() { return ROOFLAB_SOURCE_DIR; }

void require_numeric_seed(const std::optional<std::string>& seed) {
  const char* env = std::getenv("ROOFLAB_SEED");
  const std::string text = seed ? *seed : env != nullptr ? env : "";
  if ((seed || (env != nullptr && *env != '\0')) && !rooflab::parse_seed(text)) {
    throw std::invalid_argument(fmt::format("{} \"{}\" is not a seed: give an unsigned integer (such as 918273)",
                                            seed ? "--seed" : "ROOFLAB_SEED", text));
  }
}

std::vector<const Lab*> resolve_labs(const Manifest& m, const std::vector<std::string>& keys) {
  std::vector<const Lab*> labs;
  for (const auto& key : keys) labs.push_back(&m.lab(key));  // invalid_argument: a usage error
  if (labs.empty()) {
    for (const auto& l : m.labs) labs.push_back(&l);
  }
  return labs;
}

ScratchRoot::ScratchRoot() {
  std::string pattern = (fs::temp_directory_path() / "rooflab-sandbox-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch directory in " + pattern);
  path_ = pattern;
}

ScratchRoot::~ScratchRoot() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace rooflab::grader
