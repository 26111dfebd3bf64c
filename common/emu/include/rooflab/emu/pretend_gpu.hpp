// The GPU the CPU backend pretends to be: what cudaGetDeviceProperties, cudaDeviceGetAttribute and
// cudaMemGetInfo report. By default an A100-like sm_80 (the correctness tests' GPU); ROOFLAB_EMU_GPU names
// another from data/gpus.json (its id, "t4", or its CUDA name, "Tesla T4"), so that code which sizes its work
// from the device (perf tests, calibration) runs as it would on that GPU. The dry-run harness chooses a small
// one as its default (set_default_pretend_gpu). ROOFLAB_EMU_SMS still overrides the SM count.
//
// Only the figures code reads change: name, compute capability, SMs, L2, memory size, clocks, bus width.
// Shared-memory limits stay those the launch checks use (48 KiB per block, 227 KiB opt-in) on every pretend
// GPU, so a kernel written for a bigger GPU still runs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rooflab::emu {

struct PretendGpu {
  std::string id;    // data/gpus.json id; "" for the built-in default
  std::string name;  // as cudaGetDeviceProperties reports it
  int cc_major = 8;
  int cc_minor = 0;
  int sms = 108;
  std::size_t l2_bytes = std::size_t{40} << 20;
  std::size_t memory_bytes = std::size_t{80} << 30;
  int sm_clock_khz = 1410000;
  int mem_clock_khz = 1593000;
  int bus_bits = 5120;
};

// The pretend GPU, chosen on first use: ROOFLAB_EMU_GPU, else the default set below, else the built-in one.
// An unknown name throws std::invalid_argument listing the known ones.
const PretendGpu& pretend_gpu();

// Reads the GPU with this data/gpus.json id or CUDA name (throws std::invalid_argument when there is none).
PretendGpu pretend_gpu_from_data(std::string_view id_or_name);

// The GPU to pretend to be when ROOFLAB_EMU_GPU is not set; call before the first CUDA call.
void set_default_pretend_gpu(std::string_view id_or_name);

}  // namespace rooflab::emu
