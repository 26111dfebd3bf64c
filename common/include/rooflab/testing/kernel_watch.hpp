// "The kernel under test ran": a correctness test wraps the student's launcher in a KernelWatch and asks,
// after it returns, whether the work was done by kernels on the device. A launcher that copies the inputs
// to the host, computes there and copies the result back (or hands the job to cudaMemcpy) keeps every
// output right and must still lose the points.
//
//   rooflab::KernelWatch watch;
//   lab01::copy(a, c, n, nullptr);
//   EXPECT_TRUE(watch.kernels_did_the_work("lab01::copy"));
//
// A lab whose launchers must launch one kernel and keep nothing between calls (a quantized GEMV that is
// handed only the packed weights must not dequantize them into a copy first) asks for that too:
//
//   EXPECT_TRUE(watch.launched_exactly("lab08::gemv_int4", 1));
//   EXPECT_TRUE(watch.kept_no_device_memory("lab08::gemv_int4"));
//
// On the CPU backend the backend counts launches and copies (rooflab::emu::activity()); host code cannot
// touch device memory there either, as on a GPU. Under nvcc the watch has nothing to count and passes: the
// CPU-backend test is where this is graded, and every lab's correctness tests run there in CI.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#if defined(ROOFLAB_EMU)
#include <rooflab/emu/launch.hpp>
#endif

namespace rooflab {

class KernelWatch {
 public:
#if defined(ROOFLAB_EMU)
  KernelWatch() : before_(emu::activity()) { cudaMemGetInfo(&free_before_, &total_); }

  // `min_threads`: where the lab fixes the grid (one output per thread), the threads it must launch.
  ::testing::AssertionResult kernels_did_the_work(std::string_view what, unsigned long long min_threads = 1) const {
    const emu::Activity now = emu::activity();
    const auto host_copies = (now.memcpy_to_host - before_.memcpy_to_host) +
                             (now.memcpy_to_device - before_.memcpy_to_device);
    const auto device_copies = now.memcpy_device_to_device - before_.memcpy_device_to_device;
    if (now.launches == before_.launches) {
      return ::testing::AssertionFailure() << what << " launched no kernel: the work must be done by a kernel on the "
                                                      "device";
    }
    if (now.threads - before_.threads < min_threads) {
      return ::testing::AssertionFailure() << what << " launched " << (now.threads - before_.threads)
                                           << " threads where the work needs " << min_threads;
    }
    if (host_copies > 0) {
      return ::testing::AssertionFailure()
             << what << " copied data between host and device (" << host_copies
             << " cudaMemcpy calls): a launcher only launches kernels; computing on the host does not count";
    }
    if (device_copies > 0) {
      return ::testing::AssertionFailure() << what << " used cudaMemcpy on the device (" << device_copies
                                           << " calls) instead of doing the work in its kernel";
    }
    return ::testing::AssertionSuccess();
  }

  // Exactly `launches` kernel launches since the watch began: one more means the launcher staged the work
  // through another kernel (a conversion, a copy) before the one it was asked to write.
  ::testing::AssertionResult launched_exactly(std::string_view what, unsigned long long launches) const {
    const unsigned long long ran = emu::activity().launches - before_.launches;
    if (ran == launches) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << " launched " << ran << " kernels where it should launch " << launches
                                         << ": it must do its work in its own kernel, from the buffers it is given";
  }

  // At most `launches` kernel launches since the watch began: a launcher whose launches grow with the problem
  // (one GEMV per row of a batch) redoes per launch what one pass should share; `why` says what.
  ::testing::AssertionResult launched_at_most(std::string_view what, unsigned long long launches,
                                              std::string_view why) const {
    const unsigned long long ran = emu::activity().launches - before_.launches;
    if (ran <= launches) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << " launched " << ran << " kernels where at most " << launches
                                         << " should do: " << why;
  }

  // No more device memory allocated than when the watch began: a launcher that keeps a buffer of its own
  // between calls (a cache of converted inputs) fails.
  ::testing::AssertionResult kept_no_device_memory(std::string_view what) const {
    std::size_t free_now = 0, total = 0;
    cudaMemGetInfo(&free_now, &total);
    if (free_now >= free_before_) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << " still holds " << (free_before_ - free_now)
                                         << " bytes of device memory after it returned: a launcher allocates nothing "
                                            "and keeps nothing between calls";
  }

 private:
  emu::Activity before_;
  std::size_t free_before_ = 0, total_ = 0;
#else
  ::testing::AssertionResult kernels_did_the_work(std::string_view, unsigned long long = 1) const {
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult launched_exactly(std::string_view, unsigned long long) const {
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult launched_at_most(std::string_view, unsigned long long, std::string_view) const {
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult kept_no_device_memory(std::string_view) const { return ::testing::AssertionSuccess(); }
#endif
};

}  // namespace rooflab
