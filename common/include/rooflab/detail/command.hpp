// Running a tool and reading what it printed: for the few places rooflab's own code calls one (nm in the seed
// audit, nvdisasm in inspect). Host code, outside every sandbox decision (the caller's process is already in one).
#pragma once

#include <array>
#include <cstdio>
#include <string>

namespace rooflab::detail {

// `s` quoted for a POSIX shell (single quotes, each ' written as '\'').
inline std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The output of `command` run by the shell (its stdout; add 2>&1 for stderr too), and its exit status in
// *status (pclose's; -1 when it could not be started).
inline std::string command_output(const std::string& command, int* status) {
  std::string out;
  std::FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  std::array<char, 65536> buf{};
  for (std::size_t got; (got = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), got);
  *status = ::pclose(p);
  return out;
}

}  // namespace rooflab::detail
