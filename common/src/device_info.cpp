#include <rooflab/check.hpp>
#include <rooflab/testing/device_info.hpp>

#include <fmt/format.h>

#if defined(ROOFLAB_HAVE_NVML)
#include <nvml.h>
#endif

namespace rooflab {
namespace {

int attribute(cudaDeviceAttr attr, int index) {
  int value = 0;
  ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, index));
  return value;
}

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                     b[15]);
}

#if defined(ROOFLAB_HAVE_NVML)
// NVML numbers devices its own way; match on the PCI bus id that CUDA reports.
bool nvml_device(int index, nvmlDevice_t* device) {
  static const bool initialised = nvmlInit_v2() == NVML_SUCCESS;
  if (!initialised) return false;
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) != cudaSuccess) return false;
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device) == NVML_SUCCESS;
}
#endif

}  // namespace

std::optional<double> current_sm_clock_mhz([[maybe_unused]] int index) {
#if defined(ROOFLAB_HAVE_NVML)
  nvmlDevice_t device{};
  unsigned int mhz = 0;
  if (nvml_device(index, &device) && nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) {
    return static_cast<double>(mhz);
  }
#endif
  return std::nullopt;
}

DeviceInfo query_device(int index) {
  DeviceInfo info;
  info.index = index;
  cudaDeviceProp prop{};
  ROOFLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  info.name = prop.name;
  info.uuid = format_uuid(prop.uuid);
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) == cudaSuccess) info.pci_bus_id = bus_id;
  info.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, index);
  info.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, index);
  info.sms = attribute(cudaDevAttrMultiProcessorCount, index);
  info.max_sm_clock_mhz = attribute(cudaDevAttrClockRate, index) / 1000.0;
  info.max_mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, index) / 1000.0;
  info.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  info.total_memory_bytes = prop.totalGlobalMem;
  info.l2_bytes = static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, index));
  info.smem_per_sm_bytes = static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, index));
  info.smem_per_block_optin_bytes =
      static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, index));
  info.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, index);
  info.registers_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, index);
  info.ecc_enabled = attribute(cudaDevAttrEccEnabled, index) != 0;
  ROOFLAB_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  ROOFLAB_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
#if defined(ROOFLAB_HAVE_NVML)
  nvmlDevice_t device{};
  if (nvml_device(index, &device)) {
    unsigned int mhz = 0;
    if (nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) info.current_sm_clock_mhz = mhz;
    unsigned long long reasons = 0;
    if (nvmlDeviceGetCurrentClocksEventReasons(device, &reasons) == NVML_SUCCESS) info.throttle_reasons = reasons;
  }
#endif
  return info;
}

std::string describe(const DeviceInfo& d) {
  std::string s = fmt::format(
      "device {}: {} ({}), {}\n"
      "  compute capability {}.{}, {} SMs, max SM clock {:.0f} MHz, memory clock {:.0f} MHz x {} bits"
      " (theoretical {:.0f} GB/s), ECC {}\n"
      "  memory {:.1f} GB, L2 {:.1f} MB, shared memory {} KB per SM ({} KB opt-in per block)\n"
      "  driver {}.{}, runtime {}.{}",
      d.index, d.name, d.arch(), d.uuid, d.cc_major, d.cc_minor, d.sms, d.max_sm_clock_mhz, d.max_mem_clock_mhz,
      d.memory_bus_bits, d.theoretical_bandwidth_gbps(), d.ecc_enabled ? "on" : "off", d.total_memory_bytes / 1e9,
      d.l2_bytes / 1e6, d.smem_per_sm_bytes / 1024, d.smem_per_block_optin_bytes / 1024, d.driver_version / 1000,
      (d.driver_version % 1000) / 10, d.runtime_version / 1000, (d.runtime_version % 1000) / 10);
  if (d.current_sm_clock_mhz) s += fmt::format("\n  current SM clock {:.0f} MHz", *d.current_sm_clock_mhz);
  if (d.throttle_reasons && *d.throttle_reasons != 0) {
    s += fmt::format(" (clock held down: NVML reasons 0x{:x})", *d.throttle_reasons);
  }
  return s;
}

}  // namespace rooflab
