// The half of award() that reads this GPU's calibration. Its own object file in rooflab::test_main: only a
// binary that calls it (a perf or dry-run binary) pulls it in, and those link rooflab::cuda or
// rooflab::cuda_dryrun after rooflab::test_main, which define rooflab::ceilings(). The analytic and CPU
// binaries never see it, so they need no CUDA.
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/grading.hpp>

namespace rooflab::grading {

void award(std::string_view lab, std::string_view quantity, double measured_si) {
  detail::award_resolved(lab, quantity, measured_si, &rooflab::ceilings(), std::nullopt);
}

double ceiling_in_force(Ceiling c) {
  const Ceilings& calibrated = rooflab::ceilings();
  const double value = calibrated.si(c);
  detail::record_ceiling({std::string(to_string(c)), value, std::string(si_unit(c)), calibrated.where()});
  return value;
}

}  // namespace rooflab::grading
