// The sandbox of student processes and the checks of uploads: a sandboxed process cannot write the lab
// tree, the build tree (when testing) or anything outside its scratch, cannot read solutions/, cannot open
// a TCP connection; an upload cannot smuggle a link, an oversized file or an include of the solutions.
//
// This binary is its own probe: started as `rooflab_sandbox_tests --probe ACTION ARG`, it tries one thing
// and prints "probe: ok" or "probe: <errno name>", so the tests see exactly what the kernel refused.
#include "build.hpp"
#include "manifest.hpp"
#include "process.hpp"
#include "sandbox.hpp"
#include "util.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {

// ---- the probe (runs in the sandboxed child) ----

int probe(const std::string& action, const std::string& arg) {
  int rc = 0;
  if (action == "write") {
    const int fd = open(arg.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    rc = fd < 0 ? -1 : static_cast<int>(write(fd, "planted\n", 8));
    if (fd >= 0) close(fd);
  } else if (action == "write-output") {  // an argument like --gtest_output=json:PATH
    const std::string path = arg.substr(arg.find(':') + 1);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    rc = fd < 0 ? -1 : static_cast<int>(write(fd, "{}\n", 3));
    if (fd >= 0) close(fd);
  } else if (action == "write-env") {  // a file in the directory an environment variable names
    const char* dir = std::getenv(arg.c_str());
    const std::string path = std::string(dir == nullptr ? "/nonexistent" : dir) + "/probe.txt";
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    rc = fd < 0 ? -1 : static_cast<int>(write(fd, "from the probe\n", 15));
    if (fd >= 0) close(fd);
  } else if (action == "write-existing") {  // an existing file, opened the way fopen(path, "w") does
    const int fd = open(arg.c_str(), O_WRONLY | O_TRUNC);
    rc = fd < 0 ? -1 : static_cast<int>(write(fd, "probe", 5));
    if (fd >= 0) close(fd);
  } else if (action == "read") {
    const int fd = open(arg.c_str(), O_RDONLY);
    char c;
    rc = fd < 0 ? -1 : static_cast<int>(read(fd, &c, 1));
    if (fd >= 0) close(fd);
  } else if (action == "connect") {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(arg)));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = s < 0 ? -1 : connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    if (s >= 0) close(s);
  } else {
    std::printf("probe: unknown action %s\n", action.c_str());
    return 2;
  }
  std::printf("probe: %s\n", rc < 0 ? strerrorname_np(errno) : "ok");
  return 0;
}

fs::path g_self;  // this binary

// ---- helpers ----

fs::path source() { return ROOFLAB_SOURCE_DIR; }
fs::path build() { return ROOFLAB_BUILD_DIR; }

// A fresh directory under the system's temp directory, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "rooflab-sandbox-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

GradingTree tree_for(const TempDir& scratch) {
  return {source(), build(), source() / "labs", {}, scratch.path};
}

// What the probe printed ("ok", "EACCES"), run in `sandbox` (none: unconfined).
std::string run_probe(const std::optional<Sandbox>& sandbox, const std::string& action, const std::string& arg) {
  ProcessOptions o;
  o.timeout_s = 60;
  o.sandbox = sandbox;
  const ProcessResult p = run_process({g_self.string(), "--probe", action, arg}, o);
  const auto at = p.output.find("probe: ");
  if (!p.ok() || at == std::string::npos) return "did not run: " + p.describe() + ": " + p.output;
  return p.output.substr(at + 7, p.output.find('\n', at) - at - 7);
}

#define REQUIRE_LANDLOCK()                                                                    \
  do {                                                                                        \
    if (landlock_support().abi == 0) GTEST_SKIP() << "no Landlock here: " << landlock_support().unavailable; \
  } while (0)


}  // namespace

// ---- the sandbox ----

TEST(Sandbox, TestProcessWritesOnlyItsScratch) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const Sandbox box = test_sandbox(tree_for(scratch));
  // The global initializer of a student file, planting a test for the next build or the next student.
  const fs::path in_tests = source() / "labs" / "01-memory-bandwidth" / "tests" / "planted-by-sandbox-test.cpp";
  const fs::path in_build = build() / "planted-by-sandbox-test.txt";
  const fs::path outside = fs::temp_directory_path() / ("rooflab-planted-" + std::to_string(getpid()));
  EXPECT_EQ(run_probe(box, "write", in_tests.string()), "EACCES");
  EXPECT_EQ(run_probe(box, "write", in_build.string()), "EACCES");
  EXPECT_EQ(run_probe(box, "write", outside.string()), "EACCES");
  EXPECT_EQ(run_probe(box, "write-env", "TMPDIR"), "ok");
  EXPECT_EQ(run_probe(box, "write-env", "HOME"), "ok");
  // Without the sandbox the same process may write there: the refusals above are the sandbox's.
  EXPECT_EQ(run_probe(std::nullopt, "write", outside.string()), "ok");
  for (const auto& p : {in_tests, in_build, outside}) fs::remove(p);
}

// The CUDA driver writes its own process's /proc files as it starts (with /proc read-only, every CUDA call
// failed with cudaErrorOperatingSystem on an H100): the program may write its own, never another's.
TEST(Sandbox, ProgramWritesItsOwnProcFilesAndNoOtherProcesses) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const Sandbox box = test_sandbox(tree_for(scratch));
  EXPECT_EQ(run_probe(box, "write-existing", "/proc/self/comm"), "ok");
  EXPECT_EQ(run_probe(box, "write-existing", "/proc/thread-self/comm"), "ok");
  // This test's process (the grader's place): refused by the sandbox, before the kernel's own rule (EINVAL).
  EXPECT_EQ(run_probe(box, "write-existing", "/proc/" + std::to_string(getpid()) + "/comm"), "EACCES");
}

TEST(Sandbox, BuildStepWritesTheBuildTreeButNotTheSources) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const Sandbox box = build_sandbox(tree_for(scratch));
  const fs::path in_build = build() / ("sandbox-test-" + std::to_string(getpid()) + ".txt");
  const fs::path in_source = source() / "labs" / "01-memory-bandwidth" / "tests" / "planted-by-sandbox-test.cpp";
  EXPECT_EQ(run_probe(box, "write", in_build.string()), "ok");
  EXPECT_EQ(run_probe(box, "write", in_source.string()), "EACCES");
  fs::remove(in_build);
  fs::remove(in_source);
}

TEST(Sandbox, SolutionsAreUnreadableAndTheLabIsReadable) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const Sandbox box = test_sandbox(tree_for(scratch));
  const fs::path solution = source() / "solutions" / "01-memory-bandwidth" / "kernels.cu";
  ASSERT_TRUE(fs::exists(solution));
  EXPECT_EQ(run_probe(box, "read", solution.string()), "EACCES");
  EXPECT_EQ(run_probe(box, "read", (source() / "labs" / "01-memory-bandwidth" / "lab.hpp").string()), "ok");
  EXPECT_EQ(run_probe(std::nullopt, "read", solution.string()), "ok");
  // The known-bad cases quote the solutions in their patches.
  for (const auto& e : fs::recursive_directory_iterator(source() / "solutions" / "01-memory-bandwidth" / "selftest")) {
    if (e.path().filename() == "expect.json") {
      EXPECT_EQ(run_probe(box, "read", e.path().string()), "EACCES") << e.path();
      break;
    }
  }
}

// The one-line student file that includes the reference solution: the compiler itself is refused.
TEST(Sandbox, CompilingAnIncludeOfASolutionIsPermissionDenied) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const TempDir student;
  const fs::path file = student.path / "kernels.cu.cpp";
  std::ofstream(file) << "#include \"" << fs::relative(source() / "solutions" / "01-memory-bandwidth" / "kernels.cu",
                                                       student.path).string() << "\"\n";
  GradingTree t = tree_for(scratch);
  t.student_dir = student.path;
  // -M -MG: list the dependencies, missing headers allowed, so only the solution's own file is opened.
  const std::vector<std::string> cc = {ROOFLAB_CXX, "-M", "-MG", file.string()};
  ProcessOptions o;
  o.timeout_s = 120;
  const ProcessResult free_run = run_process(cc, o);
  EXPECT_TRUE(free_run.ok()) << "without the sandbox the include is read: " << free_run.output;
  o.sandbox = build_sandbox(t);
  const ProcessResult boxed = run_process(cc, o);
  EXPECT_FALSE(boxed.ok());
  EXPECT_NE(boxed.output.find("Permission denied"), std::string::npos) << boxed.output;
}

TEST(Sandbox, TcpConnectIsRefused) {
  REQUIRE_LANDLOCK();
  if (landlock_support().abi < 4) GTEST_SKIP() << "Landlock ABI " << landlock_support().abi << " has no network rules";
  // A listener here, unconfined: the probe's connect succeeds without the sandbox and fails inside it.
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(s, 8), 0);
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const TempDir scratch;
  Sandbox box = test_sandbox(tree_for(scratch));
  EXPECT_EQ(run_probe(std::nullopt, "connect", port), "ok");
  box.unshare_network = false;  // Landlock alone
  EXPECT_EQ(run_probe(box, "connect", port), "EACCES");
  box.unshare_network = true;   // and a network namespace of its own, where allowed
  EXPECT_NE(run_probe(box, "connect", port), "ok");
  close(s);
}

TEST(Sandbox, OutputArgumentsAndCollectedFilesReachTheGrader) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const TempDir results;
  Sandbox box = test_sandbox(tree_for(scratch));
  // GoogleTest's report: the one file outside the scratch it may write.
  const fs::path report = results.path / "report.json";
  EXPECT_EQ(run_probe(box, "write-output", "--gtest_output=json:" + report.string()), "ok");
  EXPECT_EQ(read_all(report), "{}\n");
  EXPECT_EQ(run_probe(box, "write", (results.path / "other.json").string()), "EACCES");
  // Plots: written into the scratch, copied out by the grader.
  box.collect["ROOFLAB_REPORT_DIR"] = results.path / "plots";
  EXPECT_EQ(run_probe(box, "write-env", "ROOFLAB_REPORT_DIR"), "ok");
  EXPECT_EQ(read_all(results.path / "plots" / "probe.txt"), "from the probe\n");
  // Each scratch is removed when its process ends.
  EXPECT_TRUE(fs::is_empty(scratch.path));
}

TEST(Sandbox, ScopeReachesProcessesStartedWithoutASandbox) {
  REQUIRE_LANDLOCK();
  const TempDir scratch;
  const fs::path outside = fs::temp_directory_path() / ("rooflab-planted-scope-" + std::to_string(getpid()));
  {
    const SandboxScope scope(test_sandbox(tree_for(scratch)));
    EXPECT_EQ(run_probe(std::nullopt, "write", outside.string()), "EACCES");
  }
  EXPECT_EQ(run_probe(std::nullopt, "write", outside.string()), "ok");
  fs::remove(outside);
}

TEST(Sandbox, ReadableSourceEntriesLeaveOutSolutionsBuildAndSelftests) {
  const auto entries = readable_source_entries(source());
  ASSERT_FALSE(entries.empty());
  bool has_labs = false;
  for (const auto& e : entries) {
    const std::string s = e.string();
    EXPECT_EQ(s.find("/solutions"), std::string::npos) << s;
    EXPECT_EQ(s.find("/selftest"), std::string::npos) << s;
    EXPECT_NE(e.filename(), "build") << s;
    if (e == source() / "labs") has_labs = true;
  }
  EXPECT_TRUE(has_labs);
}

// ---- uploads ----

namespace {

Lab fake_lab(const fs::path& root) {
  Lab lab;
  lab.id = "01";
  lab.name = "x";
  lab.dir = root / "labs" / "01-x";
  lab.student_files = {"kernels.cu", "answers.cpp"};
  fs::create_directories(lab.dir);
  std::ofstream(lab.dir / "kernels.cu") << "// stub kernels\n";
  std::ofstream(lab.dir / "answers.cpp") << "// stub answers\n";
  std::ofstream(lab.dir / "lab.hpp") << "#pragma once\n";
  return lab;
}

std::string refusal(const std::string& text) {
  const TempDir t;
  const Lab lab = fake_lab(t.path);
  return include_policy_violation(text, lab.dir).value_or("");
}

}  // namespace

TEST(Upload, LinksAndOddFilesAreRefusedAndGradedAsTheStub) {
  const TempDir t;
  const Lab lab = fake_lab(t.path);
  std::ofstream(t.path / "secret.cu") << "the reference solution\n";
  fs::create_directories(t.path / "sub" / "01-x");
  fs::create_symlink(t.path / "secret.cu", t.path / "sub" / "01-x" / "kernels.cu");
  std::ofstream(t.path / "sub" / "01-x" / "answers.cpp") << std::string(kMaxStudentFileBytes + 1, ' ');
  const auto a = assemble_submission({&lab}, t.path / "sub", t.path / "out");
  EXPECT_EQ(read_all(t.path / "out" / "01-x" / "kernels.cu"), "// stub kernels\n");
  EXPECT_EQ(read_all(t.path / "out" / "01-x" / "answers.cpp"), "// stub answers\n");
  ASSERT_EQ(a.refused.size(), 2u);
  EXPECT_NE(a.refused[0].reason.find("symbolic link"), std::string::npos) << a.refused[0].reason;
  EXPECT_NE(a.refused[1].reason.find("over the limit"), std::string::npos) << a.refused[1].reason;
  ASSERT_EQ(a.notes.size(), 2u);
  EXPECT_NE(a.notes[0].find("kernels.cu was refused"), std::string::npos) << a.notes[0];
  EXPECT_EQ(fs::file_size(t.path / "out" / "01-x" / "answers.cpp"), 16u);
}

TEST(Upload, ALinkedLabDirectoryIsRefused) {
  const TempDir t;
  const Lab lab = fake_lab(t.path);
  fs::create_directories(t.path / "elsewhere");
  std::ofstream(t.path / "elsewhere" / "kernels.cu") << "not the student's\n";
  fs::create_directories(t.path / "sub");
  fs::create_directory_symlink(t.path / "elsewhere", t.path / "sub" / "01-x");
  const auto a = assemble_submission({&lab}, t.path / "sub", t.path / "out");
  ASSERT_FALSE(a.refused.empty());
  EXPECT_NE(a.refused[0].reason.find("01-x is a symbolic link"), std::string::npos) << a.refused[0].reason;
  EXPECT_EQ(read_all(t.path / "out" / "01-x" / "kernels.cu"), "// stub kernels\n");
}

TEST(Upload, PathsHardLinksAndNonRegularFilesAreRefused) {
  const TempDir t;
  std::string text;
  std::ofstream(t.path / "ok.cu") << "fine\n";
  EXPECT_FALSE(read_student_file(t.path, "ok.cu", text));
  EXPECT_EQ(text, "fine\n");
  EXPECT_NE(read_student_file(t.path, "../etc/passwd", text).value_or("").find("`..`"), std::string::npos);
  EXPECT_NE(read_student_file(t.path, "/etc/passwd", text).value_or("").find("absolute"), std::string::npos);
  fs::create_hard_link(t.path / "ok.cu", t.path / "linked.cu");
  EXPECT_NE(read_student_file(t.path, "linked.cu", text).value_or("").find("hard link"), std::string::npos);
  ASSERT_EQ(mkfifo((t.path / "fifo.cu").c_str(), 0600), 0);
  EXPECT_NE(read_student_file(t.path, "fifo.cu", text).value_or("").find("not a regular file"), std::string::npos);
}

TEST(Upload, IncludePolicyRefusesWhatCouldReachOtherFiles) {
  EXPECT_NE(refusal("#include \"/etc/passwd\"\n").find("absolute path"), std::string::npos);
  EXPECT_NE(refusal("#include </work/x.hpp>\n").find("absolute path"), std::string::npos);
  EXPECT_NE(refusal("#include \"../../solutions/01-memory-bandwidth/kernels.cu\"\n").find("`..`"), std::string::npos);
  EXPECT_NE(refusal("#include <solutions/01-memory-bandwidth/kernels.cu>\n").find("solutions/"), std::string::npos);
  EXPECT_NE(refusal("#include <rooflab/../../../solutions/x>\n").find("`..`"), std::string::npos);
  EXPECT_NE(refusal("#define F \"x.cu\"\n#include F\n").find("macro"), std::string::npos);
  EXPECT_NE(refusal("#include \"other.hpp\"\n").find("not a file of the lab"), std::string::npos);
  EXPECT_NE(refusal("asm(\".incbin \\\"/etc/passwd\\\"\");\n").find(".incbin"), std::string::npos);
  // The spellings a preprocessor accepts: spaces, the %: digraph, comments, line continuations.
  EXPECT_NE(refusal("#  include \"../x\"\n"), "");
  EXPECT_NE(refusal("  %:include \"../x\"\n"), "");
  EXPECT_NE(refusal("# /* a comment */ include \"../x\"\n"), "");
  EXPECT_NE(refusal("#inc\\\nlude \"../x\"\n"), "");
  EXPECT_NE(refusal("#include /* a comment\n spanning lines */ \"../x\"\n"), "");
  EXPECT_NE(refusal("#include_next <../x>\n"), "");
  // A "//" or "/*" inside a literal opens no comment, so it cannot hide the next lines.
  EXPECT_NE(refusal("const char* s = \"/*\";\n#include \"../x\"\n// */\n"), "");
  EXPECT_NE(refusal("auto s = R\"(/*)\";\n#include \"../x\"\n// */\n"), "");
  EXPECT_NE(refusal("int n = 1'0'0;  /*\n*/\n#include \"../x\"\n"), "");
  // The line reported is the offending one.
  EXPECT_NE(refusal("int a;\n\n#include \"../x\"\n").find("line 3"), std::string::npos);
}

TEST(Upload, IncludePolicyAcceptsWhatLabsUse) {
  EXPECT_EQ(refusal("#include \"lab.hpp\"\n#include <rooflab/grid.hpp>\n#include <cuda_fp16.h>\n#include <vector>\n"), "");
  // Text that only looks like an include: in a comment, in a string, in a raw string.
  EXPECT_EQ(refusal("// #include \"../x\"\n/*\n#include \"../x\"\n*/\n"), "");
  EXPECT_EQ(refusal("const char* s = \"#include \\\"../x\\\"\";\n"), "");
  EXPECT_EQ(refusal("auto s = R\"x(\n#include \"../y\"\n)x\";\n"), "");
  EXPECT_EQ(refusal("// a comment that goes on \\\n#include \"../x\"\n"), "");
  // Every shipped stub and solution passes.
  const Manifest m = load_manifest(build());
  ASSERT_FALSE(m.labs.empty());
  std::vector<const Lab*> labs;
  for (const auto& l : m.labs) labs.push_back(&l);
  for (const auto& dir : {source() / "labs", source() / "solutions"}) {
    for (const auto& r : check_student_files(labs, dir)) ADD_FAILURE() << dir << ": " << r.file << ": " << r.reason;
  }
}

TEST(Upload, ARefusedKernelFileCostsOnlyTheBinariesBuiltFromIt) {
  Binary analytic, emu, gpu;
  analytic.kind = "analytic";
  emu.kind = "emu";
  gpu.kind = "gpu";
  EXPECT_FALSE(binary_uses(analytic, "kernels.cu"));
  EXPECT_TRUE(binary_uses(emu, "kernels.cu"));
  EXPECT_TRUE(binary_uses(gpu, "kernels.cu"));
  EXPECT_TRUE(binary_uses(analytic, "answers.cpp"));
  EXPECT_FALSE(binary_uses(emu, "answers.cpp"));
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--probe") return probe(argv[2], argv[3]);
  g_self = fs::canonical("/proc/self/exe");
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
