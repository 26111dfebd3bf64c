// Libraries a lab forbids: a student's compiled objects (the ones built from the lab's STUDENT_FILES) are
// read with `nm` for symbols of cuBLAS, cuDNN, CUTLASS, Thrust ... whatever the lab lists. A lab lists them
// as data, in its rubric.json:
//
//   "forbidden_symbols": [
//     {"library": "cuBLAS", "pattern": "^cublas"},
//     {"library": "Thrust", "pattern": "\\bthrust::"}]
//
// Each pattern is an ECMAScript regular expression searched in the demangled name of every symbol the
// student's object defines or needs (so `cublasSgemm_v2`, and `void thrust::sort<...>(...)` instantiated in
// it). A binary built from such an object is refused: every test in it loses its points with the symbol and
// the file named, and the lab gets one test, LabNNStatic.NoForbiddenLibraries (a 0-point check), that says
// what was found. What it does not see: a library reached through dlopen/dlsym, or its code pasted in.
#pragma once

#include "manifest.hpp"
#include "runner.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct ForbiddenLibrary {
  std::string library;  // "cuBLAS"
  std::string pattern;  // "^cublas"
};

// The lab's list (its rubric.json's "forbidden_symbols"); empty when it forbids nothing. Throws
// std::runtime_error naming the file for a malformed list or pattern.
std::vector<ForbiddenLibrary> forbidden_libraries(const Lab& lab);

// The objects of `binary` compiled from `student_file` in `build_dir` (kernels.cu.o, the CPU backend's
// kernels-<tag>.emu.cpp.o, answers.cpp.o); none for a binary that holds no student object (static).
std::vector<std::filesystem::path> student_objects(const std::filesystem::path& build_dir, const Lab& lab,
                                                   const Binary& binary, const std::string& student_file);

// What the student objects of `binary` use that the lab forbids, as one message naming each symbol, its
// library and the file ("" when nothing: also when the lab forbids nothing or nm cannot run).
std::string forbidden_symbols_in(const std::filesystem::path& build_dir, const Lab& lab, const Binary& binary);

// The lab's check as a test result (kind static, 0 points; nullopt when the lab forbids nothing): passed,
// or failed with every finding of the binaries in `binaries` that were built.
std::optional<TestResult> forbidden_symbols_check(const std::filesystem::path& build_dir, const Lab& lab,
                                                  const std::vector<Binary>& binaries);

}  // namespace rooflab::grader
