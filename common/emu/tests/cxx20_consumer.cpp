// Built with CXX_STANDARD 17 and linked to rooflab::emu (tests/CMakeLists.txt): it compiles only if the
// backend passes C++20 on to its users, as a project that links it without setting the standard needs.
#include <rooflab/emu/runtime.hpp>

static_assert(__cplusplus >= 202002L, "rooflab::emu must pass C++20 on to the targets that link it");

int emu_cxx20_consumer(int* x) { return std::atomic_ref<int>(*x).fetch_add(1); }
