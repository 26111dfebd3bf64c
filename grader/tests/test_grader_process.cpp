// Child processes: exit codes, signals, hangs, and what a child leaves running (process.cpp).
// The grader is tested too: declarations, test reports and their verification, process isolation, scoring rules, the
// Gradescope output, submission whitelisting, and the stub/solution mirror of every lab.
#include "build.hpp"
#include "class_grading.hpp"
#include "commands.hpp"
#include "gradescope.hpp"
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "slurm.hpp"
#include "runner.hpp"
#include "symbols.hpp"
#include "tests/test_support.hpp"

#include <rooflab/testing/random.hpp>
#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <regex>
#include <set>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace rooflab::grader;
using rooflab::grader::testing::frame;
using rooflab::grader::testing::read;
using rooflab::grader::testing::running;

TEST(Process, CapturesExitCodesSignalsAndHangs) {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  r = run_process({"sh", "-c", "kill -SEGV $$"});
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal"), std::string::npos);
  r = run_process({"sleep", "30"}, {.timeout_s = 0.5});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 10);
  r = run_process({"/nonexistent/binary"});
  EXPECT_FALSE(r.ok());
  r = run_process({"sh", "-c", "echo $ROOFLAB_X"}, {.env = {{"ROOFLAB_X", "42"}}});
  EXPECT_EQ(r.output, "42\n");
}

// What a process leaves running when it ends, in a session of its own (setsid) or after a double fork (out of
// its process group's reach either way): listed, and killed.
TEST(Process, ListsAndKillsWhatAChildLeavesRunning) {
  ASSERT_TRUE(leftovers_tracked()) << "PR_SET_CHILD_SUBREAPER is not available here";
  auto r = run_process({"sh", "-c", "setsid sleep 3171 & (setsid sleep 3172 &); echo started"}, {.timeout_s = 30});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "started\n");
  ASSERT_EQ(r.left_running.size(), 2u) << fmt::format("{}", fmt::join(r.left_running, "; "));
  const std::string listed = r.left_running[0] + "; " + r.left_running[1];
  EXPECT_NE(listed.find("sleep 3171"), std::string::npos) << listed;
  EXPECT_NE(listed.find("sleep 3172"), std::string::npos) << listed;
  EXPECT_FALSE(running("sleep 3171"));
  EXPECT_FALSE(running("sleep 3172"));
  // A process that waits for its children leaves nothing; one that ended by itself is not a leftover.
  r = run_process({"sh", "-c", "sleep 0.2 & (true &); wait"}, {.timeout_s = 30});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.left_running.empty()) << fmt::format("{}", fmt::join(r.left_running, "; "));
  // A leftover that writes without a pause does not keep the grader reading after its parent has ended.
  r = run_process({"sh", "-c", "(setsid yes rooflab-3175 &); exit 0"}, {.timeout_s = 20, .max_output_bytes = 1u << 16});
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.seconds, 10);
  ASSERT_EQ(r.left_running.size(), 1u);
  EXPECT_NE(r.left_running[0].find("yes rooflab-3175"), std::string::npos) << r.left_running[0];
  EXPECT_FALSE(running("yes rooflab-3175"));
  // A timed-out process's detached children go too.
  r = run_process({"sh", "-c", "setsid sleep 3173 & sleep 30"}, {.timeout_s = 0.5});
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.left_running.size(), 1u);
  EXPECT_FALSE(running("sleep 3173"));
}
