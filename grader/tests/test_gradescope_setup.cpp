// setup.sh, the script Gradescope runs once to build the autograder's image: a harness that fails to build
// must fail the image build (where the instructor sees it), not give an image that scores every student 0.
#include "gradescope.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

void write_script(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all);
}

// Runs setup.sh in a scratch package whose launcher does nothing and whose grader exits `grader_exit`; a fake
// nvcc on PATH keeps the script from installing the CUDA toolkit. Returns setup.sh's exit code.
int run_setup(int grader_exit, std::string* log) {
  const fs::path dir = fs::temp_directory_path() / ("rooflab-setup-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "build" / "default" / "grader");
  fs::create_directories(dir / "bin");
  write_script(dir / "setup.sh", rooflab::grader::autograder_setup_script({"01"}, false));
  write_script(dir / "rooflab", "#!/bin/sh\nexit 0\n");
  write_script(dir / "build" / "default" / "grader" / "rooflab-cli",
               "#!/bin/sh\necho 'the harness build failed here'\nexit " + std::to_string(grader_exit) + "\n");
  write_script(dir / "bin" / "nvcc", "#!/bin/sh\nexit 0\n");
  const std::string cmd = "cd " + dir.string() + " && PATH=" + (dir / "bin").string() + ":$PATH bash setup.sh > out.log 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(dir / "out.log");
  log->assign(std::istreambuf_iterator<char>(in), {});
  fs::remove_all(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(GradescopeSetup, AHarnessThatFailsToBuildFailsTheImage) {
  std::string log;
  EXPECT_NE(run_setup(3, &log), 0) << log;
  EXPECT_NE(log.find("the harness build failed here"), std::string::npos) << "the instructor sees why:\n" << log;
  EXPECT_NE(log.find("building the autograder's harness failed"), std::string::npos) << log;
}

TEST(GradescopeSetup, AHarnessThatBuildsGivesAnImage) {
  std::string log;
  EXPECT_EQ(run_setup(0, &log), 0) << log;
  EXPECT_NE(log.find("the autograder is ready"), std::string::npos) << log;
}
