# The top CMakeLists.txt of grader.new_lab's scratch course (grader/tests/new_lab_e2e.sh copies it over the
# course's own once it has checked what new-lab changed): it builds the course's labs against the harness this
# build already compiled, where the course's own file would compile common/ and the CPU backend again (about
# 150 s of the 2 CI cores) for a check that is about one lab. The course's cmake/ registers the labs exactly as
# a full build does; only the harness libraries are imported (build/<preset>/new-lab/harness.cmake, written by
# grader/CMakeLists.txt, passed with -C, names them and this build's toolchain).
#   cmake -S COURSE -B DIR -C BUILD/new-lab/harness.cmake -DROOFLAB_LABS=NN
cmake_minimum_required(VERSION 3.25)
project(rooflab_new_lab_check LANGUAGES CXX)

if(NOT ROOFLAB_HARNESS_TARGETS)
  message(FATAL_ERROR "give -C <build>/new-lab/harness.cmake (grader.new_lab's initial cache)")
endif()
list(APPEND CMAKE_MODULE_PATH "${PROJECT_SOURCE_DIR}/cmake")
include(RooflabOptions)
include(RooflabEmu)
include(RooflabLab)

# The harness, as the full build made it; the labs link it by the aliases common/ gives it.
find_package(Boost REQUIRED COMPONENTS iostreams filesystem system context)
if(ROOFLAB_HAVE_CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()
include("${ROOFLAB_HARNESS_TARGETS}")
foreach(name common test_main inspect cuda cuda_dryrun emu emu_cublas emu_race emu_race_cublas emu_traffic)
  if(TARGET rooflab_${name})
    add_library(rooflab::${name} ALIAS rooflab_${name})
  endif()
endforeach()

add_subdirectory(labs)
rooflab_write_lab_manifest()
