# The harness (common/: its libraries and the CPU backend's tools, the rewriter and the branch comparison),
# exported by every build and importable by another: a tree that builds labs only (ROOFLAB_HARNESS_TARGETS set)
# links the harness a full build already compiled instead of compiling common/ again (about 170 seconds of 2 cores
# each time).
#
# Who imports: the trees CI's end-to-end tests grade in (the grader passes ROOFLAB_HARNESS_TARGETS when the
# environment variable ROOFLAB_HARNESS names a build: grader/build.cpp) and grader.new_lab's build of one
# scaffolded lab (with <build>/harness/harness.cmake as its initial cache). Both compile the labs of the same
# sources the harness came from; an instructor's grade compiles everything itself.
include_guard(GLOBAL)

# The targets a lab links, the library and tool targets of common/ (called at the end of common/CMakeLists.txt).
function(rooflab_export_harness)
  set(harness rooflab_common rooflab_test_main rooflab_seed_audit_hooks)
  foreach(t rooflab_inspect rooflab_cuda rooflab_cuda_dryrun rooflab_emu rooflab_emu_cublas rooflab_emu_rewrite
            rooflab_emu_branches rooflab_emu_race rooflab_emu_race_cublas rooflab_emu_traffic)
    if(TARGET ${t})
      list(APPEND harness ${t})
    endif()
  endforeach()
  export(TARGETS ${harness} FILE "${CMAKE_BINARY_DIR}/harness/targets.cmake")
  # An initial cache (-C) for a build of labs outside this tree: the targets and this build's toolchain.
  file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/harness/harness.cmake" @ONLY CONTENT [[
# The initial cache of a build of labs against this tree's harness (cmake/RooflabHarness.cmake).
set(ROOFLAB_HARNESS_TARGETS "@CMAKE_BINARY_DIR@/harness/targets.cmake" CACHE FILEPATH "")
set(CMAKE_BUILD_TYPE "@CMAKE_BUILD_TYPE@" CACHE STRING "")
set(CMAKE_CXX_COMPILER "@CMAKE_CXX_COMPILER@" CACHE FILEPATH "")
set(CMAKE_CUDA_COMPILER "@CMAKE_CUDA_COMPILER@" CACHE FILEPATH "")
set(CMAKE_CUDA_ARCHITECTURES "@CMAKE_CUDA_ARCHITECTURES@" CACHE STRING "")
set(ROOFLAB_STATIC_ARCHS "@ROOFLAB_STATIC_ARCHS@" CACHE STRING "")
set(ROOFLAB_WERROR "@ROOFLAB_WERROR@" CACHE BOOL "")
]])
endfunction()

# In place of add_subdirectory(common): the exported targets under the names common/ gives them, and what
# common/emu/CMakeLists.txt tells rooflab_emu_add_cu.
macro(rooflab_import_harness)
  if(NOT EXISTS "${ROOFLAB_HARNESS_TARGETS}")
    message(FATAL_ERROR "ROOFLAB_HARNESS_TARGETS: no file ${ROOFLAB_HARNESS_TARGETS} (a build's harness/targets.cmake)")
  endif()
  find_package(Boost REQUIRED COMPONENTS iostreams filesystem system context)  # (CUDA: RooflabOptions found it)
  include("${ROOFLAB_HARNESS_TARGETS}")
  # Each library under the name common/ gives it (rooflab_X as rooflab::X), from what the export holds: the
  # one list of the harness is rooflab_export_harness's.
  get_directory_property(_rooflab_imported IMPORTED_TARGETS)
  foreach(target IN LISTS _rooflab_imported)
    get_target_property(_rooflab_type ${target} TYPE)
    if(target MATCHES "^rooflab_(.+)$" AND NOT _rooflab_type STREQUAL "EXECUTABLE")
      add_library(rooflab::${CMAKE_MATCH_1} ALIAS ${target})
    endif()
  endforeach()
  if(TARGET rooflab_emu)
    # The backend's own directory, where the harness was built from: its cuda_include/ is the first include
    # directory it gives its users (common/emu/CMakeLists.txt).
    get_target_property(_rooflab_emu_includes rooflab_emu INTERFACE_INCLUDE_DIRECTORIES)
    list(GET _rooflab_emu_includes 0 _rooflab_emu_cuda_include)
    get_filename_component(_rooflab_emu_dir "${_rooflab_emu_cuda_include}" DIRECTORY)
    rooflab_emu_paths("${_rooflab_emu_dir}")
  endif()
  message(STATUS "rooflab: the harness is imported from ${ROOFLAB_HARNESS_TARGETS}, not built here")
endmacro()
