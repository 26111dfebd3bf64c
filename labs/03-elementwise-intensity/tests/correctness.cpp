// Lab 03 graders: each kernel of the chain alone (so a wrong result names the kernel that is wrong), the
// unfused launcher that wires them, the fused chain, and the sweep, in FP32 and FP16, for awkward shapes,
// with poisoned outputs, on the GPU ("gpu") or the CPU backend ("emu"). Every failure starts with the
// kernel and the shape, before the mismatches.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <string>
#include <vector>

namespace {

using rooflab::grading::all_close;
using rooflab::grading::named;

constexpr std::pair<std::size_t, std::size_t> kShapes[] = {{1, 1}, {1, 33}, {31, 7}, {64, 257}, {129, 1025}};

// What is under test: one kernel of the chain, the unfused launcher (all three through t and u), or the
// fused kernel.
enum class Step { bias_add, gelu, residual_add, unfused_chain, fused_chain };

template <typename T>
const char* type_name() {
  return sizeof(T) == 2 ? "__half" : "float";
}

template <typename T>
std::vector<T> to(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<T>(v[i]);
  return out;
}

template <typename T>
float as_float(T v) {
  return static_cast<float>(v);
}

// "gelu_kernel<__half> at 31 x 7 (n = 217)": the first words of every failure of this step and shape.
template <typename T>
std::string what_ran(Step step, std::size_t rows, std::size_t cols) {
  const std::string t = type_name<T>();
  std::string who;
  switch (step) {
    case Step::bias_add: who = "bias_add_kernel<" + t + ">"; break;
    case Step::gelu: who = "gelu_kernel<" + t + ">"; break;
    case Step::residual_add: who = "residual_add_kernel<" + t + ">"; break;
    case Step::unfused_chain: who = "unfused_chain<" + t + "> (bias_add, gelu, residual_add through t and u)"; break;
    case Step::fused_chain: who = "fused_chain_kernel<" + t + ">"; break;
  }
  return who + " at " + std::to_string(rows) + " x " + std::to_string(cols) + " (n = " + std::to_string(rows * cols) +
         ")";
}

template <typename T>
::testing::AssertionResult check(Step step, std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  // Inputs stored as T; the references are computed from the stored values, in double.
  // Most activations in [-2, 2], where GELU's curve bends; every eighth a large one, 4 to 60 in magnitude, as
  // real MLP activations have: a GELU whose tanh is built from exp(2z) overflows there (inf / inf) in FP32.
  auto x_values = rooflab::random_floats(n, rooflab::test_seed() + n, -2.0f, 2.0f);
  const auto large = rooflab::random_floats(n, rooflab::test_seed() + n + 3, 4.0f, 60.0f);
  for (std::size_t i = 3; i < n; i += 8) x_values[i] = i % 16 == 3 ? large[i] : -large[i];
  const auto xs = to<T>(x_values);
  const auto bs = to<T>(rooflab::random_floats(cols, rooflab::test_seed() + 1, -1.0f, 1.0f));
  const auto rs = to<T>(rooflab::random_floats(n, rooflab::test_seed() + 2, -1.0f, 1.0f));
  rooflab::DeviceBuffer<T> dx{std::span<const T>(xs)}, db{std::span<const T>(bs)}, dr{std::span<const T>(rs)};
  rooflab::DeviceBuffer<T> t(n), u(n), y(n);
  t.poison();
  u.poison();
  y.poison();
  const auto x_at = [&](std::size_t i) { return static_cast<double>(as_float(xs[i])); };
  const auto bias_add_ref = [&](std::size_t i) { return x_at(i) + as_float(bs[i % cols]); };
  std::vector<float> want(n);
  const rooflab::KernelWatch watch;
  const rooflab::DeviceBuffer<T>* out = &y;
  switch (step) {
    case Step::bias_add:
      lab03::bias_add<T>(dx.data(), db.data(), t.data(), rows, cols, nullptr);
      for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<float>(bias_add_ref(i));
      out = &t;
      break;
    case Step::gelu:  // x stands in for t
      lab03::gelu<T>(dx.data(), u.data(), n, nullptr);
      for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<float>(lab03::gelu_ref(x_at(i)));
      out = &u;
      break;
    case Step::residual_add:  // x stands in for u
      lab03::residual_add<T>(dx.data(), dr.data(), y.data(), n, nullptr);
      for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<float>(x_at(i) + as_float(rs[i]));
      break;
    case Step::unfused_chain:
    case Step::fused_chain:
      if (step == Step::fused_chain) {
        lab03::fused_chain<T>(dx.data(), db.data(), dr.data(), y.data(), rows, cols, nullptr);
      } else {
        lab03::unfused_chain<T>(dx.data(), db.data(), dr.data(), t.data(), u.data(), y.data(), rows, cols, nullptr);
      }
      for (std::size_t i = 0; i < n; ++i) {
        want[i] = static_cast<float>(lab03::gelu_ref(bias_add_ref(i)) + as_float(rs[i]));
      }
      break;
  }
  rooflab::synchronize_given(nullptr);
  const std::string who = what_ran<T>(step, rows, cols);
  if (auto ran = watch.kernels_did_the_work(who); !ran) return ran;
  std::vector<float> got;
  for (const T& v : out->download()) got.push_back(as_float(v));
  const rooflab::Tolerance tol = sizeof(T) == 2 ? rooflab::Tolerance{4e-3, 1e-2} : rooflab::Tolerance{1e-5, 1e-5};
  return named(who, all_close<float, float>(got, want, tol));
}

template <typename T>
void check_every_shape(Step step) {
  for (const auto& [rows, cols] : kShapes) ROOFLAB_EXPECT(check<T>(step, rows, cols));
}

}  // namespace

ROOFLAB_TEST(Lab03Kernels, BiasAdd) {
  ROOFLAB_REQUIRE_GPU();
  check_every_shape<float>(Step::bias_add);
  check_every_shape<__half>(Step::bias_add);
}
ROOFLAB_TEST(Lab03Kernels, Gelu) {
  ROOFLAB_REQUIRE_GPU();
  check_every_shape<float>(Step::gelu);
  check_every_shape<__half>(Step::gelu);
}
ROOFLAB_TEST(Lab03Kernels, ResidualAdd) {
  ROOFLAB_REQUIRE_GPU();
  check_every_shape<float>(Step::residual_add);
  check_every_shape<__half>(Step::residual_add);
}
ROOFLAB_TEST(Lab03Kernels, UnfusedChain) {
  ROOFLAB_REQUIRE_GPU();
  check_every_shape<float>(Step::unfused_chain);
  check_every_shape<__half>(Step::unfused_chain);
}
ROOFLAB_TEST(Lab03Kernels, FusedChainFp32) {
  ROOFLAB_REQUIRE_GPU();
  check_every_shape<float>(Step::fused_chain);
}
ROOFLAB_TEST(Lab03Kernels, FusedChainFp16) {
  ROOFLAB_REQUIRE_GPU();
  check_every_shape<__half>(Step::fused_chain);
}

// Sizes: one element, ragged ones, an exact multiple of the block, and 2^16 + 3, large enough that a
// grid-stride loop taking four elements per trip makes whole trips and leaves a tail on the CPU backend's
// small pretend GPUs (a grid of 4096 threads under the reverse order, 10240 under random).
ROOFLAB_TEST(Lab03Kernels, IntensitySweep) {
  ROOFLAB_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{1024}, std::size_t{4099},
                        (std::size_t{1} << 16) + 3}) {
    const auto in = rooflab::random_floats(n, rooflab::test_seed() + 7);
    rooflab::DeviceBuffer<float> din{std::span<const float>(in)}, dout(n);
    for (int k : {0, 1, 7, 64}) {
      dout.poison();
      const rooflab::KernelWatch watch;
      lab03::sweep(din.data(), dout.data(), n, 0.999f, 0.001f, k, nullptr);
      rooflab::synchronize_given(nullptr);
      const std::string who = "sweep_kernel at n = " + std::to_string(n) + ", k = " + std::to_string(k);
      ROOFLAB_EXPECT(watch.kernels_did_the_work(who));
      std::vector<float> want(n);
      for (std::size_t i = 0; i < n; ++i) want[i] = lab03::sweep_ref(in[i], 0.999f, 0.001f, k);
      ROOFLAB_EXPECT(named(who, all_close<float, float>(dout.download(), want, {1e-6, 1e-6})));
    }
  }
}
