// The half of award() that reads this GPU: its calibration and its architecture. Its own object file in
// rooflab::test_main: only a binary that calls it (a perf or dry-run binary) pulls it in, and those link
// rooflab::cuda or rooflab::cuda_dryrun after rooflab::test_main, which define rooflab::ceilings() and
// rooflab::query_device(). The analytic and CPU binaries never see it, so they need no CUDA.
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/grading.hpp>

#include <exception>

namespace rooflab::grading {

namespace {
// This GPU's compute capability (90 for sm_90), which picks a rule's numbers per architecture; 0 when the
// device cannot be queried (the rule's own numbers then). On a dry run, the CPU backend's pretend GPU's.
int this_architecture() {
  static const int cc = [] {
    try {
      const DeviceInfo d = query_device();
      return 10 * d.cc_major + d.cc_minor;
    } catch (const std::exception&) {
      return 0;
    }
  }();
  return cc;
}
}  // namespace

void award(std::string_view lab, std::string_view quantity, double measured_si) {
  detail::award_resolved(lab, quantity, measured_si, &rooflab::ceilings(), std::nullopt, this_architecture());
}

void award(std::string_view lab, std::string_view quantity, double measured_si, double ceiling_measured_here_si) {
  detail::award_resolved(lab, quantity, measured_si, nullptr, ceiling_measured_here_si, this_architecture());
}

double ceiling_in_force(Ceiling c) {
  const Ceilings& calibrated = rooflab::ceilings();
  const double value = calibrated.si(c);
  detail::record_ceiling({std::string(to_string(c)), value, std::string(si_unit(c)), calibrated.where()});
  return value;
}

}  // namespace rooflab::grading
