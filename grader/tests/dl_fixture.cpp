// A student file that reaches cuBLAS by name at run time, with no cuBLAS name among its symbols: the object
// test_symbols.cpp hands to the grader's symbol check, as it would find it in a lab's build folder.
#include <dlfcn.h>

extern "C" int rooflab_fixture_reaches_cublas() {
  using Create = int (*)(void**);
  void* handle = nullptr;
  const auto create = reinterpret_cast<Create>(dlvsym(RTLD_DEFAULT, "cublasCreate_v2", "libcublas.so.13"));
  return create != nullptr ? create(&handle) : -1;
}
