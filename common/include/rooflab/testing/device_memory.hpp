// How much device memory a piece of code takes beyond what was allocated when it started: what a test
// checks when it asks "is this kernel's memory O(L) or O(L^2)?" (Lab 05: the flash path must not hold an
// L x L score matrix). For test code (a .cpp built for the GPU or the CPU backend).
//
//   rooflab::DeviceMemoryWatch watch;          // the baseline: what is allocated now
//   lab05::flash_attention_fp16(...);          // may cudaMalloc and cudaFree inside
//   cudaDeviceSynchronize();
//   const std::size_t extra = watch.peak_extra_bytes();
//
// How it measures:
//   CPU backend  exactly: every cudaMalloc goes through the backend, which keeps the peak of the live bytes
//                (rooflab::emu::peak_device_bytes_allocated); an allocation freed before the call returns
//                still counts.
//   GPU          by sampling: a thread reads cudaMemGetInfo (total - free, the whole device, other processes
//                included) every 20 microseconds while the watch lives, and once more at the end. An
//                allocation that lives for less than a sample can be missed; one of L x L at a length whose
//                matrix does not fit in the GPU's memory fails outright (cudaErrorMemoryAllocation), which is
//                what the large-L test relies on.
#pragma once

#include <rooflab/check.hpp>
#include <rooflab/cuda.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>

#if defined(ROOFLAB_EMU)
#include <rooflab/emu/launch.hpp>
#endif

namespace rooflab {

class DeviceMemoryWatch {
 public:
  DeviceMemoryWatch() {
#if defined(ROOFLAB_EMU)
    emu::reset_peak_device_bytes_allocated();
    baseline_ = emu::device_bytes_allocated();
#else
    baseline_ = in_use();
    peak_ = baseline_;
    sampler_ = std::thread([this] {
      while (!stop_.load()) {
        sample();
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
#endif
  }
  ~DeviceMemoryWatch() { stop(); }
  DeviceMemoryWatch(const DeviceMemoryWatch&) = delete;
  DeviceMemoryWatch& operator=(const DeviceMemoryWatch&) = delete;

  // The most device memory in use at once since construction, less what was in use then (0 if less).
  std::size_t peak_extra_bytes() {
#if defined(ROOFLAB_EMU)
    const std::size_t peak = emu::peak_device_bytes_allocated();
#else
    stop();
    peak_ = std::max(peak_.load(), in_use());
    const std::size_t peak = peak_.load();
#endif
    return peak > baseline_ ? peak - baseline_ : 0;
  }

 private:
#if !defined(ROOFLAB_EMU)
  static std::size_t in_use() {
    std::size_t free_bytes = 0, total = 0;
    ROOFLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    return total - free_bytes;
  }
  // On the sampling thread: no exception may leave it (a failed query is a missed sample).
  void sample() noexcept {
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return;
    const std::size_t now = total - free_bytes;
    std::size_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
  }
#endif
  void stop() {
    stop_.store(true);
    if (sampler_.joinable()) sampler_.join();
  }

  std::size_t baseline_ = 0;
  std::atomic<std::size_t> peak_{0};
  std::atomic<bool> stop_{false};
  std::thread sampler_;
};

}  // namespace rooflab
