// The dry run's read accounting (rooflab::launch_reading_inputs, the CPU backend's read watch): a timed
// launch that computes from its inputs passes, one that replays a kept answer through a copy kernel, or
// reads a sliver of its input, throws TimedReadError; a copy out of the input counts as reading it.
#include "timed_reads_kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/emu/launch.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <set>
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
// (on a dry run as on a GPU; a moved input below): a launcher that writes into an input fails the benchmark,
// naming the input; one that only reads it passes. The fingerprint sees a change of one byte.
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

// Timed inputs are moved before every sample (TimedRead::motion): the array is written from its contents before
// the first warm-up, turned by a fresh number of elements, and the test's host view turns with it. Warm-ups see
// the input as it was filled; each sample sees it turned differently; an honest launch's output after timing
// matches the host view at every element.
TEST(TimedInputs, EverySampleComputesOnInputsNoEarlierCallSaw) {
  const rooflab::TimedInput<float> in(kN, 7);
  rooflab::DeviceBuffer<float> out(kN);
  const float filled_first = in.host(0);
  std::vector<float> firsts;  // element 0 as each call found it
  int views_that_differ = 0;
  const auto launch = [&](cudaStream_t s) {
    const auto now = in.device.download();
    firsts.push_back(now[0]);
    for (const int i : {0, 1, kN / 2, kN - 1}) views_that_differ += now[i] != in.host(i);
    timedtest::scale(in.device.data(), out.data(), kN, s);
  };
  const auto m = rooflab::benchmark(launch, scale_work(), {.flush_l2 = false}, {rooflab::timed_output(out)},
                                    {rooflab::timed_input(in, "x")});
  ASSERT_GE(m.samples, 5);
  ASSERT_EQ(firsts.size(), static_cast<std::size_t>(m.samples) + 2) << "two warm-ups on a dry run, then the samples";
  EXPECT_EQ(firsts[0], filled_first);
  EXPECT_EQ(firsts[1], filled_first);
  const std::set<float> moved(firsts.begin() + 2, firsts.end());
  EXPECT_GE(moved.size(), firsts.size() - 3) << "every sample's input turned by a fresh amount (one repeat allowed)";
  EXPECT_EQ(moved.count(filled_first), 0u) << "no sample sees the input as the warm-ups did";
  EXPECT_EQ(views_that_differ, 0) << "the host view is what the device held during every call";
  const auto got = out.download();
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += got[i] != 2.0f * in.host(i) + 1.0f;
  EXPECT_EQ(wrong, 0) << "after timing, the host view is the last sample's input";
}

// The cheat the motion closes: a launcher that keeps its first answer, keyed by its pointers, and from then on
// copies it back while touching one element of every page of its input (the dry run's read watch counts
// pages). With a plain buffer that is never moved, it passes every check; with the input moved between samples,
// the answer it copies back is to another input.
TEST(TimedInputs, AnAnswerKeptByItsPointersIsAnAnswerToOtherInputs) {
  const auto keeping_launcher = [](const float* in, float* out, float* kept, float* sink, int& calls) {
    return [=, &calls](cudaStream_t s) {
      if (calls++ == 0) timedtest::scale(in, kept, kN, s);
      timedtest::touch_pages(in, sink, kN, s);
      timedtest::copy(kept, out, kN, s);
    };
  };
  rooflab::DeviceBuffer<float> out(kN), kept(kN), sink(kN / 1024 + 1);
  // Never moved (a buffer declared without its host copy): the kept answer is right.
  Buffers b;
  int calls = 0;
  EXPECT_NO_THROW(rooflab::benchmark(keeping_launcher(b.in.data(), out.data(), kept.data(), sink.data(), calls),
                                     scale_work(), {.flush_l2 = false}, {rooflab::timed_output(out)},
                                     {rooflab::timed_input(b.in, "x")}))
      << "the read watch counts pages: a launcher that touches every page passes it";
  EXPECT_EQ(out.download()[kN / 2], 2.0f) << "unmoved, the answer kept from the first call is still right";
  // Moved: the same launcher passes the watch and hands back the first call's answer to inputs it never read.
  const rooflab::TimedInput<float> in(kN, 8);
  calls = 0;
  EXPECT_NO_THROW(rooflab::benchmark(keeping_launcher(in.device.data(), out.data(), kept.data(), sink.data(), calls),
                                     scale_work(), {.flush_l2 = false}, {rooflab::timed_output(out)},
                                     {rooflab::timed_input(in, "x")}));
  const auto got = out.download();
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += got[i] != 2.0f * in.host(i) + 1.0f;
  EXPECT_GT(wrong, kN * 99 / 100) << "the check after timing (it reads the host view) sees the kept answer";
}

// A device buffer declared with its host copy moves with it (std::rotate of the host vector), whatever the
// host copy's element type; sizes that differ are refused.
TEST(TimedInputs, ABufferDeclaredWithItsHostCopyMovesWithIt) {
  std::vector<double> host(kN);
  std::vector<float> values(kN);
  for (int i = 0; i < kN; ++i) host[i] = values[i] = static_cast<float>(i % 1000) / 8.0f + static_cast<float>(i / 1000);
  rooflab::DeviceBuffer<float> in(values), out(kN);
  rooflab::benchmark([&](cudaStream_t s) { timedtest::scale(in.data(), out.data(), kN, s); }, scale_work(),
                     {.flush_l2 = false}, {rooflab::timed_output(out)}, {rooflab::timed_input(in, host, "x")});
  const auto got = out.download(), now = in.download();
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += got[i] != 2.0f * static_cast<float>(host[i]) + 1.0f || now[i] != host[i];
  EXPECT_EQ(wrong, 0);
  EXPECT_NE(host[0], 0.0) << "moved: element 0 of the filled buffer is 0";
  std::vector<double> short_copy(kN - 1);
  EXPECT_THROW(rooflab::timed_input(in, short_copy, "x"), std::invalid_argument);
}

// A moved input changed by the last sample fails the benchmark as an unmoved one does: its fingerprint after the
// last sample is compared with the array the harness wrote before it.
TEST(TimedInputs, AMovedInputWrittenByTheLastSampleFailsTheBenchmark) {
  rooflab::TimedInput<float> in(kN, 9);
  try {
    rooflab::benchmark([&](cudaStream_t s) { timedtest::scale(in.device.data(), in.device.data(), kN, s); },
                       scale_work(), {.flush_l2 = false}, {}, {rooflab::timed_input(in, "x")});
    ADD_FAILURE() << "a launch that scales its moved input in place passed";
  } catch (const rooflab::TimedInputChanged& e) {
    EXPECT_NE(std::string(e.what()).find("as the harness wrote it before the last sample"), std::string::npos) << e.what();
  }
  int wrong = 0;
  const auto now = in.device.download();
  for (int i = 0; i < kN; ++i) wrong += now[i] != in.host(i);
  EXPECT_EQ(wrong, 0) << "the harness wrote the last sample's input again: the host view holds";
}

// BenchOptions::check_each_sample runs the test's check after every sample: a launcher that skips its work on one
// sample (the second; the last is right) fails the benchmark, naming the sample; without it, only the last
// sample's output is left to check, and it is right.
TEST(TimedOutputs, EverySampleIsCheckedWhenTheTestAsks) {
  const rooflab::TimedInput<float> in(kN, 10);
  rooflab::DeviceBuffer<float> out(kN), sink(kN / 1024 + 1);
  int calls = 0;
  const auto skips_the_second_sample = [&](cudaStream_t s) {
    if (++calls == 4) {  // two warm-ups, then the samples: the fourth call is the second sample
      timedtest::touch_pages(in.device.data(), sink.data(), kN, s);  // the read watch counts pages
      return;
    }
    timedtest::scale(in.device.data(), out.data(), kN, s);
  };
  const auto matches = [&](std::size_t count) {
    return rooflab::timed_output_matches("scale", out, rooflab::sampled_indices(kN, count),
                                         [&](std::size_t i) { return 2.0f * in.host(i) + 1.0f; }, {0, 0});
  };
  EXPECT_NO_THROW(rooflab::benchmark(skips_the_second_sample, scale_work(), {.flush_l2 = false},
                                     {rooflab::timed_output(out)}, {rooflab::timed_input(in, "x")}));
  EXPECT_TRUE(matches(256)) << "the last sample did its work";
  calls = 0;
  try {
    rooflab::benchmark(skips_the_second_sample, scale_work(),
                       rooflab::checking_each_sample({.flush_l2 = false}, [&] { return matches(4); }),
                       {rooflab::timed_output(out)}, {rooflab::timed_input(in, "x")});
    ADD_FAILURE() << "a launcher that skipped a sample's work passed the check of every sample";
  } catch (const rooflab::TimedOutputWrong& e) {
    EXPECT_NE(std::string(e.what()).find("the output of timed sample 2 is wrong: scale: output element"),
              std::string::npos) << e.what();
  }
  calls = 100;  // never skips
  EXPECT_NO_THROW(rooflab::benchmark(skips_the_second_sample, scale_work(),
                                     rooflab::checking_each_sample({.flush_l2 = false}, [&] { return matches(4); }),
                                     {rooflab::timed_output(out)}, {rooflab::timed_input(in, "x")}));
}

// BenchOptions::watch_device_memory counts what the launches allocate, not the harness's own buffers (the L2
// flusher's, the copies of the moved inputs): nothing for a launcher that allocates nothing, the bytes it keeps for
// one that allocates once (in its first call, a warm-up: a timed sample may not allocate).
TEST(TimedMemory, TheLaunchesAllocationsNotTheHarnesss) {
  const rooflab::TimedInput<float> in(kN, 11);
  rooflab::DeviceBuffer<float> out(kN);
  const auto scale = [&](cudaStream_t s) { timedtest::scale(in.device.data(), out.data(), kN, s); };
  const rooflab::BenchOptions watching{.flush_l2 = true, .watch_device_memory = true};
  const auto m = rooflab::benchmark(scale, scale_work(), watching, {rooflab::timed_output(out)}, {rooflab::timed_input(in, "x")});
  EXPECT_EQ(m.peak_extra_device_bytes, 0u);
  float* kept = nullptr;
  const auto keeps = [&](cudaStream_t s) {
    if (kept == nullptr) ROOFLAB_CUDA_CHECK(cudaMalloc(&kept, 1 << 20));
    scale(s);
  };
  const auto k = rooflab::benchmark(keeps, scale_work(), watching, {rooflab::timed_output(out)}, {rooflab::timed_input(in, "x")});
  EXPECT_GE(k.peak_extra_device_bytes, std::size_t{1} << 20);
  EXPECT_LT(k.peak_extra_device_bytes, std::size_t{2} << 20);
  ROOFLAB_CUDA_CHECK(cudaFree(kept));
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
