// <cuda_pipeline.h> for a .cu file compiled by the CPU backend: the primitives (cuda_pipeline_primitives.h
// beside this), and the toolkit's older C++ form, nvcuda::experimental::pipeline (commit, wait, wait_prior,
// commit_and_wait, memcpy_async of one object) over the same per-thread batches. arrive_on is not emulated.
#pragma once

#include <cuda_pipeline_primitives.h>

#include <cstddef>

namespace nvcuda::experimental {

class pipeline {
 public:
  pipeline() = default;
  // Closes the batch of copies issued since the last commit; returns its number.
  std::size_t commit() {
    __pipeline_commit();
    return current_batch_++;
  }
  void commit_and_wait(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    (void)commit();
    wait_prior<0>(file, line);
  }
  // Waits for batch `batch` and every batch before it.
  void wait(std::size_t batch, const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    const std::size_t prior = current_batch_ > batch ? current_batch_ - batch - 1 : 0;
    __pipeline_wait_prior(prior, file, line);
  }
  template <unsigned N>
  void wait_prior(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    __pipeline_wait_prior(N, file, line);
  }

 private:
  std::size_t current_batch_ = 0;
};

// One object, copied in pieces of 16, 8 or 4 bytes as its size and alignment allow.
template <class T>
void memcpy_async(T& dst, const T& src, pipeline&, const char* file = __builtin_FILE(),
                  unsigned line = __builtin_LINE()) {
  static_assert(sizeof(T) % 4 == 0 && alignof(T) >= 4, "memcpy_async: the size and alignment must be multiples of 4");
  constexpr std::size_t piece = (sizeof(T) % 16 == 0 && alignof(T) >= 16) ? 16 : (sizeof(T) % 8 == 0 && alignof(T) >= 8) ? 8 : 4;
  auto* d = reinterpret_cast<char*>(&dst);
  const auto* s = reinterpret_cast<const char*>(&src);
  for (std::size_t i = 0; i < sizeof(T); i += piece) __pipeline_memcpy_async(d + i, s + i, piece, 0, file, line);
}

}  // namespace nvcuda::experimental
