// Lab 01 graders: correctness of every kernel, on the GPU (kind "gpu") and on the CPU backend ("emu"):
// the same source is built into both binaries.
//
// Every output array is poisoned (NaN) before the launch and carries a canary region on both sides, so an
// element the kernel never writes fails, and so does a write one element too far. Inputs are random, never
// zero, and must come back unchanged.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace {

using lab01::StreamOp;
using lab01::Kernel;
using rooflab::grading::all_close;
using rooflab::grading::named;

// Sizes that break code: one element, around a warp, an exact multiple of the block (and of a float4: no
// tail), a block plus one, a large ragged size.
constexpr std::size_t kSizes[] = {1, 31, 33, 1024, 1024 + 1, (std::size_t{1} << 20) + 3};
constexpr std::size_t kCanary = 64;  // poisoned floats before and after each output

// Each array's own poison byte: a kernel that copies one array's canary onto another's (c[n] = a[n]) changes
// the canary it wrote, so the overrun shows.
constexpr unsigned char kPoisonByte[3] = {0xFF, 0xFE, 0xFD};

bool is_poison(float x, unsigned char byte = 0xFF) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return bits == 0x01010101u * byte;
}

// An array on the device with `offset` floats of canary before it and kCanary after.
struct Guarded {
  Guarded(std::size_t count, std::size_t skip) : n(count), offset(skip), buf(skip + count + kCanary) {}
  float* data() { return buf.data() + offset; }
  std::size_t n;
  std::size_t offset;
  rooflab::DeviceBuffer<float> buf;
};

// Which array each STREAM kernel writes: 0 = a, 1 = b, 2 = c.
int output_index(StreamOp op) {
  switch (op) {
    case StreamOp::copy: return 2;
    case StreamOp::scale: return 1;
    case StreamOp::add: return 2;
    case StreamOp::triad: return 0;
  }
  return -1;
}

// Runs one variant on n elements with each array starting `offsets[k]` floats past an aligned allocation.
::testing::AssertionResult run_variant(const Kernel& v, std::size_t n, const std::size_t (&offsets)[3]) {
  const std::uint64_t seed = rooflab::test_seed() + n;
  std::vector<std::vector<float>> host(3);
  std::vector<Guarded> dev;
  dev.reserve(3);
  const int out = output_index(v.op);
  for (int k = 0; k < 3; ++k) {
    host[k] = rooflab::random_floats(n, seed * 3 + static_cast<std::uint64_t>(k));
    dev.emplace_back(n, offsets[k]);
    dev[k].buf.poison(kPoisonByte[k]);
    if (k != out) {
      ROOFLAB_CUDA_CHECK(cudaMemcpy(dev[k].data(), host[k].data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  const float scalar = 0.75f + static_cast<float>(rooflab::Rng(seed).uniform());
  const lab01::StreamArrays arrays{dev[0].data(), dev[1].data(), dev[2].data(), scalar, n};
  const rooflab::KernelWatch watch;
  v.run(arrays, nullptr);
  rooflab::synchronize_given(nullptr);
  // Every failure starts with the kernel and the shape: "triad_vec4_kernel at n = 31 (arrays at float offsets
  // 0,1,2)".
  std::string who = std::string(v.id()) + "_kernel at n = " + std::to_string(n);
  if (offsets[0] + offsets[1] + offsets[2] != 0) {
    who += " (arrays at float offsets " + std::to_string(offsets[0]) + "," + std::to_string(offsets[1]) + "," +
           std::to_string(offsets[2]) + ")";
  }
  if (auto ran = watch.kernels_did_the_work(who); !ran) return ran;

  std::vector<std::vector<float>> want = host;
  lab01::reference(v.op, want[0], want[1], want[2], scalar);
  for (int k = 0; k < 3; ++k) {
    const std::vector<float> all = dev[k].buf.download();
    const std::span<const float> body(all.data() + offsets[k], n);
    const auto r = all_close<float, float>(body, want[k], rooflab::kFp32Tolerance);
    const char* role = k == out ? "output" : "input (must not change)";
    if (!r) {
      return ::testing::AssertionFailure() << who << ", array " << "abc"[k] << " (" << role << "): " << r.message();
    }
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i >= offsets[k] && i < offsets[k] + n) continue;
      if (!is_poison(all[i], kPoisonByte[k])) {
        const long long where = static_cast<long long>(i) - static_cast<long long>(offsets[k]);
        return ::testing::AssertionFailure()
               << who << ": wrote array " << "abc"[k] << " at index " << where
               << (where < 0 ? " (before the start)" : " (past the end)") << ": out of bounds";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

const Kernel& variant(std::string_view id) { return lab01::kernel(id); }

void check_sizes(std::string_view id) {
  ROOFLAB_REQUIRE_GPU();
  constexpr std::size_t kAligned[3] = {0, 0, 0};
  for (std::size_t n : kSizes) ROOFLAB_EXPECT(run_variant(variant(id), n, kAligned));
}

}  // namespace

ROOFLAB_TEST(Lab01Kernels, Copy) { check_sizes("copy"); }
ROOFLAB_TEST(Lab01Kernels, Scale) { check_sizes("scale"); }
ROOFLAB_TEST(Lab01Kernels, Add) { check_sizes("add"); }
ROOFLAB_TEST(Lab01Kernels, Triad) { check_sizes("triad"); }
ROOFLAB_TEST(Lab01Kernels, TriadVec4) { check_sizes("triad_vec4"); }

// Arrays starting 1, 2 or 3 floats past a 16-byte boundary: the same head for all three, and mixed ones
// (where no head aligns all three and the kernel must still be right): a differs from b, or a and b agree
// and only c differs. Sizes on and off the float4 width (4, 8) as well as ragged ones.
ROOFLAB_TEST(Lab01Kernels, TriadVec4Misaligned) {
  ROOFLAB_REQUIRE_GPU();
  const std::size_t cases[][3] = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {0, 1, 2}, {3, 0, 1}, {1, 1, 3}};
  for (const auto& offsets : cases) {
    for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5},
                          std::size_t{7}, std::size_t{8}, std::size_t{31}, std::size_t{4099},
                          (std::size_t{1} << 18) + 1}) {
      ROOFLAB_EXPECT(run_variant(variant("triad_vec4"), n, offsets));
    }
  }
}

ROOFLAB_TEST(Lab01Kernels, StridedRead) {
  ROOFLAB_REQUIRE_GPU();
  for (std::size_t stride : {1, 2, 7, 32}) {
    for (std::size_t n_out : {1, 33, 1025, 65537}) {
      const std::size_t n_in = (n_out - 1) * stride + 1;
      const auto in = rooflab::random_floats(n_in, rooflab::test_seed() + stride);
      rooflab::DeviceBuffer<float> d_in{std::span<const float>(in)};
      rooflab::DeviceBuffer<float> d_out(n_out + kCanary);
      d_out.poison();
      const rooflab::KernelWatch watch;
      lab01::strided_read(d_in.data(), d_out.data(), n_out, stride, nullptr);
      rooflab::synchronize_given(nullptr);
      const std::string who = "strided_read_kernel at stride " + std::to_string(stride) + ", n_out = " +
                              std::to_string(n_out);
      ROOFLAB_ASSERT(watch.kernels_did_the_work(who));
      std::vector<float> want(n_out);
      lab01::reference_strided(in, want, stride);
      const auto got = d_out.download();
      ROOFLAB_EXPECT(named(who, all_close<float, float>(std::span<const float>(got.data(), n_out), want,
                                                        rooflab::kExactTolerance)));
      for (std::size_t i = n_out; i < got.size(); ++i) {
        ASSERT_TRUE(is_poison(got[i])) << who << ": wrote out[" << i << "], past its n_out elements";
      }
    }
  }
}
