# The memory-traffic model (rooflab/emu/traffic.hpp, docs/cpu-mode.md "Memory traffic"): the recorder and
# the hooks that answer the compiler's ThreadSanitizer instrumentation of .cu files built with
# rooflab_emu_add_cu(<target> TRAFFIC ...). Its own library, so that no other binary gets the hooks (they
# define libtsan's entry points) and the race build keeps the real ThreadSanitizer.
add_library(rooflab_emu_traffic STATIC src/traffic.cpp src/traffic_hooks.cpp)
target_link_libraries(rooflab_emu_traffic PUBLIC rooflab_emu)
rooflab_warnings(rooflab_emu_traffic)
add_library(rooflab::emu_traffic ALIAS rooflab_emu_traffic)

if(NOT ROOFLAB_EMU_OWN_TESTS)
  return()  # a student copy: no self-tests, no benchmark (common/emu/CMakeLists.txt)
endif()

# The model's self-tests: closed-form access patterns (tests/test_traffic.cpp).
if(BUILD_TESTING)
  add_executable(rooflab_emu_traffic_tests tests/test_traffic.cpp)
  rooflab_emu_add_cu(rooflab_emu_traffic_tests TRAFFIC tests/traffic_kernels.cu)
  target_include_directories(rooflab_emu_traffic_tests PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/tests")
  target_link_libraries(rooflab_emu_traffic_tests PRIVATE GTest::gtest_main)
  rooflab_warnings(rooflab_emu_traffic_tests)
  add_test(NAME emu.traffic COMMAND rooflab_emu_traffic_tests)
  set_tests_properties(emu.traffic PROPERTIES LABELS "emu-selftest" TIMEOUT 120 ENVIRONMENT "ROOFLAB_EMU_QUIET=1")
endif()

# The model's cost (a benchmark, built only when asked; figures in docs/cpu-mode.md): the same kernels in a
# plain build and in a TRAFFIC build.
add_executable(rooflab_emu_traffic_bench EXCLUDE_FROM_ALL bench/traffic_bench.cpp)
rooflab_emu_add_cu(rooflab_emu_traffic_bench TRAFFIC tests/kernels.cu)
add_executable(rooflab_emu_traffic_bench_plain EXCLUDE_FROM_ALL bench/traffic_bench.cpp)
rooflab_emu_add_cu(rooflab_emu_traffic_bench_plain tests/kernels.cu)
target_link_libraries(rooflab_emu_traffic_bench_plain PRIVATE rooflab::emu_traffic)
foreach(bench rooflab_emu_traffic_bench rooflab_emu_traffic_bench_plain)
  rooflab_warnings(${bench})
endforeach()
