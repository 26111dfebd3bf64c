// Comparing a kernel's output with the CPU reference: |got - want| <= atol + rtol * |want| per element.
// NaN never passes (poisoned outputs are NaN, so an element the kernel never wrote fails), and the report
// lists the first mismatches with their indices so a student sees *where* the kernel goes wrong.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>

#include <fmt/format.h>

namespace rooflab {

struct Tolerance {
  double atol;
  double rtol;
};

// Per data type defaults: a few ulps of accumulated rounding, not a blanket that lets zeros through.
inline constexpr Tolerance kExactTolerance{0.0, 0.0};
inline constexpr Tolerance kFp32Tolerance{1e-6, 1e-5};
inline constexpr Tolerance kFp16Tolerance{1e-3, 1e-2};

struct CompareResult {
  bool ok = true;
  std::size_t checked = 0;
  std::size_t mismatches = 0;
  double max_abs_error = 0.0;
  std::string report;  // empty when ok
  explicit operator bool() const { return ok; }
};

template <typename Got, typename Want>
CompareResult compare(std::span<const Got> got, std::span<const Want> want, Tolerance tol,
                      std::size_t max_listed = 8) {
  CompareResult r;
  if (got.size() != want.size()) {
    r.ok = false;
    r.report = fmt::format("size mismatch: got {} elements, want {}", got.size(), want.size());
    return r;
  }
  r.checked = got.size();
  std::string listed;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    const double err = std::abs(g - w);
    // Written so that a NaN in either value fails: every comparison with NaN is false.
    const bool good = err <= tol.atol + tol.rtol * std::abs(w);
    if (good) {
      if (err > r.max_abs_error) r.max_abs_error = err;
      continue;
    }
    if (r.mismatches < max_listed) {
      listed += fmt::format("\n  [{}] got {:.9g}, want {:.9g} (|diff| {:.3g}, allowed {:.3g})", i, g, w, err,
                            tol.atol + tol.rtol * std::abs(w));
    }
    ++r.mismatches;
  }
  if (r.mismatches > 0) {
    r.ok = false;
    r.report = fmt::format("{} of {} elements differ (atol {:g}, rtol {:g}); first ones:{}", r.mismatches,
                           r.checked, tol.atol, tol.rtol, listed);
  }
  return r;
}

}  // namespace rooflab
