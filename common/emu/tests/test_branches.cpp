// The comparison of the branches nvcc and the CPU backend compile (common/emu/rewrite/branches.hpp), on
// preprocessed texts written here as GCC writes them with -E -fdirectives-only, and the rewriter's list of where
// each directive stands (rooflab_emu_rewrite, run on a file written here).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "../rewrite/branches.hpp"

namespace br = rooflab::emu::branches;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  return br::split_lines(in);
}

std::set<int> kept(const std::string& preprocessed, int max_line) {
  std::istringstream in(preprocessed);
  return br::kept_lines(in, [](const std::string& name) { return name == "k.cu"; }, max_line);
}

// A file with a host/device split (lines 3 and 5), a segment only one side of each pair keeps (8 and 10), and
// the text around them.
const std::string kSource =
    "__global__ void k(float* y) {\n"  // 1
    "#ifdef __CUDA_ARCH__\n"            // 2
    "  y[0] = 1;\n"                     // 3
    "#else\n"                           // 4
    "  y[0] = 2;\n"                     // 5
    "#endif\n"                          // 6
    "#if WHO_KNOWS\n"                   // 7
    "  y[1] = 3;  // half the work\n"   // 8
    "#else\n"                           // 9
    "  y[1] = 4;\n"                     // 10
    "#endif\n"                          // 11
    "}\n";                              // 12

}  // namespace

TEST(Branches, SegmentsAreCutAtConditionalsAndContinuedDirectives) {
  const auto segments = br::conditional_segments(lines_of(kSource));
  ASSERT_EQ(segments.size(), 6u);
  EXPECT_EQ(segments[0].first, 1);
  EXPECT_EQ(segments[0].last, 1);
  EXPECT_EQ(segments[1].first, 3);
  EXPECT_EQ(segments[2].first, 5);
  EXPECT_EQ(segments[3].first, 8);
  EXPECT_EQ(segments[4].first, 10);
  EXPECT_EQ(segments[4].last, 10);
  EXPECT_EQ(segments[5].first, 12);
  // A continued #if ends on its last line; a segment of blanks is no segment; #define leaves a trace.
  const auto more =
      br::conditional_segments(lines_of("#if A && \\\n   B\nx;\n#endif\n\n#if C\n\n#endif\n#define Q 1\n"));
  ASSERT_EQ(more.size(), 2u);
  EXPECT_EQ(more[0].first, 3);
  EXPECT_EQ(more[0].last, 3);
  EXPECT_EQ(more[1].first, 9);
}

TEST(Branches, KeptLinesFollowTheMarkersAndCountIncludes) {
  const std::string ii =
      "# 1 \"k.cu\"\n"
      "a;\n"                          // 1
      "\n"                            // 2 (dropped)
      "# 1 \"other.h\" 1\n"          // an #include at line 3 of k.cu
      "b;\n"
      "# 4 \"k.cu\" 2\n"
      "c;\n"                          // 4
      "# 9 \"k.cu\"\n"
      "d;\n"                          // 9 (past max_line: the rewriter's own)
      "e;\n";
  EXPECT_EQ(kept(ii, 8), (std::set<int>{1, 3, 4}));
  EXPECT_EQ(kept(ii, 20), (std::set<int>{1, 3, 4, 9, 10}));
}

TEST(Branches, OnlyCodeOneCompilerAloneKeepsIsADifference) {
  const auto lines = lines_of(kSource);
  const auto segments = br::conditional_segments(lines);
  // nvcc: host pass 1, 5, 8, 12; device pass 1, 3, 8, 12. The backend takes the device side in a kernel (3).
  const std::set<int> host{1, 5, 8, 12}, device{1, 3, 8, 12};
  EXPECT_TRUE(br::differences("k.cu", lines, segments, host, device, {1, 3, 8, 12}, "sm_80").empty());
  EXPECT_TRUE(br::differences("k.cu", lines, segments, host, device, {1, 5, 8, 12}, "sm_80").empty())
      << "either side of nvcc's own host/device split stands";
  // The backend drops what both of nvcc's passes keep, and keeps what neither does.
  const auto found = br::differences("k.cu", lines, segments, host, device, {1, 3, 10, 12}, "sm_80");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(found[0].find("k.cu:8 (`y[1] = 3;  // half the work`): nvcc compiles these lines"), std::string::npos)
      << found[0];
  EXPECT_NE(found[1].find("k.cu:10 (`y[1] = 4;`): the CPU backend compiles these lines and nvcc does not"),
            std::string::npos)
      << found[1];
}

TEST(Branches, EachSegmentIsHeldToThePassThatDecidesIt) {
  const auto lines = lines_of(kSource);
  const auto segments = br::conditional_segments(lines);
  // Both conditionals stand in the kernel's body: the backend must keep what nvcc's device pass keeps.
  const br::Contexts in_kernel{{2, 'd'}, {4, 'd'}, {6, 'd'}, {7, 'd'}, {9, 'd'}, {11, 'd'}};
  const std::set<int> host{1, 5, 8, 12}, device{1, 3, 8, 12};
  EXPECT_TRUE(br::differences("k.cu", lines, segments, host, device, {1, 3, 8, 12}, "sm_80", in_kernel).empty());
  // The host side of the split in a kernel, which nvcc's device pass drops: the backend took the wrong pass.
  const auto host_side = br::differences("k.cu", lines, segments, host, device, {1, 5, 8, 12}, "sm_80", in_kernel);
  ASSERT_EQ(host_side.size(), 2u);
  EXPECT_NE(host_side[0].find("k.cu:3 (`y[0] = 1;`): nvcc's device pass for sm_80 compiles these lines"),
            std::string::npos)
      << host_side[0];
  // A segment only the device pass keeps (a macro standing for __CUDA_ARCH__, which the rewriter does not see
  // through): in a __host__ __device__ function either answer stands, in a kernel the backend must keep it.
  const std::set<int> only_device{1, 3, 8, 10, 12}, no_device_only{1, 3, 10, 12};
  const br::Contexts in_both{{2, 'b'}, {4, 'b'}, {6, 'b'}, {7, 'b'}, {9, 'b'}, {11, 'b'}};
  const std::set<int> host_drops{1, 5, 10, 12};
  const auto in = [&](const br::Contexts& contexts) {
    return br::differences("k.cu", lines, segments, host_drops, only_device, no_device_only, "sm_80", contexts);
  };
  EXPECT_TRUE(in(in_both).empty());
  const auto found = in(in_kernel);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("k.cu:8 (`y[1] = 3;  // half the work`): nvcc's device pass"), std::string::npos) << found[0];
  // At file scope (no entry: the file's start) the backend keeps what either pass keeps: it lacks 3 (the device
  // pass's) and 8 (the host pass's), and keeps 10, which neither keeps.
  const br::Contexts elsewhere{{99, 'h'}};
  const std::set<int> host_keeps{1, 5, 8, 12}, backend_keeps{1, 5, 10, 12};
  EXPECT_EQ(br::differences("k.cu", lines, segments, host_keeps, device, backend_keeps, "sm_80", elsewhere).size(), 3u);
}

TEST(Branches, TheRewriterListsWhereEachDirectiveStands) {
  const std::string dir = ::testing::TempDir();
  const std::string cu = dir + "/rooflab_branches_contexts.cu", out = dir + "/rooflab_branches_contexts.cpp";
  {
    std::ofstream f(cu);
    f << "#include <cstdio>\n"                                   // 1: file scope
         "__global__ void k(float* y) {\n"                      // 2
         "#ifdef __CUDA_ARCH__\n"                                // 3: a kernel's body
         "  y[0] = 1;\n"
         "#endif\n"                                              // 5
         "}\n"
         "__host__ __device__ inline float h(float x) {\n"      // 7
         "#if defined(__CUDA_ARCH__)\n"                          // 8: both
         "  return x;\n"
         "#else\n"                                               // 10
         "  return -x;\n"
         "#endif\n"                                              // 12
         "}\n"
         "void launch(float* y) {\n"                             // 14
         "#if 1\n"                                               // 15: a host function
         "  k<<<1, 1>>>(y);\n"
         "#endif\n"                                              // 17
         "}\n";
  }
  ASSERT_EQ(std::system(("\"" ROOFLAB_EMU_REWRITE_TOOL "\" \"" + cu + "\" \"" + out + "\" --contexts \"" + out +
                         ".contexts\"").c_str()),
            0);
  std::ifstream listed(out + ".contexts");
  const br::Contexts contexts = br::directive_contexts(listed);
  const br::Contexts expected{{1, 'f'}, {3, 'd'}, {5, 'd'}, {8, 'b'}, {10, 'b'}, {12, 'b'}, {15, 'h'}, {17, 'h'}};
  EXPECT_EQ(contexts, expected);
}

// At file scope nvcc's device pass keeps declarations its host pass drops (a __device__ helper under
// `#if __CUDA_ARCH__ >= 700`, a specialization for sm_80). The rewriter keeps a group with no alternative where
// either pass keeps it; a group with an #else takes the host pass's branch, and its device side is a finding.
TEST(Branches, AtFileScopeTheBackendKeepsWhatEitherPassKeeps) {
  const std::string source =
      "#if __CUDA_ARCH__ >= 700  // Volta and later\n"       // 1
      "__device__ int twice(int x) { return 2 * x; }\n"      // 2
      "#endif\n"                                             // 3
      "#ifdef __CUDA_ARCH__\n"                               // 4
      "__device__ int pick() { return 1; }\n"                // 5
      "#else\n"                                              // 6
      "__device__ int pick() { return 2; }\n"                // 7
      "#endif\n"                                             // 8
      "#ifndef __CUDA_ARCH__\n"                              // 9
      "static int host_side() { return 3; }\n"               // 10
      "#endif\n";                                            // 11
  const std::string dir = ::testing::TempDir();
  const std::string cu = dir + "/rooflab_branches_file_scope.cu", out = dir + "/rooflab_branches_file_scope.cpp";
  std::ofstream(cu) << source;
  ASSERT_EQ(std::system(("\"" ROOFLAB_EMU_REWRITE_TOOL "\" \"" + cu + "\" \"" + out + "\" --contexts \"" + out +
                         ".contexts\"").c_str()),
            0);
  std::ifstream rewritten(out);
  const std::string text((std::istreambuf_iterator<char>(rewritten)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("#if (__CUDA_ARCH__ >= 700) || (800 >= 700)\n__device__ int twice"), std::string::npos) << text;
  EXPECT_NE(text.find("#ifdef __CUDA_ARCH__\n__device__ int pick() { return 1; }"), std::string::npos)
      << "a group with an alternative: the host pass's branch";
  EXPECT_NE(text.find("#if (!defined(__CUDA_ARCH__)) || (0)\nstatic int host_side"), std::string::npos) << text;
  std::ifstream listed(out + ".contexts");
  const br::Contexts contexts = br::directive_contexts(listed);
  EXPECT_EQ(contexts.at(1), 'f');

  const auto lines = lines_of(source);
  const auto segments = br::conditional_segments(lines);
  const std::set<int> host{7, 10}, device{2, 5};
  EXPECT_TRUE(br::differences("k.cu", lines, segments, host, device, {2, 5, 7, 10}, "sm_80", contexts).empty())
      << "what either pass keeps may stand";
  const auto found = br::differences("k.cu", lines, segments, host, device, {2, 7, 10}, "sm_80", contexts);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("k.cu:5 (`__device__ int pick() { return 1; }`): nvcc's device pass for sm_80 compiles "
                          "these lines (at file scope) and the CPU backend does not"),
            std::string::npos)
      << found[0];
  // The backend without the device-only helper: found too; with what neither pass keeps: found.
  EXPECT_EQ(br::differences("k.cu", lines, segments, host, device, {7, 10}, "sm_80", contexts).size(), 2u);
  EXPECT_EQ(br::differences("k.cu", lines, segments, {10}, {2}, {2, 7, 10}, "sm_80", contexts).size(), 1u);
}

TEST(Branches, AMacrosValueOutsideTheConditionalsMustBeTheSameOnBoth) {
  std::istringstream host_ii(
      "# 1 \"<command-line>\"\n#define __CUDACC__ 1\n#define __global__ __location__(global)\n#define GONE 1\n"
      "#define WIDTH 4\n#undef GONE\n");
  std::istringstream backend_ii("#define __global__ \n#define WIDTH 4\n#define ROOFLAB_EMU 1\n");
  const auto host = br::macros_at_end(host_ii), backend = br::macros_at_end(backend_ii);
  EXPECT_EQ(host.count("GONE"), 0u) << "an #undef ends a macro";
  EXPECT_EQ(host.at("__CUDACC__"), " 1");
  const auto lines = lines_of(
      "#ifdef __CUDACC__\n"                                        // 1: a conditional: the branch rule's
      "#endif\n"
      "__global__ void k(int* y) { y[0] = WIDTH; }\n"              // 3: a keyword, and a macro alike on both
      "// __CUDACC__ in a comment, \"__CUDACC__\" in a string\n"  // 4
      "const bool gpu = XS(__CUDACC__)[0] == '1';\n"               // 5: the value, where no directive reads it
      "#define ON ROOFLAB_EMU\n"                                    // 6: in a #define
      "#if ON\n#endif\n");
  const auto found = br::macro_value_differences("k.cu", lines, host, backend);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(found[0].find("k.cu:6 (`#define ON ROOFLAB_EMU`): names ROOFLAB_EMU"), std::string::npos) << found[0];
  EXPECT_NE(found[0].find("nvcc's host pass leaves it undefined, the CPU backend defines it as `1`"), std::string::npos)
      << found[0];
  EXPECT_NE(found[1].find("k.cu:5 (`const bool gpu = XS(__CUDACC__)[0] == '1';`): names __CUDACC__"), std::string::npos)
      << found[1];
  // __CUDA_ARCH__ outside a conditional: nvcc's device pass alone defines it.
  const auto arch = br::macro_value_differences("k.cu", lines_of("#define A __CUDA_ARCH__\n"), host, backend);
  ASSERT_EQ(arch.size(), 1u);
  EXPECT_NE(arch[0].find("nvcc's device pass defines it, the CPU backend never"), std::string::npos) << arch[0];
}
