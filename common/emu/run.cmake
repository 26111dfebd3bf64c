# cmake -P common/emu/run.cmake FILE.cu [FILE.cu...] [-I DIR]... [--std 17] [-- ARGS...]
#
# Builds CUDA files from elsewhere on the CPU backend, unchanged, into one program and runs it with ARGS: a
# repository's .cu with its main() (and the other .cu files it links with: a runner, kernels kept apart),
# their quoted includes found beside them and their other headers under the -I directories.
# rooflab is configured once in build/emu-run (no labs), then only the backend and this program are
# built; the program's exit status is this command's. See docs/cpu-mode.md, "Running a CUDA file from
# elsewhere".
cmake_minimum_required(VERSION 3.25)

set(root "${CMAKE_CURRENT_LIST_DIR}/../..")
cmake_path(ABSOLUTE_PATH root NORMALIZE)
set(build "${root}/build/emu-run")

# The arguments after the script's name.
set(cu "")
set(includes "")
set(standard "")
set(program_args "")
set(k 0)
while(k LESS CMAKE_ARGC AND NOT CMAKE_ARGV${k} STREQUAL "-P")
  math(EXPR k "${k} + 1")
endwhile()
math(EXPR k "${k} + 2")
while(k LESS CMAKE_ARGC)
  set(a "${CMAKE_ARGV${k}}")
  math(EXPR k "${k} + 1")
  if(a STREQUAL "--")
    while(k LESS CMAKE_ARGC)
      list(APPEND program_args "${CMAKE_ARGV${k}}")
      math(EXPR k "${k} + 1")
    endwhile()
  elseif(a STREQUAL "-I" OR a STREQUAL "--std")
    set(value "${CMAKE_ARGV${k}}")
    math(EXPR k "${k} + 1")
    if(a STREQUAL "-I")
      file(REAL_PATH "${value}" value)
      list(APPEND includes "${value}")
    else()
      set(standard "${value}")
    endif()
  elseif(a MATCHES "^-I(.+)$")
    file(REAL_PATH "${CMAKE_MATCH_1}" value)
    list(APPEND includes "${value}")
  elseif(a MATCHES "^-")
    message(FATAL_ERROR "usage: cmake -P common/emu/run.cmake FILE.cu [FILE.cu...] [-I DIR]... [--std 17] "
                        "[-- ARGS...] (unknown option '${a}')")
  else()
    if(NOT EXISTS "${a}")
      message(FATAL_ERROR "usage: cmake -P common/emu/run.cmake FILE.cu [FILE.cu...] [-I DIR]... [--std 17] "
                          "[-- ARGS...] (no such file: '${a}')")
    endif()
    file(REAL_PATH "${a}" value)
    list(APPEND cu "${value}")
  endif()
endwhile()
if(cu STREQUAL "")
  message(FATAL_ERROR "usage: cmake -P common/emu/run.cmake FILE.cu [FILE.cu...] [-I DIR]... [--std 17] [-- ARGS...]")
endif()

string(JOIN ", " files ${cu})  # for messages
set(generator "")
find_program(ninja ninja)
if(ninja AND NOT EXISTS "${build}/CMakeCache.txt")
  set(generator -G Ninja)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${root}" -B "${build}" ${generator} -DCMAKE_BUILD_TYPE=Release
                        -DROOFLAB_LABS=none -DBUILD_TESTING=OFF "-DROOFLAB_EMU_RUN_CU=${cu}"
                        "-DROOFLAB_EMU_RUN_INCLUDES=${includes}" "-DROOFLAB_EMU_RUN_STANDARD=${standard}"
                OUTPUT_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "configuring rooflab in ${build} failed (run the command again without OUTPUT_QUIET)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${build}" --target rooflab_emu_run RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "building ${files} for the CPU backend failed (the compiler's messages are above)")
endif()
execute_process(COMMAND "${build}/common/emu/rooflab_emu_run" ${program_args} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${files} exited with status ${status}")
endif()
