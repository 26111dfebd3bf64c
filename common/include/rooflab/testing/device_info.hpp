// What this GPU is: identity, limits and clocks, read through cudaDeviceGetAttribute (CUDA 13 dropped the
// clock fields from cudaDeviceProp) and, where the build found NVML, the current SM clock and the reasons
// the clock is being held down (power, thermal).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace rooflab {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string uuid;       // "GPU-xxxxxxxx-..." as nvidia-smi prints it
  std::string pci_bus_id;
  int cc_major = 0;
  int cc_minor = 0;
  int sms = 0;
  double max_sm_clock_mhz = 0;   // the peak clock the driver reports
  double max_mem_clock_mhz = 0;
  int memory_bus_bits = 0;
  std::size_t total_memory_bytes = 0;
  std::size_t l2_bytes = 0;
  std::size_t smem_per_sm_bytes = 0;
  std::size_t smem_per_block_optin_bytes = 0;
  int max_threads_per_sm = 0;
  int registers_per_sm = 0;
  int driver_version = 0;   // 13000 = 13.0
  int runtime_version = 0;
  bool ecc_enabled = false;
  std::optional<double> current_sm_clock_mhz;         // NVML only
  std::optional<unsigned long long> throttle_reasons;  // NVML only; 0 = running free

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
  // Theoretical DRAM bandwidth from the memory clock and bus width (DDR: two transfers per clock).
  double theoretical_bandwidth_gbps() const { return 2.0 * max_mem_clock_mhz * 1e6 * memory_bus_bits / 8 / 1e9; }
};

// Throws rooflab::CudaError when the device cannot be queried.
DeviceInfo query_device(int index = 0);

// Current SM clock in MHz (NVML), when the build has NVML and the driver answers.
std::optional<double> current_sm_clock_mhz(int index = 0);

// One line per field, for `rooflab calibrate` and reports.
std::string describe(const DeviceInfo& info);

}  // namespace rooflab
