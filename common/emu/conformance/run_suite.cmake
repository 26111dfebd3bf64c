# cmake -DPROGRAMS=a;b;c -P run_suite.cmake: runs each conformance program under the three schedules (each
# must exit 0: its kernels matched its host reference), and the misaligned-float4 program once more per kernel
# with misaligned input, where the backend's report must name the kernel, block, thread, address, alignment and line,
# and the asynchronous-copy program with its known-bad kernel (below).
# Every failure is listed, then the script fails.
set(failures "")

function(run_program out_code out_text program schedule)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ROOFLAB_EMU_QUIET=1 ROOFLAB_EMU_SCHEDULE=${schedule}
                          "${program}" ${ARGN}
                  RESULT_VARIABLE code OUTPUT_VARIABLE text ERROR_VARIABLE text TIMEOUT 60)
  set(${out_code} "${code}" PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

set(PROGRAMS_ALL "${PROGRAMS}")
foreach(program IN LISTS PROGRAMS)
  get_filename_component(name "${program}" NAME)
  foreach(schedule forward reverse random)
    run_program(code text "${program}" ${schedule})
    if(NOT code STREQUAL "0")
      list(APPEND failures "${name} (${schedule}) exited with ${code}:\n${text}")
    elseif(text MATCHES "rooflab emu: [^\n]*may still be")
      # A correct program (streams.cu's chunks share allocations, not bytes) has no race between streams.
      list(APPEND failures "${name} (${schedule}) reported a race between streams in its correct run:\n${text}")
    endif()
  endforeach()
  message(STATUS "${name}: ${text}")
endforeach()

# The misaligned loads: reported, with where and why (a GPU stops the kernel with cudaErrorMisalignedAddress),
# whether the float4 pointer is cast where it is indexed (the rewriter's check, naming the cast), kept in a
# variable, or made by a C-style cast (the alignment sanitizer's check at the access: line and column).
list(FILTER PROGRAMS INCLUDE REGEX "misaligned_float4")
set(misaligned_cases "sum4_kernel@reinterpret_cast<const float4\\*> at [^\n]*misaligned_float4.cu:21"
    "sum4_held_kernel@held@(a load of|an access to) const float4 at [^\n]*misaligned_float4.cu:32:[0-9]+"
    "sum4_c_cast_kernel@c-cast@(a load of|an access to) const float4 at [^\n]*misaligned_float4.cu:42:[0-9]+")
foreach(program IN LISTS PROGRAMS)
  foreach(case IN LISTS misaligned_cases)
    string(REPLACE "@" ";" case "${case}")  # kernel@[argument@]what the report says of the access
    list(LENGTH case fields)
    list(GET case 0 kernel)
    list(GET case -1 access)
    set(which "")
    if(fields EQUAL 3)
      list(GET case 1 which)
    endif()
    run_program(code text "${program}" forward --misaligned ${which})
    set(want "${kernel}[^\n]*, block \\(0,0,0\\), thread \\(0,0,0\\)[^\n]*misaligned address 0x[0-9a-f]+ \\(4 bytes past a 16-byte boundary\\)[^\n]*${access}")
    if(code STREQUAL "0" OR NOT text MATCHES "${want}")
      list(APPEND failures "misaligned float4 load (${kernel}): want a failing run whose report matches\n  ${want}\ngot exit ${code}:\n${text}")
    endif()
  endforeach()
endforeach()

# Asynchronous copies touched before their wait: a write is reported with the copy's line and the wait's; a
# read gets the poisoned bytes, so the program's own check fails. A barrier wait that no arrival can end is
# reported with its line.
set(async_programs "${PROGRAMS_ALL}")
list(FILTER async_programs INCLUDE REGEX "async_copy_tiles")
foreach(program IN LISTS async_programs)
  run_program(code text "${program}" forward --write-before-wait)
  set(want "row_sum_cg_kernel[^\n]*, block \\([0-9]+,0,0\\), thread \\([0-9]+,0,0\\): shared memory written while an asynchronous copy was filling it[^\n]*copy issued at [^\n]*async_copy_tiles.cu:123 [^\n]*before the wait that completes it \\([^\n]*async_copy_tiles.cu:12[68]\\)")
  if(code STREQUAL "0" OR NOT text MATCHES "${want}")
    list(APPEND failures "async copy written before its wait: want a failing run whose report matches\n  ${want}\ngot exit ${code}:\n${text}")
  endif()
  run_program(code text "${program}" forward --barrier-count-too-high)
  set(want "barrier_count_too_high_kernel[^\n]*, block \\(0,0,0\\), thread \\([0-9]+,0,0\\): cuda::barrier wait at [^\n]*async_copy_tiles.cu:252 can never complete")
  if(code STREQUAL "0" OR NOT text MATCHES "${want}")
    list(APPEND failures "a cuda::barrier no phase of which completes: want a failing run whose report matches\n  ${want}\ngot exit ${code}:\n${text}")
  endif()
  run_program(code text "${program}" random --read-before-wait)
  if(code STREQUAL "0" OR NOT text MATCHES "cooperative_groups::memcpy_async: \\[0\\] = ")
    list(APPEND failures "async copy read before its wait: want wrong sums (the bytes are poison until the wait), got exit ${code}:\n${text}")
  endif()
endforeach()

# expect_failing_run(PATTERN WANT WHAT ARGS...): each program matching PATTERN, run once under the forward
# schedule with ARGS, must fail with output matching WANT; else WHAT joins the failures.
function(expect_failing_run pattern want what)
  set(programs "${PROGRAMS_ALL}")
  list(FILTER programs INCLUDE REGEX "${pattern}")
  foreach(program IN LISTS programs)
    run_program(code text "${program}" forward ${ARGN})
    if(code STREQUAL "0" OR NOT text MATCHES "${want}")
      list(APPEND failures "${what}: want a failing run whose output matches\n  ${want}\ngot exit ${code}:\n${text}")
    endif()
  endforeach()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

# Warp collectives may name lanes that have exited (the file's kernels match under every schedule, above);
# a shuffle that reads one is reported, naming the shuffle's line and the lane read.
expect_failing_run("exited_lanes" "reads_exited_kernel[^\n]*, block \\(0,0,0\\), thread \\([0-9]+,0,0\\): __shfl_down_sync at [^\n]*exited_lanes.cu:45 reads the value of lane (1[2-9]|2[0-9]|3[01]) [^\n]*that lane has exited"
                   "a shuffle reading an exited lane" --reads-exited)
# A synchronous copy that nothing orders after a kernel on a cudaStreamNonBlocking stream: reported, naming
# the kernel and its stream, and given poison (the program's own check then fails: MISMATCH).
expect_failing_run("emu_conf_streams" "a synchronous copy reads 4000 bytes at 0x[0-9a-f]+ that kernel produce\\(float\\*, int\\) on stream #[0-9]+ \\(cudaStreamNonBlocking\\) may still be writing it on a GPU.*MISMATCH|MISMATCH.*a synchronous copy reads 4000 bytes"
                   "a copy not ordered after a kernel on another stream" --unsynchronized)
# An asynchronous copy into pinned host memory, read before the host knows it finished: the bytes are not there
# yet (0xCD), so the program's own check fails, as it may on a GPU.
expect_failing_run("emu_conf_streams" "x read before its copy finished\\[0\\] = -4\\.3[0-9]*e\\+08, want 0.*MISMATCH"
                   "a host read of pinned memory before its asynchronous copy finished" --read-before-sync)
# Chunks on streams of their own whose kernels also read the next chunk's first element, which that chunk's
# stream may still be copying in: reported with both operations and the bytes (the sums then come out wrong).
expect_failing_run("emu_conf_streams" "cudaMemcpyAsync on stream #[0-9]+ \\(cudaStreamNonBlocking\\) may write memory that kernel smooth\\(float const\\*, float\\*, int, int\\) on stream #[0-9]+ \\(cudaStreamNonBlocking\\) may still be reading on a GPU \\(bytes 16384 to 20479 of a 65536-byte allocation\\).*MISMATCH"
                   "chunks on streams of their own that read the next chunk's first element" --halo)
# __trap() in a kernel stops it, reported with the thread and the line.
expect_failing_run("own_project" "trap_kernel[^\n]*, block \\(0,0,0\\), thread \\(3,0,0\\): __trap\\(\\) at [^\n]*host_idioms.cu:58: the kernel stops here"
                   "__trap() in a kernel" --trap)

if(failures)
  string(JOIN "\n" report ${failures})
  message(FATAL_ERROR "${report}")
endif()
