// A file a submission leaves out is graded as the course's stub, never as what labs/ of the grading checkout
// holds: an instructor who tried a lab in that checkout must not hand its answers to every student who omits
// the file (issue: a submission with only kernels.cu scored the checkout's answers.cpp).
#include "build.hpp"
#include "util.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {

constexpr const char* kStub = R"(double answer(double x) {
  // STUDENT BEGIN (lab01.q1)
  // TODO(lab01.q1): twice x. (1 line)
  ROOFLAB_TODO("lab01.q1", x);
  // STUDENT END
}
__global__ void k(float* a) {
  // STUDENT BEGIN (lab01.k)
  rooflab::unused(a);  // delete this line when the kernel is written
  // STUDENT END
}
)";
constexpr const char* kFilledIn = R"(double answer(double x) {
  // STUDENT BEGIN (lab01.q1)
  return 2 * x;  // the instructor tried the lab here
  // STUDENT END
}
)";


struct Checkout {
  fs::path root = fs::temp_directory_path() / ("rooflab-stub-test-" + std::to_string(getpid()));
  Lab lab;
  explicit Checkout(bool git) {
    fs::remove_all(root);
    fs::create_directories(root / "labs" / "01-x");
    fs::create_directories(root / "sub");
    std::ofstream(root / "labs" / "01-x" / "answers.cpp") << kStub;
    lab.id = "01";
    lab.name = "x";
    lab.dir = root / "labs" / "01-x";
    lab.student_files = {"answers.cpp"};
    if (git) {
      const std::string r = root.string();
      const std::string cmd = "git -C " + r + " init -q && git -C " + r + " -c user.email=t@t -c user.name=t add -A && " +
                              "git -C " + r + " -c user.email=t@t -c user.name=t commit -qm stub";
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    }
  }
  ~Checkout() { fs::remove_all(root); }
};

}  // namespace

TEST(Stub, FencesWithOnlyTodosAreAStub) {
  EXPECT_TRUE(looks_like_stub(kStub));
  EXPECT_FALSE(looks_like_stub(kFilledIn));
  EXPECT_TRUE(looks_like_stub("no fences at all\n"));
}

TEST(Stub, AMissingFileIsGradedAsTheCommittedStubNotTheCheckoutsEdit) {
  const Checkout c(true);
  std::ofstream(c.lab.dir / "answers.cpp") << kFilledIn;  // edited after the commit
  const auto a = assemble_submission({&c.lab}, c.root / "sub", c.root / "out");
  EXPECT_EQ(read_all(c.root / "out" / "01-x" / "answers.cpp"), kStub);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("graded with the committed stub"), std::string::npos) << a.notes[0];
}

TEST(Stub, WithoutHistoryAFilledInFileIsNeverGradedAsTheStub) {
  const Checkout c(false);
  std::ofstream(c.lab.dir / "answers.cpp") << kFilledIn;
  const auto a = assemble_submission({&c.lab}, c.root / "sub", c.root / "out");
  const std::string graded = read_all(c.root / "out" / "01-x" / "answers.cpp");
  EXPECT_EQ(graded.find("return 2 * x"), std::string::npos) << graded;
  EXPECT_EQ(graded.rfind("#error", 0), 0u) << graded;
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("is filled in"), std::string::npos) << a.notes[0];
}

TEST(Stub, WithoutHistoryAnUntouchedStubIsUsed) {
  const Checkout c(false);
  const auto a = assemble_submission({&c.lab}, c.root / "sub", c.root / "out");
  EXPECT_EQ(read_all(c.root / "out" / "01-x" / "answers.cpp"), kStub);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("the stub in labs/"), std::string::npos) << a.notes[0];
}

// Every lab's shipped stubs pass the test that decides whether a file is still a stub.
TEST(Stub, EveryShippedStubLooksLikeOne) {
  for (const auto& e : fs::recursive_directory_iterator(fs::path(ROOFLAB_SOURCE_DIR) / "labs")) {
    const std::string name = e.path().filename().string();
    if (e.path().string().find("/selftest/") != std::string::npos || e.path().string().find("/tests/") != std::string::npos) continue;
    if (name != "kernels.cu" && name != "answers.cpp") continue;
    EXPECT_TRUE(looks_like_stub(read_all(e.path()))) << e.path();
    const std::string solution = read_all(fs::path(ROOFLAB_SOURCE_DIR) / "solutions" / e.path().parent_path().filename() / name);
    EXPECT_FALSE(looks_like_stub(solution)) << "the solution of " << e.path() << " passes for a stub";
  }
}

// A flat upload (kernels.cu at the top) to an assignment that grades two labs belongs to neither: the notes
// say where the files must go instead of grading both labs as the stub in silence.
TEST(Stub, AFlatUploadToATwoLabAssignmentSaysWhereTheFilesGo) {
  const Checkout c(false);
  Lab second = c.lab;
  second.id = "02";
  second.name = "y";
  fs::create_directories(c.root / "labs" / "02-y");
  std::ofstream(c.root / "labs" / "02-y" / "answers.cpp") << kStub;
  second.dir = c.root / "labs" / "02-y";
  std::ofstream(c.root / "sub" / "answers.cpp") << kFilledIn;
  const auto a = assemble_submission({&c.lab, &second}, c.root / "sub", c.root / "out");
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes[0].find("answers.cpp is at the top of the submission, which grades 2 labs"), std::string::npos)
      << a.notes[0];
  EXPECT_NE(a.notes[0].find("01-x/answers.cpp, 02-y/answers.cpp"), std::string::npos) << a.notes[0];
}
