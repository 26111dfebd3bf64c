// main() of every lab test binary.
//
//   lab01_emu                       runs the tests (GoogleTest flags apply)
//   lab01_emu --rooflab-manifest    prints the declared tests (suite, name, kind, points) as JSON
//   lab01_static --rooflab-inspect  the compiler's facts per kernel (see rooflab/inspect.hpp)
//
// Exit code 77 when every test that ran was skipped (no GPU): CTest reports it as skipped, never passed.
#include <rooflab/grading.hpp>

#include <nlohmann/json.hpp>

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rooflab-manifest") == 0) {
      nlohmann::json tests = nlohmann::json::array();
      for (const auto& t : rooflab::grading::registry()) {
        tests.push_back({{"suite", t.suite}, {"name", t.name}, {"kind", t.kind}, {"points", t.points}});
      }
      std::cout << tests.dump(2) << "\n";
      return 0;
    }
  }
  bool handled = false;
  const int extra = rooflab::grading::run_extra_main(argc, argv, &handled);
  if (handled) return extra;
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->successful_test_count() == 0 && unit->skipped_test_count() > 0) return 77;
  return rc;
}
