// Lab 05 traffic hints: the Flash kernels on the CPU backend with their global loads and stores recorded and
// counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM; docs/cpu-mode.md
// "Memory traffic"). Flash attention's point is that the len x len scores never reach global memory: a kernel
// moves Q, K and V in and O (and the row statistics) out, and nothing else. The test counts every launch of
// one call (each starting with an empty L2) and compares the modelled DRAM bytes with those; a kernel that
// writes the scores out adds len x len values to the four len x head_dim matrices, len / (4 head_dim) times
// their bytes (as much again at the shape below: 256 / (4 x 64) = 1). Hints: no points (rubric.json), and no
// GPU needed.
//
// Shape: 2 heads of 256 tokens, head dimension 64, causal and not. The modelled L2 holds two heads' K and V:
// on a GPU the K and V a block rereads for each of its query tiles stay in the L2 (a few hundred KB per
// head against tens of MB) while the whole problem does not, and so they do here.
#include "kernels.hpp"

#include <rooflab/half.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/traffic.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr int kHeads = 2, kLen = 256, kHeadDim = 64;
constexpr std::size_t kElems = std::size_t{kHeads} * kLen * kHeadDim;

// Q, K and V read once, O written once (`elem` bytes each), and the log-sum-exp of each row (FP32).
double flash_bytes(double elem) { return 4.0 * kElems * elem + 4.0 * kHeads * kLen; }

// FLOPs of S = Q K^T and O = P V over every pair (the causal mask halves what a kernel must do, not what this
// note compares against).
double flash_flops() { return 4.0 * kHeads * double(kLen) * kLen * kHeadDim; }

}  // namespace

// Each Flash kernel moves Q, K, V and O once (within 10%, the row statistics included) and every access to
// them fetches only sectors its threads use, causal or not.
ROOFLAB_TEST(Lab05Traffic, FlashNeverWritesTheScores) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const auto floats = [](std::uint64_t seed) { return rooflab::random_floats(kElems, seed); };
  rooflab::DeviceBuffer<float> q32{std::span<const float>(floats(51))}, k32{std::span<const float>(floats(52))},
      v32{std::span<const float>(floats(53))}, o32(kElems), lse(std::size_t{kHeads} * kLen);
  rooflab::DeviceBuffer<__half> q16{std::span<const __half>(rooflab::to_half(floats(54)))},
      k16{std::span<const __half>(rooflab::to_half(floats(55)))},
      v16{std::span<const __half>(rooflab::to_half(floats(56)))}, o16(kElems);

  for (const bool causal : {false, true}) {
    struct Case {
      std::string name;
      double elem;
      std::vector<const void*> operands;
      std::function<void()> call;
    };
    const std::string mask = causal ? ", causal" : "";
    const Case cases[] = {
        {"flash_attention_fp32" + mask, 4, {q32.data(), k32.data(), v32.data(), o32.data()},
         [&] {
           lab05::flash_attention_fp32(q32.data(), k32.data(), v32.data(), o32.data(), lse.data(), kHeads, kLen,
                                       kHeadDim, scale, causal, nullptr);
         }},
        {"flash_attention_fp16" + mask, 2, {q16.data(), k16.data(), v16.data(), o16.data()},
         [&] {
           lab05::flash_attention_fp16(q16.data(), k16.data(), v16.data(), o16.data(), lse.data(), kHeads, kLen,
                                       kHeadDim, scale, causal, nullptr);
         }},
    };
    for (const Case& c : cases) {
      rooflab::traffic::Options options;
      options.l2_bytes = static_cast<std::size_t>(2 * 2 * kLen * kHeadDim * c.elem);
      const auto traffic = rooflab::traffic::record_call(c.call, options);
      rooflab::traffic::note_summary(c.name, traffic, flash_bytes(c.elem), flash_flops());
      EXPECT_TRUE(rooflab::traffic::dram_near(traffic, flash_bytes(c.elem), 0.10)) << c.name;
      EXPECT_TRUE(rooflab::traffic::coalesced_in(traffic, c.operands)) << c.name;
    }
  }
}
