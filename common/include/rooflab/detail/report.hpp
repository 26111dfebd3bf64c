// The channel between a test process and the grader, and what the grader may believe of it.
//
// A test binary links student code, so nothing it says can be believed alone: a global initializer in a
// student file runs before main() and can write anything anywhere the process can. So:
//
//   - The report goes to a file descriptor the grader opened and handed down (ROOFLAB_REPORT_FD), never to
//     a path on the command line; the grader also requires the exit status to agree with it.
//   - Every value a test checks (kernel outputs, analytic answers) is recorded on that channel
//     (ROOFLAB_RECORD=got). The grader runs the same test again in the reference solution's binary, a
//     process with no student code, recording the expected values (ROOFLAB_RECORD=want), and compares the
//     two with the test's own tolerance. A forged "passed" with forged values fails unless the values are
//     right, which means the work was done.
//   - Perf tests declare the kernel time they measured (a claim): a process that ended sooner than the
//     time it claims to have spent timing kernels is rejected as implausible.
//
// The writer half has no GoogleTest in it (the timing harness declares claims); the gtest listener that
// reports results lives in test_main.cpp. The reader half, the grader's, is rooflab/detail/report_reader.hpp:
// apart, so that every test source (grading.hpp includes this one) does not parse and instantiate JSON.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab::report {

// Frame types: one byte, then the payload length (8 bytes, little-endian), then the payload.
inline constexpr char kTestStart = 'S';  // JSON {"suite", "name"}
inline constexpr char kResult = 'J';     // JSON {"suite", "name", "result", "failures", "skip", "properties"}
inline constexpr char kValues = 'V';     // u32 header length, JSON header {"label", "dtype", "count", "atol", "rtol"}, data
inline constexpr char kClaim = 'C';      // JSON {"kernel_seconds"}
inline constexpr char kCoverage = 'L';   // JSON {"gaps": [...]} or {"error": "..."} (rooflab/detail/coverage.hpp)

// ---- writer (test process) ----

// The grader's descriptor, or -1 when the binary runs outside the grader (CTest, by hand).
int channel();
void write_frame(char type, std::string_view payload);

enum class RecordMode { off, got, want };
RecordMode record_mode();  // ROOFLAB_RECORD = got | want; off otherwise

// Records the values a test checks. `got` and `want` are the two sides of one comparison; which one is
// written depends on record_mode(). Float data stays float on the channel; everything else goes as double.
void record(std::string_view label, std::span<const float> got, std::span<const float> want, double atol, double rtol);
void record(std::string_view label, std::span<const double> got, std::span<const double> want, double atol,
            double rtol);

// A perf test's measured kernel time (all samples and warm-ups it timed), in seconds.
void claim_kernel_seconds(double seconds);

}  // namespace rooflab::report
