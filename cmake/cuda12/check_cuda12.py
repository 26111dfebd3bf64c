#!/usr/bin/env python3
"""CUDA 12 compatibility: compile the host and CPU-backend code of every lab, solution and calibration
against the CUDA 12.4 headers (the oldest toolkit rooflab supports) instead of the toolkit it was built with.

    check_cuda12.py --build-dir B --cuda-include DIR [--jobs N]

Every C++ translation unit in B/compile_commands.json that includes the toolkit (-I DIR) is compiled again
with -fsyntax-only and the 12.4 headers in DIR's place (the known-bad selftest variants, the race builds, the
dry runs' copies of the perf tests and of the rewritten kernels are skipped: the same sources as the main variant
or the GPU build; the stubs, whose launchers are the solutions'; and, as the build recorded their headers, units
that include no toolkit header). An API
newer than 12.4 used without a CUDART_VERSION guard is then an error here. Students' rented images often still have CUDA 12 toolkits
(drivers 535-570 run no CUDA 13 binary); nvcc 12 itself cannot be installed here, so the .cu files' device
code is not compiled against 12.4, only their host compilation on the CPU backend.

Exit codes: 0 all compiled, 1 some did not (the first errors are printed), 77 skipped (PyPI unreachable).
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def retarget(args, cuda_include, cuda12_include):
    """The compile command with the CUDA 12.4 headers in place of the toolkit's, syntax only."""
    out, skip = [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-MF", "-MT"):
            skip = 1
            continue
        if a in ("-MD", "-Winvalid-pch", "-Werror=invalid-pch") or (a.startswith("-include") and a.endswith("rooflab_emu_prelude.hpp")):
            continue  # the precompiled CPU-backend prelude was made with the build's toolkit headers: parse them
        if a == "-I" + cuda_include:
            a = "-I" + cuda12_include
        elif a in ("-I", "-isystem") and i + 1 < len(args) and args[i + 1] == cuda_include:
            out += [a, cuda12_include]
            skip = 1
            continue
        out.append(a)
    return out + ["-fsyntax-only"]


def entries_prelude_headers(entries):
    """The plain flavour's prelude header that the rewritten kernel files are given (-include<path>)."""
    for e in entries:
        for a in (e["arguments"] if "arguments" in e else shlex.split(e["command"])):
            if a.startswith("-include") and a.endswith("/plain/rooflab_emu_prelude.hpp"):
                yield a[len("-include"):]


def toolkit_users(build_dir, cuda_include):
    """The object files whose headers, as the last build recorded them (`ninja -t deps`), include one of the
    toolkit's; None when the tree cannot say (then every translation unit is checked). Host code that only
    has the toolkit on its include path (the grader) has nothing to check against other headers."""
    try:
        out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    roots = tuple({cuda_include.rstrip("/") + "/", os.path.realpath(cuda_include) + "/"})
    users, current = set(), None
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = line.split(": #deps")[0]
        elif current is not None and line.strip().startswith(roots):
            users.add(current)
    return users or None


# What most translation units parse before their own code, precompiled once (against the 12.4 headers where
# it includes the toolkit) and given to each unit of its group with -include: the CPU backend's prelude for the
# rewritten kernel files (their own first #include, the same header), and the test frameworks' headers for the
# test sources (which include them themselves), with the harness's test headers, which reach the toolkit (checked
# against 12.4 once per group, in the header's own compile, rather than once per unit). About half of a
# syntax-only compile. One header per group of
# units with the same options (precompiled_groups); should GCC still find one unfit for a unit, it reads the
# header's text instead: slower, the same result. The test header only reaches units that use GoogleTest, so
# its macros meet no code without them.
TEST_HEADERS = """#include <gtest/gtest.h>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/timing.hpp>
#include <rooflab/specs.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>
"""


# Macros that differ between units without reaching the precompiled headers: left out of a header's own
# compile, so one header serves every lab and target of a group (GCC takes it when a unit defines more macros
# that the header's text never reads; a unit whose options differ otherwise makes its own group).
UNIT_MACROS = re.compile(r"^-D(ROOFLAB_LAB_ID|\w+_EXPORTS)(=|$)")


def options_key(unit):
    """A unit's options that a precompiled header must share: all but its paths, output and own macros."""
    src, _, args = unit
    key, skip = [], 0
    for a in args[1:]:
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-iquote", "-isystem", "-I", "-include"):
            skip = 1
            continue
        if a in ("-c", "-fsyntax-only", src) or a.startswith(("-I", "-include")) or UNIT_MACROS.match(a):
            continue
        key.append(a)
    return tuple(key)


def precompile(units, name, header_text, pch_dir):
    """Precompiles header_text with the options of `units` (one group, options_key alike) and prepends it to
    each of them; returns a line saying what it did (a failure only costs the time it would have saved)."""
    os.makedirs(pch_dir, exist_ok=True)
    header = os.path.join(pch_dir, f"{name}.hpp")
    with open(header, "w") as f:
        f.write(header_text)
    src, cwd, args = units[0]
    options = [a for a in args if a not in ("-c", "-fsyntax-only", src) and not UNIT_MACROS.match(a)]
    code, text = run(options + ["-x", "c++-header", header, "-o", header + ".gch"], cwd=cwd)
    if code != 0:
        return f"{name}: not precompiled ({text.strip().splitlines()[-1] if text.strip() else code}), parsed per unit"
    for _, _, unit in units:
        unit[1:1] = ["-include", header]
    return f"{name}: precompiled once for {len(units)} units"


def precompiled_groups(units, name, header_text, smallest=5):
    """The groups of units whose options are alike, each large enough to repay its header's compile."""
    groups = collections.defaultdict(list)
    for u in units:
        groups[options_key(u)].append(u)
    return [(f"{name}{k}", g, header_text) for k, g in enumerate(sorted(groups.values(), key=len, reverse=True))
            if len(g) >= smallest]


def output_of(args):
    return args[args.index("-o") + 1] if "-o" in args[:-1] else None


def probe(compiler, include, source):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(source)
    try:
        return run([compiler, "-std=c++20", "-fsyntax-only", "-I" + include, f.name])
    finally:
        os.unlink(f.name)


# Proves that the check can fail: an API that arrived in CUDA 12.5 compiles with the build's toolkit and not
# with the 12.4 headers.
NEWER_API = """#include <cuda_runtime_api.h>
void* probe() { void* p = nullptr; cudaDriverEntryPointQueryResult q; cudaGetDriverEntryPointByVersion("cuInit", &p, 12050, 0, &q); return p; }
"""
VERSION = """#include <cuda_runtime_api.h>
#include <cublas_v2.h>
static_assert(CUDART_VERSION == 12040, "not the CUDA 12.4 runtime headers");
static_assert(CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR == 4, "not the cuBLAS 12.4 headers");
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--cuda-include", required=True)
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    headers = os.path.join(a.build_dir, "cuda12")
    rc, out = run([sys.executable, os.path.join(HERE, "fetch_headers.py"), headers])
    print(out, end="")
    if rc != 0:
        return rc
    cuda12 = os.path.join(headers, "include")

    rc, out = probe(a.cxx, cuda12, VERSION)
    if rc != 0:
        print("the fetched headers are not CUDA 12.4:\n" + out)
        return 1
    if probe(a.cxx, a.cuda_include, NEWER_API)[0] != 0 or probe(a.cxx, cuda12, NEWER_API)[0] == 0:
        print("self-check failed: a CUDA 12.5 API should compile with the build's toolkit and not with 12.4")
        return 1

    with open(os.path.join(a.build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    # The known-bad variants and race builds compile the main variant's sources again; of the stubs (labs/),
    # only their kernels on the CPU backend differ from the solutions' build.
    # The dry runs compile the same rewritten kernels as the emu builds (the same file name: the hash of its
    # source) and the perf tests that the GPU build compiles too; the emu benchmark repeats the emu tests'
    # kernels. The labs' correctness tests are compiled twice by the build, for the CPU backend and for the GPU
    # binary: the GPU binary's compile meets the toolkit's own headers, so it is the one checked.
    # The CPU backend's own unit tests check the backend, whose sources are checked here; what a user's code
    # instantiates from its headers is checked through the labs and the conformance files. The CCCL conformance
    # files need CCCL, which the fetched 12.4 headers leave out (the build's include/cccl would meet 12.4's).
    skipped_targets = ("_st_", "_race.dir", "emu_race", "_dryrun_tests.dir/tests/perf.cpp",
                       "_emu_tests.dir/tests/correctness.cpp", "rooflab_emu_bench.dir",
                       "rooflab_emu_traffic_bench", "rooflab_emu_tests.dir", "rooflab_emu_cudalib_tests.dir",
                       "rooflab_emu_traffic_tests.dir", "emu_conf_async_copy_tiles.dir", "emu_conf_own_project.dir")
    seen_kernels = set()
    users = toolkit_users(a.build_dir, a.cuda_include)
    jobs, prelude_units, test_units = [], [], []
    for e in entries:
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        # .cxx: a unity build's unit (rooflab_unity), which includes the target's .cpp files.
        if not e["file"].endswith((".cpp", ".cxx")) or "nvcc" in os.path.basename(args[0]):
            continue
        if ("-I" + a.cuda_include) not in args and a.cuda_include not in args:
            continue  # host code that never includes the toolkit
        where = e.get("output", " ".join(args))
        if any(s in where for s in skipped_targets):
            continue
        if "_stubs_" in where:
            continue  # the stubs' PROVIDED launchers are the solutions' own; their kernels are empty
        if users is not None and output_of(args) not in users:
            continue  # includes no toolkit header
        if e["file"].endswith(".emu.cpp"):
            if os.path.basename(e["file"]) in seen_kernels:
                continue
            seen_kernels.add(os.path.basename(e["file"]))
        jobs.append((e["file"], e["directory"], retarget(args, a.cuda_include, cuda12)))
        if any(x.endswith("rooflab_emu_prelude.hpp") for x in args):
            prelude_units.append(jobs[-1])
        elif "-DGTEST_HAS_PTHREAD=1" in args:
            test_units.append(jobs[-1])
    pch_dir = os.path.join(headers, "pch")
    prelude = next((x for x in entries_prelude_headers(entries)), None)
    groups = precompiled_groups(test_units, "tests", TEST_HEADERS)
    if prelude:
        with open(prelude) as f:
            groups += precompiled_groups(prelude_units, "prelude", f.read())
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for note in pool.map(lambda g: precompile(g[1], g[0], g[2], pch_dir), groups):
            print(note, flush=True)
    print(f"compiling {len(jobs)} translation units against the CUDA 12.4 headers ...", flush=True)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for (src, _, _), (code, text) in zip(jobs, pool.map(lambda j: run(j[2], cwd=j[1]), jobs)):
            if code != 0:
                failures.append((src, text))
    for src, text in failures[:5]:
        errors = [l for l in text.splitlines() if "error" in l][:5]
        print(f"FAILED {src}:\n  " + "\n  ".join(errors))
    if failures:
        print(f"{len(failures)} of {len(jobs)} translation units do not compile against CUDA 12.4: guard the newer "
              "API with #if CUDART_VERSION >= ... (docs/cpu-mode.md, 'CUDA 12')")
        return 1
    print(f"all {len(jobs)} translation units compile against CUDA 12.4 ({', '.join(open(os.path.join(headers, 'STAMP')).read().split(': ')[1:]).strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
