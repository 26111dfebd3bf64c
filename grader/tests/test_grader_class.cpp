// Class grading's intake (class_intake.cpp): what a rerun compares.
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

TEST(ClassGrading, InputHashSeesEveryByteAndWhereFilesEnd) {
  InputHash a, b, c;
  a.add_file_named("kernels.cu", "ab");
  b.add_file_named("kernels.cu", "ac");
  c.add_file_named("kernels.cua", "b");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_NE(a.hex(), c.hex());
  EXPECT_EQ(a.hex().size(), 16u);
}
