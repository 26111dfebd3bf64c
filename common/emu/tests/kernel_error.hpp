// What the CPU backend reports for a kernel bug that it reports by exception (a launch error, a divergent
// barrier, a changed canary): the message a student would see, or "" when `f` ran clean. Shared by the
// backend's self-tests.
#pragma once

#include <rooflab/emu/launch.hpp>

#include <cstdio>
#include <functional>
#include <string>

namespace emutest {

inline std::string kernel_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const rooflab::emu::KernelError& e) {
    std::fprintf(stderr, "[report] %s\n", e.what());  // the text a student would see
    return e.what();
  }
  return "";
}

}  // namespace emutest
