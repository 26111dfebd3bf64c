// Lab 08 traffic hints: the int8 and int4 GEMVs on the CPU backend with their global loads and stores
// recorded and counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM;
// docs/cpu-mode.md "Memory traffic"). A quantized GEMV is worth its fewer bytes only if it reads each packed
// weight and scale once, in whole sectors: the tests count every launch of one call (each starting with an
// empty L2) and compare the modelled DRAM bytes with the bytes tests/perf_work.hpp counts (packed weights and
// scales once, x and y). Hints: no points (rubric.json), and no GPU needed.
//
// Shape: 512 x 512 weights packed by the reference (lab.hpp), with the modelled L2 a quarter of the int4
// weights (the graded weights, 8192 x 8192, overflow every L2 in data/gpus.json), so that a second pass over
// them misses as it would on a GPU.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/half.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/traffic.hpp>

#include <cuda_fp16.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr int kSide = 512;

// One format's weights packed by the reference, on the device.
struct Packed {
  Packed(std::span<const float> w, int bits, int group) {
    std::vector<int> q;
    std::vector<float> s;
    lab08::quantize_ref(w, group, bits == 8 ? lab08::kInt8Max : lab08::kInt4Max, q, s);
    const auto bytes = lab08::pack_ref(q, bits);
    packed = rooflab::DeviceBuffer<std::uint8_t>(bytes.size());
    packed.upload(bytes);
    scales = rooflab::DeviceBuffer<__half>(s.size());
    scales.upload(rooflab::to_half(s));
  }
  rooflab::DeviceBuffer<std::uint8_t> packed;
  rooflab::DeviceBuffer<__half> scales;
};

}  // namespace

// Each GEMV moves its packed weights and scales once, plus x and y, within 10% in the model, and every access
// to the weights and scales fetches only sectors its threads use (x, which every row reads again, is left out).
ROOFLAB_TEST(Lab08Traffic, EachPackedByteReadOnce) {
  constexpr int n = kSide, k = kSide, group4 = lab08::perf::kInt4PerfGroup;
  const auto w = rooflab::random_floats(std::size_t{n} * k, 81);
  rooflab::DeviceBuffer<__half> x{std::span<const __half>(rooflab::to_half(rooflab::random_floats(k, 82)))};
  rooflab::DeviceBuffer<__half> y(n);
  Packed packed8{w, 8, lab08::kInt8Group}, packed4{w, 4, group4};
  rooflab::traffic::Options options;
  options.l2_bytes = static_cast<std::size_t>(lab08::int4_bytes(n, k, group4) / 4);

  struct Case {
    std::string name;
    double weight_bytes;
    const Packed* weights;
    std::function<void()> call;
  };
  const Case cases[] = {
      {"gemv_int8", lab08::int8_bytes(n, k), &packed8,
       [&] {
         lab08::gemv_int8(reinterpret_cast<const std::int8_t*>(packed8.packed.data()), packed8.scales.data(), x.data(),
                          y.data(), n, k, nullptr);
       }},
      {"gemv_int4 (group " + std::to_string(group4) + ")", lab08::int4_bytes(n, k, group4), &packed4,
       [&] { lab08::gemv_int4(packed4.packed.data(), packed4.scales.data(), x.data(), y.data(), n, k, group4, nullptr); }},
  };
  for (const Case& c : cases) {
    const auto k_traffic = rooflab::traffic::record_call(c.call, options);
    const auto work = lab08::perf::gemv_work(n, k, c.weight_bytes);
    rooflab::traffic::note_summary(c.name, k_traffic, work.bytes(), work.flops);
    EXPECT_TRUE(rooflab::traffic::dram_near(k_traffic, work.bytes(), 0.10)) << c.name;
    EXPECT_TRUE(rooflab::traffic::coalesced_in(k_traffic, {c.weights->packed.data(), c.weights->scales.data()})) << c.name;
  }
}
