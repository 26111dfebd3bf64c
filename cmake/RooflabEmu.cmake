# rooflab_emu_add_cu(<target> [RACE] [TRAFFIC] [COVERAGE] <file.cu>...): compile .cu files with the host
# compiler for the CPU backend; RACE links the ThreadSanitizer build of the backend instead (race mode,
# docs/cpu-mode.md).
# TRAFFIC compiles them with the compiler's ThreadSanitizer instrumentation answered by the traffic model's
# hooks (rooflab::emu_traffic, not libtsan), so the binary can record the kernels' global-memory accesses
# (rooflab/emu/traffic.hpp); line tables name the access sites; no auto-vectorization and no scalar
# replacement of aggregates, so that each access is one a CUDA thread makes (a float4 stays one 16-byte access).
# COVERAGE compiles them with gcov's counters at -O0 (the labs' coverage binaries, rooflab/detail/coverage.hpp;
# the binary that links them links with --coverage too).
# Either way the target gets the backend's cuBLAS and cuBLASLt subsets and its <cooperative_groups.h>.
#
# Each .cu becomes a generated wrapper .cpp: the backend's prelude (it must precede every CUDA header), then
# the .cu's text as rewritten by rooflab_emu_rewrite (common/emu/rewrite): `<<<>>>` launches, __shared__
# declarations and pointer reinterpret_casts become calls of the backend, every line kept where it was and a
# `#line` directive naming the .cu, so compiler messages and the backend's reports name the user's file and
# line. The project-local headers the .cu includes (quoted includes, and the target's include directories
# outside the system, the toolkit and the backend) are rewritten the same way when they need it, into
# emu/<target>/<stem>-<tag>.h/ beside the wrapper, each starting with `#line 1 "its/path.cuh"`. A depfile lists
# every header read, so a header edit rewrites and recompiles only the .cu files that include it. A
# construct the rewriter cannot parse fails the build with file:line.
#
# The wrappers are compiled in the target's CUDA_STANDARD (CMAKE_CUDA_STANDARD) when it has one, else its
# CXX_STANDARD; C++17 at least. The target exports its symbols so the backend can name kernels in its
# reports (dladdr).
include_guard(GLOBAL)

# The backend's include paths (ROOFLAB_EMU_CUDA_INCLUDE) and the headers the rewriter never rewrites
# (ROOFLAB_EMU_SKIP_INCLUDES), from the backend's source directory (common/emu): set by the backend's build
# and by a build that imports it (cmake/RooflabHarness.cmake).
macro(rooflab_emu_paths emu_dir)
  # cuda_include/ holds the backend's own versions of toolkit headers that need nvcc (<cooperative_groups.h>):
  # it comes before the toolkit's include directory (rooflab_emu_add_cu also puts it first on each target).
  set(ROOFLAB_EMU_CUDA_INCLUDE "${emu_dir}/cuda_include" CACHE INTERNAL "")
  # Headers the rewriter never rewrites: the backend's, the toolkit's, the system's and rooflab's own harness
  # headers (their nvcc branches launch kernels the CPU build never compiles). (The system's are the
  # compiler's own directories and /usr/include, not all of /usr or /opt: a repository cloned under /opt is
  # the user's.)
  # CCCL (cuda::std, <cuda/...>): CUDA 13 keeps it in include/cccl, which nvcc adds by itself; CUDA 12 has it
  # in include/ itself. Kept in the cache, as the paths above: the toolkit's include directories are set only
  # in the directories that found the toolkit, and a user's project calls rooflab_emu_add_cu from its own.
  set(_rooflab_cccl "")
  foreach(_rooflab_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    if(IS_DIRECTORY "${_rooflab_dir}/cccl")
      list(APPEND _rooflab_cccl "${_rooflab_dir}/cccl")
    endif()
  endforeach()
  set(ROOFLAB_EMU_CCCL_INCLUDE "${_rooflab_cccl}" CACHE INTERNAL "")
  get_filename_component(_rooflab_common_dir "${emu_dir}" DIRECTORY)
  set(ROOFLAB_EMU_SKIP_INCLUDES "${ROOFLAB_EMU_CUDA_INCLUDE}" "${emu_dir}/include"
      ${CUDAToolkit_INCLUDE_DIRS} "${CUDAToolkit_LIBRARY_ROOT}" "${_rooflab_common_dir}/include"
      ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES} /usr/include /usr/local/include CACHE INTERNAL "")
endmacro()

# The compile options of a wrapper of the given flavour (plain, race or traffic) beyond its target's: set in
# `var`. The precompiled prelude of that flavour is compiled with the same ones (rooflab_emu_precompile_prelude).
function(_rooflab_emu_wrapper_options var flavor)
  if(flavor STREQUAL "traffic")
    # -finline-limit: the instrumentation has no hook for a store that is the result of a call returning a
    # struct (`y[i] = __float2half(x)`, the toolkit's __half being a struct), so the conversions are inlined
    # and the store becomes a plain one (docs/cpu-mode.md, "What it does not see").
    set(${var} -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -g1 -fno-tree-vectorize
        -fno-tree-slp-vectorize -fno-tree-sra -finline-limit=10000 PARENT_SCOPE)
  elseif(flavor STREQUAL "plain")
    # Every load and store of the kernels is checked for its type's alignment (GCC's UBSan alignment check
    # alone, answered by the backend's own entry point in common/emu/src/alignment.cpp, not libubsan): a GPU
    # faults on a misaligned float4 (half2, double2 ...) access whatever code the host compiler would emit for
    # it, through a pointer kept in a variable or made by a C-style cast too. Recoverable: the entry point
    # fails the launch and returns (GCC declares the check's call nothrow, so it cannot throw out of the
    # kernel). Plain builds only (the emu tests, dry runs and conformance programs): race and traffic builds
    # run the same kernels to find races and count bytes, and the check would only repeat the emu tests'
    # report at about 0.5 s of compile per file.
    set(${var} -fsanitize=alignment -fsanitize-recover=alignment PARENT_SCOPE)
  else()
    set(${var} "" PARENT_SCOPE)
  endif()
endfunction()

function(rooflab_emu_add_cu target)
  cmake_parse_arguments(E "RACE;TRAFFIC;COVERAGE" "" "" ${ARGN})
  set(flavor plain)
  if(E_TRAFFIC)
    set(flavor traffic)
    target_link_libraries(${target} PRIVATE rooflab::emu_traffic)
  elseif(E_RACE)
    set(flavor race)
  endif()
  _rooflab_emu_wrapper_options(options ${flavor})
  # COVERAGE (plain only): gcov's counters at -O0, where each branch gcov reports is one the source wrote (at
  # -O1 and above inlined header code and unrolled loops add outcomes no input can take; -Og, tried, loses an
  # early return's line and branch). The prelude's precompiled header is made with the build's optimization, so
  # it is not used: the wrapper parses the prelude.
  if(E_COVERAGE)
    list(APPEND options -O0 --coverage)
  endif()
  # A .cu's standard is the target's CUDA_STANDARD (as nvcc would compile it), even where the target's .cpp
  # files use another; without one, the target's CXX_STANDARD. A generator expression: set it before or after.
  # Always the strict ISO dialect, as nvcc gives the host compiler: a target with CXX_EXTENSIONS (CMake's
  # default) gets -std=gnu++NN from CMake, which the prelude's precompiled header, made with -std=c++NN,
  # would not fit (-Winvalid-pch on every wrapper, and the prelude parsed again each time).
  set(cuda_standard "$<TARGET_PROPERTY:${target},CUDA_STANDARD>")
  set(cxx_standard "$<TARGET_PROPERTY:${target},CXX_STANDARD>")
  set(standard "$<IF:$<BOOL:${cuda_standard}>,-std=c++${cuda_standard},$<$<BOOL:${cxx_standard}>:-std=c++${cxx_standard}>>")
  # The prelude every wrapper starts with, precompiled for this flavour when this build has it: GCC takes it
  # from the .gch beside the header -include names, and parses the header itself when the .gch does not fit
  # the wrapper's options (another standard), so the result is the same either way, only slower.
  get_property(pch GLOBAL PROPERTY ROOFLAB_EMU_PRELUDE_${flavor})
  if(E_COVERAGE)
    set(pch "")
  endif()
  set(pch_options "")
  set(pch_depends "")
  if(pch)
    # Only where the wrapper is compiled as C++20, the prelude's standard (a C++17 file never reads it).
    set(is20 "$<OR:$<STREQUAL:${cuda_standard},20>,$<AND:$<NOT:$<BOOL:${cuda_standard}>>,$<STREQUAL:$<TARGET_PROPERTY:${target},CXX_STANDARD>,20>>>")
    # -Winvalid-pch: a prelude that no longer fits the wrappers (a flag or macro that reaches one and not the
    # other) is reported, an error under ROOFLAB_WERROR as in CI, rather than silently costing its time back.
    set(pch_options "$<${is20}:-include${pch}>" "$<${is20}:-Winvalid-pch>")
    set(pch_depends "${pch}.gch")
    add_dependencies(${target} rooflab_emu_prelude_${flavor})
  endif()
  foreach(cu IN LISTS E_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${cu}" ABSOLUTE)
    get_filename_component(dir "${abs}" DIRECTORY)
    string(MD5 tag "${abs}")
    string(SUBSTRING "${tag}" 0 8 tag)
    get_filename_component(stem "${cu}" NAME_WE)
    set(wrapper "${CMAKE_CURRENT_BINARY_DIR}/emu/${target}/${stem}-${tag}.emu.cpp")
    set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
    set(skips "")
    foreach(skip IN LISTS ROOFLAB_EMU_SKIP_INCLUDES)
      list(APPEND skips --skip "${skip}")
    endforeach()
    add_custom_command(
      OUTPUT "${wrapper}"
      COMMAND rooflab_emu_rewrite "${abs}" "${wrapper}" --headers "${wrapper}.h" --depfile "${wrapper}.d"
              --contexts "${wrapper}.contexts" ${skips}
              "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
      # Where each directive stands, for a comparison with nvcc's passes (rooflab_emu_wrapper_of, a lab's capture).
      BYPRODUCTS "${wrapper}.contexts"
      DEPENDS "${abs}" rooflab_emu_rewrite
      DEPFILE "${wrapper}.d"
      COMMENT "Rewriting ${stem}.cu for the CPU backend (${target})"
      COMMAND_EXPAND_LISTS
      VERBATIM)
    target_sources(${target} PRIVATE "${wrapper}")
    # Where the wrapper of this file lies, for whoever compares what it compiles with nvcc's passes (a lab's
    # static capture, cmake/RooflabLab.cmake): rooflab_emu_wrapper_of().
    set_property(TARGET ${target} PROPERTY ROOFLAB_EMU_WRAPPER_${tag} "${wrapper}")
    set(wrapper_options -iquote "${dir}" ${options} "${standard}" ${pch_options})
    set_source_files_properties("${wrapper}" PROPERTIES COMPILE_OPTIONS "${wrapper_options}"
                                OBJECT_DEPENDS "${pch_depends}")
  endforeach()
  if(E_RACE)
    rooflab_emu_use(${target} RACE)
  else()
    rooflab_emu_use(${target})
  endif()
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
endfunction()

# rooflab_emu_wrapper_of(<var> <target> <file.cu>): the wrapper .cpp rooflab_emu_add_cu made of file.cu for
# target, in var ("" when it made none). Beside it, <wrapper>.contexts lists where each directive of file.cu
# stands (rooflab_emu_rewrite --contexts).
function(rooflab_emu_wrapper_of var target cu)
  get_filename_component(abs "${cu}" ABSOLUTE)
  string(MD5 tag "${abs}")
  string(SUBSTRING "${tag}" 0 8 tag)
  get_target_property(wrapper ${target} ROOFLAB_EMU_WRAPPER_${tag})
  if(NOT wrapper)
    set(wrapper "")
  endif()
  set(${var} "${wrapper}" PARENT_SCOPE)
endfunction()

# rooflab_emu_use(<target> [RACE]): what code compiled for the CPU backend needs, without .cu files of its own
# (the test sources that a lab's variants share): the backend with its cuBLAS subset (never the real
# libcublas), and its own <cooperative_groups.h> ahead of any toolkit include directory the target gets from
# elsewhere.
function(rooflab_emu_use target)
  cmake_parse_arguments(E "RACE" "" "" ${ARGN})
  if(E_RACE)
    target_link_libraries(${target} PRIVATE rooflab::emu_race_cublas rooflab::emu_race)
  else()
    target_link_libraries(${target} PRIVATE rooflab::emu_cublas rooflab::emu)
  endif()
  # CCCL (ROOFLAB_EMU_CCCL_INCLUDE, from rooflab_emu_paths) after the backend's own headers, whose
  # <cuda/barrier> and <cuda/pipeline> replace CCCL's (their waits spin, and a block's threads are fibers of
  # one OS thread).
  target_include_directories(${target} BEFORE PRIVATE "${ROOFLAB_EMU_CUDA_INCLUDE}" ${ROOFLAB_EMU_CCCL_INCLUDE})
endfunction()

# rooflab_emu_use_flavor(<target> <plain|race|traffic>): rooflab_emu_use for code compiled in that flavour
# (the race build of the backend for race), and for traffic the traffic model's hooks too.
function(rooflab_emu_use_flavor target flavor)
  if(flavor STREQUAL "race")
    rooflab_emu_use(${target} RACE)
  else()
    rooflab_emu_use(${target})
  endif()
  if(flavor STREQUAL "traffic")
    target_link_libraries(${target} PRIVATE rooflab::emu_traffic)
  endif()
endfunction()

# rooflab_emu_precompile_prelude(): the prelude of the wrappers precompiled (GCC), once per flavour (plain,
# race, traffic: each with its wrappers' options), so that the about 170 wrappers of a full build do not each
# parse the same 150,000 lines: about a third of a wrapper's compile. The prelude is the backend's
# runtime.hpp and rewritten.hpp, which every wrapper includes first, then the harness and standard headers
# the labs' kernels include; each has include guards, so a wrapper's own #include of them is then a no-op.
# Not <rooflab/inspect.hpp>: it reads macros that only the static binaries define (GCC would refuse the
# prelude to every binary whose macros differ from the prelude's).
# Built on demand: a build that compiles no race wrapper never builds the race prelude. A build that imports
# the harness (cmake/RooflabHarness.cmake) has none, and its wrappers parse the headers.
function(rooflab_emu_precompile_prelude)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()  # GCC's precompiled headers (.gch found beside the -include'd header); other compilers parse
  endif()
  foreach(flavor plain race traffic)
    if((flavor STREQUAL "race" AND NOT TARGET rooflab::emu_race) OR
       (flavor STREQUAL "traffic" AND NOT TARGET rooflab::emu_traffic))
      continue()
    endif()
    set(header "${CMAKE_BINARY_DIR}/emu_prelude/${flavor}/rooflab_emu_prelude.hpp")
    file(CONFIGURE OUTPUT "${header}" CONTENT [[
// The CPU backend's prelude, precompiled for the @flavor@ wrappers (cmake/RooflabEmu.cmake).
#include <rooflab/emu/runtime.hpp>
#include <rooflab/emu/rewritten.hpp>
#include <rooflab/check.hpp>
#include <rooflab/cuda.hpp>
#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>
#include <mma.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>
]] @ONLY)
    # Compiled as a C++ header, GCC writes a precompiled header (CMake's `-x c++` comes before; the last -x
    # before the file counts); it is then linked where GCC looks for it, beside the header `-include` names.
    set(owner rooflab_emu_prelude_${flavor}_pch)
    add_library(${owner} OBJECT EXCLUDE_FROM_ALL "${header}")
    _rooflab_emu_wrapper_options(options ${flavor})
    set_source_files_properties("${header}" PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "${options};-x;c++-header")
    # No rooflab_common: a macro defined on the prelude's command line must be defined on every wrapper's too
    # (GCC checks), and only the backend's usage requirements reach every wrapper.
    rooflab_warnings(${owner})  # as the wrappers' targets: -Wpedantic alone changes a predefined macro
    rooflab_emu_use_flavor(${owner} ${flavor})
    add_custom_command(
      OUTPUT "${header}.gch"
      COMMAND "${CMAKE_COMMAND}" -E rm -f "${header}.gch"
      COMMAND "${CMAKE_COMMAND}" -E create_hardlink "$<TARGET_OBJECTS:${owner}>" "${header}.gch"
      DEPENDS ${owner} "$<TARGET_OBJECTS:${owner}>"
      COMMENT "Precompiled CPU backend prelude (${flavor})"
      VERBATIM)
    add_custom_target(rooflab_emu_prelude_${flavor} DEPENDS "${header}.gch")
    set_property(GLOBAL PROPERTY ROOFLAB_EMU_PRELUDE_${flavor} "${header}")
  endforeach()
endfunction()
