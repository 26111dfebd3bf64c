// For a lab's static test binary: where the build put the PTX and ptxas report of the lab's kernels.
// rooflab_add_lab defines ROOFLAB_STATIC_DIR and ROOFLAB_STATIC_ARCHS ("80,90") for that binary only.
#pragma once

#include <rooflab/ptx.hpp>

#include <sstream>
#include <string>
#include <vector>

#if !defined(ROOFLAB_STATIC_DIR) || !defined(ROOFLAB_STATIC_ARCHS)
#error "rooflab/static_capture.hpp is for a lab's static test binary (rooflab_add_lab defines its paths)"
#endif

namespace rooflab::ptx {

// The architectures captured, as "sm_80", "sm_90".
inline std::vector<std::string> captured_archs() {
  std::vector<std::string> out;
  std::stringstream list(ROOFLAB_STATIC_ARCHS);
  for (std::string a; std::getline(list, a, ',');) out.push_back("sm_" + a);
  return out;
}

// The captured text of kernels.cu for one architecture: ext ".ptx" or ".ptxas.txt".
inline std::string captured(const std::string& arch, const char* ext) {
  return read_file(std::string(ROOFLAB_STATIC_DIR) + "/kernels." + arch + ext);
}

}  // namespace rooflab::ptx
