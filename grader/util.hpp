// The grader's shared helpers: exit codes, the time, whole-or-nothing writes, where the project and its build
// tree are, the seed check and the labs a command names. Every command and every stage of the pipeline uses
// them; they use none of those (tests/check_structure.cpp checks that nothing here reaches up).
#pragma once

#include "manifest.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

// Exit codes (README.md, "Instructors"): 0 ran (whatever the score), 1 a selftest or inspect that failed,
// 2 usage error, 3 the harness itself failed to build; 4 a command that needs a GPU found none.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitHarness = 3;
inline constexpr int kExitNoGpu = 4;

// The time now in UTC ("2026-11-23 18:45 UTC", with seconds when asked), for headers and logs.
std::string utc_now(bool seconds = false);
// The wall clock a student reads beside the terminal ("14:03:27"), in local time.
std::string local_clock();

// Writes `text` to `path` whole or not at all (a temporary file renamed into place), making its folder.
void write_text(const std::filesystem::path& path, const std::string& text);
// A file's bytes ("" when it cannot be read).
std::string read_all(const std::filesystem::path& path);
// "path size mtime" of a file (the path made absolute), "" when it cannot be read: what a cache key says of a
// file it depends on, so that an edited or replaced file is a new key.
std::string file_identity(const std::filesystem::path& path);
// A JSON file, parsed; null when it is missing or not JSON (a grade that died before writing it).
nlohmann::json read_json(const std::filesystem::path& path);

// The build tree this CLI was built in (where labs/ is built by default) and the project's source.
std::filesystem::path own_build_dir();
std::filesystem::path source_dir();

// Throws std::invalid_argument (a usage error) when the seed given, or else ROOFLAB_SEED, is not an unsigned
// integer (rooflab::parse_seed): a mistyped secret seed must not grade a class with seed 0.
void require_numeric_seed(const std::optional<std::string>& seed);

// The labs named (ids or names; invalid_argument for an unknown one: a usage error), or all of them.
std::vector<const Lab*> resolve_labs(const Manifest& manifest, const std::vector<std::string>& keys);

// A private directory for the per-process scratch directories of one command, removed at its end.
class ScratchRoot {
 public:
  ScratchRoot();
  ~ScratchRoot();
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace rooflab::grader
