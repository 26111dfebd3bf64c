// main() of every lab test binary.
//
//   lab01_emu                       runs the tests (GoogleTest flags apply)
//   lab01_static --rooflab-inspect  the compiler's facts per kernel (see rooflab/inspect.hpp)
//
// Before any test runs, the binary checks that it holds exactly its lab rubric's tests of its kind
// (rooflab/detail/rubric.hpp): a test added without its points, or points for a test that does not exist, stop it
// with exit code 3 and the list of differences.
//
// Under the grader every test's outcome goes to the report channel the grader opened (rooflab/detail/report.hpp),
// not to a file named on the command line. Exit code 77 when every test that ran was skipped (no GPU):
// CTest reports it as skipped, never passed.
//
// At the end of every test, the shared objects loaded in the process are checked against the libraries the
// lab's rubric forbids (rooflab/detail/loaded_libraries.hpp): a test during which libcublas or libcudnn was loaded
// at run time fails, naming it.
#include <rooflab/testing/grading.hpp>
#include <rooflab/detail/coverage.hpp>
#include <rooflab/detail/loaded_libraries.hpp>
#include <rooflab/detail/report.hpp>
#include <rooflab/detail/rubric.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

// The CPU backend's kernel bookkeeping (common/emu/src/kernels.cpp), where it is linked in: newline-separated
// kernel names. Weak, so that binaries without the backend (analytic, static) link without it.
extern "C" const char* rooflab_emu_kernels_defined() __attribute__((weak));
extern "C" const char* rooflab_emu_kernels_launched() __attribute__((weak));
// The CPU backend's live device memory (common/emu/src/runtime_api.cpp).
extern "C" void rooflab_emu_device_memory_in_use(unsigned long long* bytes, unsigned long long* allocations)
    __attribute__((weak));

namespace {

std::vector<std::string> lines_of(const char* text) {
  std::vector<std::string> out;
  std::string line;
  for (const char* p = text; p != nullptr && *p != '\0'; ++p) {
    if (*p != '\n') {
      line += *p;
    } else if (!line.empty()) {
      out.push_back(std::move(line));
      line.clear();
    }
  }
  return out;
}

// On the CPU backend, every kernel instance the process holds and those launched so far: the grader reports
// instances that no test launched (code no grade checked). Null elsewhere.
nlohmann::json kernel_bookkeeping() {
  if (rooflab_emu_kernels_defined == nullptr || rooflab_emu_kernels_launched == nullptr) return nullptr;
  return {{"defined", lines_of(rooflab_emu_kernels_defined())}, {"launched", lines_of(rooflab_emu_kernels_launched())}};
}

// ROOFLAB_EMU_COVERAGE set (the labs' CTest of the reference solutions): after a run of every test, each kernel
// instance compiled into the binary must have been launched by one of them. Returns the exit code to add.
int check_kernel_coverage() {
  if (std::getenv("ROOFLAB_EMU_COVERAGE") == nullptr || rooflab_emu_kernels_defined == nullptr) return 0;
  const auto launched = lines_of(rooflab_emu_kernels_launched());
  std::string missing;
  for (const auto& k : lines_of(rooflab_emu_kernels_defined())) {
    if (std::find(launched.begin(), launched.end(), k) == launched.end()) missing += "\n  " + k;
  }
  if (missing.empty()) return 0;
  std::cerr << "rooflab: kernel instances this binary defines that no test launched (a branch of a launcher no "
               "test takes: test every value the launcher accepts):" << missing << "\n";
  return 1;
}

// A coverage binary (the emu binary with the student's kernels compiled by gcov: rooflab/detail/coverage.hpp):
// its counters go to a directory of this process's own, read back when the tests have run and removed
// whatever way main() returns.
class CoverageRun {
 public:
  CoverageRun() : dir_(rooflab::coverage::begin()) {}
  ~CoverageRun() {
    if (dir_) rooflab::coverage::end(*dir_);
  }
  CoverageRun(const CoverageRun&) = delete;
  CoverageRun& operator=(const CoverageRun&) = delete;

  // After every test ran: the lines and branch outcomes of the student's .cu files that none reached. On the
  // grader's channel as a frame (the grade's 0-point hint); with ROOFLAB_EMU_COVERAGE (CI's labNN.emu.coverage
  // of the reference solutions) every gap its allow list (ROOFLAB_COVERAGE_ALLOW) does not excuse fails the
  // run. Returns the exit code to add.
  int report() {
    if (!dir_) return 0;
    const bool check = std::getenv("ROOFLAB_EMU_COVERAGE") != nullptr;
    try {
      auto gaps = rooflab::coverage::collect(*dir_);
      std::vector<std::string> stale;
      // The allow list, where the student directory has one (CMake names it whether or not it exists).
      if (const char* allow = std::getenv("ROOFLAB_COVERAGE_ALLOW");
          allow != nullptr && *allow != '\0' && std::filesystem::exists(allow)) {
        std::ifstream in(allow);
        if (!in) throw std::runtime_error(std::string("cannot read the allow list ") + allow);
        stale = rooflab::coverage::apply_allow_list(gaps, nlohmann::json::parse(in));
      }
      if (rooflab::report::channel() >= 0) {
        rooflab::report::write_frame(rooflab::report::kCoverage,
                                     nlohmann::json{{"gaps", rooflab::coverage::to_json(gaps)}}.dump());
      }
      if (!check) return 0;
      int rc = 0;
      const bool open = std::any_of(gaps.begin(), gaps.end(), [](const auto& g) { return g.allowed_by.empty(); });
      if (open) {
        std::cerr << "rooflab: lines and branches of the student's code that no test ran (give the tests inputs "
                     "that reach them, or, in the reference solution only, allow one with a reason in its "
                     "coverage.json):\n" << rooflab::coverage::describe(gaps);
        rc = 1;
      } else {
        std::cerr << "rooflab: every line and branch of the student's .cu files ran in a test"
                  << (gaps.empty() ? "" : " but those the allow list excuses:\n" + rooflab::coverage::describe(gaps))
                  << "\n";
      }
      for (const auto& line : stale) {
        std::cerr << "rooflab: the allow list excuses a line that no longer has a gap (remove the entry): `" << line
                  << "`\n";
        rc = 1;
      }
      return rc;
    } catch (const std::exception& e) {
      if (rooflab::report::channel() >= 0) {
        rooflab::report::write_frame(rooflab::report::kCoverage, nlohmann::json{{"error", e.what()}}.dump());
      }
      std::cerr << "rooflab: coverage not measured: " << e.what() << "\n";
      return check ? 1 : 0;
    }
  }

 private:
  std::optional<std::filesystem::path> dir_;
};

// Every correctness test on the CPU backend ends with the device memory it began with: a launcher frees what
// it allocates before it returns, and keeps nothing between calls (a buffer kept in a static, a cache of
// converted inputs). On a GPU a program that calls such a launcher in a loop runs out of memory, or its
// first call pays for an allocation the timed ones skip. The tests' own buffers are freed by then (RAII).
class DeviceMemoryCheck : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override {
    rooflab_emu_device_memory_in_use(&bytes_, &allocations_);
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    unsigned long long bytes = 0, allocations = 0;
    rooflab_emu_device_memory_in_use(&bytes, &allocations);
    if (bytes <= bytes_ && allocations <= allocations_) return;
    ADD_FAILURE() << "device memory still allocated after this test: "
                  << (allocations - std::min(allocations, allocations_)) << " allocation(s), "
                  << (bytes - std::min(bytes, bytes_))
                  << " bytes, made while it ran and never freed. A launcher frees what it allocates (cudaFree) before "
                     "it returns and keeps nothing between calls: on a GPU a program that calls it in a loop runs out "
                     "of memory";
  }

 private:
  unsigned long long bytes_ = 0, allocations_ = 0;
};

// Writes each test's start and outcome as frames on the report channel.
class ReportListener : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    rooflab::report::write_frame(rooflab::report::kTestStart,
                                 nlohmann::json{{"suite", info.test_suite_name()}, {"name", info.name()}}.dump());
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult* r = info.result();
    nlohmann::json failures = nlohmann::json::array();
    std::string skip;
    for (int i = 0; i < r->total_part_count(); ++i) {
      const ::testing::TestPartResult& part = r->GetTestPartResult(i);
      if (part.skipped()) {
        skip += part.message();
      } else if (part.failed()) {
        failures.push_back(part.message());
      }
    }
    nlohmann::json properties = nlohmann::json::object();
    for (int i = 0; i < r->test_property_count(); ++i) {
      const ::testing::TestProperty& p = r->GetTestProperty(i);
      properties[p.key()] = p.value();
    }
    const char* result = r->Skipped() ? "skipped" : (r->Passed() ? "passed" : "failed");
    rooflab::report::write_frame(rooflab::report::kResult,
                                 nlohmann::json{{"suite", info.test_suite_name()},
                                                {"name", info.name()},
                                                {"result", result},
                                                {"failures", failures},
                                                {"skip", skip},
                                                {"properties", properties},
                                                {"kernels", kernel_bookkeeping()}}
                                     .dump());
  }
};

}  // namespace

// The rubric kind whose entries this lab's binaries of this kind leave out ("dryrun" in a student copy's dry
// run, which has no reference answers to check against): defined beside the binary's identity by the build
// (cmake/RooflabLab.cmake) when there is one, else absent.
extern "C" __attribute__((weak)) const char rooflab_binary_leaves_out[];

namespace {

// The tests this binary registers, as Suite.Name (parameterized ones as GoogleTest names them).
std::vector<std::string> registered_tests() {
  std::vector<std::string> out;
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit->total_test_suite_count(); ++i) {
    const ::testing::TestSuite* suite = unit->GetTestSuite(i);
    for (int k = 0; k < suite->total_test_count(); ++k) {
      out.push_back(std::string(suite->name()) + "." + suite->GetTestInfo(k)->name());
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CoverageRun coverage;
  bool handled = false;
  const int extra = rooflab::grading::run_extra_main(argc, argv, &handled);
  if (handled) return extra;
  ::testing::InitGoogleTest(&argc, argv);
  if (*rooflab::grading::binary_rubric() != '\0') {
    try {
      const auto rubric = rooflab::rubric::load(rooflab::grading::binary_rubric());
      const std::vector<std::string> leaves_out =
          rooflab_binary_leaves_out != nullptr && *rooflab_binary_leaves_out != '\0'
              ? std::vector<std::string>{rooflab_binary_leaves_out}
              : std::vector<std::string>{};
      const std::string diff =
          rooflab::rubric::mismatch(rubric, rooflab::grading::binary_kind(), registered_tests(), leaves_out);
      if (!diff.empty()) {
        std::cerr << "rooflab: this " << rooflab::grading::binary_kind() << " binary and "
                  << rooflab::grading::binary_rubric() << " disagree:\n" << diff;
        return 3;
      }
    } catch (const std::exception& e) {
      std::cerr << "rooflab: " << e.what() << "\n";
      return 3;
    }
  }
  if (rooflab::report::channel() >= 0) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new ReportListener);
  }
  // Appended after the report, so it hears each OnTestEnd before it and its failure is reported (GoogleTest
  // calls OnTestEnd in the reverse order of the listeners).
  if (rooflab_emu_device_memory_in_use != nullptr && std::strcmp(rooflab::grading::binary_kind(), "emu") == 0) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new DeviceMemoryCheck);
  }
  // Appended last, so it hears each OnTestEnd first and its failure reaches every other listener.
  if (*rooflab::grading::binary_rubric() != '\0') {
    ::testing::UnitTest::GetInstance()->listeners().Append(new rooflab::loaded_libraries::LoadedLibraryCheck(
        rooflab::loaded_libraries::forbidden_in_rubric(rooflab::grading::binary_rubric())));
  }
  const int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->successful_test_count() == 0 && unit->skipped_test_count() > 0) return 77;
  const int kernels = rc == 0 ? check_kernel_coverage() : 0;
  const int lines = coverage.report();  // also after a failed test: which code no test reached still holds
  if (rc != 0) return rc;
  return lines != 0 ? 1 : kernels;
}
