// The libraries a test process has actually loaded, against the ones its lab forbids (issue 24, family 3).
//
// The grader reads the names in a student's compiled objects (grader/symbols.hpp), and refuses the dynamic
// loader's entry points (dlopen, dlsym, ...) in every lab that forbids a library. What a process loads
// while it runs is the last word: at the end of every test, main() (test_main.cpp) lists the shared
// objects loaded in the process and fails the test during which one of a forbidden library's appeared
// (libcublas*.so under a GPU, even when reached through a route no symbol shows), naming it.
//
// A forbidden library the test binary itself was linked against is not the student's doing (the GPU
// binaries link cuBLAS for their baselines and calibration): an object counts as linked when it is in the
// DT_NEEDED closure of the executable, read from the loaded objects' dynamic sections. Anything else was
// loaded at run time (dlopen, by the student or on the student's behalf).
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab::loaded_libraries {

// The file-name prefixes of the shared objects that carry `library`, as a rubric's "forbidden_symbols"
// names it ("cuBLAS" -> libcublas, which covers libcublasLt); empty for a header-only library (CUTLASS,
// CuTe, Thrust, cuBLASDx) or one that is not a shared object.
std::vector<std::string> shared_object_prefixes(std::string_view library);

// The libraries a rubric forbids, by name ("cuBLAS", "cuDNN", ...); empty when it forbids none or cannot be read.
std::vector<std::string> forbidden_in_rubric(const std::string& rubric_path);

struct LoadedObject {
  std::string path;     // as the loader names it (the executable: "")
  bool linked = false;  // in the executable's DT_NEEDED closure, so loaded before any code ran
  std::string soname;   // its DT_SONAME: a renamed copy of libcublas still says libcublas.so.13
};

// Every object loaded in this process now: the loader's list (dl_iterate_phdr, in load order), then every
// other file mapped into the process (/proc/self/maps): what dlmopen put in a link-map namespace of its own,
// which the loader's list of this namespace does not show, or a library's file mapped by hand.
std::vector<LoadedObject> loaded_objects();

// One line per object in `loaded` that carries a library in `forbidden` (by file name or SONAME) and that the
// executable was not linked against: "libcublas.so.13 (cuBLAS, /usr/local/cuda/lib64/libcublas.so.13)".
std::vector<std::string> forbidden_loaded(const std::vector<LoadedObject>& loaded,
                                          const std::vector<std::string>& forbidden);

// The check as a GoogleTest listener. Append it after every other listener: listeners hear OnTestEnd in
// reverse order, so it runs first and its failure is the ending test's, seen by the report channel too.
class LoadedLibraryCheck : public ::testing::EmptyTestEventListener {
 public:
  explicit LoadedLibraryCheck(std::vector<std::string> forbidden) : forbidden_(std::move(forbidden)) {}
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  std::vector<std::string> forbidden_;
  std::set<std::string> reported_;  // a library stays loaded: only the test during which it appeared fails
};

}  // namespace rooflab::loaded_libraries
