// What a stub does: fail loudly, in every build type, naming the lab and step.
//
//   void copy(const float* a, float* c, std::size_t n, cudaStream_t s) { ROOFLAB_TODO("lab01.copy", a, c, n, s); }
//
// The arguments after the step name are the stub's parameters: naming them keeps the stub free of
// "unused parameter" warnings (CI builds with warnings as errors).
//
// (assert(false) would vanish in Release builds, and a stub that silently returns looks like a wrong answer.)
#pragma once

#include <stdexcept>
#include <string>

namespace rooflab {

class NotImplemented : public std::logic_error {
 public:
  explicit NotImplemented(const std::string& step)
      : std::logic_error("not implemented: " + step + " (the student file still holds the stub)"), step_(step) {}
  const std::string& step() const noexcept { return step_; }

 private:
  std::string step_;
};

template <typename... Unused>
[[noreturn]] void not_implemented(const char* step, const Unused&... /*parameters*/) {
  throw NotImplemented(step);
}

}  // namespace rooflab

#define ROOFLAB_TODO(...) ::rooflab::not_implemented(__VA_ARGS__)
