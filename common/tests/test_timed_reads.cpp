// The dry run's read accounting (rooflab::launch_reading_inputs, the CPU backend's read watch): a timed
// launch that computes from its inputs passes, one that replays a kept answer through a copy kernel, or
// reads a sliver of its input, throws TimedReadError; a copy out of the input counts as reading it.
#include "timed_reads_kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/emu/launch.hpp>
#include <rooflab/testing/timing.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

constexpr int kN = 16 * 1024 + 3;  // 16 pages of floats and a ragged tail

struct Buffers {
  Buffers() : in(std::vector<float>(kN, 0.5f)), out(kN), kept(kN) {}
  rooflab::DeviceBuffer<float> in, out, kept;
};

rooflab::Work scale_work() { return {.bytes_read = 4.0 * kN, .bytes_written = 4.0 * kN}; }

// The benchmark of a launch that reads its input and writes its output, nothing else: it passes.
void expect_honest_benchmark_passes(Buffers& b) {
  EXPECT_NO_THROW(rooflab::benchmark([&](cudaStream_t s) { timedtest::scale(b.in.data(), b.out.data(), kN, s); },
                                     scale_work(), {.flush_l2 = false}, {rooflab::timed_output(b.out)},
                                     {rooflab::timed_input(b.in, "x")}));
}

}  // namespace

TEST(TimedReads, TheWatchCountsEveryByteOfTheRangeThatAKernelRead) {
  Buffers b;
  rooflab::emu::begin_read_watch({{b.in.data(), b.in.bytes()}, {b.in.data() + 1024, 4096}});
  timedtest::scale(b.in.data(), b.out.data(), kN, nullptr);
  const auto touched = rooflab::emu::end_read_watch();
  ASSERT_EQ(touched.size(), 2u);
  EXPECT_EQ(touched[0], b.in.bytes());
  EXPECT_EQ(touched[1], 4096u);
  EXPECT_EQ(b.out.download()[kN - 1], 2.0f) << "the kernel's reads of the watched input must see its values";
  EXPECT_EQ(b.in.download()[kN - 1], 0.5f) << "after the watch, the runtime's copies still reach the input";
}

TEST(TimedReads, AnHonestLaunchPasses) {
  Buffers b;
  EXPECT_NO_THROW(rooflab::launch_reading_inputs([&](cudaStream_t s) { timedtest::scale(b.in.data(), b.out.data(), kN, s); },
                                                 nullptr, {rooflab::timed_input(b.in)}));
}

TEST(TimedReads, AReplayThroughACopyKernelFails) {
  Buffers b;
  timedtest::scale(b.in.data(), b.kept.data(), kN, nullptr);  // the first call computes and keeps its answer
  EXPECT_THROW(rooflab::launch_reading_inputs([&](cudaStream_t s) { timedtest::copy(b.kept.data(), b.out.data(), kN, s); },
                                              nullptr, {rooflab::timed_input(b.in)}),
               rooflab::TimedReadError);
  EXPECT_EQ(b.out.download()[7], 2.0f) << "the replay itself ran (its output is right): only its reads give it away";
}

TEST(TimedReads, ASliverOfTheInputFailsAndTheFractionIsTheCallers) {
  Buffers b;
  const auto sliver = [&](cudaStream_t s) { timedtest::sliver(b.in.data(), b.out.data(), kN, 1024, s); };
  EXPECT_THROW(rooflab::launch_reading_inputs(sliver, nullptr, {rooflab::timed_input(b.in)}), rooflab::TimedReadError);
  EXPECT_NO_THROW(rooflab::launch_reading_inputs(sliver, nullptr, {rooflab::timed_input(b.in, "input", 0.05)}));
}

TEST(TimedReads, ACopyOutOfTheInputCountsAsReadingIt) {
  Buffers b;
  EXPECT_NO_THROW(rooflab::launch_reading_inputs(
      [&](cudaStream_t s) { ROOFLAB_CUDA_CHECK(cudaMemcpyAsync(b.out.data(), b.in.data(), b.in.bytes(), cudaMemcpyDeviceToDevice, s)); },
      nullptr, {rooflab::timed_input(b.in)}));
}

TEST(TimedReads, BenchmarkChecksEveryTimedLaunch) {
  Buffers b;
  int calls = 0;
  // A launcher that computes on its first call and replays from then on (warm-ups included).
  const auto remembers = [&](cudaStream_t s) {
    if (calls++ == 0) {
      timedtest::scale(b.in.data(), b.kept.data(), kN, s);
    }
    timedtest::copy(b.kept.data(), b.out.data(), kN, s);
  };
  EXPECT_THROW(rooflab::benchmark(remembers, {.bytes_read = 4.0 * kN}, {}, {rooflab::timed_output(b.out)}, {rooflab::timed_input(b.in)}),
               rooflab::TimedReadError);
  EXPECT_NO_THROW(rooflab::benchmark([&](cudaStream_t s) { timedtest::scale(b.in.data(), b.out.data(), kN, s); },
                                     {.bytes_read = 4.0 * kN}, {}, {rooflab::timed_output(b.out)}, {rooflab::timed_input(b.in)}));
  // A watch ends with its launch: later launches run with device memory as before.
  timedtest::copy(b.kept.data(), b.out.data(), kN, nullptr);
  EXPECT_EQ(b.out.download()[0], 2.0f);
}

TEST(TimedKernels, ALaunchMustStartAKernelTheRegistryNames) {
  Buffers b;
  // Registry-style names: namespace and template arguments are not part of the match.
  const std::vector<std::string> registry{"timedtest::scale_kernel", "timedtest::sliver_kernel<4>"};
  const auto before = rooflab::kernel_launches_so_far();
  timedtest::scale(b.in.data(), b.out.data(), kN, nullptr);
  EXPECT_NO_THROW(rooflab::check_kernels_started(registry, before));
  const auto replay = rooflab::kernel_launches_so_far();
  timedtest::copy(b.kept.data(), b.out.data(), kN, nullptr);
  EXPECT_THROW(rooflab::check_kernels_started(registry, replay), rooflab::TimedReadError);
  EXPECT_THROW(rooflab::check_kernels_started(registry, rooflab::kernel_launches_so_far()), rooflab::TimedReadError)
      << "a launch that starts no kernel at all fails too";
  EXPECT_NO_THROW(rooflab::check_kernels_started({}, replay)) << "no registry given: not checked";
}

TEST(TimedKernels, BenchmarkChecksTheKernelsOfEveryTimedLaunch) {
  Buffers b;
  int calls = 0;
  // Computes on its first call and replays from then on: it reads its input (the copy reads `in` as if it
  // were the kept answer), so only the kernel's name gives it away.
  const auto remembers = [&](cudaStream_t s) {
    if (calls++ == 0) {
      timedtest::scale(b.in.data(), b.out.data(), kN, s);
    } else {
      timedtest::copy(b.in.data(), b.out.data(), kN, s);
    }
  };
  const rooflab::BenchOptions options{.kernels = {"timedtest::scale_kernel"}};
  EXPECT_THROW(rooflab::benchmark(remembers, {.bytes_read = 4.0 * kN}, options, {}, {rooflab::timed_input(b.in)}),
               rooflab::TimedReadError);
  EXPECT_NO_THROW(rooflab::benchmark([&](cudaStream_t s) { timedtest::scale(b.in.data(), b.out.data(), kN, s); },
                                     {.bytes_read = 4.0 * kN}, options, {}, {rooflab::timed_input(b.in)}));
}

// The inputs a benchmark declares are fingerprinted before its first warm-up launch and after its last sample
// (on a dry run as on a GPU): a launcher that writes into an input fails the benchmark, naming the input; one
// that only reads it passes. The fingerprint sees a change of one byte.
TEST(TimedInputs, ALaunchThatWritesIntoItsInputFailsTheBenchmark) {
  Buffers b;
  const rooflab::Work work = scale_work();
  const rooflab::BenchOptions options{.flush_l2 = false};
  expect_honest_benchmark_passes(b);
  try {
    rooflab::benchmark([&](cudaStream_t s) { timedtest::scale(b.in.data(), b.in.data(), kN, s); }, work, options, {},
                       {rooflab::timed_input(b.in, "x")});
    ADD_FAILURE() << "a launch that scales its input in place passed";
  } catch (const rooflab::TimedInputChanged& e) {
    EXPECT_NE(std::string(e.what()).find("the timed launches changed their input x"), std::string::npos) << e.what();
  }
}

TEST(TimedInputs, TheFingerprintSeesOneByte) {
  std::vector<float> values(kN, 0.25f);
  rooflab::DeviceBuffer<float> a(values), same(values);
  values[kN - 1] = std::nextafter(0.25f, 1.0f);  // the last element's lowest bit, in the ragged tail
  rooflab::DeviceBuffer<float> other(values);
  const auto print = [](const rooflab::DeviceBuffer<float>& d) {
    return rooflab::device_fingerprint(d.data(), d.bytes());
  };
  EXPECT_EQ(print(a), print(same));
  EXPECT_NE(print(a), print(other));
  EXPECT_NE(rooflab::device_fingerprint(a.data(), a.bytes() - 4), print(a)) << "the length counts";
}

// A timed launch that allocates device memory fails the dry run's benchmark, freed or not; allocations made
// before the timed loop (the caller's buffers, the harness's own) do not count.
TEST(TimedAllocations, ALaunchThatAllocatesFailsTheBenchmark) {
  Buffers b;
  const rooflab::Work work = scale_work();
  const rooflab::BenchOptions options{.flush_l2 = false};
  expect_honest_benchmark_passes(b);
  try {
    rooflab::benchmark(
        [&](cudaStream_t s) {
          rooflab::DeviceBuffer<float> scratch(kN);  // freed at the end of every call, allocated at every start
          timedtest::scale(b.in.data(), scratch.data(), kN, s);
          timedtest::scale(scratch.data(), b.out.data(), kN, s);
        },
        work, options, {rooflab::timed_output(b.out)}, {rooflab::timed_input(b.in, "x")});
    ADD_FAILURE() << "a launch that allocates a scratch buffer per call passed";
  } catch (const rooflab::TimedAllocation& e) {
    EXPECT_NE(std::string(e.what()).find("1 cudaMalloc call in one call"), std::string::npos) << e.what();
  }
}

// Harness buffers are set to poison before they are freed (rooflab/testing/buffer.hpp): on a GPU the next
// allocation may be the same memory, and must not start out holding an earlier test's answer. The CPU
// backend unmaps freed memory, so the set is seen as the runtime call it is: one per non-empty buffer.
TEST(HarnessBuffers, ArePoisonedBeforeTheyAreFreed) {
  const auto memsets = [] { return rooflab::emu::activity().memsets; };
  rooflab::DeviceBuffer<float> kept(std::vector<float>(kN, 0.5f));
  const unsigned long long before = memsets();
  { rooflab::DeviceBuffer<float> freed(std::vector<float>(kN, 0.5f)); }
  EXPECT_EQ(memsets() - before, 1u) << "a buffer was freed without being set to poison first";
  { rooflab::DeviceBuffer<float> empty; }
  EXPECT_EQ(memsets() - before, 1u) << "an empty buffer owns no memory to poison";
  kept = rooflab::DeviceBuffer<float>(kN);  // a move assignment frees what the buffer held
  EXPECT_EQ(memsets() - before, 2u);
}
