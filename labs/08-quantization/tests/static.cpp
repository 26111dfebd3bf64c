// Lab 08 static checks (hints; CI requires them of the solutions): no spills, and both GEMVs read the packed
// weights in 128-bit loads and never a byte at a time (a GEMV that walks q byte by byte, or unpacks int4 from
// single bytes, shows up here first; so does one left unwritten).
#include "lab.hpp"

#include <rooflab/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/ptx.hpp>
#include <rooflab/static_capture.hpp>

#include <regex>
#include <string>

ROOFLAB_INSPECT_KERNELS(lab08::kKernels);

namespace {
// Global loads of 8-bit elements: ld.global.u8, ld.global.nc.s8, ld.global.v4.u8 ...
int byte_loads(const std::string& body) {
  static const std::regex load(R"(\bld\.global(\.[a-z0-9]+)*\.[usb]8\b)");
  return static_cast<int>(std::distance(std::sregex_iterator(body.begin(), body.end(), load), std::sregex_iterator()));
}
}  // namespace

ROOFLAB_TEST(Lab08Static, NoSpillsAndWideLoads) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::parse_ptxas_report(rooflab::ptx::captured(arch, ".ptxas.txt"))) {
      EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0) << arch << ": " << r.name << " spills";
    }
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const char* name : {"lab08::gemv_int8_kernel", "lab08::gemv_int4_kernel"}) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, name));
      EXPECT_EQ(f.widest_global_load_bits, 128)
          << arch << ": " << name << " should read the packed weights 16 bytes at a time";
      EXPECT_EQ(byte_loads(f.body), 0) << arch << ": " << name
                                       << " loads single bytes from global memory: read the "
                                          "packed weights in 128-bit loads and unpack them in registers";
    }
  }
}
