// RAII for CUDA resources: device buffers, events, streams. Header-only so the same code serves the GPU
// build and the CPU backend (where cudaMalloc and friends are the emulator's).
#pragma once

#include <rooflab/check.hpp>
#include <rooflab/cuda.hpp>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace rooflab {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) ROOFLAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

  void upload(std::span<const T> host) {
    if (host.size() != count_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    if (count_ > 0) ROOFLAB_CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) ROOFLAB_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  // Poison before every launch under test: all-ones bytes are NaN for float, double, half and bfloat16
  // and -1 for integers, so an element the kernel never writes cannot pass a comparison. Arrays side by
  // side get different bytes (0xFE, 0xFD: huge finite values), so that copying one array's poison past the
  // end of another does not leave the other's poison looking untouched.
  void poison(unsigned char byte = 0xFF) {
    if (count_ > 0) ROOFLAB_CUDA_CHECK(cudaMemset(data_, byte, bytes()));
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) ROOFLAB_CUDA_WARN(cudaFree(data_));
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

class Stream {
 public:
  Stream() { ROOFLAB_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~Stream() {
    if (stream_ != nullptr) ROOFLAB_CUDA_WARN(cudaStreamDestroy(stream_));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const { ROOFLAB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() { ROOFLAB_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() {
    if (event_ != nullptr) ROOFLAB_CUDA_WARN(cudaEventDestroy(event_));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) { ROOFLAB_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { ROOFLAB_CUDA_CHECK(cudaEventSynchronize(event_)); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0.0f;
    ROOFLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace rooflab
