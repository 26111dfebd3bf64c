// The symbol check's rule for a library reached at run time (symbols.hpp): in every lab that forbids a
// library, the dynamic loader is refused in the student's objects too, each symbol named with why.
#include "manifest.hpp"
#include "symbols.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {

const std::vector<ForbiddenLibrary> kCublas = {{"cuBLAS", "^cublas"}};

bool mentions(const std::vector<std::string>& findings, const std::string& text) {
  return std::ranges::any_of(findings, [&](const std::string& f) { return f.find(text) != std::string::npos; });
}

TEST(LoaderSymbols, EveryEntryPointIsRefusedWithWhy) {
  for (const char* name : {"dlopen", "dlmopen", "dlsym", "dlvsym", "dl_iterate_phdr", "syscall"}) {
    const auto findings = forbidden_findings(kCublas, "kernels.cu", {"main", name});
    ASSERT_EQ(findings.size(), 1u) << name;
    EXPECT_EQ(findings[0].rfind(std::string("kernels.cu uses ") + name + " (the dynamic loader: it ", 0), 0u) << findings[0];
    EXPECT_NE(findings[0].find("so no name in the compiled code says which library it reaches"), std::string::npos);
  }
  // A versioned reference (.symver) is the same function.
  EXPECT_TRUE(mentions(forbidden_findings(kCublas, "answers.cpp", {"dlsym@GLIBC_2.2.5"}), "uses dlsym@GLIBC_2.2.5"));
}

TEST(LoaderSymbols, OnlyTheLoadersOwnNames) {
  // The student's own functions that merely contain the words, and a lab that forbids nothing, pass.
  EXPECT_TRUE(forbidden_findings(kCublas, "kernels.cu", {"my_dlopen", "dlsym_cache", "lab04::dlopen(int)",
                                                          "syscalls_per_launch", "dladdr_x"}).empty());
  EXPECT_TRUE(forbidden_findings({}, "kernels.cu", {"dlopen", "dlvsym", "cublasSgemm_v2"}).empty());
  // The lab's own patterns still apply beside the loader's.
  const auto both = forbidden_findings(kCublas, "kernels.cu", {"cublasSgemm_v2", "dlopen"});
  EXPECT_EQ(both.size(), 2u);
  EXPECT_TRUE(mentions(both, "kernels.cu uses cublasSgemm_v2 (cuBLAS)"));
}

// The rule against code that replaces or works beside the harness: each family fires on what a cheat's object
// holds, and not on what the solutions' objects hold (weak inline definitions from the headers, references to
// the runtime, a process started by answers.cpp, which the subreaper reports instead).
TEST(Tampering, EachFamilyFiresOnItsSymbols) {
  const auto one = [](const std::string& file, Symbol s) { return tampering_findings(file, {std::move(s)}); };
  // The one finding for a symbol of that name (demangled the same) and nm type, containing `text`.
  const auto fires = [&](const std::string& file, const std::string& name, char type, const std::string& text) {
    const auto f = one(file, {name, name, type});
    return f.size() == 1 && f[0].find(text) != std::string::npos;
  };
  EXPECT_TRUE(fires("kernels.cu", "cudaEventElapsedTime", 'W',
                    "kernels.cu defines cudaEventElapsedTime (a function of the CUDA runtime"));
  EXPECT_TRUE(fires("answers.cpp", "cuLaunchKernel", 'T', "defines cuLaunchKernel"));
  EXPECT_TRUE(fires("kernels.cu", "nvmlDeviceGetClockInfo", 'T', "defines nvmlDeviceGetClockInfo"));
  EXPECT_TRUE(fires("kernels.cu", "clock_gettime", 'T', "(a C library clock"));
  EXPECT_TRUE(fires("kernels.cu", "getrandom", 'T', "kernels.cu defines getrandom (the source of randomness"));
  EXPECT_TRUE(fires("answers.cpp", "_ZNSt13random_device9_M_getvalEv", 'T', "the outputs it checks after timing"));
  EXPECT_TRUE(fires("kernels.cu", "_ZN7rooflab6timing7elapsedEv", 'T', "rooflab's harness or of GoogleTest"));
  EXPECT_TRUE(fires("answers.cpp", "_ZN7testing4Test3RunEv", 'T', "GoogleTest"));
  EXPECT_TRUE(fires("kernels.cu", "pthread_create", 'U', "kernels.cu uses pthread_create (starts a thread"));
  EXPECT_TRUE(fires("kernels.cu", "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
                    'U', "starts a thread"));
  EXPECT_TRUE(fires("kernels.cu", "posix_spawnp@GLIBC_2.15", 'U', "uses posix_spawnp"));
  EXPECT_TRUE(fires("kernels.cu", "GOMP_parallel", 'U', "starts a thread"));
  EXPECT_TRUE(fires("kernels.cu", "cudaStreamSetAttribute", 'U', "the persisting-L2 controls"));
  EXPECT_TRUE(fires("kernels.cu", "cudaCtxResetPersistingL2Cache", 'U', "persisting-L2"));
  EXPECT_TRUE(fires("kernels.cu", "_ZN7rooflab3emu6detail12device_clockEv", 'U', "reads a clock or sleeps"))
      << "clock64() on the CPU backend";
  EXPECT_TRUE(fires("kernels.cu", "_ZN7rooflab3emu6detail12device_sleepEj", 'U', "waits on purpose")) << "__nanosleep";
  EXPECT_TRUE(fires("kernels.cu", "clock", 'U', "kernels.cu uses clock (reads a clock or sleeps"));
  EXPECT_TRUE(fires("kernels.cu", "usleep@GLIBC_2.2.5", 'U', "uses usleep"));
  EXPECT_TRUE(fires("kernels.cu", "_ZNSt6chrono3_V212steady_clock3nowEv", 'U', "reads a clock or sleeps"));
  EXPECT_TRUE(fires("kernels.cu", "_ZNSt11this_thread11__sleep_forENSt6chrono8durationIlSt5ratioILl1ELl1EEEENS1_IlS2_ILl1ELl1000000000EEEE",
                    'U', "reads a clock or sleeps"));
  // GoogleTest's and the harness's machinery, named in any way (a cheat's fake result reporter that swallows every
  // failure, its explicit specialization of the function that records a compared value, weak), and the environment.
  const auto fires_as = [&](const std::string& file, const std::string& mangled, const std::string& demangled, char type,
                            const std::string& text) {
    const auto f = one(file, {mangled, demangled, type});
    return f.size() == 1 && f[0].find(text) != std::string::npos;
  };
  EXPECT_TRUE(fires_as("answers.cpp", "_ZN7testing32ScopedFakeTestPartResultReporterC1ENS0_13InterceptModeEPNS_19TestPartResultArrayE",
                       "testing::ScopedFakeTestPartResultReporter::ScopedFakeTestPartResultReporter(testing::"
                       "ScopedFakeTestPartResultReporter::InterceptMode, testing::TestPartResultArray*)",
                       'U', "answers.cpp names GoogleTest's or the harness's own machinery, which decides and records each test's verdict (a submission that names it can change a verdict): testing::ScopedFakeTestPartResultReporter::"));
  EXPECT_TRUE(fires_as("kernels.cu", "_ZTIN7testing31TestPartResultReporterInterfaceE",
                       "typeinfo for testing::TestPartResultReporterInterface", 'U',
                       ": typeinfo for testing::TestPartResultReporterInterface"));
  EXPECT_TRUE(fires_as("answers.cpp", "_ZN7rooflab7grading6detail17record_comparisonIddEEvSt17basic_string_viewIcSt11char_traitsIcEESt4spanIKT_Lm18446744073709551615EES8_IKT0_Lm18446744073709551615EENS0_9ToleranceE",
                       "void rooflab::grading::detail::record_comparison<double, double>(std::basic_string_view<char, "
                       "std::char_traits<char> >, std::span<double const, 18446744073709551615ul>, std::span<double "
                       "const, 18446744073709551615ul>, rooflab::grading::Tolerance)",
                       'W', "machinery, which decides and records each test's verdict (a submission that names it can change a verdict): void rooflab::grading::detail::record_comparison"));
  EXPECT_TRUE(fires_as("kernels.cu", "_ZN7rooflab6report5frameEc", "rooflab::report::frame(char)", 'U',
                       "machinery, which decides and records each test's verdict (a submission that names it can change a verdict): rooflab::report::frame(char)"));
  EXPECT_TRUE(fires("kernels.cu", "setenv@GLIBC_2.2.5", 'U', "kernels.cu uses the environment, where the grader's settings for the harness and the CPU backend are (the report channel, the record mode, the thread order): setenv"));
  EXPECT_TRUE(fires("answers.cpp", "getenv", 'U', "answers.cpp uses the environment, where"));
  EXPECT_TRUE(fires("answers.cpp", "environ", 'U', "thread order): environ"));
  EXPECT_TRUE(fires("answers.cpp", "getenv", 'T', "thread order): getenv"));
  // Many names of one family are one finding: its first three, then how many more.
  std::vector<Symbol> many;
  for (const char* n : {"getenv", "setenv", "putenv", "unsetenv", "environ"}) many.push_back({n, n, 'U'});
  const auto grouped = tampering_findings("answers.cpp", many);
  ASSERT_EQ(grouped.size(), 1u);
  EXPECT_NE(grouped[0].find(": getenv, setenv, putenv and 2 more"), std::string::npos) << grouped[0];
  // What the reference objects hold, and what is not this rule's.
  EXPECT_TRUE(one("answers.cpp", {"clock", "clock", 'U'}).empty()) << "answers.cpp times nothing";
  EXPECT_TRUE(one("kernels.cu", {"cudaEventElapsedTime", "cudaEventElapsedTime", 'U'}).empty()) << "a call";
  EXPECT_TRUE(one("kernels.cu", {"_Z10cudaMallocIfE9cudaErrorPPT_m", "cudaMalloc<float>(float**, unsigned long)",
                                 'W'}).empty())
      << "the runtime header's inline template";
  EXPECT_TRUE(one("kernels.cu", {"_ZN7rooflab19describe_cuda_errorB5cxx11E9cudaErrorPKcS2_i",
                                 "rooflab::describe_cuda_error(...)", 'W'}).empty())
      << "an inline function of the harness's headers";
  EXPECT_TRUE(one("kernels.cu", {"_ZGVZN7rooflab8sm_countEvE5count", "guard variable for rooflab::sm_count()::count",
                                 'u'}).empty());
  EXPECT_TRUE(one("kernels.cu", {"_ZN5lab014copyEPKfPfmP11CUstream_st", "lab01::copy(...)", 'T'}).empty())
      << "the student's own";
  EXPECT_TRUE(one("kernels.cu", {"__cudaRegisterFatBinary", "__cudaRegisterFatBinary", 'U'}).empty())
      << "what nvcc's host code calls";
  EXPECT_TRUE(one("kernels.cu", {"cudaLocalHelper", "cudaLocalHelper", 't'}).empty()) << "a local symbol";
  EXPECT_TRUE(one("answers.cpp", {"fork", "fork", 'U'}).empty()) << "answers.cpp: the subreaper's to report";
  EXPECT_TRUE(one("kernels.cu", {"getrandom", "getrandom", 'U'}).empty()) << "drawing randomness is no replacement";
  EXPECT_TRUE(one("answers.cpp", {"cudaStreamSetAttribute", "cudaStreamSetAttribute", 'U'}).empty());
  EXPECT_TRUE(one("kernels.cu", {"_ZN5lab017testing4stepEv", "lab01::testing::step()", 'T'}).empty())
      << "a namespace of the student's own called testing";
  EXPECT_TRUE(one("kernels.cu", {"_ZN10my_testing1fEv", "my_testing::f()", 'T'}).empty());
  EXPECT_TRUE(one("kernels.cu", {"_ZN7rooflab3emu6detail6launchEv", "rooflab::emu::detail::launch()", 'U'}).empty())
      << "the CPU backend's runtime";
}

// Every lab forbids some library, so every lab gets the rule; and none lists a loader symbol by hand (the
// rule is the one place: a second pattern would report the same symbol twice).
TEST(LoaderSymbols, EveryLabThatForbidsALibraryGetsTheRuleFromOnePlace) {
  const Manifest m = load_manifest(ROOFLAB_BUILD_DIR);
  ASSERT_FALSE(m.labs.empty());
  for (const auto& lab : m.labs) {
    const auto libraries = forbidden_libraries(lab);
    if (libraries.empty()) continue;
    EXPECT_TRUE(mentions(forbidden_findings(libraries, "kernels.cu", {"dlvsym"}), "uses dlvsym")) << lab.id;
    for (const auto& l : libraries) {
      for (const auto& s : loader_symbols()) {
        EXPECT_FALSE(std::regex_search(std::string(s.name), std::regex(l.pattern)))
            << "lab " << lab.id << " lists " << s.name << " in its rubric (" << l.library << ")";
      }
    }
  }
}

// A lab of one student file whose build tree is `build` (its rubric written by each test).
Lab lab09(const fs::path& build, const std::string& student_file) {
  Lab lab;
  lab.id = "09";
  lab.name = "dl";
  lab.student_files = {student_file};
  lab.rubric = build / "rubric.json";
  return lab;
}

// End to end on a compiled object (dl_fixture.cpp: dlvsym of cublasCreate_v2, no cuBLAS symbol), placed where
// CMake puts a lab's answers.cpp.o: the binary built from it is refused, naming dlvsym.
TEST(LoaderSymbols, ACompiledObjectThatLooksCublasUpIsRefused) {
  const fs::path build = fs::temp_directory_path() / ("rooflab-dl-" + std::to_string(::getpid()));
  const Lab lab = lab09(build, "answers.cpp");
  const Binary binary{"analytic", "lab09_analytic", build / "lab09_analytic", "", {}, {}};
  const fs::path dir = build / "labs" / lab.dir_name() / "CMakeFiles" / "lab09_analytic.dir";
  fs::create_directories(dir);
  fs::copy_file(ROOFLAB_DL_FIXTURE_OBJECT, dir / "answers.cpp.o");
  std::ofstream(lab.rubric) << R"({"lab": "09", "tests": []})";
  EXPECT_EQ(forbidden_symbols_in(build, lab, binary), "") << "a lab that forbids nothing";
  std::ofstream(lab.rubric) << R"({"lab": "09", "forbidden_symbols": [{"library": "cuBLAS", "pattern": "^cublas"}]})";
  const std::string found = forbidden_symbols_in(build, lab, binary);
  EXPECT_NE(found.find("refused: lab 09 forbids cuBLAS"), std::string::npos) << found;
  EXPECT_NE(found.find("answers.cpp uses dlvsym (the dynamic loader"), std::string::npos) << found;
  fs::remove_all(build);
}

// The CPU kinds of a variant link one object library of its kernels (objects_from in labs.json): the rule
// reads the student's wrapper object there, and would not see it in the binary's own folder alone.
TEST(LoaderSymbols, KernelsSharedByTheCpuKindsAreCheckedWhereTheyAreCompiled) {
  const fs::path build = fs::temp_directory_path() / ("rooflab-dl-shared-" + std::to_string(::getpid()));
  const Lab lab = lab09(build, "kernels.cu");
  const fs::path cmake_files = build / "labs" / lab.dir_name() / "CMakeFiles";
  const fs::path dir = cmake_files / "lab09_kernels_plain.dir" / "emu" / "lab09_kernels_plain";
  fs::create_directories(dir);
  fs::create_directories(cmake_files / "lab09_emu.dir");
  fs::copy_file(ROOFLAB_DL_FIXTURE_OBJECT, dir / "kernels-0123abcd.emu.cpp.o");
  std::ofstream(lab.rubric) << R"({"lab": "09", "forbidden_symbols": [{"library": "cuBLAS", "pattern": "^cublas"}]})";
  Binary own{"emu", "lab09_emu", build / "lab09_emu", "", {}, {}};
  EXPECT_EQ(forbidden_symbols_in(build, lab, own), "") << "nothing in the binary's own folder";
  Binary shared = own;
  shared.objects_from = {"lab09_kernels_plain"};
  EXPECT_EQ(student_objects(build, lab, shared, "kernels.cu").size(), 1u);
  const std::string found = forbidden_symbols_in(build, lab, shared);
  EXPECT_NE(found.find("kernels.cu uses dlvsym (the dynamic loader"), std::string::npos) << found;
  fs::remove_all(build);
}

// Device code the CPU backend never compiles (the device side of a __host__ __device__ function, another
// architecture's __CUDA_ARCH__ branch) is read in the PTX nvcc made of it: a clock read, a sleep or an L2
// eviction priority that keeps lines past the flush is named with its function and architecture; streaming
// hints, cp.async's prefetch size and a comment are not.
TEST(DeviceCode, EachFamilyFiresInThePtxNvccMade) {
  const std::string ptx = R"(//
// Generated by NVIDIA NVVM Compiler
// %clock64 named in a comment is no read
.visible .entry _ZN5lab071kILi1EEEvPf(
	.param .u64 _ZN5lab071kILi1EEEvPf_param_0
)
{
	mov.u64 	%rd4, %clock64;
	nanosleep.u32 %r1;
	ld.global.nc.L2::128B.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1];
	ld.global.L2::evict_first.f32 	%f5, [%rd2];
	cp.async.cg.shared.global.L2::128B [%r2], [%rd3], 16;
}
.func _ZN5lab075pacedEv()
{
	mov.u64 %rd7, %globaltimer;
	createpolicy.fractional.L2::evict_last.b64 %rd8, 1.0;
	ld.global.L2::evict_last.f32 	%f6, [%rd9];
}
)";
  const auto found = device_code_findings("kernels.cu", "sm_90", ptx);
  ASSERT_EQ(found.size(), 5u) << ::testing::PrintToString(found);
  EXPECT_TRUE(mentions(found, "kernels.cu, device code for sm_90 (nvcc's PTX), in void lab07::k<1>(float*): reads the "
                              "SM's clock")) << ::testing::PrintToString(found);
  EXPECT_TRUE(mentions(found, "in void lab07::k<1>(float*): sleeps (__nanosleep)"));
  EXPECT_TRUE(mentions(found, "in lab07::paced(): reads the SM's clock: a kernel that waits on purpose slows the "
                              "baseline of a ratio, which no lab asks for (%globaltimer)"));
  EXPECT_TRUE(mentions(found, "in lab07::paced(): keeps lines in L2 past the flush"));
  EXPECT_FALSE(mentions(found, "evict_first"));
  EXPECT_TRUE(device_code_findings("kernels.cu", "sm_80", "\tmov.u32 %r1, %clockwise;\n").empty())
      << "another name that starts like a clock's";
}

// Only a static binary's captures are read, from the folder labs.json names (capture_dir), and what
// they hold refuses the binary like an object's symbols do.
TEST(DeviceCode, AStaticBinarysPtxIsReadAndRefused) {
  const fs::path build = fs::temp_directory_path() / ("rooflab-ptx-" + std::to_string(::getpid()));
  const Lab lab = lab09(build, "kernels.cu");
  fs::create_directories(build / "labs" / "static" / "lab09");
  std::ofstream(lab.rubric) << R"({"lab": "09"})";
  std::ofstream(build / "labs" / "static" / "lab09" / "kernels.sm_80.ptx") << ".visible .entry k()\n{\n\tret;\n}\n";
  std::ofstream(build / "labs" / "static" / "lab09" / "kernels.sm_90.ptx")
      << ".visible .entry k()\n{\n\tmov.u64 %rd1, %clock64;\n}\n";
  std::ofstream(build / "labs" / "static" / "lab09" / "kernels.sm_90.ptxas.txt") << "ptxas info: %clock64\n";
  Binary stat{"static", "lab09_static", build / "lab09_static", "", {}, {}};
  stat.capture_dir = build / "labs" / "static" / "lab09";
  const auto ptx = student_ptx(stat);
  ASSERT_EQ(ptx.size(), 2u);
  EXPECT_EQ(ptx[1].file, "kernels.cu");
  EXPECT_EQ(ptx[1].arch, "sm_90");
  const std::string found = forbidden_symbols_in(build, lab, stat);
  EXPECT_NE(found.find("kernels.cu, device code for sm_90 (nvcc's PTX), in k: reads the SM's clock"), std::string::npos)
      << found;
  EXPECT_EQ(found.find("sm_80"), std::string::npos) << found;
  const Binary emu{"emu", "lab09_emu", build / "lab09_emu", "", {}, {}};
  EXPECT_TRUE(student_ptx(emu).empty()) << "a binary without a capture folder has no captures";
  fs::remove_all(build);
}

// nvcc's object of a kernels file and the CPU backend's must call the same functions of the CUDA runtime, its
// libraries and rooflab's harness, both ways; nvcc's launch machinery, the backend's own rooflab::emu:: calls and
// everything else (the C++ library, the C library, libm for the backend's kernel bodies) are not compared.
TEST(ApiCalls, EachBuildCallsWhatTheOtherCalls) {
  const auto sym = [](std::string name, char type = 'U', std::string demangled = {}) {
    return Symbol{name, demangled.empty() ? name : demangled, type};
  };
  const std::vector<Symbol> common = {sym("cudaGetLastError"), sym("_ZN7rooflab8grid_forEmjj", 'U', "rooflab::grid_for(unsigned long, unsigned int, unsigned int)")};
  std::vector<Symbol> nvcc = common, backend = common;
  for (const char* internal : {"__cudaPushCallConfiguration", "__cudaLaunchKernel", "__cudaRegisterFatBinary",
                               "cudaLaunchKernel", "atexit", "memset"}) {
    nvcc.push_back(sym(internal));
  }
  backend.push_back(sym("_ZN7rooflab3emu6detail8run_gridEPKv4dim3S3_mNS1_10ThreadBodyEPKc"));
  backend.push_back(sym("expf"));
  backend.push_back(sym("cudaStreamSynchronize", 'T'));  // a definition is tampering's to judge, not a call
  EXPECT_TRUE(api_findings("kernels.cu", nvcc, backend).empty()) << "the same calls, less each build's own";

  auto cheat = nvcc;
  cheat.push_back(sym("cudaStreamCreateWithFlags@libcudart.so.13"));
  cheat.push_back(sym("_ZN7rooflab10perf_scaleEv", 'U', "rooflab::perf_scale()"));
  const auto found = api_findings("kernels.cu", cheat, backend);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_TRUE(mentions(found, "kernels.cu: nvcc's build calls cudaStreamCreateWithFlags, which the CPU backend's build"))
      << found[0];
  EXPECT_TRUE(mentions(found, "nvcc's build calls rooflab::perf_scale()"));

  auto honest_only_here = backend;
  honest_only_here.push_back(sym("cudaMemsetAsync", 'w'));
  const auto other = api_findings("kernels.cu", nvcc, honest_only_here);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_TRUE(mentions(other, "the CPU backend's build calls cudaMemsetAsync, which nvcc's build of the same file does not"));
}

// End to end: nvcc's object of the kernels file lies in the static binary's capture folder (<stem>.nvcc.o) and
// the CPU backend's in the object library the binary links; the rule reads both, refuses what nvcc's object
// uses as it would the backend's (the dynamic loader, in a lab that forbids a library), and names the calls
// only nvcc's build makes.
TEST(ApiCalls, AStaticBinarysNvccObjectIsReadBesideTheBackendsObject) {
  const fs::path build = fs::temp_directory_path() / ("rooflab-api-" + std::to_string(::getpid()));
  const Lab lab = lab09(build, "kernels.cu");
  const fs::path capture = build / "labs" / "static" / "lab09";
  const fs::path shared = build / "labs" / lab.dir_name() / "CMakeFiles" / "lab09_kernels_plain.dir" / "emu" /
                          "lab09_kernels_plain";
  fs::create_directories(capture);
  fs::create_directories(shared);
  std::ofstream(lab.rubric) << R"({"lab": "09", "forbidden_symbols": [{"library": "cuBLAS", "pattern": "^cublas"}]})";
  fs::copy_file(ROOFLAB_DL_FIXTURE_OBJECT, shared / "kernels-0123abcd.emu.cpp.o");
  Binary stat{"static", "lab09_static", build / "lab09_static", "", {}, {}};
  stat.capture_dir = capture;
  stat.objects_from = {"lab09_kernels_plain"};
  EXPECT_TRUE(nvcc_objects(stat).empty());

  fs::copy_file(ROOFLAB_API_FIXTURE_OBJECT, capture / "kernels.nvcc.o");
  const auto objects = nvcc_objects(stat);
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].file, "kernels.cu");
  std::string found = forbidden_symbols_in(build, lab, stat);
  EXPECT_NE(found.find("kernels.cu: nvcc's build calls cudaStreamCreateWithFlags"), std::string::npos) << found;
  EXPECT_NE(found.find("nvcc's build calls rooflab::perf_scale()"), std::string::npos) << found;
  EXPECT_NE(found.find("or each build calls other functions"), std::string::npos) << found;

  fs::copy_file(ROOFLAB_DL_FIXTURE_OBJECT, capture / "kernels.nvcc.o", fs::copy_options::overwrite_existing);
  found = forbidden_symbols_in(build, lab, stat);
  EXPECT_NE(found.find("kernels.cu (as nvcc compiles it) uses dlvsym"), std::string::npos) << found;
  EXPECT_EQ(found.find("nvcc's build calls"), std::string::npos) << "the same object twice calls the same: " << found;
  fs::remove_all(build);
}

}  // namespace
