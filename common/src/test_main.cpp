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
#include <rooflab/detail/loaded_libraries.hpp>
#include <rooflab/detail/report.hpp>
#include <rooflab/detail/rubric.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

// The CPU backend's kernel bookkeeping (common/emu/src/kernels.cpp), where it is linked in: newline-separated
// kernel names. Weak, so that binaries without the backend (analytic, static) link without it.
extern "C" const char* rooflab_emu_kernels_defined() __attribute__((weak));
extern "C" const char* rooflab_emu_kernels_launched() __attribute__((weak));

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
  bool handled = false;
  const int extra = rooflab::grading::run_extra_main(argc, argv, &handled);
  if (handled) return extra;
  ::testing::InitGoogleTest(&argc, argv);
  if (*rooflab::grading::binary_rubric() != '\0') {
    try {
      const auto rubric = rooflab::rubric::load(rooflab::grading::binary_rubric());
      const std::string diff = rooflab::rubric::mismatch(rubric, rooflab::grading::binary_kind(), registered_tests());
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
  // Appended last, so it hears each OnTestEnd first and its failure reaches every other listener.
  if (*rooflab::grading::binary_rubric() != '\0') {
    ::testing::UnitTest::GetInstance()->listeners().Append(new rooflab::loaded_libraries::LoadedLibraryCheck(
        rooflab::loaded_libraries::forbidden_in_rubric(rooflab::grading::binary_rubric())));
  }
  const int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->successful_test_count() == 0 && unit->skipped_test_count() > 0) return 77;
  if (rc == 0) return check_kernel_coverage();
  return rc;
}
