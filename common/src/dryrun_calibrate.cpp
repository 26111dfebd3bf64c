// `ROOFLAB_DRYRUN=1 ./rooflab calibrate`: the calibration code on the CPU backend's pretend GPU, for
// developers without a GPU. It runs every measurement (copy kernel, cudaMemcpy, FMA kernel, cuBLAS GEMMs) to
// the end at scaled-down sizes; every line says that its figures are CPU timings, never a GPU's.
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device_info.hpp>

#include <fmt/format.h>

#include <exception>
#include <sstream>
#include <string>

namespace {

void say(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) fmt::print("[dry run, CPU timings] {}\n", line);
}

}  // namespace

int main(int argc, char** argv) {
  const bool remeasure = argc > 1 && std::string(argv[1]) == "--remeasure";
  try {
    say("calibration on the CPU backend's pretend GPU (ROOFLAB_EMU_GPU picks another from data/gpus.json): "
        "this proves the code runs; the figures say nothing about any GPU");
    const auto info = rooflab::query_device(0);
    say(rooflab::describe(info));
    const auto& c = rooflab::ceilings(0, remeasure);
    say(fmt::format("copy (best of kernel/memcpy) {:.3f} GB/s: kernel {:.3f}, cudaMemcpy {:.3f}", c.copy_gbps,
                    c.copy_kernel_gbps, c.memcpy_gbps));
    say(fmt::format("FP32 FMA {:.6f} TFLOP/s, SGEMM {:.6f}, FP16 GEMM {:.6f}, BF16 GEMM {:.6f}", c.fp32_fma_flops / 1e12,
                    c.sgemm_flops / 1e12, c.fp16_tensor_flops / 1e12, c.bf16_tensor_flops / 1e12));
    say("cached in " + rooflab::ceilings_cache_path(info).string());
    return 0;
  } catch (const std::exception& e) {
    say(std::string("calibration failed: ") + e.what());
    return 1;
  }
}
