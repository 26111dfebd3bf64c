// A launcher as nvcc's host pass compiles it when the file tells the two compilers apart by a type: it creates a
// stream of its own (cudaStreamCreateWithFlags) and asks the harness how large the problem is, where the CPU
// backend's build of the same file does neither. The object test_symbols.cpp hands to the symbol rule as nvcc's
// object of a kernels file; declared here, as no CUDA header is needed to reference them.
using Stream = struct Opaque*;
extern "C" int cudaStreamCreateWithFlags(Stream* stream, unsigned int flags);
namespace rooflab {
double perf_scale();
}

extern "C" int rooflab_fixture_launches_on_its_own_stream() {
  static Stream side = nullptr;
  if (side == nullptr && cudaStreamCreateWithFlags(&side, 1) != 0) return -1;
  return rooflab::perf_scale() > 0 ? 0 : 1;
}
