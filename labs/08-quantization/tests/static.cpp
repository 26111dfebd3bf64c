// Lab 08 static checks (hints; CI requires them of the solutions): no spills, and both GEMVs read the packed
// weights in 128-bit loads and never a byte at a time (a GEMV that walks q byte by byte, or unpacks int4 from
// single bytes, shows up here first; so does one left unwritten).
#include "kernels.hpp"
#include "perf_work.hpp"
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <cstdint>
#include <map>
#include <regex>
#include <string>

ROOFLAB_INSPECT_KERNELS(lab08::kKernels);
// Inspect at the timed size: 8192 x 8192 weights.
ROOFLAB_INSPECT_TIMED_SIZE(8192.0 * 8192);

namespace {
// The GEMVs as the perf tests launch them (tests/perf_work.hpp: 8192 x 8192, int4 in groups of 128), for the grids
// `rooflab inspect` counts waves of; nothing runs.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const int n = lab08::perf::gemv_side(1.0), k = n, group = lab08::perf::kInt4PerfGroup;
    // Each format's own buffers, as the perf tests' Packed holds them (the model's reused data reads each pointer's
    // reach): int8 weights and group-32 scales, int4 weights (two per byte) and scales of its group.
    const rooflab::ptx::TimedBuffer<std::int8_t> q(static_cast<std::size_t>(n) * k);
    const rooflab::ptx::TimedBuffer<std::uint8_t> q4(static_cast<std::size_t>(n) * k / 2);
    const rooflab::ptx::TimedBuffer<__half> scales(static_cast<std::size_t>(n) * k / lab08::kInt8Group),
        scales4(static_cast<std::size_t>(n) * k / group), x(k), y(n);
    // Each launcher on its own (timed): one still the stub leaves the other's grid.
    rooflab::ptx::timed([&] { lab08::gemv_int8(q.data(), scales.data(), x.data(), y.data(), n, k, nullptr); });
    rooflab::ptx::timed([&] { lab08::gemv_int4(q4.data(), scales4.data(), x.data(), y.data(), n, k, group, nullptr); });
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

namespace {
// Global loads of 8-bit elements: ld.global.u8, ld.global.nc.s8, ld.global.v4.u8 ...
int byte_loads(const std::string& body) {
  static const std::regex load(R"(\bld\.global(\.[a-z0-9]+)*\.[usb]8\b)");
  return static_cast<int>(std::distance(std::sregex_iterator(body.begin(), body.end(), load), std::sregex_iterator()));
}

// The kernels each quantized GEMV's launcher starts on a small problem (run on the CPU backend): the hints are
// asked of those, not of any kernel in the file.
std::map<std::string, rooflab::ptx::Launched> launched_by_gemvs() {
  constexpr int n = 8, k = 256, group = 32;
  const auto x = rooflab::ptx::device_zeros<__half>(k);
  const auto scales = rooflab::ptx::device_zeros<__half>(static_cast<std::size_t>(n) * k / group);
  auto y = rooflab::ptx::device_zeros<__half>(n);
  const auto q8 = rooflab::ptx::device_zeros<std::int8_t>(static_cast<std::size_t>(n) * k);
  const auto q4 = rooflab::ptx::device_zeros<std::uint8_t>(static_cast<std::size_t>(n) * k / 2);
  std::map<std::string, rooflab::ptx::Launched> out;
  out["lab08::gemv_int8_kernel"] = rooflab::ptx::launched_by("lab08::gemv_int8", [&] {
    lab08::gemv_int8(q8.data(), scales.data(), x.data(), y.data(), n, k, nullptr);
  });
  out["lab08::gemv_int4_kernel"] = rooflab::ptx::launched_by("lab08::gemv_int4", [&] {
    lab08::gemv_int4(q4.data(), scales.data(), x.data(), y.data(), n, k, group, nullptr);
  });
  return out;
}
}  // namespace

ROOFLAB_TEST(Lab08Static, NoSpillsAndWideLoads) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  const auto launched = launched_by_gemvs();
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch);
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const char* name : {"lab08::gemv_int8_kernel", "lab08::gemv_int4_kernel"}) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, name, launched.at(name)));
      EXPECT_EQ(f.widest_global_load_bits, 128)
          << arch << ": " << name << " should read the packed weights 16 bytes at a time";
      EXPECT_EQ(byte_loads(f.body), 0) << arch << ": " << name
                                       << " loads single bytes from global memory: read the "
                                          "packed weights in 128-bit loads and unpack them in registers";
    }
  }
}
