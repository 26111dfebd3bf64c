// The doctor's parts that grade relies on: its verdict withholds perf points (and only those), it is asked
// only when a perf test ran on a GPU, and nvidia-smi's CSV is read by field name. The checks themselves run
// against canned machines in doctor_e2e.sh (grader.doctor).
#include "doctor_checks.hpp"
#include "doctor_gate.hpp"

#include <gtest/gtest.h>

#include <map>

namespace rooflab::grader {
namespace {

TestResult test_of(const std::string& id, const std::string& kind, double score, Status status) {
  TestResult t;
  t.lab = "01";
  t.id = id;
  t.kind = kind;
  t.max_score = 6;
  t.score = score;
  t.status = status;
  t.output = "copy: 1.2 TB/s = 41.0% of the ceiling copy_bandwidth, 2.9 TB/s";
  return t;
}

LabResults lab_with_perf() {
  LabResults lr;
  lr.note = "graded on NVIDIA H100 80GB HBM3";
  lr.tests = {test_of("Lab01Perf.Copy", "perf", 2.5, Status::passed), test_of("Lab01Gpu.Copy", "gpu", 6, Status::passed)};
  return lr;
}

const PerfGate kUnfit{false, "NO PERF POINTS on this GPU: copy is 55% of the datasheet."};

TEST(DoctorGate, UnfitGpuWithholdsPerfPointsAndSaysWhy) {
  LabResults lr = lab_with_perf();
  apply_perf_gate(lr, true, [] { return kUnfit; });
  const TestResult& perf = lr.tests[0];
  EXPECT_EQ(perf.score, 0);
  EXPECT_EQ(perf.status, Status::needs_gpu);  // owed, not failed: the kernel is not blamed
  EXPECT_NE(perf.output.find("not awarded on this GPU"), std::string::npos) << perf.output;
  EXPECT_NE(perf.output.find("copy is 55% of the datasheet"), std::string::npos) << perf.output;
  EXPECT_NE(perf.output.find("41.0% of the ceiling"), std::string::npos) << "the test's own figures stay: " << perf.output;
  EXPECT_EQ(lr.tests[1].score, 6) << "correctness points are not the GPU's health's business";
  EXPECT_EQ(lr.tests[1].status, Status::passed);
  EXPECT_NE(lr.note.find("perf points withheld: NO PERF POINTS"), std::string::npos) << lr.note;
}

TEST(DoctorGate, FitGpuChangesNothing) {
  LabResults lr = lab_with_perf();
  apply_perf_gate(lr, true, [] { return PerfGate{true, "GPU health: fine."}; });
  EXPECT_EQ(lr.tests[0].score, 2.5);
  EXPECT_EQ(lr.tests[0].status, Status::passed);
  EXPECT_EQ(lr.note, "graded on NVIDIA H100 80GB HBM3");
}

TEST(DoctorGate, MeasuresOnlyWhenAPerfTestRanOnAGpu) {
  int asked = 0;
  const auto verdict = [&] {
    ++asked;
    return kUnfit;
  };
  LabResults no_gpu = lab_with_perf();
  apply_perf_gate(no_gpu, false, verdict);
  LabResults owed = lab_with_perf();
  owed.tests[0].status = Status::needs_gpu;  // --kind emu, or a perf binary that was not built
  apply_perf_gate(owed, true, verdict);
  LabResults analytic;
  analytic.tests = {test_of("Lab01Analytic.StreamBytes", "analytic", 4, Status::passed)};
  apply_perf_gate(analytic, true, verdict);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(no_gpu.tests[0].score, 2.5);
  LabResults ran = lab_with_perf();
  apply_perf_gate(ran, true, verdict);
  EXPECT_EQ(asked, 1);
}

TEST(DoctorChecks, ReadsNvidiaSmiCsvByFieldName) {
  const auto rows = doctor::parse_csv("index, clocks.max.sm [MHz], power.limit [W], ecc.mode.current\n"
                                      "0, 1980 MHz, 700.00 W, [N/A]\n"
                                      "No running processes found\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("clocks.max.sm"), "1980 MHz");
  EXPECT_EQ(doctor::number(rows[0].at("power.limit")), 700.0);
  EXPECT_FALSE(doctor::number(rows[0].at("ecc.mode.current")).has_value());
}

// Canned answers by source name, as the fixtures folder gives them.
class Canned : public doctor::Tools {
 public:
  explicit Canned(std::map<std::string, std::string> answers) : answers_(std::move(answers)) {}
  doctor::ToolOutput get(const std::string& name, const std::vector<std::string>&) override {
    const auto it = answers_.find(name);
    return it == answers_.end() ? doctor::ToolOutput{} : doctor::ToolOutput{true, 0, it->second};
  }

 private:
  std::map<std::string, std::string> answers_;
};

TEST(DoctorChecks, AGpuMissingFromTheDataIsMeasuredButNotJudged) {
  Canned tools({{"nvidia-smi-gpu", "index, name, mig.mode.current\n0, NVIDIA Imaginary X1, Disabled\n"},
                {"probe-health", R"({"backend":"gpu","name":"NVIDIA Imaginary X1","copy_gbps":100,"fma_tflops":1,"seconds":30})"}});
  const doctor::Facts facts = doctor::gather(tools);
  const doctor::Health h = doctor::health_check(facts, tools, 30);
  EXPECT_TRUE(h.measured);
  EXPECT_TRUE(h.fit);
  EXPECT_EQ(h.finding.level, doctor::Level::warning);
  EXPECT_NE(h.finding.message.find("not in data/gpus.json"), std::string::npos) << h.finding.message;
}

}  // namespace
}  // namespace rooflab::grader
