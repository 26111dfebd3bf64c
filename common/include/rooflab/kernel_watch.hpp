// "The kernel under test ran": a correctness test wraps the student's launcher in a KernelWatch and asks,
// after it returns, whether the work was done by kernels on the device. A launcher that copies the inputs
// to the host, computes there and copies the result back (or hands the job to cudaMemcpy) keeps every
// output right and must still lose the points.
//
//   rooflab::KernelWatch watch;
//   lab01::copy(a, c, n, nullptr);
//   EXPECT_TRUE(watch.kernels_did_the_work("lab01::copy"));
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
  KernelWatch() : before_(emu::activity()) {}

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

 private:
  emu::Activity before_;
#else
  ::testing::AssertionResult kernels_did_the_work(std::string_view, unsigned long long = 1) const {
    return ::testing::AssertionSuccess();
  }
#endif
};

}  // namespace rooflab
