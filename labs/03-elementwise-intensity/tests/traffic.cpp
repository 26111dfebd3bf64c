// Lab 03 traffic hints: the elementwise kernels on the CPU backend with their global loads and stores
// recorded and counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM;
// docs/cpu-mode.md "Memory traffic"). The lesson of fusion is bytes: the unfused chain moves x, the bias
// row, t, u, r and y through DRAM (7 arrays' worth), the fused one x, r and y (3). The tests compare each
// kernel's modelled DRAM bytes with the registry's (lab.hpp, work::) and count every launch of the fused
// call, so a "fused" launcher that runs the three kernels through temporaries shows their bytes. FP32 only:
// the model does not see FP16 stores of a converted value (docs/cpu-mode.md). Hints: no points
// (rubric.json), and no GPU needed.
//
// Shape: 512 rows of 512 columns (1 MB per FP32 array), with the modelled L2 a quarter of one array: the
// graded arrays are many times the L2, and so are these.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/traffic.hpp>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kRows = 512, kCols = 512, kN = kRows * kCols;

rooflab::traffic::Options options() {
  rooflab::traffic::Options o;
  o.l2_bytes = kN * sizeof(float) / 4;
  return o;
}

rooflab::DeviceBuffer<float> random_array(std::size_t n, std::uint64_t seed) {
  return rooflab::DeviceBuffer<float>{std::span<const float>(rooflab::random_floats(n, seed))};
}

}  // namespace

// Each kernel of the chain, the fused chain as one call, and the sweep move the bytes the registry counts
// (within 10%), every access coalesced; the note gives the fused chain's bytes against the unfused chain's.
ROOFLAB_TEST(Lab03Traffic, FusedChainKeepsIntermediatesOnChip) {
  auto x = random_array(kN, 31), bias = random_array(kCols, 32), r = random_array(kN, 33);
  rooflab::DeviceBuffer<float> t(kN), u(kN), y(kN);
  const double n = static_cast<double>(kN), cols = static_cast<double>(kCols);
  struct Case {
    std::string name;
    lab03::KernelWork work;
    std::function<void()> call;
  };
  const Case cases[] = {
      {"bias_add", lab03::work::bias_add(n, cols),
       [&] { lab03::bias_add(x.data(), bias.data(), t.data(), kRows, kCols, nullptr); }},
      {"gelu", lab03::work::gelu(n), [&] { lab03::gelu(t.data(), u.data(), kN, nullptr); }},
      {"residual_add", lab03::work::residual_add(n),
       [&] { lab03::residual_add(u.data(), r.data(), y.data(), kN, nullptr); }},
      {"fused_chain", lab03::work::fused_chain(n, cols),
       [&] { lab03::fused_chain(x.data(), bias.data(), r.data(), y.data(), kRows, kCols, nullptr); }},
      // The sweep's intensity is its FMAs over 8 bytes an element: whatever k is, the bytes stay the same.
      {"sweep (k = 64)", lab03::work::sweep(n, 64),
       [&] { lab03::sweep(x.data(), y.data(), kN, 1.0001f, 0.5f, 64, nullptr); }},
  };
  double unfused = 0, fused = 0;
  for (const Case& c : cases) {
    const auto traffic = rooflab::traffic::record_call(c.call, options());
    rooflab::traffic::note_summary(c.name, traffic, c.work.bytes(), c.work.flops);
    EXPECT_TRUE(rooflab::traffic::dram_near(traffic, c.work.bytes(), 0.10)) << c.name;
    EXPECT_TRUE(rooflab::traffic::coalesced(traffic)) << c.name;
    if (c.name == "fused_chain") {
      fused = traffic.dram_bytes();
    } else if (c.name != "sweep (k = 64)") {
      unfused += traffic.dram_bytes();
    }
  }
  rooflab::grading::note(rooflab::traffic::format("the fused chain moves %.2f MB, the three kernels %.2f MB: %.2fx "
                                                  "fewer bytes in the model",
                                                  fused / 1e6, unfused / 1e6, unfused / fused));
}
