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
// what was found.
//
// A library can also be reached by name while the program runs (dlopen("libcublas.so"), dlvsym(RTLD_DEFAULT,
// "cublasSgemm_v2", ...)), and then no name in the object says which. So every lab that forbids a library
// also refuses the dynamic loader in the student's objects: its entry points, its walks over the loaded
// objects and raw system calls (loader_symbols()), each named with why. Behind this rule stand two run-time
// ones: the CPU backend's cuBLAS is linked with hidden visibility (no lookup by name finds it), and each
// test binary fails a test during which a forbidden library was loaded (rooflab/detail/loaded_libraries.hpp).
// What none of these sees: a library's code pasted into the student's files.
//
// In every lab, whatever it forbids, the same objects are refused for what they do to the harness itself
// (tampering_findings, one table of families, issue "perf grades that the published exploits cannot fool"):
//   - a definition of a CUDA runtime, driver or NVML function (an unmangled cuda*, cu[A-Z]*, nvml* name): the
//     timer and the harness call them (cudaEventElapsedTime), and the executable's definition wins over the
//     library's;
//   - a strong definition of a function or object of rooflab's harness or GoogleTest (rooflab::, testing::),
//     which the linker would take instead of the harness's own; the inline ones the headers emit are weak;
//   - a definition of a C library clock (clock_gettime, gettimeofday ...) that the harness and the watchdog read;
//   - in the kernels (.cu) only: a thread or process started (pthread_create, std::thread, fork, posix_spawn,
//     system, OpenMP ...), work that would run beside a timed launch; answers.cpp runs in no timed binary, and
//     a process it leaves behind is the subreaper's to report;
//   - in the kernels only: the persisting-L2 controls (cudaStreamSetAttribute's access-policy window,
//     cudaDeviceSetLimit's carve-out, cudaCtxResetPersistingL2Cache), which keep data in L2 between samples.
// The CPU backend compiles a program nvcc's device pass would not: a __host__ __device__ function as host code,
// a device function's __CUDA_ARCH__ as 800 only. So the device code nvcc made of the student's kernels for each
// architecture the static binary captures (its PTX) is read too, for what the symbols above name in device code
// (device_code_findings): the SM's clocks, sleeps, and L2 priority hints that keep lines past the flush.
// And the host code nvcc compiles: the static capture compiles each kernels file with nvcc too (<stem>.nvcc.o), and
// that object is refused for what the backend's would be, and held to call what the backend's object of the same
// file calls (api_findings): a file that shows the two compilers different code by a type, not a directive, shows
// there.
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

// The dynamic loader's entry points and the loader's view of the process, refused in the student's objects
// of every lab that forbids a library: a name matches itself or a versioned reference to it ("dlsym@GLIBC_2.2.5").
struct LoaderSymbol {
  std::string_view name;  // "dlvsym"
  std::string_view why;   // what it gives code that a forbidden library needs
};
const std::vector<LoaderSymbol>& loader_symbols();

// What one student file's symbols (demangled) use that `libraries` forbid, plus the loader's symbols when
// `libraries` is not empty: one line each, "kernels.cu uses dlvsym (the dynamic loader: ...)".
std::vector<std::string> forbidden_findings(const std::vector<ForbiddenLibrary>& libraries, const std::string& file,
                                            const std::vector<std::string>& symbols);

// One symbol of an object as `nm -P` lists it: the name as in the object (mangled), demangled, and nm's type
// letter (U undefined, w weak undefined, T/D/B/R/... strong definitions, W/V/u weak or unique ones; lower case
// local, except w and u).
struct Symbol {
  std::string name;
  std::string demangled;
  char type = 'U';
};

// What one student file's symbols do to the harness (the families above): one line each, "kernels.cu defines
// cudaEventElapsedTime (a function of the CUDA runtime ...)". `file` is the student file's name: the families
// for kernels apply where it ends in .cu.
std::vector<std::string> tampering_findings(const std::string& file, const std::vector<Symbol>& symbols);

// What the device code nvcc made of one student file for one architecture (`ptx`, its PTX) does that the
// harness refuses: one line per kind and function, "kernels.cu, device code for sm_90 (nvcc's PTX), in
// lab07::gemv_kernel<1>: reads the SM's clock (%clock64) ...".
std::vector<std::string> device_code_findings(const std::string& file, const std::string& arch, std::string_view ptx);

// The PTX files nvcc made of the student's kernels for a static binary (<stem>.sm_XX.ptx in its capture_dir,
// labs.json), each with its student file and architecture; none for a binary without captures.
struct StudentPtx {
  std::filesystem::path path;
  std::string file;  // "kernels.cu"
  std::string arch;  // "sm_90"
};
std::vector<StudentPtx> student_ptx(const Binary& binary);

// The branches of the student's kernels files that nvcc and the CPU backend do not both compile, as the build's
// static capture found them (<stem>.branches.txt in a static binary's capture_dir, one finding a line:
// "kernels.cu:44: nvcc compiles these lines ... and the CPU backend does not ..."; common/emu/rewrite/branches.hpp).
// A capture whose findings file is missing says nothing (the static binary is not built without it).
std::vector<std::string> branch_findings(const Binary& binary);

// nvcc's own objects of the student's kernels files for a static binary (<stem>.nvcc.o in its capture_dir: the
// build compiles each file with nvcc as a GPU build would, host pass and all), each with its student file; none
// for a binary without captures. The symbol rule reads them as it reads the CPU backend's objects.
struct NvccObject {
  std::filesystem::path path;
  std::string file;  // "kernels.cu"
};
std::vector<NvccObject> nvcc_objects(const Binary& binary);

// What nvcc's object of one student file (`nvcc`) and the CPU backend's object of it (`backend`) do not both call,
// of the CUDA runtime, its libraries and driver (unmangled cuda*, cu[A-Z]*, cublas*, nvml* ... names) and of
// rooflab's harness (rooflab::, not the backend's own rooflab::emu::): one line per name, "kernels.cu: nvcc's build
// calls cudaStreamCreateWithFlags, which the CPU backend's build of the same file does not ...". Both compile the
// same host code (the launchers) from the same headers, so they call the same functions, less nvcc's own launch
// machinery (__cuda*, cudaLaunchKernel in its stubs); a file that shows each compiler other code (a type trait of
// threadIdx, which nvcc declares const and the backend cannot, deciding an `if constexpr`) calls other ones.
std::vector<std::string> api_findings(const std::string& file, const std::vector<Symbol>& nvcc,
                                      const std::vector<Symbol>& backend);

// The lab's list (its rubric.json's "forbidden_symbols"); empty when it forbids nothing. Throws
// std::runtime_error naming the file for a malformed list or pattern.
std::vector<ForbiddenLibrary> forbidden_libraries(const Lab& lab);

// The objects of `binary` compiled from `student_file` in `build_dir` (kernels.cu.o, the CPU backend's
// kernels-<tag>.emu.cpp.o, answers.cpp.o), in its own target or in the object libraries it links
// (Binary::objects_from); none for a binary that holds no student object.
std::vector<std::filesystem::path> student_objects(const std::filesystem::path& build_dir, const Lab& lab,
                                                   const Binary& binary, const std::string& student_file);

// What the student objects of `binary` use that the lab forbids, or do to the harness (tampering_findings), as
// one message naming each symbol, why, and the file ("" when nothing: also when nm cannot run).
std::string forbidden_symbols_in(const std::filesystem::path& build_dir, const Lab& lab, const Binary& binary);

// The lab's check as a test result (kind static, 0 points), LabNNStatic.NoForbiddenLibraries: passed, or
// failed with every finding of the binaries in `binaries` that were built.
std::optional<TestResult> forbidden_symbols_check(const std::filesystem::path& build_dir, const Lab& lab,
                                                  const std::vector<Binary>& binaries);

}  // namespace rooflab::grader
