# The one recipe for the calibration kernels' fatbinary, run as a script:
#   cmake -DNVCC=... -DARCHS="75;80;..." -DSOURCE=.../calibration_kernels.cu -DINCLUDE=.../common/include
#         -DOUT=.../calibration_kernels.fatbin -P calibration_fatbin.cmake
# The full course's build runs it for its own test (common/tests), `./rooflab release` for a student copy, which
# ships the kernels compiled instead of their source (docs/instructor-guide.md, "release"). SASS for every
# architecture in ARCHS, and the PTX of the newest, so that a GPU newer than all of them JIT-compiles it.
# OUT appears whole or not at all: nvcc writes beside it and the file is renamed into place.
cmake_minimum_required(VERSION 3.25)

foreach(var NVCC ARCHS SOURCE INCLUDE OUT)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "calibration_fatbin.cmake: ${var} is not set")
  endif()
endforeach()

set(gencode "")
set(newest 0)
foreach(arch IN LISTS ARCHS)
  # CMake spells an architecture 80, 80-real or 80-virtual; the SASS is what matters here.
  string(REGEX REPLACE "-(real|virtual)$" "" arch "${arch}")
  if(NOT arch MATCHES "^[0-9]+$")
    message(FATAL_ERROR "calibration_fatbin.cmake: '${arch}' is not an architecture number (75, 80, ...)")
  endif()
  list(APPEND gencode "-gencode=arch=compute_${arch},code=sm_${arch}")
  if(arch GREATER newest)
    set(newest ${arch})
  endif()
endforeach()
list(APPEND gencode "-gencode=arch=compute_${newest},code=compute_${newest}")

get_filename_component(src_dir "${SOURCE}" DIRECTORY)
execute_process(
  COMMAND "${NVCC}" -fatbin -std=c++20 -O3 "-I${INCLUDE}" "-I${src_dir}" ${gencode} -o "${OUT}.part" "${SOURCE}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${OUT}.part")
  message(FATAL_ERROR "calibration_fatbin.cmake: ${NVCC} failed (${rc}) making ${OUT}")
endif()
file(RENAME "${OUT}.part" "${OUT}")
