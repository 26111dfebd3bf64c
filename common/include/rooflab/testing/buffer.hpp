// RAII for CUDA resources: device buffers, events, streams. Header-only so the same code serves the GPU
// build and the CPU backend (where cudaMalloc and friends are the emulator's).
#pragma once

#include <rooflab/check.hpp>
#include <rooflab/cuda.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace rooflab {

// Where a buffer's data starts. cudaMalloc returns memory aligned to 256 bytes on a GPU (the CPU backend's to
// 16 or more: its allocations end at a guard page), so tests whose arrays all come from it cannot tell a
// kernel that needs 32 or 256 bytes of alignment from one that needs only the 16 a lab's API promises (a
// slice of a larger array, a row of a pool). `aligned_16_not_32` allocates 16 bytes more and starts the data
// at the first address of the allocation that is 16 bytes past a multiple of 32: aligned to 16, not to 32.
// Its end may then lie 16 bytes before the allocation's (the CPU backend's guard page does not touch it):
// the past-the-end checks are the other buffers'.
enum class Placement { allocation_start, aligned_16_not_32 };
// The i-th case of a list of shapes: even ones where cudaMalloc puts the arrays, odd ones 16 bytes past a
// multiple of 32, so that each path of a kernel sees both placements when the list alternates its paths.
inline Placement alternate_placement(std::size_t i) {
  return i % 2 == 1 ? Placement::aligned_16_not_32 : Placement::allocation_start;
}
// For a failure message: "" or ", arrays 16 bytes past a multiple of 32".
inline const char* placement_note(Placement at) {
  return at == Placement::aligned_16_not_32 ? ", arrays 16 bytes past a multiple of 32" : "";
}

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count, Placement at = Placement::allocation_start) : count_(count) {
    if (count_ == 0) return;
    const bool offset = at == Placement::aligned_16_not_32;
    void* base = nullptr;
    ROOFLAB_CUDA_CHECK(cudaMalloc(&base, bytes() + (offset ? 16 : 0)));
    lead_ = offset && reinterpret_cast<std::uintptr_t>(base) % 32 == 0 ? 16 : 0;
    data_ = reinterpret_cast<T*>(static_cast<unsigned char*>(base) + lead_);
  }
  explicit DeviceBuffer(std::span<const T> host, Placement at = Placement::allocation_start)
      : DeviceBuffer(host.size(), at) {
    upload(host);
  }
  ~DeviceBuffer() { release(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        lead_(std::exchange(other.lead_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
      lead_ = std::exchange(other.lead_, 0);
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
  // Poisoned before it is freed: a GPU's allocator hands freed memory to the next cudaMalloc of a similar
  // size at once, so a launcher's own allocation would otherwise start with an earlier test's inputs or
  // correct results in it (a "stale" answer that passes a check without any work). The device is
  // synchronized first, as cudaFree would be: work still running on another stream finishes before the set.
  void release() noexcept {
    if (data_ != nullptr) {
      ROOFLAB_CUDA_WARN(cudaDeviceSynchronize());
      ROOFLAB_CUDA_WARN(cudaMemset(data_, 0xFF, bytes()));
      ROOFLAB_CUDA_WARN(cudaFree(reinterpret_cast<unsigned char*>(data_) - lead_));
    }
    data_ = nullptr;
    count_ = 0;
    lead_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
  std::size_t lead_ = 0;  // bytes from the allocation's start to data_
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
