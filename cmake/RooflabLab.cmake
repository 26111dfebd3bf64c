# rooflab_add_lab(): the one call that registers a lab.
#
# It builds the lab's test binaries once per *variant* of the student files:
#   main       the student files from ROOFLAB_STUDENT_DIR (labs/, solutions/ or a submission)
#   stubs      labs/ as shipped                       (ROOFLAB_SELFTEST only)
#   solutions  solutions/                             (ROOFLAB_SELFTEST only)
#   st-<case>  solutions/ overlaid with solutions/NN/selftest/<case>/ (ROOFLAB_SELFTEST only): known-bad
#              submissions (beside the solution they patch, so a student copy without solutions/ has none)
# and, per variant, one binary per test kind:
#   <prefix>_analytic  tests/analytic + the student's host answers         (always)
#   <prefix>_emu       tests/correctness + the student's kernels on the CPU backend
#   <prefix>_gpu       tests/correctness + tests/perf + the kernels under nvcc (CUDA only)
#   <prefix>_static    tests/static, reading the PTX and ptxas report captured at build time (CUDA only)
#   <prefix>_race      tests/race + the kernels on the CPU backend's race mode (ThreadSanitizer), tiny sizes
#   <prefix>_traffic   tests/traffic + the kernels on the CPU backend with their global loads and stores
#                      recorded (the memory-traffic model, rooflab/testing/traffic.hpp): bytes moved, hints
#   <prefix>_dryrun    tests/perf + tests/dryrun + the kernels, the timing harness and calibration on the CPU
#                      backend at scaled-down sizes (a dry run: proves the GPU path runs; worth no points),
#                      with the reference solution's answers.cpp (tests/dryrun checks the perf tests' byte
#                      and FLOP counts against them)
# and, once per lab that has tests/figures.cpp, lab<NN>_figures: that file and the reference answers, linked
# into the grader's handout figures test (_rooflab_lab_figures).
# The student files listed here are the submission whitelist the grader reads from
# build/rooflab/labs.json, so the whitelist and the stub/solution mirror cannot drift apart.
include_guard(GLOBAL)

set_property(GLOBAL PROPERTY ROOFLAB_LAB_JSON "")

# ---- the one table of test kinds (data/test_kinds.json, read by the grader too) ----
# ROOFLAB_BINARY_KINDS: the test binaries a variant may have (one recipe each in _rooflab_add_variant);
# ROOFLAB_TEST_FILE_KINDS: the rubric kinds, each with its tests/<kind>.cpp and TESTS_<KIND> argument;
# ROOFLAB_EMU_SCHEDULES: the CPU backend's thread orders the emu binary runs under, one CTest each.
function(_rooflab_read_test_kinds)
  set(file "${PROJECT_SOURCE_DIR}/data/test_kinds.json")
  set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  file(READ "${file}" table)
  string(JSON n ERROR_VARIABLE err LENGTH "${table}" kinds)
  if(err OR n EQUAL 0)
    message(FATAL_ERROR "${file}: no \"kinds\" list (${err})")
  endif()
  set(binaries "")
  set(file_kinds "")
  set(schedules "")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON binary GET "${table}" kinds ${i} binary)
    list(APPEND binaries "${binary}")
    string(JSON m LENGTH "${table}" kinds ${i} rubric)
    math(EXPR m_last "${m} - 1")
    foreach(k RANGE ${m_last})
      string(JSON rubric_kind GET "${table}" kinds ${i} rubric ${k})
      string(TOUPPER "${rubric_kind}" rubric_kind)
      list(APPEND file_kinds "${rubric_kind}")
    endforeach()
    string(JSON s LENGTH "${table}" kinds ${i} schedules)
    if(binary STREQUAL "emu" AND s GREATER 0)
      math(EXPR s_last "${s} - 1")
      foreach(k RANGE ${s_last})
        string(JSON schedule GET "${table}" kinds ${i} schedules ${k})
        list(APPEND schedules "${schedule}")
      endforeach()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES binaries)
  list(REMOVE_DUPLICATES file_kinds)
  set(ROOFLAB_BINARY_KINDS "${binaries}" PARENT_SCOPE)
  set(ROOFLAB_TEST_FILE_KINDS "${file_kinds}" PARENT_SCOPE)
  set(ROOFLAB_EMU_SCHEDULES "${schedules}" PARENT_SCOPE)
endfunction()
_rooflab_read_test_kinds()
list(TRANSFORM ROOFLAB_TEST_FILE_KINDS PREPEND "TESTS_" OUTPUT_VARIABLE ROOFLAB_TEST_FILE_KEYWORDS)


# JSON is built with string(JSON ... SET), never by pasting strings: a quote or backslash in a title or a
# path stays valid JSON. _rooflab_json_quote turns a CMake string into a JSON string value.
function(_rooflab_json_quote out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# Sets `key` of the JSON object in variable `var` to the string `value`.
macro(_rooflab_json_set_string var key value)
  _rooflab_json_quote(_rooflab_q "${value}")
  string(JSON ${var} SET "${${var}}" ${key} "${_rooflab_q}")
endmacro()

# Sets `key` of the JSON object in variable `var` to the array of the JSON values given after it.
function(_rooflab_json_set_array var key)
  set(j "${${var}}")
  string(JSON j SET "${j}" ${key} "[]")
  set(i 0)
  foreach(value IN LISTS ARGN)
    string(JSON j SET "${j}" ${key} ${i} "${value}")
    math(EXPR i "${i} + 1")
  endforeach()
  set(${var} "${j}" PARENT_SCOPE)
endfunction()

# One binary's entry: kind, target, path (a generator expression, resolved when labs.json is generated),
# and why it is unavailable on this machine ("" when it is built).
# Any further arguments name object libraries whose objects the binary links (the kernels compiled once for
# the CPU backend, _rooflab_emu_kernels; the answers, _rooflab_answers_objects): "objects_from", where the
# grader looks for student objects too.
function(_rooflab_binary_json out kind target unavailable)
  set(b "{}")
  _rooflab_json_set_string(b kind "${kind}")
  _rooflab_json_set_string(b target "${target}")
  if(target STREQUAL "")
    _rooflab_json_set_string(b path "")
  else()
    _rooflab_json_set_string(b path "$<TARGET_FILE:${target}>")
  endif()
  _rooflab_json_set_string(b unavailable "${unavailable}")
  set(libs "")
  foreach(lib IN LISTS ARGN)
    _rooflab_json_quote(q "${lib}")
    list(APPEND libs "${q}")
  endforeach()
  _rooflab_json_set_array(b objects_from ${libs})
  set(${out} "${b}" PARENT_SCOPE)
endfunction()

# Resolve the student files of one variant: each file from `primary` if present there, else `fallback`.
function(_rooflab_variant_files out primary fallback)
  set(files "")
  foreach(f IN LISTS ARGN)
    if(EXISTS "${primary}/${f}")
      list(APPEND files "${primary}/${f}")
    else()
      list(APPEND files "${fallback}/${f}")
    endif()
  endforeach()
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# Writes the patched solution files of one selftest case into `out_dir`. Each patch replaces text that
# must occur exactly once in the solution file; when a solution edit has removed it, `stale_out` says which
# patch and where (the case is left out, and its test fails with that: see rooflab_add_lab), else "".
function(_rooflab_apply_selftest_patches expect_file solution_dir out_dir stale_out)
  set(${stale_out} "" PARENT_SCOPE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${expect_file}")
  file(READ "${expect_file}" expect)
  string(JSON count ERROR_VARIABLE err LENGTH "${expect}" patches)
  if(err)
    message(FATAL_ERROR "${expect_file}: no \"patches\" list (${err})")
  endif()
  file(REMOVE_RECURSE "${out_dir}")
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON file GET "${expect}" patches ${i} file)
    # {"file", "content"}: the whole file replaced (a submission that is not an edit of the solution).
    string(JSON content ERROR_VARIABLE no_content GET "${expect}" patches ${i} content)
    if(NOT no_content)
      file(WRITE "${out_dir}/${file}" "${content}")
      continue()
    endif()
    string(JSON find GET "${expect}" patches ${i} find)
    string(JSON replace GET "${expect}" patches ${i} replace)
    if(EXISTS "${out_dir}/${file}")
      file(READ "${out_dir}/${file}" content)
    else()
      file(READ "${solution_dir}/${file}" content)
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${solution_dir}/${file}")
    endif()
    string(FIND "${content}" "${find}" first)
    string(FIND "${content}" "${find}" last_pos REVERSE)
    if(first EQUAL -1 OR NOT first EQUAL last_pos)
      set(${stale_out} "${expect_file}: patch ${i} must match exactly once in ${solution_dir}/${file}, and it "
                       "matches nothing or more than once: update the known-bad case after changing the solution"
          PARENT_SCOPE)
      file(REMOVE_RECURSE "${out_dir}")
      return()
    endif()
    string(REPLACE "${find}" "${replace}" content "${content}")
    file(WRITE "${out_dir}/${file}" "${content}")
  endforeach()
endfunction()

# The rubric a lab's binaries and the grader read: the lab's rubric.json, with the hidden tests' entries
# appended when ROOFLAB_HIDDEN_TESTS has some for the lab. Always this path in the build tree, hidden tests or
# not, so that adding or removing them changes the file's content and never a compile definition (which
# would recompile every test object of the lab).
function(_rooflab_rubric_path out lab_id)
  set(${out} "${CMAKE_BINARY_DIR}/rooflab/rubric/${lab_id}.json" PARENT_SCOPE)
endfunction()

# Writes the lab's merged rubric and sets <prefix>_<KIND> (ANALYTIC, CORRECTNESS, PERF, STATIC, RACE) in the
# caller to the hidden test sources of that kind: DIR/<id>/<kind>*.cpp.
function(_rooflab_lab_rubric lab_id lab_dir prefix)
  file(READ "${lab_dir}/rubric.json" rubric)
  # The rubric says which lab it is (results and tools read it alone); the folder's name decides.
  string(JSON rubric_lab ERROR_VARIABLE err GET "${rubric}" lab)
  if(err OR NOT rubric_lab STREQUAL lab_id)
    message(FATAL_ERROR "${lab_dir}/rubric.json: \"lab\" must be \"${lab_id}\", the id in the folder's name")
  endif()
  foreach(kind ANALYTIC CORRECTNESS PERF STATIC RACE)
    set(${prefix}_${kind} "" PARENT_SCOPE)
  endforeach()
  set(hidden "${ROOFLAB_HIDDEN_TESTS}/${lab_id}")
  if(NOT ROOFLAB_HIDDEN_TESTS STREQUAL "" AND IS_DIRECTORY "${hidden}")
    if(NOT EXISTS "${hidden}/rubric.json")
      message(FATAL_ERROR "hidden tests of lab ${lab_id}: ${hidden}/rubric.json is missing (each hidden test "
                          "with its kind and points, as in the lab's rubric.json)")
    endif()
    file(READ "${hidden}/rubric.json" extra)
    string(JSON extra_lab ERROR_VARIABLE err GET "${extra}" lab)
    if(err OR NOT extra_lab STREQUAL lab_id)
      message(FATAL_ERROR "${hidden}/rubric.json: \"lab\" must be \"${lab_id}\"")
    endif()
    string(JSON n ERROR_VARIABLE err LENGTH "${extra}" tests)
    if(err OR n EQUAL 0)
      message(FATAL_ERROR "${hidden}/rubric.json: no \"tests\" list (${err})")
    endif()
    # Appended as they are: the grader's and the binaries' rubric checks (a duplicate, an unknown kind, a test
    # without its entry) apply to hidden tests as to public ones.
    string(JSON at LENGTH "${rubric}" tests)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON entry GET "${extra}" tests ${i})
      string(JSON rubric SET "${rubric}" tests ${at} "${entry}")
      math(EXPR at "${at} + 1")
    endforeach()
    file(GLOB sources "${hidden}/*.cpp")
    list(SORT sources)
    foreach(src IN LISTS sources)
      get_filename_component(name "${src}" NAME)
      if(name MATCHES "^(analytic|correctness|perf|static|race)")
        string(TOUPPER "${CMAKE_MATCH_1}" kind)
        list(APPEND found_${kind} "${src}")
      else()
        message(FATAL_ERROR "${src}: a hidden test file is named for its kind (analytic*, correctness*, perf*, "
                            "static* or race*.cpp), as the lab's tests/ files are")
      endif()
    endforeach()
    foreach(kind ANALYTIC CORRECTNESS PERF STATIC RACE)
      set(${prefix}_${kind} "${found_${kind}}" PARENT_SCOPE)
    endforeach()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${hidden}/rubric.json")
  endif()
  _rooflab_rubric_path(out ${lab_id})
  file(WRITE "${out}.new" "${rubric}\n")
  file(COPY_FILE "${out}.new" "${out}" ONLY_IF_DIFFERENT)
  file(REMOVE "${out}.new")
endfunction()

# Capture `nvcc -ptx` and the ptxas resource report of the kernels for each static architecture. The cubin
# and the report come from ptxas run on the captured PTX, as `nvcc -cubin -Xptxas -v` runs it (same options),
# so that the C++ front end, most of the cost, runs once per architecture, not twice.
#
# And for each kernels file, the branches of its conditionals that nvcc and the CPU backend do not both compile
# (<stem>.branches.txt, empty when they agree; common/emu/rewrite/branches.hpp): the file preprocessed as nvcc's
# host pass and its device pass for sm_80 (the backend's pretend GPU) see it, and its wrapper for the backend
# (from emu_lib, the CPU backend's object library of the same files; the rewriter's list of where each directive
# stands beside it), each with GCC's -fdirectives-only (about 0.1 s each: directives only, no macro expansion).
# The texts, about 6 MB each, are deleted once compared. The grader's symbol rule reads the findings beside the PTX.
function(_rooflab_capture_static prefix lab_dir out_dir kernels archs emu_lib)
  get_filename_component(cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  find_program(ROOFLAB_PTXAS ptxas HINTS "${cuda_bin}" NO_DEFAULT_PATH)
  find_program(ROOFLAB_PTXAS ptxas)
  if(NOT ROOFLAB_PTXAS)
    message(FATAL_ERROR "ptxas not found beside ${CMAKE_CUDA_COMPILER}: the static tests need it")
  endif()
  set(outputs "")
  list(GET archs 0 first_arch)
  # Definitions as the GPU build's and the backend's compiles have them (ROOFLAB_DATA_DIR ...), less the
  # backend's own (ROOFLAB_EMU*), which nvcc does not define.
  set(defs "$<FILTER:$<TARGET_PROPERTY:${emu_lib},COMPILE_DEFINITIONS>,EXCLUDE,^ROOFLAB_EMU>")
  foreach(arch IN LISTS archs)
    foreach(cu IN LISTS kernels)
      get_filename_component(stem "${cu}" NAME_WE)
      set(ptx "${out_dir}/${stem}.sm_${arch}.ptx")
      set(res "${out_dir}/${stem}.sm_${arch}.ptxas.txt")
      set(flags -std=c++20 -arch=sm_${arch} -I${PROJECT_SOURCE_DIR}/common/include -I${lab_dir}
          "$<$<BOOL:${defs}>:-D$<JOIN:${defs},$<SEMICOLON>-D>>")
      if(arch STREQUAL first_arch)
        # For the first architecture, nvcc's own object of the file too, from the same run (its PTX kept): the
        # host pass's code (the launchers as nvcc compiles them), which the grader's symbol rule reads beside the
        # CPU backend's object of the same file and holds to call the same functions of the CUDA runtime and of
        # rooflab's harness, so that code telling the two compilers apart by a type (a trait of threadIdx, which
        # nvcc declares const and the backend cannot) shows (grader/symbols.cpp, api_findings). About 4 s more
        # than the PTX alone.
        set(keep "${out_dir}/${stem}.nvcc-keep")
        add_custom_command(
          OUTPUT "${out_dir}/${stem}.nvcc.o" "${ptx}" "${res}"  # the object first: the depfile names it
          COMMAND "${CMAKE_COMMAND}" -E rm -rf "${keep}"
          COMMAND "${CMAKE_COMMAND}" -E make_directory "${keep}"
          COMMAND "${CMAKE_CUDA_COMPILER}" ${flags} -c "${cu}" -o "${out_dir}/${stem}.nvcc.o" --keep --keep-dir "${keep}"
                  -MD -MF "${ptx}.d"
          COMMAND "${CMAKE_COMMAND}" -E copy "${keep}/${stem}.ptx" "${ptx}"
          COMMAND "${CMAKE_COMMAND}" -E rm -rf "${keep}"
          COMMAND sh -c "\"${ROOFLAB_PTXAS}\" -arch=sm_${arch} -m64 -v \"${ptx}\" -o \"${out_dir}/${stem}.sm_${arch}.cubin\" 2> \"${res}\""
          DEPENDS "${cu}" "${lab_dir}/lab.hpp"
          DEPFILE "${ptx}.d"
          COMMENT "Compiling ${prefix}/${stem} with nvcc for sm_${arch}: its object, PTX and ptxas report"
          COMMAND_EXPAND_LISTS
          VERBATIM)
        list(APPEND outputs "${ptx}" "${res}" "${out_dir}/${stem}.nvcc.o")
        continue()
      endif()
      add_custom_command(
        OUTPUT "${ptx}" "${res}"
        COMMAND "${CMAKE_CUDA_COMPILER}" ${flags} -ptx "${cu}" -o "${ptx}" -MD -MF "${ptx}.d"
        COMMAND sh -c "\"${ROOFLAB_PTXAS}\" -arch=sm_${arch} -m64 -v \"${ptx}\" -o \"${out_dir}/${stem}.sm_${arch}.cubin\" 2> \"${res}\""
        # Every header the kernels include (kernels.hpp, lab.hpp, rooflab/*.hpp): a change to one of them
        # captures again, as nvcc lists them.
        DEPENDS "${cu}" "${lab_dir}/lab.hpp"
        DEPFILE "${ptx}.d"
        COMMENT "Capturing PTX and ptxas report of ${prefix}/${stem} for sm_${arch}"
        COMMAND_EXPAND_LISTS
        VERBATIM)
      list(APPEND outputs "${ptx}" "${res}")
    endforeach()
  endforeach()
  set(emu_defs "$<TARGET_PROPERTY:${emu_lib},COMPILE_DEFINITIONS>")
  set(emu_includes "$<TARGET_PROPERTY:${emu_lib},INCLUDE_DIRECTORIES>")
  foreach(cu IN LISTS kernels)
    get_filename_component(cu "${cu}" ABSOLUTE)
    get_filename_component(stem "${cu}" NAME_WE)
    get_filename_component(cu_dir "${cu}" DIRECTORY)
    rooflab_emu_wrapper_of(wrapper ${emu_lib} "${cu}")
    if(NOT wrapper)
      message(FATAL_ERROR "${cu}: no CPU-backend wrapper in ${emu_lib} to compare with nvcc's passes")
    endif()
    set(base "${out_dir}/${stem}")
    set(nvcc_flags -std=c++20 -arch=sm_80 -I${PROJECT_SOURCE_DIR}/common/include -I${lab_dir}
        "$<$<BOOL:${defs}>:-D$<JOIN:${defs},$<SEMICOLON>-D>>" -E -Xcompiler -fdirectives-only)
    add_custom_command(
      OUTPUT "${base}.branches.txt"
      # nvcc's host pass: its device pass's preprocessing without __CUDA_ARCH__ (and the double-precision switch
      # only the device pass gets), which is the command line nvcc gives the host compiler for it.
      COMMAND "${CMAKE_CUDA_COMPILER}" ${nvcc_flags} -Xcompiler -U__CUDA_ARCH__ -Xcompiler -UCUDA_DOUBLE_MATH_FUNCTIONS
              "${cu}" -o "${base}.nvcc-host.ii"
      COMMAND "${CMAKE_CUDA_COMPILER}" ${nvcc_flags} "${cu}" -o "${base}.nvcc-sm_80.ii"
      COMMAND "${CMAKE_CXX_COMPILER}" -E -fdirectives-only -std=c++20 "$<$<BOOL:${emu_defs}>:-D$<JOIN:${emu_defs},;-D>>"
              "$<$<BOOL:${emu_includes}>:-I$<JOIN:${emu_includes},;-I>>" -iquote "${cu_dir}" "${wrapper}"
              -o "${base}.emu.ii"
      COMMAND sh -c "\"$<TARGET_FILE:rooflab_emu_branches>\" \"$1\" \"$2.nvcc-host.ii\" \"$2.nvcc-sm_80.ii\" \"$2.emu.ii\" --contexts \"$3.contexts\" > \"$2.branches.txt.new\" && mv \"$2.branches.txt.new\" \"$2.branches.txt\"" sh "${cu}" "${base}" "${wrapper}"
      COMMAND "${CMAKE_COMMAND}" -E rm -f "${base}.nvcc-host.ii" "${base}.nvcc-sm_80.ii" "${base}.emu.ii"
      # The headers: the PTX capture's depfile lists them, and this runs again whenever it does.
      DEPENDS "${cu}" "${wrapper}" "${lab_dir}/lab.hpp" rooflab_emu_branches "${out_dir}/${stem}.sm_${first_arch}.ptx"
      COMMENT "Comparing the branches nvcc and the CPU backend compile in ${prefix}/${stem}"
      COMMAND_EXPAND_LISTS
      VERBATIM)
    list(APPEND outputs "${base}.branches.txt")
  endforeach()
  add_custom_target(${prefix}_static_capture DEPENDS ${outputs})
endfunction()

# A binary this machine cannot build (no CUDA toolkit): listed so that the grader still reports every test
# the rubric gives it, as not graded here and why.
function(_rooflab_unavailable bins_var kind)
  _rooflab_binary_json(b ${kind} "" "no CUDA toolkit (nvcc) was found when this build was configured")
  set(${bins_var} ${${bins_var}} "${b}" PARENT_SCOPE)
endfunction()

# The headers nearly every test source of a lab parses first (the test framework, fmt, the grading harness; not
# JSON, whose own inline code costs about 0.8 s of template instantiation in every unit that includes it, and which
# the labs' tests do not use: rooflab/detail/report_reader.hpp keeps it out of grading.hpp), and those every answers.cpp does, precompiled once per group of object libraries compiled alike and
# reused by every other lab's and variant's (REUSE_FROM): about half of such a compile is parsing them (Lab 05's
# tests/dryrun.cpp at -O1: 5.8 s -> 2.8 s). The test sources' groups are the flavours: analytic, gpu, the CPU
# backend's (emu, dryrun, traffic, static) and its race build. The per-binary macro ROOFLAB_LAB_ID differs
# between users: the header is made without it (below), and none of these headers names it, since GCC refuses a
# header for a unit that defines a macro its text names (the rubric and kind come from a generated file, not from
# macros). -Winvalid-pch (an error under ROOFLAB_WERROR, as in CI) says when one no longer fits.
set(_rooflab_tests_pch_headers <gtest/gtest.h> <fmt/format.h> <fmt/ranges.h>
    <rooflab/testing/grading.hpp> <rooflab/specs.hpp> <algorithm> <cmath> <functional> <map> <optional> <span>
    <string> <vector>)
set(_rooflab_answers_pch_headers <rooflab/inspect.hpp> <rooflab/specs.hpp> <rooflab/stub.hpp> <algorithm> <cmath>
    <cstddef> <vector>)

# An object library of a lab's test sources (or of the unit that makes their precompiled header), with what
# every such library has: the test framework, the kind's libraries, warnings, -O1, the CPU backend's flavour.
function(_rooflab_test_objects lib kind libs)
  add_library(${lib} OBJECT ${ARGN})
  target_link_libraries(${lib} PRIVATE rooflab::test_main ${libs})
  rooflab_warnings(${lib})
  rooflab_light_optimization(${lib})  # the tests' own code: what they time is the kernels
  # The kinds whose binaries hold rewritten .cu files compile their tests for the CPU backend too.
  if(kind STREQUAL "race")
    rooflab_emu_use(${lib} RACE)
  elseif(kind STREQUAL "emu" OR kind STREQUAL "dryrun" OR kind STREQUAL "traffic" OR kind STREQUAL "static")
    rooflab_emu_use(${lib})
  endif()
endfunction()

# GCC takes a precompiled header only where every macro defined when it was made is defined alike, so each
# group's header is made by a unit of its own, without the per-binary macros, which its users then may define
# as they like. Its target is made once per group, with the options of the group's first user.
function(_rooflab_pch_unit out name)
  set(unit "${CMAKE_BINARY_DIR}/rooflab_pch/${name}.cpp")
  file(CONFIGURE OUTPUT "${unit}" CONTENT "// The unit that makes a precompiled header (cmake/RooflabLab.cmake).\n")
  set(${out} "${unit}" PARENT_SCOPE)
endfunction()
function(_rooflab_tests_pch target kind libs)
  set(group ${kind})
  if(kind MATCHES "^(emu|dryrun|traffic|static)$")
    set(group cpu)
  endif()
  set(holder _rooflab_pch_tests_${group})
  if(NOT TARGET ${holder})
    _rooflab_pch_unit(unit tests_${group})
    _rooflab_test_objects(${holder} ${kind} "${libs}" "${unit}")
    set_target_properties(${holder} PROPERTIES EXCLUDE_FROM_ALL ON)
    target_precompile_headers(${holder} PRIVATE ${_rooflab_tests_pch_headers})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${holder})
endfunction()
# An object library of answers.cpp files (or of the unit that makes their precompiled header): the harness,
# warnings, -O1; built when a binary links it.
function(_rooflab_answers_library lib)
  add_library(${lib} OBJECT EXCLUDE_FROM_ALL ${ARGN})
  target_link_libraries(${lib} PRIVATE rooflab::test_main rooflab::common)
  rooflab_warnings(${lib})
  rooflab_light_optimization(${lib})
endfunction()
function(_rooflab_answers_pch target)
  set(holder _rooflab_pch_answers)
  if(NOT TARGET ${holder})
    _rooflab_pch_unit(unit answers)
    _rooflab_answers_library(${holder} "${unit}")
    target_precompile_headers(${holder} PRIVATE ${_rooflab_answers_pch_headers})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${holder})
endfunction()

# One test binary of a variant: the lab's test sources (TESTS) and the variant's own files (SOURCES). The
# test sources are the same for every variant of a lab and kind (stubs, solutions, each selftest case), so
# they are compiled once, into an object library the variants share: a selftest case costs the compile of
# its student files only.
# LEAVES_OUT: a rubric kind whose entries these binaries do not hold though their kind would (a student copy's
# dry run leaves out "dryrun"), written beside the identity for main()'s check (common/src/test_main.cpp).
function(_rooflab_lab_binary target kind lab_id lab_dir)
  cmake_parse_arguments(B "" "LEAVES_OUT" "TESTS;SOURCES;LIBS" ${ARGN})
  _rooflab_rubric_path(rubric ${lab_id})
  set(defs ROOFLAB_LAB_ID="${lab_id}")  # the rubric and the kind: the identity file below
  set(objects "")
  if(B_TESTS)
    set(shared _rooflab_lab${lab_id}_${kind}_tests)
    if(NOT TARGET ${shared})
      # The identity every ROOFLAB_TEST of this lab and kind records (rooflab/testing/grading.hpp), compiled
      # without the precompiled header: the one file of the library that depends on the lab and the kind.
      set(identity "${CMAKE_CURRENT_BINARY_DIR}/${shared}_identity.cpp")
      set(leaves_out "")
      if(B_LEAVES_OUT)
        set(leaves_out "extern \"C\" const char rooflab_binary_leaves_out[] = \"${B_LEAVES_OUT}\";\n")
      endif()
      file(CONFIGURE OUTPUT "${identity}" CONTENT "// Generated by cmake/RooflabLab.cmake: lab ${lab_id}, kind ${kind}.
extern \"C\" const char rooflab_binary_rubric[] = \"${rubric}\";
extern \"C\" const char rooflab_binary_kind[] = \"${kind}\";
${leaves_out}")
      set_source_files_properties("${identity}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      _rooflab_test_objects(${shared} ${kind} "${B_LIBS}" ${B_TESTS} "${identity}")
      target_include_directories(${shared} PRIVATE "${lab_dir}")
      target_compile_definitions(${shared} PRIVATE ${defs})
      _rooflab_tests_pch(${shared} ${kind} "${B_LIBS}")
    endif()
    set(objects $<TARGET_OBJECTS:${shared}>)
  endif()
  add_executable(${target} ${B_SOURCES} ${objects})
  target_include_directories(${target} PRIVATE "${lab_dir}")
  target_link_libraries(${target} PRIVATE rooflab::test_main ${B_LIBS})
  target_compile_definitions(${target} PRIVATE ${defs})
  rooflab_warnings(${target})
  rooflab_light_optimization(${target})  # its own sources: the answers, where the captures lie (no kernels)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/labs/bin")
endfunction()

# The student's kernels compiled for the CPU backend in one flavour (plain, race, traffic or covered, the plain
# one with gcov's counters: rooflab_emu_add_cu),
# into an object library set in `out`. Compiled once per set of files and flavour: the kinds that run the plain
# flavour (emu, dryrun, static) link the same objects, and so does a variant whose kernels are another
# variant's files (a selftest case that changes only the answers). The kernels are compiled without the
# binaries' own macro (ROOFLAB_LAB_ID): every CPU kind runs one and the same compiled student code.
function(_rooflab_emu_kernels out prefix flavor lab_dir)
  set(files "")
  foreach(f IN LISTS ARGN)
    get_filename_component(abs "${f}" ABSOLUTE)
    list(APPEND files "${abs}")
  endforeach()
  string(MD5 key "${flavor};${files}")
  get_property(lib GLOBAL PROPERTY _ROOFLAB_EMU_KERNELS_${key})
  if(NOT lib)
    set(lib ${prefix}_kernels_${flavor})
    # Built when a binary that links it is: a selftest case's binaries are outside `all` until asked for.
    add_library(${lib} OBJECT EXCLUDE_FROM_ALL)
    target_include_directories(${lib} PRIVATE "${lab_dir}")
    target_link_libraries(${lib} PRIVATE rooflab::common)
    rooflab_warnings(${lib})
    # A known-bad case's kernels prove that a check fires, whatever their speed.
    if(prefix MATCHES "_st_")
      rooflab_light_optimization(${lib})
    endif()
    if(flavor STREQUAL "race")
      rooflab_emu_add_cu(${lib} RACE ${files})
    elseif(flavor STREQUAL "covered")
      rooflab_emu_add_cu(${lib} COVERAGE ${files})
    elseif(flavor STREQUAL "traffic")
      rooflab_emu_add_cu(${lib} TRAFFIC ${files})
    else()
      rooflab_emu_add_cu(${lib} ${files})
    endif()
    set_property(GLOBAL PROPERTY _ROOFLAB_EMU_KERNELS_${key} ${lib})
  endif()
  set(${out} ${lib} PARENT_SCOPE)
endfunction()

# The student's answers compiled for the analytic tests, into an object library set in `out`: once per set of
# files, so that the selftest cases that change only the kernels link the solution's, as they do its kernels.
function(_rooflab_answers_objects out prefix lab_id lab_dir)
  set(files "")
  foreach(f IN LISTS ARGN)
    get_filename_component(abs "${f}" ABSOLUTE)
    list(APPEND files "${abs}")
  endforeach()
  string(MD5 key "${lab_id};${files}")
  get_property(lib GLOBAL PROPERTY _ROOFLAB_ANSWERS_${key})
  if(NOT lib)
    set(lib ${prefix}_answers)
    _rooflab_answers_library(${lib} ${files})
    target_include_directories(${lib} PRIVATE "${lab_dir}")
    target_compile_definitions(${lib} PRIVATE ROOFLAB_LAB_ID="${lab_id}")
    _rooflab_answers_pch(${lib})
    set_property(GLOBAL PROPERTY _ROOFLAB_ANSWERS_${key} ${lib})
  endif()
  set(${out} ${lib} PARENT_SCOPE)
endfunction()

# Links the kernels of _rooflab_emu_kernels into a test binary, with what rooflab_emu_add_cu gives a target
# of its own: the backend of that flavour, and exported symbols (the backend names kernels by dladdr).
function(_rooflab_link_emu_kernels target flavor lib)
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:${lib}>)
  rooflab_emu_use_flavor(${target} ${flavor})
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
endfunction()

# Builds one variant; appends its JSON to the variable named by `json_out`.
function(_rooflab_add_variant json_out)
  cmake_parse_arguments(V "EXCLUDE_FROM_ALL;COVERAGE_CASE" "LAB;LAB_DIR;VARIANT;PREFIX;STUDENT_DIR;EXPECT"
                        "KINDS;KERNELS;ANSWERS;SOLUTION_ANSWERS;${ROOFLAB_TEST_FILE_KEYWORDS}" ${ARGN})
  set(lab_dir "${V_LAB_DIR}")
  set(bins "")

  # ---- analytic: host-only, no device ----
  if(V_TESTS_ANALYTIC AND "analytic" IN_LIST V_KINDS)
    _rooflab_answers_objects(answers ${V_PREFIX} ${V_LAB} "${lab_dir}" ${V_ANSWERS})
    _rooflab_lab_binary(${V_PREFIX}_analytic analytic ${V_LAB} "${lab_dir}"
      TESTS ${V_TESTS_ANALYTIC} SOURCES $<TARGET_OBJECTS:${answers}> LIBS rooflab::common)
    _rooflab_binary_json(b analytic ${V_PREFIX}_analytic "" ${answers})
    list(APPEND bins "${b}")
  endif()

  # ---- emu: the kernels on the CPU backend ----
  if(TARGET rooflab::emu AND V_TESTS_CORRECTNESS AND "emu" IN_LIST V_KINDS)
    _rooflab_lab_binary(${V_PREFIX}_emu emu ${V_LAB} "${lab_dir}"
      TESTS ${V_TESTS_CORRECTNESS} LIBS rooflab::common rooflab::emu)
    _rooflab_emu_kernels(kernels ${V_PREFIX} plain "${lab_dir}" ${V_KERNELS})
    _rooflab_link_emu_kernels(${V_PREFIX}_emu plain ${kernels})
    _rooflab_binary_json(b emu ${V_PREFIX}_emu "" ${kernels})
    # The same tests with the kernels compiled by gcov (<prefix>_coverage, rooflab/detail/coverage.hpp): which
    # lines and branch outcomes of the student's .cu files no correctness test reached. Built for the
    # student's own files (CI: the reference solutions, labNN.emu.coverage) and the selftest cases that test
    # that check; a grade runs it once for a hint.
    if(ROOFLAB_GCOV AND (V_VARIANT STREQUAL "main" OR V_COVERAGE_CASE))
      _rooflab_lab_binary(${V_PREFIX}_coverage emu ${V_LAB} "${lab_dir}"
        TESTS ${V_TESTS_CORRECTNESS} LIBS rooflab::common rooflab::emu)
      _rooflab_emu_kernels(covered ${V_PREFIX} covered "${lab_dir}" ${V_KERNELS})
      _rooflab_link_emu_kernels(${V_PREFIX}_coverage plain ${covered})
      # -u: libgcov's __gcov_dump, which test_main.cpp calls through a weak reference (one that alone would not
      # take it from the archive).
      target_link_options(${V_PREFIX}_coverage PRIVATE --coverage -Wl,-u,__gcov_dump)
      # Built by a grade when it asks for the hint; in the default build only where CI checks the solutions.
      if(NOT ROOFLAB_SELFTEST)
        set_target_properties(${V_PREFIX}_coverage PROPERTIES EXCLUDE_FROM_ALL ON)
      endif()
      _rooflab_json_set_string(b coverage_target "${V_PREFIX}_coverage")
      _rooflab_json_set_string(b coverage_path "$<TARGET_FILE:${V_PREFIX}_coverage>")
    endif()
    list(APPEND bins "${b}")
  elseif(V_TESTS_CORRECTNESS AND "emu" IN_LIST V_KINDS)
    _rooflab_unavailable(bins emu)
  endif()

  # ---- race: the kernels under ThreadSanitizer on the CPU backend (hints) ----
  if(TARGET rooflab::emu_race AND V_TESTS_RACE AND "race" IN_LIST V_KINDS)
    _rooflab_lab_binary(${V_PREFIX}_race race ${V_LAB} "${lab_dir}"
      TESTS ${V_TESTS_RACE} LIBS rooflab::common)
    _rooflab_emu_kernels(kernels ${V_PREFIX} race "${lab_dir}" ${V_KERNELS})
    _rooflab_link_emu_kernels(${V_PREFIX}_race race ${kernels})
    _rooflab_binary_json(b race ${V_PREFIX}_race "" ${kernels})
    list(APPEND bins "${b}")
  elseif(V_TESTS_RACE AND "race" IN_LIST V_KINDS)
    _rooflab_unavailable(bins race)
  endif()

  # ---- traffic: the kernels on the CPU backend, their global-memory accesses recorded (hints) ----
  if(TARGET rooflab::emu_traffic AND V_TESTS_TRAFFIC AND "traffic" IN_LIST V_KINDS)
    _rooflab_lab_binary(${V_PREFIX}_traffic traffic ${V_LAB} "${lab_dir}"
      TESTS ${V_TESTS_TRAFFIC} LIBS rooflab::common)
    _rooflab_emu_kernels(kernels ${V_PREFIX} traffic "${lab_dir}" ${V_KERNELS})
    _rooflab_link_emu_kernels(${V_PREFIX}_traffic traffic ${kernels})
    _rooflab_binary_json(b traffic ${V_PREFIX}_traffic "" ${kernels})
    list(APPEND bins "${b}")
  endif()

  # ---- dryrun: the perf tests, timing harness and calibration on the CPU backend, sizes scaled down ----
  # A student copy (./rooflab release) has no solutions/: no reference answers for tests/dryrun to check the
  # perf tests' counts against. Its dry-run binary is the perf tests alone, and its entry in labs.json says
  # that the rubric's "dryrun" entries (those checks, of the harness and not of the student) are left out.
  set(reference_answers ON)
  foreach(f IN LISTS V_SOLUTION_ANSWERS)
    if(NOT EXISTS "${f}")
      set(reference_answers OFF)
    endif()
  endforeach()
  if(TARGET rooflab::cuda_dryrun AND V_TESTS_PERF AND "dryrun" IN_LIST V_KINDS)
    set(dryrun_checks ${V_TESTS_DRYRUN} ${V_SOLUTION_ANSWERS})
    set(leaves_out "")
    if(NOT reference_answers)
      set(dryrun_checks "")
      set(leaves_out LEAVES_OUT dryrun)
    endif()
    _rooflab_lab_binary(${V_PREFIX}_dryrun dryrun ${V_LAB} "${lab_dir}"
      TESTS ${V_TESTS_PERF} ${dryrun_checks} ${leaves_out} LIBS rooflab::common rooflab::cuda_dryrun)
    _rooflab_emu_kernels(kernels ${V_PREFIX} plain "${lab_dir}" ${V_KERNELS})
    _rooflab_link_emu_kernels(${V_PREFIX}_dryrun plain ${kernels})
    _rooflab_binary_json(b dryrun ${V_PREFIX}_dryrun "" ${kernels})
    if(NOT reference_answers)
      _rooflab_json_quote(q "dryrun")
      _rooflab_json_set_array(b leaves_out "${q}")
    endif()
    list(APPEND bins "${b}")
  elseif(V_TESTS_PERF AND "dryrun" IN_LIST V_KINDS)
    _rooflab_unavailable(bins dryrun)
  endif()

  if(ROOFLAB_HAVE_CUDA)
    # ---- gpu: correctness and performance under nvcc ----
    if((V_TESTS_CORRECTNESS OR V_TESTS_PERF) AND "gpu" IN_LIST V_KINDS)
      _rooflab_lab_binary(${V_PREFIX}_gpu gpu ${V_LAB} "${lab_dir}"
        TESTS ${V_TESTS_CORRECTNESS} ${V_TESTS_PERF} SOURCES ${V_KERNELS} LIBS rooflab::common rooflab::cuda)
      _rooflab_binary_json(b gpu ${V_PREFIX}_gpu "")
    list(APPEND bins "${b}")
    endif()
    # ---- static: facts of the compiled code, no device ----
    if(V_TESTS_STATIC AND "static" IN_LIST V_KINDS)
      set(static_dir "${CMAKE_BINARY_DIR}/labs/static/${V_PREFIX}")
      # A known-bad case is captured for the first architecture only: what it proves (a hint fires, a check of
      # the compiled code fails) does not depend on the architecture, and each capture is 5-10 s of nvcc's
      # front end. The stubs, the solutions and every student's submission get all of ROOFLAB_STATIC_ARCHS.
      set(static_archs ${ROOFLAB_STATIC_ARCHS})
      if(V_VARIANT MATCHES "^st-")
        list(GET ROOFLAB_STATIC_ARCHS 0 static_archs)
      endif()
      # The kernels on the CPU backend too: a static test runs a launcher to learn which kernels it starts, and
      # judges the compiled code of those only (rooflab/testing/static_capture.hpp, launched_by); the capture
      # compares the branches their wrappers compile with nvcc's.
      _rooflab_emu_kernels(kernels ${V_PREFIX} plain "${lab_dir}" ${V_KERNELS})
      _rooflab_capture_static(${V_PREFIX} "${lab_dir}" "${static_dir}" "${V_KERNELS}" "${static_archs}" ${kernels})
      # Where this variant's captures lie, in a source of its own (rooflab/testing/capture_paths.hpp), so that
      # the lab's static tests compile once for every variant, as the other kinds' tests do.
      string(REPLACE ";" "," archs "${static_archs}")
      file(CONFIGURE OUTPUT "${static_dir}/capture_paths.cpp" CONTENT [[
// Generated by rooflab_add_lab (cmake/RooflabLab.cmake): where the build captured this variant's PTX and
// ptxas reports, and for which architectures.
#include <rooflab/testing/capture_paths.hpp>
const char* rooflab::testing::capture_dir() { return R"rooflab(@static_dir@)rooflab"; }
const char* rooflab::testing::capture_archs() { return "@archs@"; }
]] @ONLY)
      _rooflab_lab_binary(${V_PREFIX}_static static ${V_LAB} "${lab_dir}"
        TESTS ${V_TESTS_STATIC} SOURCES "${static_dir}/capture_paths.cpp" LIBS rooflab::common rooflab::inspect)
      add_dependencies(${V_PREFIX}_static ${V_PREFIX}_static_capture)
      _rooflab_link_emu_kernels(${V_PREFIX}_static plain ${kernels})
      _rooflab_binary_json(b static ${V_PREFIX}_static "" ${kernels})
      _rooflab_json_set_string(b capture_dir "${static_dir}")  # the PTX the symbol rule reads too
    list(APPEND bins "${b}")
    endif()
  else()
    # No CUDA compiler: the tests still appear in the results, as owed, with the reason.
    if((V_TESTS_CORRECTNESS OR V_TESTS_PERF) AND "gpu" IN_LIST V_KINDS)
      _rooflab_unavailable(bins gpu)
    endif()
    if(V_TESTS_STATIC AND "static" IN_LIST V_KINDS)
      _rooflab_unavailable(bins static)
    endif()
  endif()

  # ---- ptx: the student files through nvcc's device pass, no binary (the stubs: that the shipped files compile
  # for the GPU). A third of a full nvcc compile (measured: Lab 04's stub, 15 s -> 5 s): no host compiler pass, no
  # ptxas, no test binary to link, with the GPU build's options and warnings as errors. ----
  if(ROOFLAB_HAVE_CUDA AND "ptx" IN_LIST V_KINDS)
    add_library(${V_PREFIX}_ptx OBJECT ${V_KERNELS})
    set_target_properties(${V_PREFIX}_ptx PROPERTIES CUDA_PTX_COMPILATION ON)
    target_include_directories(${V_PREFIX}_ptx PRIVATE "${lab_dir}")
    target_link_libraries(${V_PREFIX}_ptx PRIVATE rooflab::common rooflab::cuda)
    rooflab_warnings(${V_PREFIX}_ptx)
  endif()

  set(targets "")
  foreach(kind IN LISTS ROOFLAB_BINARY_KINDS ITEMS ptx)
    if(TARGET ${V_PREFIX}_${kind})
      list(APPEND targets ${V_PREFIX}_${kind})
    endif()
  endforeach()
  add_custom_target(${V_PREFIX}_all DEPENDS ${targets})
  if(V_EXCLUDE_FROM_ALL)
    set_target_properties(${targets} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()

  set(v "{}")
  _rooflab_json_set_string(v student_dir "${V_STUDENT_DIR}")
  _rooflab_json_set_string(v expect "${V_EXPECT}")
  _rooflab_json_set_array(v binaries ${bins})
  set(${json_out} "${v}" PARENT_SCOPE)
endfunction()

# The lab id and name of a lab folder, from its name and nowhere else: labs/04-gemm is lab "04", named "gemm".
# Sets <prefix>_ID and <prefix>_NAME in the caller; a folder not named NN-name fails the configure.
function(rooflab_lab_id_from_dir prefix dir)
  get_filename_component(dir_name "${dir}" NAME)
  if(NOT dir_name MATCHES "^([0-9][0-9])-([a-z0-9]+(-[a-z0-9]+)*)$")
    message(FATAL_ERROR "${dir}: a lab folder is named NN-name (two digits, a dash, then lower-case letters, "
                        "digits and dashes), as labs/04-gemm; its lab id and name are read from that name")
  endif()
  set(${prefix}_ID "${CMAKE_MATCH_1}" PARENT_SCOPE)
  set(${prefix}_NAME "${CMAKE_MATCH_2}" PARENT_SCOPE)
endfunction()

# rooflab_add_lab(TITLE "..." STUDENT_FILES kernels.cu answers.cpp), called from labs/NN-name/CMakeLists.txt:
# the lab id (NN) and name come from the folder's name (rooflab_lab_id_from_dir). The binaries get the id as
# ROOFLAB_LAB_ID ("04"); the grader reads both from build/rooflab/labs.json.
# A lab's tests are found by name: tests/analytic.cpp, correctness.cpp, perf.cpp, static.cpp, race.cpp,
# dryrun.cpp and traffic.cpp, each kind built when its file exists. TESTS_<KIND> files replace that default for a lab whose
# tests of a kind are split over several files. With ROOFLAB_LABS set (a list of ids), a lab not in it
# registers nothing (a build of a few labs: the new-lab check builds only the lab it scaffolds).
function(rooflab_add_lab)
  cmake_parse_arguments(L "" "TITLE" "STUDENT_FILES;${ROOFLAB_TEST_FILE_KEYWORDS}" ${ARGN})
  if(L_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rooflab_add_lab(${CMAKE_CURRENT_SOURCE_DIR}): unknown arguments ${L_UNPARSED_ARGUMENTS} "
                        "(the lab id and name are the folder's name, not arguments)")
  endif()
  rooflab_lab_id_from_dir(L "${CMAKE_CURRENT_SOURCE_DIR}")
  get_property(taken GLOBAL PROPERTY ROOFLAB_LAB_DIRS)
  foreach(other IN LISTS taken)
    rooflab_lab_id_from_dir(O "${other}")
    if(O_ID STREQUAL L_ID)
      message(FATAL_ERROR "${CMAKE_CURRENT_SOURCE_DIR}: lab id ${L_ID} is taken by ${other}")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY ROOFLAB_LAB_DIRS "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT ROOFLAB_LABS STREQUAL "" AND NOT L_ID IN_LIST ROOFLAB_LABS)
    return()
  endif()
  set(dir_name "${L_ID}-${L_NAME}")
  set(lab_dir "${PROJECT_SOURCE_DIR}/labs/${dir_name}")
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${dir_name}")
  foreach(kind IN LISTS ROOFLAB_TEST_FILE_KINDS)
    string(TOLOWER "${kind}" file)
    if(NOT L_TESTS_${kind} AND EXISTS "${lab_dir}/tests/${file}.cpp")
      set(L_TESTS_${kind} "tests/${file}.cpp")
    endif()
    list(TRANSFORM L_TESTS_${kind} PREPEND "${lab_dir}/")
  endforeach()
  if(NOT EXISTS "${lab_dir}/rubric.json")
    message(FATAL_ERROR "lab ${L_ID}: ${lab_dir}/rubric.json is missing (every graded test with its kind and points)")
  endif()
  # Hidden tests go into every variant's binaries, like the public ones.
  _rooflab_lab_rubric(${L_ID} "${lab_dir}" hidden)
  foreach(kind ANALYTIC CORRECTNESS PERF STATIC RACE)
    list(APPEND L_TESTS_${kind} ${hidden_${kind}})
  endforeach()

  # Which variants to build: always the chosen student files; with ROOFLAB_SELFTEST also the stubs,
  # the solutions and every known-bad submission in solutions/NN/selftest/.
  # A variant whose files are the main one's is not built twice: main takes over its expectation.
  set(variants "main")
  set(variant_dir_main "${ROOFLAB_STUDENT_DIR}/${dir_name}")
  set(variant_fallback_main "${lab_dir}")
  set(variant_expect_main "")
  set(variant_kinds_main ${ROOFLAB_BINARY_KINDS})
  file(REAL_PATH "${variant_dir_main}" main_real)
  if(ROOFLAB_SELFTEST)
    foreach(special stubs solutions)
      if(special STREQUAL "stubs")
        set(dir "${lab_dir}")
        set(expect "zero")
      else()
        set(dir "${solution_dir}")
        set(expect "full")
      endif()
      file(REAL_PATH "${dir}" real)
      if(real STREQUAL main_real)
        set(variant_expect_main "${expect}")
      else()
        list(APPEND variants ${special})
        set(variant_dir_${special} "${dir}")
        set(variant_fallback_${special} "${dir}")
        set(variant_expect_${special} "${expect}")
        # Stubs also go through nvcc: the shipped labs/ files must compile for the GPU ("ptx": nvcc's device pass
        # alone, below; their host code is compiled by the CPU backend's build with the same warnings).
        if(special STREQUAL "stubs")
          set(variant_kinds_${special} analytic emu race ptx)
        else()
          set(variant_kinds_${special} analytic emu race)
        endif()
      endif()
    endforeach()
    # Known-bad submissions: each selftest/<case>/expect.json patches the solutions (so a case is one bug,
    # not a copy of the solution that drifts) and names the tests it must lose.
    file(GLOB cases LIST_DIRECTORIES true "${solution_dir}/selftest/*")
    list(SORT cases)
    foreach(case_dir IN LISTS cases)
      if(IS_DIRECTORY "${case_dir}")
        get_filename_component(case "${case_dir}" NAME)
        set(generated "${CMAKE_BINARY_DIR}/selftest/${dir_name}/${case}")
        _rooflab_apply_selftest_patches("${case_dir}/expect.json" "${solution_dir}" "${generated}" stale)
        if(stale)
          # A case out of date with a solution being edited: the tree still configures and builds (the other
          # cases, the other labs), and this case's test fails saying why.
          message(WARNING "lab ${L_ID}, known-bad case ${case} left out: ${stale}")
          if(BUILD_TESTING)
            add_test(NAME lab${L_ID}.selftest.st-${case} COMMAND ${CMAKE_COMMAND} -E echo "${stale}")
            set_tests_properties(lab${L_ID}.selftest.st-${case} PROPERTIES LABELS "lab${L_ID};selftest"
                                 FAIL_REGULAR_EXPRESSION "must match exactly once")
          endif()
          continue()
        endif()
        list(APPEND variants "st-${case}")
        set(variant_dir_st-${case} "${generated}")
        set(variant_fallback_st-${case} "${solution_dir}")
        set(variant_expect_st-${case} "${case_dir}/expect.json")
        # "kinds": the test binaries the case needs (default analytic, emu, race): fewer builds in CI. A case
        # that skips work lists "dryrun" too: its perf tests' output checks must fail on the CPU backend.
        # "build": "fails": a submission that does not compile; its binaries stay out of the default build
        # and `rooflab selftest` builds them, expecting the failure.
        file(READ "${case_dir}/expect.json" case_json)
        string(JSON nkinds ERROR_VARIABLE no_kinds LENGTH "${case_json}" kinds)
        if(no_kinds)
          set(variant_kinds_st-${case} analytic emu race)
        else()
          set(variant_kinds_st-${case} "")
          math(EXPR klast "${nkinds} - 1")
          foreach(k RANGE ${klast})
            string(JSON kind GET "${case_json}" kinds ${k})
            list(APPEND variant_kinds_st-${case} ${kind})
          endforeach()
        endif()
        string(JSON build_mode ERROR_VARIABLE no_build GET "${case_json}" build)
        if(NOT no_build AND build_mode STREQUAL "fails")
          set(variant_exclude_st-${case} ON)
        endif()
        # "coverage": "incomplete": a kernel instance the case defines is launched by no test, so the coverage
        # check the labs' forward emu CTest makes of the solutions must fail on it (a test of that check).
        string(JSON coverage ERROR_VARIABLE no_coverage GET "${case_json}" coverage)
        if(NOT no_coverage AND coverage STREQUAL "incomplete")
          set(variant_coverage_st-${case} ON)
          set(case_json_st-${case} "${case_json}")
        endif()
      endif()
    endforeach()
  endif()

  set(kernels_rel "")
  set(answers_rel "")
  foreach(f IN LISTS L_STUDENT_FILES)
    if(f MATCHES "\\.cu$")
      list(APPEND kernels_rel "${f}")
    else()
      list(APPEND answers_rel "${f}")
    endif()
  endforeach()
  # The dry run checks the perf tests' counts against the reference answers, whatever the student wrote.
  set(solution_answers "${answers_rel}")
  list(TRANSFORM solution_answers PREPEND "${solution_dir}/")
  _rooflab_lab_figures(${L_ID} "${lab_dir}" ${solution_answers})

  set(lab_json "{}")
  _rooflab_json_set_string(lab_json id "${L_ID}")
  _rooflab_json_set_string(lab_json name "${L_NAME}")
  _rooflab_json_set_string(lab_json title "${L_TITLE}")
  _rooflab_json_set_string(lab_json dir "${lab_dir}")
  _rooflab_rubric_path(rubric ${L_ID})
  _rooflab_json_set_string(lab_json rubric "${rubric}")
  set(quoted_files "")
  foreach(f IN LISTS L_STUDENT_FILES)
    _rooflab_json_quote(q "${f}")
    list(APPEND quoted_files "${q}")
  endforeach()
  _rooflab_json_set_array(lab_json student_files ${quoted_files})
  string(JSON lab_json SET "${lab_json}" variants "{}")
  foreach(variant IN LISTS variants)
    if(variant STREQUAL "main")
      set(prefix "lab${L_ID}")
    else()
      string(MAKE_C_IDENTIFIER "lab${L_ID}_${variant}" prefix)
    endif()
    _rooflab_variant_files(kernels "${variant_dir_${variant}}" "${variant_fallback_${variant}}" ${kernels_rel})
    _rooflab_variant_files(answers "${variant_dir_${variant}}" "${variant_fallback_${variant}}" ${answers_rel})
    set(vjson "")
    set(exclude "")
    if(variant_exclude_${variant})
      set(exclude EXCLUDE_FROM_ALL)
    endif()
    set(test_files "")
    foreach(kind IN LISTS ROOFLAB_TEST_FILE_KINDS)
      list(APPEND test_files TESTS_${kind} ${L_TESTS_${kind}})
    endforeach()
    set(coverage_case "")
    if(variant_coverage_${variant})
      set(coverage_case COVERAGE_CASE)
    endif()
    _rooflab_add_variant(vjson ${exclude} ${coverage_case}
      LAB ${L_ID} LAB_DIR "${lab_dir}" VARIANT ${variant} PREFIX ${prefix}
      STUDENT_DIR "${variant_dir_${variant}}" EXPECT "${variant_expect_${variant}}"
      KINDS ${variant_kinds_${variant}} KERNELS ${kernels} ANSWERS ${answers} SOLUTION_ANSWERS ${solution_answers}
      ${test_files})
    string(JSON lab_json SET "${lab_json}" variants "${variant}" "${vjson}")
    if(variant STREQUAL "main")
      _rooflab_register_ctests(${L_ID} ${prefix} "${variant_dir_main}")
    endif()
    if(ROOFLAB_SELFTEST AND NOT variant_expect_${variant} STREQUAL "")
      add_test(NAME lab${L_ID}.selftest.${variant}
               COMMAND rooflab-cli selftest --build-dir "${CMAKE_BINARY_DIR}" --lab ${L_ID} --variant ${variant})
      set_tests_properties(lab${L_ID}.selftest.${variant} PROPERTIES LABELS "lab${L_ID};selftest" TIMEOUT 900)
      if(variant STREQUAL "main")
        # It runs every kind's binary of the main variant (the direct runs are left out: _rooflab_register_ctests),
        # so `ctest -L dryrun` (or -L race, ...) still finds the labs' runs of that kind.
        set_property(TEST lab${L_ID}.selftest.main APPEND PROPERTY LABELS analytic emu race traffic dryrun static)
      endif()
      if(variant_exclude_${variant})
        # It runs the build tool in this tree: never beside another test that does (one lock for all of them,
        # rooflab_build_tree), but beside the many that only run binaries, rather than alone at the end.
        set_tests_properties(lab${L_ID}.selftest.${variant} PROPERTIES RESOURCE_LOCK rooflab_build_tree)
      endif()
    endif()
    # The case's code that no test reaches must fail the check CI makes of the solutions: kernel instances
    # never launched, and (where the coverage binary is built) lines and branches never run; "coverage_reports"
    # in expect.json names what the report must say (the line, say). A case that must lose the lines hint
    # (LabNNCoverage.EveryLineTested) has that run already: its selftest runs the coverage binary the same way
    # and reads the report the check writes (grader/selftest.cpp), so it gets no second run here.
    set(lines_case OFF)
    if(variant_coverage_${variant})
      string(JSON nfail ERROR_VARIABLE no_fail LENGTH "${case_json_${variant}}" must_fail)
      if(NOT no_fail AND nfail GREATER 0)
        math(EXPR flast "${nfail} - 1")
        foreach(f RANGE ${flast})
          string(JSON failing GET "${case_json_${variant}}" must_fail ${f})
          if(failing MATCHES "Coverage[.]EveryLineTested$")
            set(lines_case ON)
          endif()
        endforeach()
      endif()
    endif()
    if(variant_coverage_${variant} AND NOT lines_case AND TARGET ${prefix}_emu)
      set(binary ${prefix}_emu)
      if(TARGET ${prefix}_coverage)
        set(binary ${prefix}_coverage)
      endif()
      string(JSON reports ERROR_VARIABLE no_reports GET "${case_json_${variant}}" coverage_reports)
      if(no_reports)
        set(reports "that no test (launched|ran)")
      endif()
      add_test(NAME lab${L_ID}.selftest.${variant}.coverage COMMAND ${binary})
      set_tests_properties(lab${L_ID}.selftest.${variant}.coverage PROPERTIES LABELS "lab${L_ID};selftest" TIMEOUT 600
        ENVIRONMENT "ROOFLAB_EMU_COVERAGE=1;ROOFLAB_EMU_QUIET=1;ROOFLAB_EMU_SCHEDULE=reverse"
        PASS_REGULAR_EXPRESSION "${reports}")
    endif()
  endforeach()

  if(ROOFLAB_SELFTEST AND L_TESTS_ANALYTIC)
    _rooflab_seed_audit(${L_ID} "${lab_dir}" "${solution_dir}" "${L_TESTS_ANALYTIC}")
  endif()

  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${lab_dir}/rubric.json")
  set(entry "${lab_json}")
  set_property(GLOBAL APPEND PROPERTY ROOFLAB_LAB_JSON "${entry}")
endfunction()

# The lab's figures for the grader's handout figures test (grader/tests/test_handout_figures.cpp, which
# creates rooflab_handout_figures): tests/figures.cpp, the adapters from a handout's marks to the lab's
# functions (rooflab/testing/figures.hpp), with the reference answers they call. A lab without the file offers
# no figures; a student copy (no solutions/) and a build of labs only (no grader) build none. Out of the
# default build: only the test's binary needs the objects. One translation unit (a unity build of the two
# files, so the figures file keeps its helpers in an anonymous namespace): the headers both include are most
# of either's compile, so the adapters cost little beyond the answers (measured one at a time: 1.60 s for
# answers.cpp alone, 1.65 s for both; a second translation unit would add about 1.5 s per lab).
function(_rooflab_lab_figures lab lab_dir)
  set(figures "${lab_dir}/tests/figures.cpp")
  if(NOT TARGET rooflab_handout_figures OR NOT EXISTS "${figures}")
    return()
  endif()
  foreach(answers IN LISTS ARGN)
    if(NOT EXISTS "${answers}")
      return()
    endif()
  endforeach()
  add_library(lab${lab}_figures OBJECT EXCLUDE_FROM_ALL ${ARGN} "${figures}")
  target_include_directories(lab${lab}_figures PRIVATE "${lab_dir}")
  target_link_libraries(lab${lab}_figures PRIVATE rooflab::common)
  target_compile_definitions(lab${lab}_figures PRIVATE ROOFLAB_LAB_ID="${lab}")
  set_target_properties(lab${lab}_figures PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
  rooflab_warnings(lab${lab}_figures)
  target_sources(rooflab_handout_figures INTERFACE $<TARGET_OBJECTS:lab${lab}_figures>)
endfunction()

# lab<NN>.analytic.seeded: every analytic question is asked of inputs drawn from the seed, not only of
# published ones a table could hold (common/src/seed_audit.cpp). The reference answers are compiled with
# -finstrument-functions (the headers' inline functions excluded), so the audit binary knows which answer
# function each check was about; the tests run as they are.
function(_rooflab_seed_audit lab lab_dir solution_dir tests)
  set(answers lab${lab}_seed_audit_answers)
  add_library(${answers} OBJECT "${solution_dir}/answers.cpp")
  target_include_directories(${answers} PRIVATE "${lab_dir}")
  target_link_libraries(${answers} PRIVATE rooflab::common)
  target_compile_options(${answers} PRIVATE -finstrument-functions -finstrument-functions-exclude-file-list=.h,/usr/)
  rooflab_warnings(${answers})
  _rooflab_lab_binary(lab${lab}_seed_audit analytic ${lab} "${lab_dir}" TESTS ${tests}
    SOURCES $<TARGET_OBJECTS:${answers}> $<TARGET_OBJECTS:rooflab_seed_audit_hooks> LIBS rooflab::common)
  set_target_properties(lab${lab}_seed_audit PROPERTIES ENABLE_EXPORTS ON)  # dladdr names the questions
  add_test(NAME lab${lab}.analytic.seeded
           COMMAND rooflab-seed-audit --lab ${lab} --binary $<TARGET_FILE:lab${lab}_seed_audit>
                   --object $<TARGET_OBJECTS:${answers}>)
  set_tests_properties(lab${lab}.analytic.seeded PROPERTIES LABELS "lab${lab};analytic;audit" TIMEOUT 300)
endfunction()

# CTest entries for the main variant: labels carry the lab and the kind. The CPU-backend tests run under
# the three thread schedules (a missing __syncthreads shows up as a result that changes with the order).
function(_rooflab_register_ctests lab prefix student_dir)
  # With the selftest (CI), lab<NN>.selftest.main runs every one of these binaries of the main variant, in every
  # thread order and in grade's sandbox, and fails unless each test passes with full marks: the direct runs
  # below would repeat it (about 3 CPU-minutes of CI). They stay where there is no selftest (the solutions
  # preset), and the binaries run by hand as before. The runs nothing else makes stay: the coverage binary's,
  # the seeded analytic run, the GPU binary's.
  if(ROOFLAB_SELFTEST)
    if(TARGET ${prefix}_coverage)
      set(allow "${student_dir}/coverage.json")  # none there: nothing allowed
      add_test(NAME lab${lab}.emu.coverage COMMAND ${prefix}_coverage)
      set_tests_properties(lab${lab}.emu.coverage PROPERTIES LABELS "lab${lab};emu" TIMEOUT 600
        ENVIRONMENT
          "ROOFLAB_EMU_SCHEDULE=reverse;ROOFLAB_EMU_QUIET=1;ROOFLAB_EMU_COVERAGE=1;ROOFLAB_COVERAGE_ALLOW=${allow}")
    elseif(TARGET ${prefix}_emu)
      # No gcov: the launched-instances check alone, in the reverse order (2 SMs: the grid loops go round).
      add_test(NAME lab${lab}.emu.coverage COMMAND ${prefix}_emu)
      set_tests_properties(lab${lab}.emu.coverage PROPERTIES LABELS "lab${lab};emu" TIMEOUT 600
        ENVIRONMENT "ROOFLAB_EMU_SCHEDULE=reverse;ROOFLAB_EMU_QUIET=1;ROOFLAB_EMU_COVERAGE=1")
    endif()
    if(TARGET ${prefix}_gpu)
      add_test(NAME lab${lab}.gpu COMMAND ${prefix}_gpu)
      set_tests_properties(lab${lab}.gpu PROPERTIES LABELS "lab${lab};gpu;perf" TIMEOUT 900 SKIP_RETURN_CODE 77)
    endif()
    return()
  endif()
  if(TARGET ${prefix}_analytic)
    add_test(NAME lab${lab}.analytic COMMAND ${prefix}_analytic)
    set_tests_properties(lab${lab}.analytic PROPERTIES LABELS "lab${lab};analytic" TIMEOUT 300)
  endif()
  if(TARGET ${prefix}_emu)
    # The grader's three thread orders (the backend pretends few SMs under reverse and random).
    foreach(schedule IN LISTS ROOFLAB_EMU_SCHEDULES)
      string(REGEX REPLACE ":.*" "" sname "${schedule}")
      add_test(NAME lab${lab}.emu.${sname} COMMAND ${prefix}_emu)
      set_tests_properties(lab${lab}.emu.${sname} PROPERTIES LABELS "lab${lab};emu" TIMEOUT 600
        ENVIRONMENT "ROOFLAB_EMU_SCHEDULE=${schedule};ROOFLAB_EMU_QUIET=1")
    endforeach()
    # A run that also fails when a kernel instance the binary holds was launched by no test (a launcher's
    # branch no test takes; common/src/test_main.cpp): the tests must cover every value a launcher accepts.
    # Where gcov is there, lab<NN>.emu.coverage is that run, of the coverage binary, which also fails on a line
    # or branch outcome of the student's .cu files no test reached, but those the student directory's
    # coverage.json allows with a reason (the reference solutions': rooflab/detail/coverage.hpp). The reverse
    # order's pretend GPU has 2 SMs, so the tests' sizes reach the loops that go round a grid.
    set_property(TEST lab${lab}.emu.forward APPEND PROPERTY ENVIRONMENT "ROOFLAB_EMU_COVERAGE=1")
  endif()
  if(TARGET ${prefix}_race)
    add_test(NAME lab${lab}.race COMMAND ${prefix}_race)
    set_tests_properties(lab${lab}.race PROPERTIES LABELS "lab${lab};race" TIMEOUT 600 ENVIRONMENT "ROOFLAB_EMU_QUIET=1")
  endif()
  if(TARGET ${prefix}_traffic)
    add_test(NAME lab${lab}.traffic COMMAND ${prefix}_traffic)
    set_tests_properties(lab${lab}.traffic PROPERTIES LABELS "lab${lab};traffic" TIMEOUT 300 ENVIRONMENT "ROOFLAB_EMU_QUIET=1")
  endif()
  if(TARGET ${prefix}_gpu)
    add_test(NAME lab${lab}.gpu COMMAND ${prefix}_gpu)
    set_tests_properties(lab${lab}.gpu PROPERTIES LABELS "lab${lab};gpu;perf" TIMEOUT 900 SKIP_RETURN_CODE 77)
  endif()
  if(TARGET ${prefix}_dryrun)
    # Its own report and ceilings cache in the build tree: never the user's, never shared between labs.
    add_test(NAME lab${lab}.dryrun COMMAND ${prefix}_dryrun)
    set_tests_properties(lab${lab}.dryrun PROPERTIES LABELS "lab${lab};dryrun" TIMEOUT 600
      ENVIRONMENT "ROOFLAB_EMU_QUIET=1;ROOFLAB_REPORT_DIR=${CMAKE_BINARY_DIR}/dryrun/lab${lab}/report;ROOFLAB_CACHE_DIR=${CMAKE_BINARY_DIR}/dryrun/lab${lab}/cache")
  endif()
  if(TARGET ${prefix}_static)
    add_test(NAME lab${lab}.static COMMAND ${prefix}_static)
    set_tests_properties(lab${lab}.static PROPERTIES LABELS "lab${lab};static" TIMEOUT 300)
  endif()
endfunction()

# Writes build/rooflab/labs.json: what the grader reads (labs, student files, variants, binaries).
function(rooflab_write_lab_manifest)
  get_property(entries GLOBAL PROPERTY ROOFLAB_LAB_JSON)
  set(m "{}")
  _rooflab_json_set_string(m source_dir "${PROJECT_SOURCE_DIR}")
  _rooflab_json_set_string(m build_dir "${CMAKE_BINARY_DIR}")
  _rooflab_json_set_string(m student_dir "${ROOFLAB_STUDENT_DIR}")
  if(ROOFLAB_HAVE_CUDA)
    string(JSON m SET "${m}" have_cuda true)
  else()
    string(JSON m SET "${m}" have_cuda false)
  endif()
  if(TARGET rooflab_emu)
    string(JSON m SET "${m}" have_emu true)
  else()
    string(JSON m SET "${m}" have_emu false)
  endif()
  _rooflab_json_set_array(m labs ${entries})
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/rooflab/labs.json" CONTENT "${m}\n")
endfunction()
