# Project-wide options, warnings and toolchain detection.
include_guard(GLOBAL)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

# ---- where the student files come from ----
# labs/ (the stubs, default), solutions/, or a submission directory laid out like labs/.
set(ROOFLAB_STUDENT_DIR "${PROJECT_SOURCE_DIR}/labs" CACHE PATH
    "Directory holding the student files (labs/, solutions/ or a submission laid out like labs/)")
option(ROOFLAB_SELFTEST "Also build the stub and known-bad variants of every lab and test the grader on them" OFF)
option(ROOFLAB_WERROR "Treat warnings as errors (CI)" OFF)
option(ROOFLAB_SYNC_LAUNCH_CHECK "Synchronize after every kernel launch to report errors at their launch" OFF)
# Instructors' hidden tests (grade --hidden-tests DIR): DIR/<NN>/rubric.json lists them with kind and points,
# DIR/<NN>/<kind>*.cpp hold them (kind: analytic, correctness, perf, static or race, as the lab's tests/ files
# are named); they are built into lab NN's binaries beside the public tests and graded like them.
set(ROOFLAB_HIDDEN_TESTS "" CACHE PATH "Hidden tests: DIR/<lab id>/rubric.json and DIR/<lab id>/<kind>*.cpp")
# A build of some labs only (ids, "04;09"): the others register nothing. Empty: every lab in labs/CMakeLists.txt.
set(ROOFLAB_LABS "" CACHE STRING "Lab ids to build (empty: all)")
set(ROOFLAB_STATIC_ARCHS "80;90" CACHE STRING
    "Architectures whose PTX and resource report are captured for the static tests")

# ---- dependencies (Debian packages; nothing is downloaded) ----
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(GTest REQUIRED)
find_package(Threads REQUIRED)

# ---- coverage of the student's code (GCC's gcov): the labs' coverage binaries ----
# ROOFLAB_GCOV: the gcov that reads what this build's GCC writes (the same major version: gcov refuses another
# version's notes). Empty with another compiler or without gcov: no coverage binaries, no coverage hint, and
# the forward emu run keeps the kernel-instance check (rooflab/detail/coverage.hpp).
set(ROOFLAB_GCOV "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  string(REGEX MATCH "^[0-9]+" _rooflab_gcc_major "${CMAKE_CXX_COMPILER_VERSION}")
  get_filename_component(_rooflab_cxx_dir "${CMAKE_CXX_COMPILER}" DIRECTORY)
  find_program(ROOFLAB_GCOV_PROGRAM NAMES gcov-${_rooflab_gcc_major} gcov HINTS "${_rooflab_cxx_dir}")
  if(ROOFLAB_GCOV_PROGRAM)
    execute_process(COMMAND "${ROOFLAB_GCOV_PROGRAM}" --version OUTPUT_VARIABLE _rooflab_gcov_version
                    ERROR_QUIET RESULT_VARIABLE _rooflab_gcov_rc)
    if(_rooflab_gcov_rc EQUAL 0 AND _rooflab_gcov_version MATCHES " ${_rooflab_gcc_major}\\.[0-9]")
      set(ROOFLAB_GCOV "${ROOFLAB_GCOV_PROGRAM}")
    endif()
  endif()
endif()

# ---- CUDA is optional ----
include(CheckLanguage)
check_language(CUDA)
set(ROOFLAB_HAVE_CUDA OFF)
if(CMAKE_CUDA_COMPILER)
  # Never "native" by default: it fails on machines without a GPU. The grade path passes the
  # architecture of the GPU that is present (see the rooflab launcher).
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90")
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc's C++20 flag (nvcc has it since 12.0): tell it, then ask for C++20.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
  set(ROOFLAB_HAVE_CUDA ON)
endif()

# ---- warnings, host and device ----
function(rooflab_warnings target)
  set(host_flags -Wall -Wextra -Wpedantic -Wshadow -Wno-unknown-pragmas)
  if(ROOFLAB_WERROR)
    list(APPEND host_flags -Werror)
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${host_flags}>)
  if(ROOFLAB_HAVE_CUDA)
    set(cuda_flags -Xcompiler=-Wall,-Wextra --Werror=cross-execution-space-call)
    if(ROOFLAB_WERROR)
      list(APPEND cuda_flags -Werror=all-warnings)
    endif()
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${cuda_flags}>)
  endif()
endfunction()

# rooflab_light_optimization(<target>...): host C++ that nothing times or runs hot (the grader; the labs'
# test sources, whose timed work is the kernels; the known-bad selftest cases' kernels, which prove a check
# fires whatever their speed; the tools that parse a listing once, inspect and the seed audit) is compiled at -O1 where the build asks for -O2 or -O3: 30-50% less compile
# time a file (a rewritten kernel file 7.0 s -> 3.3 s, the grader's runner.cpp 12.5 s -> 8.4 s), several
# minutes of CI's two cores in all. A build that asks for less (the release test's -O0) keeps it. The
# harness, the CPU backend and the student's own kernels keep the build's level. CUDA sources are left alone.
function(rooflab_light_optimization)
  set(configs "")
  foreach(config Release RelWithDebInfo)
    string(TOUPPER "${config}" upper)
    if(CMAKE_CXX_FLAGS_${upper} MATCHES "-O[23]")
      list(APPEND configs ${config})
    endif()
  endforeach()
  if(NOT configs)
    return()
  endif()
  string(REPLACE ";" "," configs "${configs}")
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:${configs}>>:-O1>)
  endforeach()
endfunction()

# rooflab_unity(<target>...): the target's C++ files compiled eight to a translation unit (CMake's unity
# build). The harness, the grader and their unit tests are bound by template instantiation (fmt, nlohmann-json,
# CLI11, GoogleTest), not by their own code: eight files together instantiate each template once where eight
# files apart did it eight times. Measured on the grader at -O1: four of its files 110 s one by one, 42 s as
# one unit. A student's first grade builds the grader and the harness, and so does CI, twice (its own tree and
# the release copy's). ROOFLAB_UNITY=OFF compiles file by file (a developer editing one file then recompiles
# that file alone). The files of one target must then not define the same name at file scope (an anonymous
# namespace's helpers included): shared helpers live in one file and a header.
option(ROOFLAB_UNITY "Compile the harness, the grader and their tests eight files to a unit" ON)
function(rooflab_unity)
  if(NOT ROOFLAB_UNITY)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endforeach()
endfunction()

function(rooflab_print_summary)
  if(ROOFLAB_HAVE_CUDA)
    message(STATUS "rooflab: CUDA ${CMAKE_CUDA_COMPILER_VERSION}, GPU code for sm_${CMAKE_CUDA_ARCHITECTURES}; "
                   "student files from ${ROOFLAB_STUDENT_DIR}")
  else()
    message(STATUS "rooflab: no CUDA compiler found: left out the GPU and perf tests, calibration, the static "
                   "(PTX) tests and the CPU backend; analytic tests and host code still build")
  endif()
endfunction()
