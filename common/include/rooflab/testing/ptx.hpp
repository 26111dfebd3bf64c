// Facts of the compiled code, read without a GPU: the PTX (`nvcc -ptx`) and the ptxas resource report
// (`-Xptxas -v`) that the build captures for every lab's kernels. The static tests and `rooflab inspect`
// read them: registers, spills, shared memory, the widest global load and store, tensor-core instructions.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rooflab::ptx {

std::string demangle(const std::string& mangled);

// One kernel's line of the ptxas report.
struct Resources {
  std::string mangled;
  std::string name;  // demangled
  std::string arch;  // sm_80
  int registers = 0;
  int barriers = 0;
  int stack_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int smem_bytes = 0;  // static shared memory
  int cmem0_bytes = 0;
};
std::vector<Resources> parse_ptxas_report(std::string_view text);

// One `.entry` of a PTX file.
struct Kernel {
  std::string mangled;
  std::string name;  // demangled
  std::string body;    // the text between the entry's braces
  std::string params;  // the text between the entry's parentheses: its .param declarations
  int max_threads = 0;  // .maxntid's threads (the product of its dimensions: __launch_bounds__'s first argument); 0: none
};
std::vector<Kernel> parse_ptx(std::string_view text);
// Each parameter's offset and size in an entry's parameter list (Kernel::params: ".param .u64 .ptr .align 1
// k_param_0, ..."), in order, each at its alignment (a pointer's .align is its pointee's, not its own).
std::vector<std::pair<int, int>> param_layout(std::string_view params);

struct Facts {
  int widest_global_load_bits = 0;   // 128 = ld.global.v4.f32 and friends
  int widest_global_store_bits = 0;
  int global_loads = 0;
  int global_stores = 0;
  bool uses_shared = false;
  bool uses_tensor_cores = false;  // wmma.* or mma.sync / wgmma
  int fma_f32 = 0;                  // fma.rn.f32 instructions (the FMA chains of an FP32 kernel)
  int count(std::string_view opcode_prefix) const;
  std::string body;
};
Facts facts(const Kernel& kernel);

// Width in bits of a load/store opcode such as "ld.global.nc.v4.f32" (vector count x element bits).
int access_bits(std::string_view opcode);

// Why a kernel is not in the compiled code, and why one that is holds no work: the words of find_kernel's and
// find_written_kernel's errors, and of `rooflab inspect`'s rows for such kernels.
inline constexpr const char* kNotCompiledWhy =
    "not in the compiled code yet: write its launcher (a template kernel is compiled only where a launcher "
    "instantiates it)";
inline constexpr const char* kNoWorkWhy =
    "its compiled code reads and writes no global memory (a stub's empty body, or a kernel that stores nothing, "
    "whose work the compiler deletes)";
// What find_kernel throws when no kernel matches: usually not an error of the grader's, since a template kernel is
// compiled only where a launcher instantiates it (a stub launcher leaves no trace of it). `rooflab inspect` shows
// such a kernel as not written yet and goes on with the others.
struct NotCompiled : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The kernel whose demangled name contains `needle` (e.g. "triad_vec4_kernel"); throws if none (NotCompiled) or
// several (std::runtime_error).
const Kernel& find_kernel(const std::vector<Kernel>& kernels, std::string_view needle);
// Whether the compiled code reads or writes global memory at all (loads, stores, atomics). A kernel that does not is
// not written yet: a stub's empty body, or a kernel that stores nothing, whose work the compiler deletes.
bool touches_global_memory(const Facts& f);
// find_kernel for a hint about what a kernel's code does: throws "... is not implemented yet" when its compiled
// body touches no global memory (a stub's empty body, or a kernel that stores nothing, so the compiler deleted
// its work), instead of hints about loads or FMAs that a kernel not written yet cannot have.
const Kernel& find_written_kernel(const std::vector<Kernel>& kernels, std::string_view needle);
const Resources& find_resources(const std::vector<Resources>& all, std::string_view needle);
// The ptxas entry of that kernel instance (its name as parse_ptx gives it); throws if none.
const Resources& resources_of(const std::vector<Resources>& all, const Kernel& kernel);

// The kernels one call of a launcher started. A hint about compiled code (tensor-core instructions, 128-bit
// loads) is about a kernel the launcher runs: a WMMA kernel compiled beside a launcher that runs a CUDA-core
// one must not earn it. The static tests learn these by running the launcher on the CPU backend
// (rooflab/testing/static_capture.hpp, launched_by).
struct Launched {
  std::string launcher;              // what was called, as the hint names it: "lab05::flash_attention_fp16 at head dim 64"
  std::vector<std::string> kernels;  // demangled, as the CPU backend names them
};
// Whether a PTX entry's demangled name and a CPU-backend kernel name are the same kernel instance (the
// return type, the parameter list and internal-linkage prefixes aside).
bool same_kernel(std::string_view ptx_name, std::string_view launched_name);
// find_kernel, for a kernel the launcher started; throws "<needle> was compiled but never launched by
// <launcher>" (with what it did launch) otherwise. Where several instances of a template match `needle` (a kernel
// with a VEC flag, instantiated for both paths), the one the launcher started.
const Kernel& find_launched_kernel(const std::vector<Kernel>& kernels, std::string_view needle, const Launched& launched);
// find_kernel where several instances may match `needle`: the one among them that `launched` names (demangled, as
// the CPU backend or a run's file names kernels; the first named wins). Where several match and `launched` names none
// of them (a file that names kernels by the registry's name), throws, listing both; with no launches at all,
// find_kernel's answer (and its error where several match).
const Kernel& find_kernel_launched(const std::vector<Kernel>& kernels, std::string_view needle,
                                   const std::vector<std::string>& launched);

std::string read_file(const std::filesystem::path& path);  // throws with the path when missing

}  // namespace rooflab::ptx
