// `./rooflab doctor`: is this machine fit to grade GPU labs on, and if not, what to do (docs/doctor.md).
//
//   toolkit, driver, architecture   the driver's CUDA version against the toolkit's; the GPU's compute
//                                   capability against what the toolkit and the build tree target
//   device files, landlock,         the device as a test binary sees it: a tiny kernel launched inside the
//   sandbox device                  grader's own sandbox; whether Landlock confines it, and if not, why
//   GPU state                       other processes, MIG, persistence, clocks, throttling, power, ECC, counters
//   health                          copy bandwidth and FP32 FMA against the datasheet (data/gpus.json)
//
// Exit codes: 0 nothing wrong (warnings allowed), 1 an error was found, 2 usage, 3 the harness failed,
// 4 no GPU here (nothing wrong with what could be checked).
#pragma once

#include <filesystem>
#include <optional>

namespace rooflab::grader {

struct DoctorArgs {
  std::optional<std::filesystem::path> report;  // the Markdown report (default <report dir>/doctor.md)
  std::filesystem::path report_dir = "rooflab-report";
  double seconds = 30;   // the health measurement's length
  bool record = false;   // also calibrate, grade the reference solutions, and write the measurements block
  bool gate = false;     // (tests) say what grade would do with perf points, from the cache or a new measurement
};

int cmd_doctor(const DoctorArgs& args);

}  // namespace rooflab::grader
