// rooflab-doctor-probe: what `./rooflab doctor` runs to see the device as the grader's tests see it.
//
//   --device   inside the same sandbox as the test binaries: count the devices, launch a tiny kernel (the
//              calibration copy kernel on 1 MiB) and check what it wrote, and try the places CUDA writes
//              beside the device files (the JIT cache under $HOME, /dev/shm)
//   --health   outside the sandbox (our own code): copy bandwidth and the FP32 FMA rate with the calibration
//              kernels, in about `--seconds` seconds, for the datasheet comparison
//
// It prints one JSON object on stdout and exits 0 even when the device failed (the JSON says how); a crash
// or a non-zero exit is itself a finding. The same source is built twice: for the GPU (rooflab::cuda) and,
// as rooflab-doctor-probe-dryrun, for the CPU backend's pretend GPU, which is how CI runs every code path.
#include "calibration_kernels.hpp"

#include <rooflab/check.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/timing.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char* backend() { return rooflab::kDryRun ? "cpu" : "gpu"; }

// Whether a file can be created in `dir` (the JIT cache's folder): "writable" or the reason.
std::string writable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path file = dir / "rooflab-doctor-probe";
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::string("not writable: ") + std::strerror(errno);
  close(fd);
  fs::remove(file, ec);
  return "writable";
}

// POSIX shared memory (CUDA IPC and some libraries use it): "writable" or the reason.
std::string shm_state() {
  const std::string name = "/rooflab-doctor-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return std::string("not writable: ") + std::strerror(errno);
  close(fd);
  shm_unlink(name.c_str());
  return "writable";
}

// The tiny kernel: copy 1 MiB of a known pattern and read it back.
std::string tiny_kernel(const rooflab::DeviceInfo& info) {
  constexpr std::size_t n4 = (1u << 20) / sizeof(float4);
  std::vector<float4> host(n4);
  for (std::size_t i = 0; i < n4; ++i) host[i] = float4{float(i), 1.0f, 2.0f, 3.0f};
  rooflab::DeviceBuffer<float4> in(n4), out(n4);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), n4 * sizeof(float4), cudaMemcpyHostToDevice));
  rooflab::calib::copy_vec4(in.data(), out.data(), n4, info.sms, nullptr);
  ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float4> back(n4);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(back.data(), out.data(), n4 * sizeof(float4), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n4; ++i) {
    if (back[i].x != float(i) || back[i].w != 3.0f) return "ran, but wrote wrong values at element " + std::to_string(i);
  }
  return "ran";
}

json device_probe() {
  json j = {{"backend", backend()}};
  const char* home = std::getenv("HOME");
  j["jit_cache"] = writable(fs::path(home != nullptr ? home : "/tmp") / ".nv" / "ComputeCache");
  j["shm"] = shm_state();
  std::string why;
  if (!rooflab::device_available(&why)) {
    j["devices"] = 0;
    j["error"] = why;
    return j;
  }
  int count = 0;
  ROOFLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
  j["devices"] = count;
  const rooflab::DeviceInfo info = rooflab::query_device(0);
  j["name"] = info.name;
  j["uuid"] = info.uuid;
  j["cc"] = std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor);
  j["driver_version"] = info.driver_version;
  j["runtime_version"] = info.runtime_version;
  try {
    j["kernel"] = tiny_kernel(info);
  } catch (const std::exception& e) {
    j["kernel"] = std::string("failed: ") + e.what();
  }
  return j;
}

json health_probe(double seconds) {
  const auto start = std::chrono::steady_clock::now();
  const rooflab::DeviceInfo info = rooflab::query_device(0);
  json j = {{"backend", backend()}, {"name", info.name}, {"uuid", info.uuid}};
  const char* home = std::getenv("HOME");
  j["jit_cache"] = writable(fs::path(home != nullptr ? home : "/tmp") / ".nv" / "ComputeCache");
  // Half the time each; the harness samples until the budget is spent or the figure is stable.
  const double each = seconds / 2;
  const std::size_t bytes = rooflab::streaming_bytes(info.l2_bytes) / 16 * 16;  // from DRAM, not the L2
  rooflab::DeviceBuffer<float4> in(bytes / sizeof(float4)), out(bytes / sizeof(float4));
  ROOFLAB_CUDA_CHECK(cudaMemset(in.data(), 1, bytes));
  const rooflab::Measurement copy = rooflab::benchmark(
      [&](cudaStream_t s) { rooflab::calib::copy_vec4(in.data(), out.data(), in.size(), info.sms, s); },
      rooflab::Work{.bytes_read = double(bytes), .bytes_written = double(bytes)},
      rooflab::BenchOptions{.max_seconds = each});
  // Enough resident warps for every scheduler, as calibration does: 8 blocks of 256 per SM, 4 waves.
  const unsigned threads = 256, blocks = unsigned(info.sms) * 8 * 4;
  rooflab::DeviceBuffer<float> sink(std::size_t(blocks) * threads);
  const int iterations = int(rooflab::scaled(4096, 4));
  const double flops = 2.0 * 8 * iterations * double(blocks) * threads;
  const rooflab::Measurement fma = rooflab::benchmark(
      [&](cudaStream_t s) { rooflab::calib::fma_peak(1.000001f, 1e-7f, iterations, sink.data(), blocks, threads, s); },
      rooflab::Work{.flops = flops}, rooflab::BenchOptions{.max_seconds = each, .flush_l2 = false});
  // Medians, not the best sample: health is what a test will typically see, not what the GPU can touch once.
  j["copy_gbps"] = copy.gbps();
  j["fma_tflops"] = fma.flops_per_s() / 1e12;
  j["sm_clock_mhz"] = fma.mean_sm_clock_mhz;
  j["throttled_samples"] = copy.throttled_samples + fma.throttled_samples;
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  double seconds = 30;
  if (argc > 3 && std::string(argv[2]) == "--seconds") seconds = std::atof(argv[3]);
  if (mode != "--device" && mode != "--health") {
    std::cerr << "usage: rooflab-doctor-probe --device | --health [--seconds S]\n";
    return 2;
  }
  json j;
  try {
    j = mode == "--device" ? device_probe() : health_probe(seconds);
  } catch (const std::exception& e) {
    j["backend"] = backend();
    j["error"] = e.what();
  }
  std::cout << j.dump() << "\n";
  return 0;
}
