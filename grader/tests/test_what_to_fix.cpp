// The terminal's "what to fix" lines, from failures as GoogleTest and the labs' tests really word them
// (captured from selftest binaries: lab07 gemv-drops-k-tail, lab01 skips-tail and racy-scale, a static hint).
// Each line starts with the kernel and shape, says what was wrong, and carries none of GoogleTest's wrapper.
#include "report.hpp"

#include <gtest/gtest.h>

namespace rooflab::grader {
namespace {

void expect_no_wrapper(const std::string& line) {
  for (const char* wrapper : {"Value of:", "Actual:", "Expected: true", "Which is:", "Expected equality"}) {
    EXPECT_EQ(line.find(wrapper), std::string::npos) << wrapper << " in: " << line;
  }
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line: " << line;
}

TEST(WhatToFix, ExpectTrueOfACheckPutsTheKernelAndShapeFirst) {
  const std::string gtest =
      "Value of: check(s, 0)\n"
      "  Actual: false (7 of 7 elements differ (atol 0.002, rtol 0.002); first ones:\n"
      "  [0] got 0, want 0.10471794 (|diff| 0.105, allowed 0.00221)\n"
      "  [1] got 0, want 0.120551765 (|diff| 0.121, allowed 0.00224)\n"
      "  [6] got 0, want -0.312597275 (|diff| 0.313, allowed 0.00263) (gemv, n = 7, k = 1))\n"
      "Expected: true";
  const std::string line = what_to_fix(gtest);
  expect_no_wrapper(line);
  EXPECT_EQ(line,
            "gemv, n = 7, k = 1: 7 of 7 elements differ (atol 0.002, rtol 0.002); first ones: [0] got 0, want "
            "0.10471794 (|diff| 0.105, allowed 0.00221)");
}

TEST(WhatToFix, AOneLineMessageLosesItsTrailingContext) {
  const std::string gtest =
      "Value of: check(s, 0)\n"
      "  Actual: false (1 of 1 elements differ (atol 0.002, rtol 0.002); first ones:\n"
      "  [0] got 0, want 0.259352684 (|diff| 0.259, allowed 0.00252) (gemv, n = 1, k = 1))\n"
      "Expected: true";
  const std::string line = what_to_fix(gtest);
  EXPECT_EQ(line.rfind("gemv, n = 1, k = 1: 1 of 1 elements differ", 0), 0u) << line;
  EXPECT_EQ(line.find("(gemv, n = 1"), std::string::npos) << "the context once, at the front: " << line;
}

TEST(WhatToFix, AMessageThatStartsWithItsKernelIsKept) {
  const std::string failure =
      "triad_vec4_kernel at n = 31, array a (output): 3 of 31 elements differ (atol 1e-06, rtol 1e-05); first ones:\n"
      "  [28] got -nan, want -1.77171707 (|diff| nan, allowed 1.87e-05)\n"
      "  [29] got -nan, want -1.15953684 (|diff| nan, allowed 1.26e-05) ";
  EXPECT_EQ(what_to_fix(failure),
            "triad_vec4_kernel at n = 31, array a (output): 3 of 31 elements differ (atol 1e-06, rtol 1e-05); "
            "first ones: [28] got -nan, want -1.77171707 (|diff| nan, allowed 1.87e-05)");
}

TEST(WhatToFix, TheRaceHintKeepsItsSourceLines) {
  const std::string gtest =
      "Value of: race_free(std::string(v.id()), before)\n"
      "  Actual: false (scale: ThreadSanitizer reported 1 data race(s); the last one: SUMMARY: ThreadSanitizer: "
      "data race /work/main/build/ci/selftest/01-memory-bandwidth/racy-scale/kernels.cu:80 in "
      "lab01::scale_kernel(float const*, float*, float, unsigned long) (the full reports, with both racing lines, "
      "are in the output above))\n"
      "Expected: true";
  const std::string line = what_to_fix(gtest);
  expect_no_wrapper(line);
  EXPECT_EQ(line.rfind("scale: ThreadSanitizer reported 1 data race(s)", 0), 0u) << line;
  EXPECT_NE(line.find("data race kernels.cu:80 in lab01::scale_kernel"), std::string::npos) << line;
  EXPECT_EQ(line.find("/work/main"), std::string::npos) << "no build-tree path: " << line;
}

TEST(WhatToFix, AStaticHintSaysWhatTheValueMeans) {
  const std::string gtest =
      "Expected equality of these values:\n"
      "  f.widest_global_load_bits\n"
      "    Which is: 0\n"
      "  128\n"
      "sm_80: triad_vec4_kernel should load float4 (ld.global.v4.f32)";
  const std::string line = what_to_fix(gtest);
  expect_no_wrapper(line);
  EXPECT_EQ(line, "sm_80: triad_vec4_kernel should load float4 (ld.global.v4.f32) (f.widest_global_load_bits is 0, "
                  "want 128)");
}

TEST(WhatToFix, BothSidesOfAnEqualityMayHaveAValue) {
  const std::string gtest =
      "Expected equality of these values:\n"
      "  r.left_running.size()\n"
      "    Which is: 0\n"
      "  1u\n"
      "    Which is: 1\n"
      "lab01::scale: the launcher should leave no process running";
  const std::string line = what_to_fix(gtest);
  expect_no_wrapper(line);
  EXPECT_EQ(line, "lab01::scale: the launcher should leave no process running (r.left_running.size() is 0, want 1)");
}

TEST(WhatToFix, AComparisonKeepsBothValues) {
  const std::string gtest =
      "Expected: (measured) >= (0.5 * ceiling), actual: 12.5 vs 900\n"
      "triad_kernel at n = 1 << 26: well below the copy ceiling";
  EXPECT_EQ(what_to_fix(gtest),
            "triad_kernel at n = 1 << 26: well below the copy ceiling (measured is 12.5, want >= 900)");
}

TEST(WhatToFix, ATerminalTableShowsEachFailureOnceInOneLine) {
  Lab lab;
  lab.id = "07";
  lab.title = "Decode batching";
  TestResult r;
  r.lab = "07";
  r.id = "Lab07Kernels.GemvShapes";
  r.kind = "emu";
  r.max_score = 4;
  r.failures = {"Value of: check(s, 0)\n  Actual: false (1 of 1 elements differ; first ones:\n  [0] got 0, want 1 "
                "(gemv, n = 1, k = 1))\nExpected: true",
                "Value of: check(s, 0)\n  Actual: false (2 of 2 elements differ; first ones:\n  [0] got 0, want 1 "
                "(gemv, n = 2, k = 1))\nExpected: true"};
  for (const auto& f : r.failures) r.output += f + "\n";
  const std::string table = terminal_table({&lab, "labs", {r}, ""}, false);
  EXPECT_NE(table.find("      gemv, n = 1, k = 1: 1 of 1 elements differ; first ones: [0] got 0, want 1\n"),
            std::string::npos) << table;
  EXPECT_NE(table.find("      gemv, n = 2, k = 1: 2 of 2"), std::string::npos) << table;
  EXPECT_EQ(table.find("Value of"), std::string::npos) << table;
  EXPECT_EQ(table.find("Actual:"), std::string::npos) << table;
}

}  // namespace
}  // namespace rooflab::grader
