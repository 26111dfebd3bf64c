// The pretend GPU's properties (rooflab/emu/pretend_gpu.hpp): cudaGetDeviceProperties (every field),
// cudaDeviceGetAttribute (every attribute) and cudaDeviceGetPCIBusId. A GPU named by ROOFLAB_EMU_GPU (or the default a
// harness sets) is read from data/gpus.json, so the figures are the datasheet's, not a second copy of them.
#include "guarded_memory.hpp"

#include <rooflab/emu/pretend_gpu.hpp>
#include <rooflab/emu/runtime.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rooflab::emu {

cudaError_t record_error(cudaError_t err);  // runtime_api.cpp: sets what cudaGetLastError returns

// The shared-memory limits of every pretend GPU: per block by default and opted in (guarded_memory.hpp, which
// the launch checks in runtime_api.cpp use), per SM, and what the driver keeps of each block's.
constexpr int kSharedPerSm = 228 * 1024;
constexpr int kReservedSharedPerBlock = 1024;  // what the driver keeps of each block's shared memory (sm_80+)

namespace {

// set_default_pretend_gpu runs from other files' static initializers: function-local statics, so they
// exist by then whatever the order of initialization.
std::mutex& default_mutex() {
  static std::mutex m;
  return m;
}
std::string& default_id() {
  static std::string id;
  return id;
}

double number(const nlohmann::json& g, const char* key, double fallback) {
  const auto it = g.find(key);
  if (it == g.end() || !it->is_object() || !it->contains("value") || !(*it)["value"].is_number()) return fallback;
  return (*it)["value"].get<double>();
}

// ROOFLAB_EMU_SMS when set; otherwise the reverse and random thread orders pretend a GPU of 2 and 5 SMs, so
// that launchers sizing their grids by the SM count launch small grids and every grid-stride loop goes
// round (a kernel that drops its loop fails there, as on a GPU with more data than threads). The forward
// order keeps the GPU's own count. One place for this: the grader and CTest only choose the order.
int sms_override(int sms) {
  if (const char* s = std::getenv("ROOFLAB_EMU_SMS"); s != nullptr && std::atoi(s) > 0) return std::atoi(s);
  const char* order = std::getenv("ROOFLAB_EMU_SCHEDULE");
  const std::string_view o = order != nullptr ? order : "";
  if (o == "reverse") return 2;
  if (o.rfind("random", 0) == 0) return 5;
  return sms;
}

PretendGpu built_in() {
  PretendGpu g;
  g.sms = sms_override(g.sms);
  g.name = "rooflab CPU backend (pretend sm_80, " + std::to_string(g.sms) + " SMs)";
  return g;
}

}  // namespace

PretendGpu pretend_gpu_from_data(std::string_view wanted) {
  // ROOFLAB_DATA_DIR overrides the built-in folder, as it does for rooflab::gpus() (rooflab/specs.hpp): a
  // course copy graded with this build's libraries (grader.new_lab) reads its own data/.
  const char* env = std::getenv("ROOFLAB_DATA_DIR");
  const std::string path = std::string(env != nullptr && *env != '\0' ? env : ROOFLAB_EMU_DATA_DIR) + "/gpus.json";
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("rooflab emu: cannot read " + path + " (the pretend GPUs' figures)");
  const auto data = nlohmann::json::parse(in);
  std::string known;
  for (const auto& g : data.at("gpus")) {
    const auto id = g.at("id").get<std::string>();
    const auto cuda_names = g.at("cuda_names").get<std::vector<std::string>>();
    known += " " + id;
    bool match = id == wanted;
    for (const auto& n : cuda_names) match = match || n == wanted;
    if (!match) continue;
    PretendGpu p;
    p.id = id;
    p.name = cuda_names.empty() ? g.at("name").get<std::string>() : cuda_names.front();
    const auto cc = g.at("compute_capability").get<std::string>();
    p.cc_major = std::atoi(cc.c_str());
    p.cc_minor = std::atoi(cc.c_str() + cc.find('.') + 1);
    p.sms = sms_override(static_cast<int>(number(g, "sms", 108)));
    // An unpublished L2 (null in the data) gets a plausible 50 MB: the dry run needs some size.
    p.l2_bytes = static_cast<std::size_t>(number(g, "l2_mb", 50) * (1 << 20));
    p.memory_bytes = static_cast<std::size_t>(number(g, "memory_gb", 16) * 1e9);
    p.sm_clock_khz = static_cast<int>(number(g, "boost_clock_mhz", 1500) * 1000);
    // Bus width by memory type, and the memory clock that gives the datasheet bandwidth (two transfers a clock).
    const auto type = g.value("memory_type", std::string("HBM"));
    p.bus_bits = type.rfind("HBM", 0) == 0 ? 5120 : 384;
    const double bytes_per_s = number(g, "bandwidth_gbps", 1000) * 1e9;
    p.mem_clock_khz = static_cast<int>(bytes_per_s / (2.0 * p.bus_bits / 8) / 1e3);
    return p;
  }
  throw std::invalid_argument("rooflab emu: no GPU \"" + std::string(wanted) + "\" in " + path + " (ids:" + known +
                              "; CUDA names work too)");
}

void set_default_pretend_gpu(std::string_view id_or_name) {
  std::lock_guard lock(default_mutex());
  default_id() = id_or_name;
}

const PretendGpu& pretend_gpu() {
  static const PretendGpu gpu = [] {
    std::string wanted;
    if (const char* e = std::getenv("ROOFLAB_EMU_GPU"); e != nullptr && *e != '\0') {
      wanted = e;
    } else {
      std::lock_guard lock(default_mutex());
      wanted = default_id();
    }
    return wanted.empty() ? built_in() : pretend_gpu_from_data(wanted);
  }();
  return gpu;
}

}  // namespace rooflab::emu

using rooflab::emu::pretend_gpu;
using rooflab::emu::kSharedOptin;
using rooflab::emu::kSharedPerBlock;
using rooflab::emu::kReservedSharedPerBlock;
using rooflab::emu::kSharedPerSm;

namespace {

// Every field of cudaDeviceProp: a discrete, compute-exclusive-free data-centre GPU of the pretend GPU's
// figures. Texture and surface limits are sm_80's (the backend has no textures: code that only prints or
// checks them still runs). Fields one toolkit has and the other lacks are guarded by CUDART_VERSION.
void fill_properties(cudaDeviceProp* prop) {
  const auto& g = pretend_gpu();
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", g.name.c_str());
  for (std::size_t k = 0; k < sizeof prop->uuid.bytes; ++k) prop->uuid.bytes[k] = static_cast<char>(0xe0 + k);
  prop->totalGlobalMem = g.memory_bytes;
  prop->sharedMemPerBlock = kSharedPerBlock;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = 2147483647;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 64 * 1024;
  prop->major = g.cc_major;
  prop->minor = g.cc_minor;
  prop->textureAlignment = 512;
  prop->texturePitchAlignment = 32;
  prop->multiProcessorCount = g.sms;
  prop->integrated = 0;
  prop->canMapHostMemory = 1;
  prop->maxTexture1D = 131072;
  prop->maxTexture1DMipmap = 32768;
  prop->maxTexture2D[0] = 131072;
  prop->maxTexture2D[1] = 65536;
  prop->maxTexture2DMipmap[0] = 32768;
  prop->maxTexture2DMipmap[1] = 32768;
  prop->maxTexture2DLinear[0] = 131072;
  prop->maxTexture2DLinear[1] = 65000;
  prop->maxTexture2DLinear[2] = 2097120;
  prop->maxTexture2DGather[0] = 32768;
  prop->maxTexture2DGather[1] = 32768;
  prop->maxTexture3D[0] = prop->maxTexture3D[1] = prop->maxTexture3D[2] = 16384;
  prop->maxTexture3DAlt[0] = prop->maxTexture3DAlt[1] = 8192;
  prop->maxTexture3DAlt[2] = 32768;
  prop->maxTextureCubemap = 32768;
  prop->maxTexture1DLayered[0] = 32768;
  prop->maxTexture1DLayered[1] = 2048;
  prop->maxTexture2DLayered[0] = prop->maxTexture2DLayered[1] = 32768;
  prop->maxTexture2DLayered[2] = 2048;
  prop->maxTextureCubemapLayered[0] = 32768;
  prop->maxTextureCubemapLayered[1] = 2046;
  prop->maxSurface1D = 32768;
  prop->maxSurface2D[0] = 131072;
  prop->maxSurface2D[1] = 65536;
  prop->maxSurface3D[0] = prop->maxSurface3D[1] = prop->maxSurface3D[2] = 16384;
  prop->maxSurface1DLayered[0] = 32768;
  prop->maxSurface1DLayered[1] = 2048;
  prop->maxSurface2DLayered[0] = prop->maxSurface2DLayered[1] = 32768;
  prop->maxSurface2DLayered[2] = 2048;
  prop->maxSurfaceCubemap = 32768;
  prop->maxSurfaceCubemapLayered[0] = 32768;
  prop->maxSurfaceCubemapLayered[1] = 2046;
  prop->surfaceAlignment = 512;
  prop->concurrentKernels = 1;
  prop->ECCEnabled = 0;
  prop->pciBusID = 0;
  prop->pciDeviceID = 0;
  prop->pciDomainID = 0;
  prop->tccDriver = 0;
  prop->asyncEngineCount = 2;
  prop->unifiedAddressing = 1;
  prop->memoryBusWidth = g.bus_bits;
  prop->l2CacheSize = static_cast<int>(g.l2_bytes);
  prop->persistingL2CacheMaxSize = static_cast<int>(g.l2_bytes * 3 / 4);
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->streamPrioritiesSupported = 1;
  prop->globalL1CacheSupported = 1;
  prop->localL1CacheSupported = 1;
  prop->sharedMemPerMultiprocessor = kSharedPerSm;
  prop->regsPerMultiprocessor = 65536;
  prop->managedMemory = 1;
  prop->isMultiGpuBoard = 0;
  prop->multiGpuBoardGroupID = 0;
  prop->hostNativeAtomicSupported = 0;
  prop->pageableMemoryAccess = 0;
  prop->concurrentManagedAccess = 1;
  prop->computePreemptionSupported = 1;
  prop->canUseHostPointerForRegisteredMem = 1;
  prop->cooperativeLaunch = 1;
  prop->sharedMemPerBlockOptin = kSharedOptin;
  prop->pageableMemoryAccessUsesHostPageTables = 0;
  prop->directManagedMemAccessFromHost = 0;
  prop->maxBlocksPerMultiProcessor = 32;
  prop->accessPolicyMaxWindowSize = 134213632;
  prop->reservedSharedMemPerBlock = kReservedSharedPerBlock;
  prop->hostRegisterSupported = 1;
  prop->sparseCudaArraySupported = 1;
  prop->hostRegisterReadOnlySupported = 1;
  prop->timelineSemaphoreInteropSupported = 1;
  prop->memoryPoolsSupported = 1;
  prop->gpuDirectRDMASupported = 0;
  prop->gpuDirectRDMAFlushWritesOptions = 0;
  prop->gpuDirectRDMAWritesOrdering = 0;
  prop->memoryPoolSupportedHandleTypes = 0;
  prop->deferredMappingCudaArraySupported = 1;
  prop->ipcEventSupported = 0;
  prop->clusterLaunch = g.cc_major >= 9 ? 1 : 0;
  prop->unifiedFunctionPointers = 0;
#if CUDART_VERSION >= 13000
  prop->deviceNumaConfig = 0;  // cudaDeviceNumaConfigNone
  prop->deviceNumaId = -1;
  prop->mpsEnabled = 0;
  prop->hostNumaId = -1;
  prop->gpuPciDeviceID = 0;
  prop->gpuPciSubsystemID = 0;
  prop->hostNumaMultinodeIpcSupported = 0;
#else
  prop->clockRate = g.sm_clock_khz;
  prop->memoryClockRate = g.mem_clock_khz;
  prop->computeMode = cudaComputeModeDefault;
  prop->kernelExecTimeoutEnabled = 0;
  prop->deviceOverlap = 1;
  prop->maxTexture1DLinear = 268435456;
  prop->cooperativeMultiDeviceLaunch = 0;
  prop->singleToDoublePrecisionPerfRatio = 2;
#endif
}

// The attributes cudaDeviceProp also holds, read from it so that the two can never disagree.
bool property_attribute(cudaDeviceAttr attr, const cudaDeviceProp& p, int* v) {
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrTotalConstantMemory: *v = static_cast<int>(p.totalConstMem); break;
    case cudaDevAttrWarpSize: *v = p.warpSize; break;
    case cudaDevAttrMaxPitch: *v = static_cast<int>(p.memPitch); break;
    case cudaDevAttrMaxRegistersPerBlock: *v = p.regsPerBlock; break;
    case cudaDevAttrTextureAlignment: *v = static_cast<int>(p.textureAlignment); break;
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrIntegrated: *v = p.integrated; break;
    case cudaDevAttrCanMapHostMemory: *v = p.canMapHostMemory; break;
    case cudaDevAttrMaxTexture1DWidth: *v = p.maxTexture1D; break;
    case cudaDevAttrMaxTexture2DWidth: *v = p.maxTexture2D[0]; break;
    case cudaDevAttrMaxTexture2DHeight: *v = p.maxTexture2D[1]; break;
    case cudaDevAttrMaxTexture3DWidth: *v = p.maxTexture3D[0]; break;
    case cudaDevAttrMaxTexture3DHeight: *v = p.maxTexture3D[1]; break;
    case cudaDevAttrMaxTexture3DDepth: *v = p.maxTexture3D[2]; break;
    case cudaDevAttrMaxTexture2DLayeredWidth: *v = p.maxTexture2DLayered[0]; break;
    case cudaDevAttrMaxTexture2DLayeredHeight: *v = p.maxTexture2DLayered[1]; break;
    case cudaDevAttrMaxTexture2DLayeredLayers: *v = p.maxTexture2DLayered[2]; break;
    case cudaDevAttrSurfaceAlignment: *v = static_cast<int>(p.surfaceAlignment); break;
    case cudaDevAttrConcurrentKernels: *v = p.concurrentKernels; break;
    case cudaDevAttrEccEnabled: *v = p.ECCEnabled; break;
    case cudaDevAttrPciBusId: *v = p.pciBusID; break;
    case cudaDevAttrPciDeviceId: *v = p.pciDeviceID; break;
    case cudaDevAttrTccDriver: *v = p.tccDriver; break;
    case cudaDevAttrGlobalMemoryBusWidth: *v = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrAsyncEngineCount: *v = p.asyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: *v = p.unifiedAddressing; break;
    case cudaDevAttrMaxTexture1DLayeredWidth: *v = p.maxTexture1DLayered[0]; break;
    case cudaDevAttrMaxTexture1DLayeredLayers: *v = p.maxTexture1DLayered[1]; break;
    case cudaDevAttrMaxTexture2DGatherWidth: *v = p.maxTexture2DGather[0]; break;
    case cudaDevAttrMaxTexture2DGatherHeight: *v = p.maxTexture2DGather[1]; break;
    case cudaDevAttrMaxTexture3DWidthAlt: *v = p.maxTexture3DAlt[0]; break;
    case cudaDevAttrMaxTexture3DHeightAlt: *v = p.maxTexture3DAlt[1]; break;
    case cudaDevAttrMaxTexture3DDepthAlt: *v = p.maxTexture3DAlt[2]; break;
    case cudaDevAttrPciDomainId: *v = p.pciDomainID; break;
    case cudaDevAttrTexturePitchAlignment: *v = static_cast<int>(p.texturePitchAlignment); break;
    case cudaDevAttrMaxTextureCubemapWidth: *v = p.maxTextureCubemap; break;
    case cudaDevAttrMaxTextureCubemapLayeredWidth: *v = p.maxTextureCubemapLayered[0]; break;
    case cudaDevAttrMaxTextureCubemapLayeredLayers: *v = p.maxTextureCubemapLayered[1]; break;
    case cudaDevAttrMaxSurface1DWidth: *v = p.maxSurface1D; break;
    case cudaDevAttrMaxSurface2DWidth: *v = p.maxSurface2D[0]; break;
    case cudaDevAttrMaxSurface2DHeight: *v = p.maxSurface2D[1]; break;
    case cudaDevAttrMaxSurface3DWidth: *v = p.maxSurface3D[0]; break;
    case cudaDevAttrMaxSurface3DHeight: *v = p.maxSurface3D[1]; break;
    case cudaDevAttrMaxSurface3DDepth: *v = p.maxSurface3D[2]; break;
    case cudaDevAttrMaxSurface1DLayeredWidth: *v = p.maxSurface1DLayered[0]; break;
    case cudaDevAttrMaxSurface1DLayeredLayers: *v = p.maxSurface1DLayered[1]; break;
    case cudaDevAttrMaxSurface2DLayeredWidth: *v = p.maxSurface2DLayered[0]; break;
    case cudaDevAttrMaxSurface2DLayeredHeight: *v = p.maxSurface2DLayered[1]; break;
    case cudaDevAttrMaxSurface2DLayeredLayers: *v = p.maxSurface2DLayered[2]; break;
    case cudaDevAttrMaxSurfaceCubemapWidth: *v = p.maxSurfaceCubemap; break;
    case cudaDevAttrMaxSurfaceCubemapLayeredWidth: *v = p.maxSurfaceCubemapLayered[0]; break;
    case cudaDevAttrMaxSurfaceCubemapLayeredLayers: *v = p.maxSurfaceCubemapLayered[1]; break;
    case cudaDevAttrMaxTexture2DLinearWidth: *v = p.maxTexture2DLinear[0]; break;
    case cudaDevAttrMaxTexture2DLinearHeight: *v = p.maxTexture2DLinear[1]; break;
    case cudaDevAttrMaxTexture2DLinearPitch: *v = p.maxTexture2DLinear[2]; break;
    case cudaDevAttrMaxTexture2DMipmappedWidth: *v = p.maxTexture2DMipmap[0]; break;
    case cudaDevAttrMaxTexture2DMipmappedHeight: *v = p.maxTexture2DMipmap[1]; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxTexture1DMipmappedWidth: *v = p.maxTexture1DMipmap; break;
    case cudaDevAttrStreamPrioritiesSupported: *v = p.streamPrioritiesSupported; break;
    case cudaDevAttrGlobalL1CacheSupported: *v = p.globalL1CacheSupported; break;
    case cudaDevAttrLocalL1CacheSupported: *v = p.localL1CacheSupported; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = static_cast<int>(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *v = p.regsPerMultiprocessor; break;
    case cudaDevAttrManagedMemory: *v = p.managedMemory; break;
    case cudaDevAttrIsMultiGpuBoard: *v = p.isMultiGpuBoard; break;
    case cudaDevAttrMultiGpuBoardGroupID: *v = p.multiGpuBoardGroupID; break;
    case cudaDevAttrHostNativeAtomicSupported: *v = p.hostNativeAtomicSupported; break;
    case cudaDevAttrPageableMemoryAccess: *v = p.pageableMemoryAccess; break;
    case cudaDevAttrConcurrentManagedAccess: *v = p.concurrentManagedAccess; break;
    case cudaDevAttrComputePreemptionSupported: *v = p.computePreemptionSupported; break;
    case cudaDevAttrCanUseHostPointerForRegisteredMem: *v = p.canUseHostPointerForRegisteredMem; break;
    case cudaDevAttrCooperativeLaunch: *v = p.cooperativeLaunch; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = static_cast<int>(p.sharedMemPerBlockOptin); break;
    case cudaDevAttrPageableMemoryAccessUsesHostPageTables: *v = p.pageableMemoryAccessUsesHostPageTables; break;
    case cudaDevAttrDirectManagedMemAccessFromHost: *v = p.directManagedMemAccessFromHost; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *v = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrMaxPersistingL2CacheSize: *v = p.persistingL2CacheMaxSize; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: *v = p.accessPolicyMaxWindowSize; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *v = static_cast<int>(p.reservedSharedMemPerBlock); break;
    case cudaDevAttrSparseCudaArraySupported: *v = p.sparseCudaArraySupported; break;
    case cudaDevAttrHostRegisterReadOnlySupported: *v = p.hostRegisterReadOnlySupported; break;
    case cudaDevAttrTimelineSemaphoreInteropSupported: *v = p.timelineSemaphoreInteropSupported; break;
    case cudaDevAttrMemoryPoolsSupported: *v = p.memoryPoolsSupported; break;
    case cudaDevAttrGPUDirectRDMASupported: *v = p.gpuDirectRDMASupported; break;
    case cudaDevAttrGPUDirectRDMAFlushWritesOptions: *v = static_cast<int>(p.gpuDirectRDMAFlushWritesOptions); break;
    case cudaDevAttrGPUDirectRDMAWritesOrdering: *v = p.gpuDirectRDMAWritesOrdering; break;
    case cudaDevAttrMemoryPoolSupportedHandleTypes: *v = static_cast<int>(p.memoryPoolSupportedHandleTypes); break;
    case cudaDevAttrClusterLaunch: *v = p.clusterLaunch; break;
    case cudaDevAttrDeferredMappingCudaArraySupported: *v = p.deferredMappingCudaArraySupported; break;
    case cudaDevAttrIpcEventSupport: *v = p.ipcEventSupported; break;
    case cudaDevAttrHostRegisterSupported: *v = p.hostRegisterSupported; break;
    default: return false;
  }
  return true;
}

// The attributes cudaDeviceProp does not hold (in CUDA 13: the clocks and the compute mode moved out of it).
bool other_attribute(cudaDeviceAttr attr, int* v) {
  const auto& g = pretend_gpu();
  switch (attr) {
    case cudaDevAttrClockRate: *v = g.sm_clock_khz; break;
    case cudaDevAttrMemoryClockRate: *v = g.mem_clock_khz; break;
    case cudaDevAttrComputeMode: *v = cudaComputeModeDefault; break;  // helper_cuda.h's findCudaDevice asks
    case cudaDevAttrGpuOverlap: *v = 1; break;
    case cudaDevAttrKernelExecTimeout: *v = 0; break;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: *v = 2; break;
    case cudaDevAttrCanFlushRemoteWrites: *v = 0; break;
    case cudaDevAttrMemSyncDomainCount: *v = g.cc_major >= 9 ? 4 : 1; break;
    case cudaDevAttrNumaConfig: *v = 0; break;
    case cudaDevAttrNumaId: *v = -1; break;
    case cudaDevAttrMpsEnabled: *v = 0; break;
    case cudaDevAttrHostNumaId: *v = -1; break;
#if CUDART_VERSION >= 13000  // not in CUDA 12.4's enum (the oldest toolkit rooflab supports)
    case cudaDevAttrD3D12CigSupported: *v = 0; break;
    case cudaDevAttrVulkanCigSupported: *v = 0; break;
    case cudaDevAttrGpuPciDeviceId: *v = 0; break;
    case cudaDevAttrGpuPciSubsystemId: *v = 0; break;
    case cudaDevAttrHostNumaMemoryPoolsSupported: *v = 0; break;
    case cudaDevAttrHostNumaMultinodeIpcSupported: *v = 0; break;
    case cudaDevAttrHostMemoryPoolsSupported: *v = 0; break;
    case cudaDevAttrOnlyPartialHostNativeAtomicSupported: *v = 0; break;
#else
    case cudaDevAttrCooperativeMultiDeviceLaunch: *v = 0; break;
#endif
    case cudaDevAttrMaxTexture1DLinearWidth: *v = 268435456; break;  // a field of cudaDeviceProp before CUDA 13
    default: return false;
  }
  return true;
}

}  // namespace

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return rooflab::emu::record_error(cudaErrorInvalidDevice);
  if (prop == nullptr) return rooflab::emu::record_error(cudaErrorInvalidValue);
  fill_properties(prop);
  return cudaSuccess;
}

// Every attribute the toolkit names, for the pretend GPU; the reserved numbers are cudaErrorInvalidValue,
// as on a GPU.
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return rooflab::emu::record_error(cudaErrorInvalidDevice);
  if (value == nullptr) return rooflab::emu::record_error(cudaErrorInvalidValue);
  cudaDeviceProp prop;
  fill_properties(&prop);
  if (property_attribute(attr, prop, value) || other_attribute(attr, value)) return cudaSuccess;
  std::fprintf(stderr, "rooflab emu: cudaDeviceGetAttribute(%d): no such attribute (a reserved number)\n",
               static_cast<int>(attr));
  return rooflab::emu::record_error(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
  if (device != 0) return rooflab::emu::record_error(cudaErrorInvalidDevice);
  if (bus_id == nullptr || len <= 0) return rooflab::emu::record_error(cudaErrorInvalidValue);
  std::snprintf(bus_id, static_cast<std::size_t>(len), "0000:00:00.0");
  return cudaSuccess;
}
