// For a lab's static test binary: where the build put the PTX and ptxas report of the lab's kernels.
// rooflab_add_lab gives each such binary its capture's folder and architectures (capture_paths.hpp), and links
// the lab's kernels on the CPU backend into it, so that a test can learn which kernels a launcher starts.
#pragma once

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/capture_paths.hpp>
#include <rooflab/testing/ptx.hpp>

#include <rooflab/emu/launch.hpp>
#include <rooflab/emu/pretend_gpu.hpp>
#include <rooflab/inspect.hpp>

#include <gtest/gtest.h>

#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace rooflab::ptx {

// The architectures captured, as "sm_80", "sm_90".
inline std::vector<std::string> captured_archs() {
  std::vector<std::string> out;
  std::stringstream list(::rooflab::testing::capture_archs());
  for (std::string a; std::getline(list, a, ',');) out.push_back("sm_" + a);
  return out;
}

// The captured text of kernels.cu for one architecture: ext ".ptx" or ".ptxas.txt".
inline std::string captured(const std::string& arch, const char* ext) {
  return read_file(std::string(::rooflab::testing::capture_dir()) + "/kernels." + arch + ext);
}

// The check every lab's static test makes: the ptxas report of one captured architecture lists the lab's
// kernels and none of them spills (a spill is local-memory traffic that no byte count of the lab has).
// `max_registers` > 0 adds a register budget. Returns the report for the lab's own further checks.
inline std::vector<Resources> expect_no_spills(const std::string& arch, int max_registers = 0) {
  auto report = parse_ptxas_report(captured(arch, ".ptxas.txt"));
  EXPECT_FALSE(report.empty()) << arch << ": the ptxas report lists no kernels";
  for (const auto& r : report) {
    EXPECT_EQ(r.spill_store_bytes + r.spill_load_bytes, 0)
        << arch << ": " << r.name << " spills (" << r.spill_store_bytes << " bytes stored, " << r.spill_load_bytes
        << " loaded)";
    if (max_registers > 0) {
      EXPECT_LE(r.registers, max_registers) << arch << ": " << r.name << " uses " << r.registers << " registers";
    }
  }
  return report;
}

// Runs `call` (a launcher on small inputs) on the CPU backend, which the static binaries link, and returns
// the kernels it started: facts of the compiled code count only for kernels the launcher really runs
// (find_launched_kernel). `launcher` names the call in hints.
//
//   const auto v2 = rooflab::ptx::launched_by("lab05::flash_attention_fp16 at head dim 64", [&] { ... });
//   const auto& k = rooflab::ptx::find_launched_kernel(kernels, "lab05::flash_mma_kernel<64, 64>", v2);
template <typename Call>
Launched launched_by(std::string launcher, Call&& call) {
  const unsigned long long before = emu::kernel_launch_count();
  call();
  return {std::move(launcher), emu::kernels_launched_since(before)};
}

// For ROOFLAB_INSPECT_TIMED_LAUNCHES: runs `call` (the lab's launchers at the size its perf tests time) on the CPU
// backend pretending to be `gpu`, so that grids sized by the SM count are sized for it, and returns each launch's
// shape; no kernel runs, so the inputs need not hold anything (timed_buffer). Call it first in the process: the
// pretend GPU is chosen on first use (ROOFLAB_EMU_GPU and ROOFLAB_EMU_SMS still win; the note then says so).
//
//   rooflab::inspect::TimedLaunches launches(const rooflab::GpuSpec& gpu) {
//     return rooflab::ptx::timed_launches(gpu, [] { ... lab08::gemv_int8(...) at 8192 x 8192 ... });
//   }
//   ROOFLAB_INSPECT_TIMED_LAUNCHES(launches);
template <typename Call>
inspect::TimedLaunches timed_launches(const GpuSpec& gpu, Call&& call) {
  inspect::TimedLaunches out;
  try {
    emu::set_default_pretend_gpu(gpu.id);
    const int sms = emu::pretend_gpu().sms;
    if (!gpu.sms) {
      out.note = "data/gpus.json gives the " + gpu.name + " no SM count: no grid sized by it can be known";
      return out;
    }
    if (sms != *gpu.sms) {
      out.note = "the CPU backend pretends a GPU of " + std::to_string(sms) + " SMs here, not the " + gpu.name +
                 "'s (ROOFLAB_EMU_GPU or ROOFLAB_EMU_SMS is set): grids sized by the SM count would be wrong";
      return out;
    }
    const emu::LaunchShapes shapes;
    call();
    for (const auto& s : shapes.taken()) {
      out.launches.push_back({s.kernel, static_cast<unsigned long long>(s.grid.x) * s.grid.y * s.grid.z,
                              s.block.x * s.block.y * s.block.z, s.dynamic_smem, s.reach});
    }
  } catch (const std::exception& e) {
    out.launches.clear();
    out.note = std::string("the launchers failed at the timed size on the CPU backend: ") + e.what();
  }
  return out;
}

// Device memory for such a call, left as cudaMalloc gives it (no kernel reads it: the launches do not run).
template <typename T>
struct TimedBuffer {
  T* ptr = nullptr;
  explicit TimedBuffer(std::size_t count) { ROOFLAB_CUDA_CHECK(cudaMalloc(&ptr, count * sizeof(T))); }
  ~TimedBuffer() { cudaFree(ptr); }
  TimedBuffer(const TimedBuffer&) = delete;
  TimedBuffer& operator=(const TimedBuffer&) = delete;
  T* data() const { return ptr; }
};

// A device array of `count` zeros, the inputs of such a call.
template <typename T>
DeviceBuffer<T> device_zeros(std::size_t count) {
  const std::vector<T> zeros(count);
  return DeviceBuffer<T>(std::span<const T>(zeros));
}

}  // namespace rooflab::ptx
