// Device selection and queries in the style of the CUDA samples' helper header: pick the fastest device
// whose compute mode allows work, print its figures, bracket the work with profiler markers, size a launch
// by occupancy. Every attribute the toolkit names must answer, and agree with cudaGetDeviceProperties;
// the occupancy must be what the properties imply (the host reference). Exit status 0 when all agree.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_), \
                   cudaGetErrorString(e_));                                                                \
      std::exit(2);                                                                                        \
    }                                                                                                      \
  } while (0)

static int failures = 0;

static void expect_equal(const char* what, long long got, long long want) {
  if (got != want) {
    std::printf("%s is %lld, want %lld\n", what, got, want);
    ++failures;
  }
}

// FP32 cores per SM by compute capability, as device pickers estimate throughput (0x80: sm_80).
static int cores_per_sm(int major, int minor) {
  const int cc = (major << 4) + minor;
  switch (cc) {
    case 0x70: case 0x72: case 0x75: case 0x80: return 64;
    case 0x86: case 0x87: case 0x89: return 128;
    case 0x90: case 0xa0: return 128;
    default: return 64;
  }
}

// The usable device with the highest SMs x cores x clock; -1 when every device prohibits work.
static int find_best_device() {
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  int best = -1;
  long long best_score = -1;
  for (int dev = 0; dev < count; ++dev) {
    int mode = 0, major = 0, minor = 0, sms = 0, clock_khz = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, dev));
    if (mode == cudaComputeModeProhibited) continue;
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
    const long long score = 1LL * sms * cores_per_sm(major, minor) * clock_khz;
    if (score > best_score) {
      best_score = score;
      best = dev;
    }
  }
  return best;
}

// Each attribute cudaDeviceProp mirrors, against the property.
static void check_attributes_against_properties(int dev, const cudaDeviceProp& p) {
  struct Pair {
    cudaDeviceAttr attr;
    const char* name;
    long long want;
  };
  const Pair pairs[] = {
      {cudaDevAttrMaxThreadsPerBlock, "MaxThreadsPerBlock", p.maxThreadsPerBlock},
      {cudaDevAttrMaxBlockDimZ, "MaxBlockDimZ", p.maxThreadsDim[2]},
      {cudaDevAttrMaxGridDimY, "MaxGridDimY", p.maxGridSize[1]},
      {cudaDevAttrMaxSharedMemoryPerBlock, "MaxSharedMemoryPerBlock", static_cast<long long>(p.sharedMemPerBlock)},
      {cudaDevAttrWarpSize, "WarpSize", p.warpSize},
      {cudaDevAttrMultiProcessorCount, "MultiProcessorCount", p.multiProcessorCount},
      {cudaDevAttrComputeCapabilityMajor, "ComputeCapabilityMajor", p.major},
      {cudaDevAttrComputeCapabilityMinor, "ComputeCapabilityMinor", p.minor},
      {cudaDevAttrL2CacheSize, "L2CacheSize", p.l2CacheSize},
      {cudaDevAttrGlobalMemoryBusWidth, "GlobalMemoryBusWidth", p.memoryBusWidth},
      {cudaDevAttrMaxThreadsPerMultiProcessor, "MaxThreadsPerMultiProcessor", p.maxThreadsPerMultiProcessor},
      {cudaDevAttrMaxBlocksPerMultiprocessor, "MaxBlocksPerMultiprocessor", p.maxBlocksPerMultiProcessor},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, "MaxSharedMemoryPerBlockOptin",
       static_cast<long long>(p.sharedMemPerBlockOptin)},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, "MaxSharedMemoryPerMultiprocessor",
       static_cast<long long>(p.sharedMemPerMultiprocessor)},
      {cudaDevAttrReservedSharedMemoryPerBlock, "ReservedSharedMemoryPerBlock",
       static_cast<long long>(p.reservedSharedMemPerBlock)},
      {cudaDevAttrMaxRegistersPerMultiprocessor, "MaxRegistersPerMultiprocessor", p.regsPerMultiprocessor},
      {cudaDevAttrCooperativeLaunch, "CooperativeLaunch", p.cooperativeLaunch},
      {cudaDevAttrManagedMemory, "ManagedMemory", p.managedMemory},
      {cudaDevAttrMaxTexture2DWidth, "MaxTexture2DWidth", p.maxTexture2D[0]},
      {cudaDevAttrMaxSurface3DDepth, "MaxSurface3DDepth", p.maxSurface3D[2]},
  };
  for (const Pair& pair : pairs) {
    int value = -12345;
    CHECK_CUDA(cudaDeviceGetAttribute(&value, pair.attr, dev));
    expect_equal(pair.name, value, pair.want);
  }
}

// Every number from the first attribute to the last the toolkit names: a named one answers, a reserved gap
// may be refused. Counted, so that a backend answering none is caught.
static void check_every_attribute(int dev) {
  int answered = 0;
  // 147: cudaDevAttrOnlyPartialHostNativeAtomicSupported, CUDA 13's last (a number: CUDA 12 lacks the name).
  for (int a = cudaDevAttrMaxThreadsPerBlock; a <= 147; ++a) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(a), dev) == cudaSuccess) ++answered;
  }
  (void)cudaGetLastError();  // the reserved numbers' errors
  std::printf("attributes answered: %d\n", answered);
  if (answered < 124) {
    std::printf("only %d attributes answered, want all that CUDA 13 names (124)\n", answered);
    ++failures;
  }
}

__global__ void fill_kernel(float* x, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

// Occupancy against what the properties imply: whole warps of threads, the block limit, shared memory
// with the driver's reserve per block.
static void check_occupancy(const cudaDeviceProp& p) {
  const int block = 192;
  const size_t smem = 20000;
  int blocks = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill_kernel, block, smem));
  const int warps = (block + p.warpSize - 1) / p.warpSize;
  int want = p.maxThreadsPerMultiProcessor / (warps * p.warpSize);
  if (p.maxBlocksPerMultiProcessor < want) want = p.maxBlocksPerMultiProcessor;
  const int by_smem = static_cast<int>(p.sharedMemPerMultiprocessor / (smem + p.reservedSharedMemPerBlock));
  if (by_smem < want) want = by_smem;
  expect_equal("resident blocks of 192 threads with 20000 B shared", blocks, want);

  int min_grid = 0, best_block = 0;
  CHECK_CUDA(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best_block, fill_kernel, 0, 0));
  std::printf("occupancy: %d blocks per SM; suggested block %d, grid %d\n", blocks, best_block, min_grid);
  if (best_block <= 0 || best_block > p.maxThreadsPerBlock || best_block % p.warpSize != 0 ||
      min_grid < p.multiProcessorCount) {
    std::printf("cudaOccupancyMaxPotentialBlockSize suggests block %d, grid %d\n", best_block, min_grid);
    ++failures;
  }
}

static void check_function_attributes() {
  cudaFuncAttributes attr{};
  CHECK_CUDA(cudaFuncGetAttributes(&attr, fill_kernel));
  if (attr.maxThreadsPerBlock <= 0 || attr.maxDynamicSharedSizeBytes <= 0) {
    std::printf("cudaFuncGetAttributes: maxThreadsPerBlock %d, maxDynamicSharedSizeBytes %d\n",
                attr.maxThreadsPerBlock, attr.maxDynamicSharedSizeBytes);
    ++failures;
  }
}

int main() {
  const int dev = find_best_device();
  if (dev < 0) {
    std::printf("no device allows compute work\n");
    return 1;
  }
  CHECK_CUDA(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  std::printf("device %d: \"%s\", compute capability %d.%d, %d SMs, %.1f GiB; driver %d, runtime %d\n", dev, prop.name,
              prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, driver, runtime);
  if (driver < runtime || runtime <= 0) {
    std::printf("driver version %d is older than runtime version %d\n", driver, runtime);
    ++failures;
  }
  check_attributes_against_properties(dev, prop);
  check_every_attribute(dev);
  check_occupancy(prop);
  check_function_attributes();

  CHECK_CUDA(cudaProfilerStart());
  const int n = 1000;
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
  fill_kernel<<<(n + 255) / 256, 256>>>(x, n, 2.5f);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaProfilerStop());
  float back[n];
  CHECK_CUDA(cudaMemcpy(back, x, sizeof back, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (back[i] != 2.5f) {
      std::printf("x[%d] is %g, want 2.5\n", i, back[i]);
      ++failures;
      break;
    }
  }
  CHECK_CUDA(cudaFree(x));
  std::printf("device queries: %s\n", failures == 0 ? "consistent" : "INCONSISTENT");
  return failures == 0 ? 0 : 1;
}
