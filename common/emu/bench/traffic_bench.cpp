// What the memory-traffic model costs (docs/cpu-mode.md, "Memory traffic"): the same kernels timed in a
// plain CPU-backend build (rooflab_emu_traffic_bench_plain) and in a TRAFFIC build
// (rooflab_emu_traffic_bench), there both with no recording on (the hooks return at once) and recording.
// A benchmark, not a test: it prints figures and asserts nothing about time. Both targets are built only
// when asked (cmake --build ... --target rooflab_emu_traffic_bench rooflab_emu_traffic_bench_plain).
#include "../tests/kernels.hpp"

#include <rooflab/emu/launch.hpp>
#include <rooflab/emu/traffic.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/random.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

namespace {

double best_seconds(const std::function<void()>& f, int reps = 3) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// One line per kernel: the time with no recording and, in a TRAFFIC build, recording.
void measure(const char* what, const std::function<void()>& launch) {
  const double plain = best_seconds(launch);
  if (!rooflab::emu::traffic::available()) {
    std::printf("%-28s %9.1f ms (kernels not instrumented)\n", what, 1e3 * plain);
    return;
  }
  const double recorded = best_seconds([&] {
    rooflab::emu::traffic::Recording recording;
    launch();
    (void)recording.stop();
  });
  std::printf("%-28s %9.1f ms not recording, %9.1f ms recording (%.1fx)\n", what, 1e3 * plain, 1e3 * recorded,
              recorded / plain);
}

}  // namespace

int main() {
  rooflab::emu::set_workers(1);  // a recording runs on one worker: compare like with like
  const int n_copy = 1 << 22;
  rooflab::DeviceBuffer<float> in{std::span<const float>(rooflab::random_floats(n_copy, 1))};
  rooflab::DeviceBuffer<float> out(n_copy);
  measure("copy 2^22 floats", [&] { emutest::copy(in.data(), out.data(), n_copy); });

  const int n = 256;
  const std::size_t elems = std::size_t{n} * n;
  rooflab::DeviceBuffer<float> a{std::span<const float>(rooflab::random_floats(elems, 2))};
  rooflab::DeviceBuffer<float> b{std::span<const float>(rooflab::random_floats(elems, 3))};
  rooflab::DeviceBuffer<float> c(elems);
  measure("tiled SGEMM 256^3", [&] { emutest::tiled_sgemm(a.data(), b.data(), c.data(), n, n, n); });
  return 0;
}
