// `rooflab new-lab`'s parts (grader/new_lab.hpp): what it refuses, where the registration line goes, the
// placeholders, and that a scaffold that fails half-way leaves the course as it was. grader.new_lab
// (new_lab_e2e.sh) scaffolds the real template and builds and grades what it makes.
#include "new_lab.hpp"
#include "util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using rooflab::grader::NewLabArgs;
using rooflab::grader::read_all;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}


const std::string kLabsCmake = "# labs\nadd_subdirectory(01-memory-bandwidth)\nadd_subdirectory(04-gemm)\n";

// A course of two labs and a template of one file per half, removed at the end of the test.
struct Course {
  Course() : root(fs::temp_directory_path() / ("rooflab-new-lab-test-" + std::to_string(::getpid()))) {
    fs::remove_all(root);
    write(root / "labs" / "CMakeLists.txt", kLabsCmake);
    fs::create_directories(root / "labs" / "01-memory-bandwidth");
    fs::create_directories(root / "labs" / "04-gemm");
    write(root / "templates" / "lab" / "lab" / "README.md", "# Lab @LAB_ID@: @LAB_TITLE@ (@LAB_NS@, @LAB_SUITE@)\n");
    write(root / "templates" / "lab" / "solution" / "selftest" / "@LAB_NAME@-case" / "expect.json", "@LAB_DIR@\n");
  }
  ~Course() { fs::remove_all(root); }
  NewLabArgs args(std::string id, std::string name) const { return {std::move(id), std::move(name), "", root}; }
  fs::path root;
};

}  // namespace

TEST(NewLab, RefusesIdsAndNamesThatAreNotAFolderName) {
  const Course c;
  EXPECT_EQ(rooflab::grader::new_lab_refusal(c.args("09", "scale-demo")), "");
  for (const char* id : {"9", "009", "1a", ""}) {
    EXPECT_NE(rooflab::grader::new_lab_refusal(c.args(id, "scale-demo")).find("two digits"), std::string::npos) << id;
  }
  for (const char* name : {"Scale", "scale_demo", "scale--demo", "-scale", "scale-", ""}) {
    EXPECT_NE(rooflab::grader::new_lab_refusal(c.args("09", name)).find("lower-case"), std::string::npos) << name;
  }
}

TEST(NewLab, RefusesAnIdOrANameAnotherLabHas) {
  const Course c;
  EXPECT_EQ(rooflab::grader::new_lab_refusal(c.args("04", "sparse")), "lab id 04 is taken by 04-gemm");
  EXPECT_NE(rooflab::grader::new_lab_refusal(c.args("09", "gemm")).find("taken by 04-gemm"), std::string::npos);
  // A lab registered in labs/CMakeLists.txt whose folder is missing still holds its id.
  write(c.root / "labs" / "CMakeLists.txt", kLabsCmake + "add_subdirectory(07-decode-batching)\n");
  EXPECT_EQ(rooflab::grader::new_lab_refusal(c.args("07", "sparse")), "lab id 07 is taken by 07-decode-batching");
}

TEST(NewLab, RegistersTheLabInCourseOrder) {
  using rooflab::grader::with_registration;
  EXPECT_EQ(with_registration(kLabsCmake, "02-ridge-point"),
            "# labs\nadd_subdirectory(01-memory-bandwidth)\nadd_subdirectory(02-ridge-point)\nadd_subdirectory(04-gemm)\n");
  EXPECT_EQ(with_registration(kLabsCmake, "00-intro"),
            "# labs\nadd_subdirectory(00-intro)\nadd_subdirectory(01-memory-bandwidth)\nadd_subdirectory(04-gemm)\n");
  EXPECT_EQ(with_registration("add_subdirectory(04-gemm)", "09-scale"),
            "add_subdirectory(04-gemm)\nadd_subdirectory(09-scale)\n");  // the last line had no newline
  EXPECT_THROW(with_registration("# no labs yet\n", "01-x"), std::runtime_error);
}

TEST(NewLab, FillsEveryPlaceholderAndRefusesAnUnknownOne) {
  const Course c;
  NewLabArgs a = c.args("09", "scale-demo");  // no title: the name in words
  const auto values = rooflab::grader::new_lab_placeholders(a);
  EXPECT_EQ(rooflab::grader::fill_placeholders("@LAB_DIR@ @LAB_NS@ @LAB_SUITE@ @LAB_TITLE@ @LAB_ID@", values, "t"),
            "09-scale-demo lab09 Lab09 Scale demo 09");
  a.title = "Scale, for real";
  EXPECT_EQ(rooflab::grader::fill_placeholders("# @LAB_TITLE@", rooflab::grader::new_lab_placeholders(a), "t"),
            "# Scale, for real");
  EXPECT_THROW(rooflab::grader::fill_placeholders("@LAB_AUTHOR@", values, "t"), std::runtime_error);
}

TEST(NewLab, ScaffoldsBothHalvesAndTheOneLine) {
  const Course c;
  ASSERT_EQ(rooflab::grader::cmd_new_lab(c.args("09", "scale-demo")), 0);
  EXPECT_EQ(read_all(c.root / "labs" / "09-scale-demo" / "README.md"), "# Lab 09: Scale demo (lab09, Lab09)\n");
  EXPECT_EQ(read_all(c.root / "solutions" / "09-scale-demo" / "selftest" / "scale-demo-case" / "expect.json"),
            "09-scale-demo\n");
  EXPECT_EQ(read_all(c.root / "labs" / "CMakeLists.txt"), kLabsCmake + "add_subdirectory(09-scale-demo)\n");
  EXPECT_THROW(rooflab::grader::cmd_new_lab(c.args("09", "other")), std::invalid_argument);  // a usage error
}

TEST(NewLab, AScaffoldThatFailsLeavesTheCourseAsItWas) {
  const Course c;
  write(c.root / "templates" / "lab" / "solution" / "kernels.cu", "// @LAB_AUTHOR@\n");  // unknown: fails late
  EXPECT_THROW(rooflab::grader::cmd_new_lab(c.args("09", "scale-demo")), std::runtime_error);
  EXPECT_FALSE(fs::exists(c.root / "labs" / "09-scale-demo"));
  EXPECT_FALSE(fs::exists(c.root / "solutions" / "09-scale-demo"));
  EXPECT_EQ(read_all(c.root / "labs" / "CMakeLists.txt"), kLabsCmake);
}
