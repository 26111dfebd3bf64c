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
#include <rooflab/stub.hpp>

#include <gtest/gtest.h>

#include <algorithm>
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

namespace detail {
// The steps timed() skipped in the timed_launches running now (one thread records at a time).
inline std::vector<std::string>& skipped_stubs() {
  static thread_local std::vector<std::string> steps;
  return steps;
}
}  // namespace detail

// One launcher's call in a timed_launches body. A launcher that is still the stub (it throws rooflab::NotImplemented)
// is skipped and named in the note, so that in a lab half written the launchers written still give their grids.
//
//   rooflab::ptx::timed([&] { lab01::copy(a.data(), c.data(), n, nullptr); });
template <typename Call>
void timed(Call&& call) {
  try {
    call();
  } catch (const NotImplemented& e) {
    detail::skipped_stubs().push_back(e.step());
  }
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
    detail::skipped_stubs().clear();
    call();
    for (const auto& s : shapes.taken()) {
      out.launches.push_back({s.kernel, static_cast<unsigned long long>(s.grid.x) * s.grid.y * s.grid.z,
                              s.block.x * s.block.y * s.block.z, s.dynamic_smem, s.reach, s.scalars});
    }
    if (!detail::skipped_stubs().empty()) {
      out.note = "its launcher is not written yet (";
      for (std::size_t i = 0; i < detail::skipped_stubs().size(); ++i) {
        out.note += (i > 0 ? ", " : "") + detail::skipped_stubs()[i];
      }
      out.note += " still the stub)";
    }
  } catch (const std::exception& e) {
    out.launches.clear();
    out.note = std::string("the launchers failed at the timed size on the CPU backend: ") + e.what();
  }
  return out;
}

// The check every lab with timed launches makes (its NoSpills test): each kernel its perf tests time launches on
// every GPU data/gpus.json names. Its block's threads and registers and its shared memory (ptxas's static bytes plus
// the dynamic bytes the launcher asked for) must fit one block on an SM of each, the opt-in limit included: a
// launcher that asks for 80 KB of dynamic shared memory runs on an H100 and fails on a T4 (64 KB) or an RTX 4090
// (99 KB) only when a student there runs it. Registers and static bytes are those of the captured architecture
// nearest below the GPU's (the lowest captured one for older GPUs: ptxas may give those a few registers more).
// And no block may have more threads than the kernel's __launch_bounds__ (its PTX's .maxntid).
inline void expect_launches_fit_every_gpu(inspect::TimedLaunches (*launches)(const GpuSpec& gpu)) {
  // Blocks and shared memory do not depend on the GPU the CPU backend pretends to be (grids may): the launches are
  // recorded on whichever it is, with the SM count it has already chosen where an earlier test chose one.
  GpuSpec pretend = rooflab::gpu(emu::pretend_gpu().id.empty() ? "h100-sxm" : emu::pretend_gpu().id);
  pretend.sms = emu::pretend_gpu().sms;
  const auto timed = launches(pretend);
  ASSERT_FALSE(timed.launches.empty()) << "the timed launches were not recorded: " << timed.note;
  struct Captured {
    int cc = 0;  // 80 for sm_80
    std::vector<Kernel> kernels;
    std::vector<Resources> resources;
  };
  std::vector<Captured> archs;
  for (const auto& arch : captured_archs()) {
    archs.push_back({std::stoi(arch.substr(3)), parse_ptx(captured(arch, ".ptx")),
                     parse_ptxas_report(captured(arch, ".ptxas.txt"))});
  }
  ASSERT_FALSE(archs.empty()) << "no architecture captured";
  std::sort(archs.begin(), archs.end(), [](const Captured& a, const Captured& b) { return a.cc < b.cc; });
  // A block bigger than the kernel's __launch_bounds__ (.maxntid) launches on no GPU, whatever its resources.
  for (const auto& l : timed.launches) {
    for (const auto& k : archs.front().kernels) {
      if (!same_kernel(k.name, l.kernel) || k.max_threads == 0) continue;
      EXPECT_LE(static_cast<int>(l.block), k.max_threads)
          << l.kernel << " is launched with blocks of " << l.block << " threads, and its __launch_bounds__ allow "
          << k.max_threads << " (.maxntid, sm_" << archs.front().cc << "): no GPU launches it";
    }
  }
  int checked = 0;
  for (const auto& g : gpus()) {
    const int cc = 10 * g.cc_major + g.cc_minor;
    const Captured* code = &archs.front();
    for (const auto& a : archs) {
      if (a.cc <= cc) code = &a;
    }
    const inspect::Limits limits = inspect::limits_of(g);
    for (const auto& l : timed.launches) {
      const Kernel* entry = nullptr;
      for (const auto& k : code->kernels) {
        if (same_kernel(k.name, l.kernel)) entry = &k;
      }
      if (entry == nullptr) continue;  // not one of the lab's kernels (a library's)
      const Resources& r = resources_of(code->resources, *entry);
      const auto occ = inspect::occupancy(limits, r.registers, static_cast<std::size_t>(r.smem_bytes), l.dynamic_smem,
                                          l.block, r.barriers);
      ++checked;
      EXPECT_GE(occ.blocks_per_sm, 1)
          << l.kernel << " cannot launch on the " << g.name << " (" << g.arch() << "): a block of " << l.block
          << " threads, " << r.registers << " registers each (sm_" << code->cc << "), " << r.smem_bytes
          << " bytes of static and " << l.dynamic_smem
          << " of dynamic shared memory; the GPU allows " << limits.smem_per_block_optin
          << " bytes of shared memory per block with the opt-in, " << limits.max_threads_per_block
          << " threads per block" << (occ.error.empty() ? "" : " (" + occ.error + ")");
    }
  }
  EXPECT_GT(checked, 0) << "none of the timed launches is a kernel of the captured code";
}

// Device memory for such a call, left as cudaMalloc gives it (no kernel reads it: the launches do not run; the
// CPU backend does not poison memory allocated while launches are only recorded, so the sizes the perf tests time
// cost no memory until touched).
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
