// The CPU backend's costs, each against a plain CPU loop where one makes sense. A benchmark, not a test:
// it prints figures (recorded in docs/cpu-mode.md) and asserts nothing about time.
//
//   rooflab_emu_bench           full sizes (256^3 SGEMM)
//   rooflab_emu_bench --quick   tiny sizes (CI runs this so the program keeps working)
#include "../tests/kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/random.hpp>

#include <boost/context/fiber.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

namespace emubench {
void empty(unsigned blocks, unsigned threads, int* sink);
void barriers(unsigned blocks, unsigned threads, int count);
}  // namespace emubench

namespace {

double seconds(const std::function<void()>& f, int reps = 3) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const unsigned blocks = quick ? 8 : 1024;
  rooflab::DeviceBuffer<int> sink(1);

  // The raw cost the scheduler builds on: one Boost.Context switch (a ping-pong is two switches).
  {
    namespace ctx = boost::context;
    const long switches = quick ? 1000 : 2000000;
    long count = 0;
    ctx::fiber f([&count, switches](ctx::fiber&& back) {
      while (count < switches) {
        ++count;
        back = std::move(back).resume();
      }
      return std::move(back);
    });
    const auto t0 = std::chrono::steady_clock::now();
    while (f) f = std::move(f).resume();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("Boost.Context fiber switch: %.1f ns\n", 1e9 * t / (2.0 * static_cast<double>(switches)));
  }

  const double t_empty = seconds([&] { emubench::empty(blocks, 256, sink.data()); });
  std::printf("thread of a barrier-free kernel: %.1f ns\n", 1e9 * t_empty / (blocks * 256.0));

  const int nbar = quick ? 4 : 64;
  const double t_one = seconds([&] { emubench::barriers(blocks, 1, nbar); });
  std::printf("suspend or resume through the scheduler (1-thread blocks at barriers): %.1f ns\n",
              1e9 * t_one / (blocks * nbar * 2.0));
  const double t_bar = seconds([&] { emubench::barriers(blocks / 8 + 1, 256, nbar); });
  std::printf("__syncthreads: %.1f ns per thread per barrier (256-thread blocks)\n",
              1e9 * t_bar / ((blocks / 8 + 1) * 256.0 * nbar));

  const int n = quick ? 32 : 256;
  const auto a = rooflab::random_floats(static_cast<std::size_t>(n) * n, 1);
  const auto b = rooflab::random_floats(static_cast<std::size_t>(n) * n, 2);
  rooflab::DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)};
  rooflab::DeviceBuffer<float> dc(static_cast<std::size_t>(n) * n);
  const double t_gemm = seconds([&] { emutest::tiled_sgemm(da.data(), db.data(), dc.data(), n, n, n); });
  std::vector<float> c(static_cast<std::size_t>(n) * n);
  const double t_loop = seconds([&] {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        float acc = 0;
        for (int k = 0; k < n; ++k) acc += a[static_cast<std::size_t>(i * n + k)] * b[static_cast<std::size_t>(k * n + j)];
        c[static_cast<std::size_t>(i * n + j)] = acc;
      }
    }
  });
  std::printf("tiled SGEMM %d^3 (16x16 tiles): %.1f ms on the backend, %.1f ms as a plain loop (%.1fx)\n", n,
              1e3 * t_gemm, 1e3 * t_loop, t_gemm / t_loop);
  std::vector<__half> ha(a.size()), hb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ha[i] = __float2half(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) hb[i] = __float2half(b[i]);
  rooflab::DeviceBuffer<__half> dha{std::span<const __half>(ha)}, dhb{std::span<const __half>(hb)};
  const double t_wmma = seconds([&] { emutest::wmma_gemm(dha.data(), dhb.data(), dc.data(), n, n, n); });
  // The same math as a plain loop: half inputs, float accumulation.
  const double t_hloop = seconds([&] {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        float acc = 0;
        for (int k = 0; k < n; ++k) {
          acc += __half2float(ha[static_cast<std::size_t>(i * n + k)]) * __half2float(hb[static_cast<std::size_t>(k * n + j)]);
        }
        c[static_cast<std::size_t>(i * n + j)] += 2 * acc;
      }
    }
  });
  std::printf("WMMA GEMM %d^3 (one warp per 16x16 tile): %.1f ms on the backend (%.2fx the tiled SGEMM), %.1f ms as a "
              "plain loop\n", n, 1e3 * t_wmma, t_wmma / t_gemm, 1e3 * t_hloop);
  rooflab::emu::set_workers(2);
  const double t_gemm2 = seconds([&] { emutest::tiled_sgemm(da.data(), db.data(), dc.data(), n, n, n); });
  const double t_wmma2 = seconds([&] { emutest::wmma_gemm(dha.data(), dhb.data(), dc.data(), n, n, n); });
  std::printf("on 2 workers: tiled SGEMM %.1f ms, WMMA GEMM %.1f ms\n", 1e3 * t_gemm2, 1e3 * t_wmma2);
  return c[0] == 12345.0f ? 1 : 0;  // use the result so the loop is not optimised away
}
