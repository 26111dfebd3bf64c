// Lab 07 traffic hints: the GEMV and the batched GEMV on the CPU backend with their global loads and stores
// recorded and counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM;
// docs/cpu-mode.md "Memory traffic"). The lesson of batching is that each weight is read from DRAM once for
// the whole batch, so the tests count every launch the launcher makes (each starts with an empty L2, as
// Nsight Compute's cache control does) and compare the modelled DRAM bytes with the layer's bytes in
// tests/perf_work.hpp: the weights once, the inputs and the outputs. A launcher that reads the weights once
// per batch row, in one launch or several, shows that many times the bytes. Hints: no points (rubric.json),
// and no GPU needed.
//
// Shape: 512 x 512 FP16 weights (512 KB) with the modelled L2 a quarter of them, the ratio of the graded
// shapes (the weights are at least 4x the L2, tests/perf_work.hpp), so that a second pass over the weights
// misses as it would on a GPU. Batches 1 and 8 take the CUDA-core kernel, 33 the tensor-core one.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/half.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/traffic.hpp>

#include <cuda_fp16.h>

#include <cstddef>
#include <string>

namespace {

constexpr int kSide = 512;

rooflab::traffic::Options options() {
  rooflab::traffic::Options o;
  o.l2_bytes = std::size_t{kSide} * kSide * sizeof(__half) / 4;
  return o;
}

rooflab::DeviceBuffer<__half> random_halves(std::size_t n, std::uint64_t seed) {
  return rooflab::DeviceBuffer<__half>{std::span<const __half>(rooflab::to_half(rooflab::random_floats(n, seed)))};
}

}  // namespace

// At batch 1 the GEMV, and at batches 1, 8 and 33 the batched kernel, move the layer's bytes: each weight
// once, the inputs and outputs once (the inputs' rereads come from L2), every access to W coalesced.
ROOFLAB_TEST(Lab07Traffic, EachWeightByteReadOnce) {
  constexpr int n = kSide, k = kSide, max_batch = 33;
  auto w = random_halves(std::size_t{n} * k, 1);
  auto x = random_halves(std::size_t{max_batch} * k, 2);
  rooflab::DeviceBuffer<__half> y(std::size_t{max_batch} * n);

  const auto gemv =
      rooflab::traffic::record_call([&] { lab07::gemv(w.data(), x.data(), y.data(), n, k, nullptr); }, options());
  const auto layer1 = lab07::perf::linear_work(n, k, 1);
  rooflab::traffic::note_summary("gemv", gemv, layer1.bytes(), layer1.flops);
  EXPECT_TRUE(rooflab::traffic::dram_near(gemv, layer1.bytes(), 0.10)) << "gemv";
  EXPECT_TRUE(rooflab::traffic::coalesced_in(gemv, {w.data()})) << "gemv";

  for (const int batch : {1, 8, max_batch}) {
    const auto batched = rooflab::traffic::record_call(
        [&] { lab07::batched_gemv(w.data(), x.data(), y.data(), n, k, batch, nullptr); }, options());
    const auto layer = lab07::perf::linear_work(n, k, batch);
    const std::string name = "batched_gemv, batch " + std::to_string(batch);
    rooflab::traffic::note_summary(name, batched, layer.bytes(), layer.flops);
    EXPECT_TRUE(rooflab::traffic::dram_near(batched, layer.bytes(), 0.10)) << name;
    EXPECT_TRUE(rooflab::traffic::coalesced_in(batched, {w.data()})) << name;
  }
}
