#!/usr/bin/env bash
# `rooflab release` end to end. A copy of every lab must hold no line of a solution's answers: each line over
# 30 characters inside a STUDENT BEGIN/END fence of solutions/*/kernels.cu and answers.cpp (and not in the
# lab's stub) is looked for in every file of the copy, and a planted one must be found (the check can fail).
# A copy of Lab 03 alone is then built as a student builds it (its launcher, no solutions/) and grades Lab 03's
# stub and its solution, analytic and CPU-backend points, as this tree grades the same files.
# The calibration kernels (close to Lab 01's and 02's answers) travel compiled: the copy has their fatbinary and
# its provenance and not their source, a release without nvcc stops before writing anything, the copy's grader
# builds the loader, and its dry-run calibration runs on the CPU stand-ins, as does the dry run of one of Lab 03's
# perf tests (the checks against the reference answers, which the copy lacks, are not in its binary).
#   release_e2e.sh CLI BUILD_DIR SOURCE_DIR [copy|compare]
# copy: everything in the copies (its own build: no lock on the shared tree, beside the other tests);
# compare: this tree's grades of the same files in the shared submission tree, compared with the copy's.
# CTest runs copy (grader.release) then compare (grader.release_compare); with no mode, both.
set -euo pipefail
cli="$(realpath "$1")" build="$(realpath "$2")" src="$(realpath "$3")" mode="${4:-all}"
work="$build/e2e-release"
tree="$build/e2e-submission/tree"  # this tree's grades: the shared submission tree (its harness built once)
lab=03-elementwise-intensity
opts=(--kind analytic --kind emu --seed 2727 --timeout 120 --no-color)
fail() { echo "FAIL: $*"; exit 1; }

# calibration_checks COPY: the copy holds the calibration kernels compiled (SASS of every architecture its
# provenance lists, all of them in the release preset, and the newest's PTX) and not their source.
calibration_checks() {
  local prebuilt="$1/common/prebuilt/calibration_kernels" archs
  [[ ! -e "$1/common/src/calibration_kernels.cu" ]] || fail "the copy holds the calibration kernels' source"
  [[ -s "$prebuilt.fatbin" && -s "$prebuilt.json" ]] || fail "the copy lacks $prebuilt.fatbin or its .json"
  archs="$(python3 - "$prebuilt.json" "$src/CMakePresets.json" <<'PY'
import json, sys
made = json.load(open(sys.argv[1]))
preset = next(p for p in json.load(open(sys.argv[2]))["configurePresets"] if p["name"] == "release")
listed = {int(a) for a in preset["cacheVariables"]["CMAKE_CUDA_ARCHITECTURES"].split(";")}
archs = made.get("architectures") or []
if not (made.get("toolkit") and made.get("source_commit") and archs and set(archs) <= listed):
    sys.exit(f"calibration provenance {made}: want toolkit, source_commit and architectures from {sorted(listed)}")
print(" ".join(map(str, archs)))
PY
)" || fail "the calibration kernels' provenance"
  # shellcheck disable=SC2086  # one argument per architecture
  python3 "$src/common/tests/check_calibration_fatbin.py" "$prebuilt.fatbin" $archs || fail "the calibration fatbinary"
}

copy_checks() {
rm -rf "$work"
mkdir -p "$work"

# ---- the copy of every lab: what it holds and what it must not ----
"$cli" release --out "$work/all" > "$work/all.log" 2>&1 || { cat "$work/all.log"; fail "release exited $?"; }
for f in rooflab CMakeLists.txt CMakePresets.json README.md release.json "labs/$lab/rubric.json" "labs/$lab/tests/correctness.cpp"; do
  [[ -f "$work/all/$f" ]] || fail "the copy lacks $f"
done
[[ -x "$work/all/rooflab" ]] || fail "./rooflab is not executable in the copy"
for d in solutions templates grader/tests/hidden build common/emu/tests common/emu/conformance common/emu/bench; do [[ ! -e "$work/all/$d" ]] || fail "the copy holds $d"; done
if find "$work/all/labs" -path '*/selftest*' | grep -q .; then fail "the copy holds selftest cases"; fi
cmp -s "$work/all/labs/$lab/kernels.cu" <(git -C "$src" show "HEAD:labs/$lab/kernels.cu") ||
  fail "labs/$lab/kernels.cu in the copy is not the committed stub"

# leaks COPY: prints "file:line: text (from solution)" for every solution line found in COPY; exit 1 if any
# (solution_lines.py, which lists the lines let in where they are found).
leaks() { python3 "$src/grader/tests/solution_lines.py" "$src" "$1"; }
leaks "$work/all" > "$work/leaks.txt" 2> "$work/leaks.log" || { cat "$work/leaks.txt"; fail "solution lines in the copy"; }
cat "$work/leaks.log"
# The check can fail: a solution planted in the copy is found, with its file and line.
cp "$src/solutions/$lab/kernels.cu" "$work/all/labs/$lab/planted.cu"
if leaks "$work/all" > "$work/planted.txt" 2>/dev/null; then fail "a planted solution was not found"; fi
grep -q "^labs/$lab/planted.cu:[0-9]*: " "$work/planted.txt" || { cat "$work/planted.txt"; fail "the planted solution's lines were not named"; }
rm "$work/all/labs/$lab/planted.cu"
# ... and an answer under other names: the calibration kernels' source (withheld from copies) runs Lab 02's FMA
# chains with its variables renamed; planted, the check names the line by its shape.
cp "$src/common/src/calibration_kernels.cu" "$work/all/common/src/planted_calibration.cu"
if leaks "$work/all" > "$work/planted-shape.txt" 2>/dev/null; then fail "Lab 02's FMA loop, renamed, was not found"; fi
grep -q "^common/src/planted_calibration.cu:[0-9]*: .*(shape of a line of solutions/02-ridge-point/kernels.cu" \
  "$work/planted-shape.txt" || { cat "$work/planted-shape.txt"; fail "the renamed FMA loop was not named by its shape"; }
rm "$work/all/common/src/planted_calibration.cu"

# ---- the calibration kernels: compiled, not as source (they are close to Lab 01's and 02's answers) ----
calibration_checks "$work/all"
# No toolkit to compile them with: an error that says what to install, and no copy half-written.
if ROOFLAB_NVCC="$work/no-such-nvcc" "$cli" release 03 --out "$work/no-nvcc" > "$work/no-nvcc.log" 2>&1; then
  fail "release ran without nvcc"
fi
grep -q "install the CUDA toolkit" "$work/no-nvcc.log" || { cat "$work/no-nvcc.log"; fail "release without nvcc: no word of what to install"; }
[[ ! -e "$work/no-nvcc" ]] || fail "release without nvcc wrote $work/no-nvcc"

# ---- a copy of Lab 03 alone, graded as a student grades it, and as this tree grades the same files ----
"$cli" release 03 --out "$work/course" > "$work/course.log" 2>&1 || { cat "$work/course.log"; fail "release 03 exited $?"; }
shipped="$(cd "$work/course/labs" && ls -d -- */ | tr -d /)"
[[ "$shipped" == "$lab" ]] || fail "release 03 shipped: $(tr '\n' ' ' <<<"$shipped")"
grep -q "add_subdirectory($lab)" "$work/course/labs/CMakeLists.txt" || fail "labs/CMakeLists.txt of the copy lacks Lab 03"
[[ "$(grep -c add_subdirectory "$work/course/labs/CMakeLists.txt")" == 1 ]] || fail "labs/CMakeLists.txt registers labs not shipped"
mkdir -p "$work/stub/$lab" "$work/solution/$lab"
cp "$work/course/labs/$lab/kernels.cu" "$work/course/labs/$lab/answers.cpp" "$work/stub/$lab/"
cp "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp" "$work/solution/$lab/"
# The copy's own launcher builds its grader (a fresh copy's first grade: most of this test's time). Kept short:
# one CUDA architecture, no test targets, and -O0 for the build type the preset keeps (Release): a third less
# compile time than -O3 per grader file, and the scores do not depend on it.
(cd "$work/course" && cmake --preset default -DBUILD_TESTING=OFF -DCMAKE_CUDA_ARCHITECTURES=80 \
   "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" "-DCMAKE_CUDA_FLAGS_RELEASE=-O0 -DNDEBUG" > "$work/configure.log" 2>&1) ||
  { cat "$work/configure.log"; fail "the copy does not configure"; }
for who in stub solution; do
  sub=()
  [[ $who == solution ]] && sub=(--submission "$work/solution" --build-dir "$work/course/build/default")
  (cd "$work/course" && ROOFLAB_NO_INSTALL=1 ./rooflab grade 03 "${sub[@]}" "${opts[@]}" --json "$work/$who-copy.json" \
     --report-dir "$work/$who-copy") > "$work/$who-copy.log" 2>&1 || { cat "$work/$who-copy.log"; fail "grade in the copy ($who)"; }
done
# The copy built its loader of the calibration kernels with the toolkit (the grade built its grader, which
# links it), and its dry-run calibration runs on the CPU stand-ins.
if grep -q '^CMAKE_CUDA_COMPILER:.*nvcc' "$work/course/build/default/CMakeCache.txt"; then
  [[ -f "$work/course/build/default/common/CMakeFiles/rooflab_cuda.dir/src/calibration_loader.cpp.o" ]] ||
    fail "the copy's grader was built without the calibration loader"
fi
(cd "$work/course" && cmake --build build/default --target rooflab-dryrun-calibrate > "$work/dryrun-build.log" 2>&1) ||
  { tail -30 "$work/dryrun-build.log"; fail "the copy's dry-run calibration does not build"; }
ROOFLAB_EMU_QUIET=1 ROOFLAB_CACHE_DIR="$work/dryrun-cache" "$work/course/build/default/common/rooflab-dryrun-calibrate" \
  --remeasure > "$work/dryrun.log" 2>&1 || { cat "$work/dryrun.log"; fail "the copy's dry-run calibration failed"; }
grep -q "^\[dry run.*FP32 FMA" "$work/dryrun.log" || { cat "$work/dryrun.log"; fail "the copy's dry-run calibration measured no FMA rate"; }
# The copy's dry run of the solution: a perf test on the CPU backend without the reference answers, passing,
# 0 points. One of Lab 03's three (each is 10-20 s at -O0; the harness they share is what the copy must build and
# run, and grader.dryrun_kind runs a lab's whole dry run in the shared tree). The checks that compare with the
# reference answers are left out of the copy's binary: its test list has the perf tests and not them.
dryrun_bin="$work/course/build/default/labs/bin/lab03_dryrun"
(cd "$work/course" && ROOFLAB_NO_INSTALL=1 ./rooflab grade 03 --submission "$work/solution" \
   --build-dir "$work/course/build/default" --kind dryrun --test Lab03Perf.UnfusedKernelsOnTheMemoryRoof \
   --seed 2727 --timeout 300 --no-color \
   --json "$work/solution-dryrun.json" --report-dir "$work/solution-dryrun") > "$work/solution-dryrun.log" 2>&1 ||
  { cat "$work/solution-dryrun.log"; fail "the dry run in the copy"; }
"$dryrun_bin" --gtest_list_tests > "$work/dryrun-tests.txt" 2>&1 || { cat "$work/dryrun-tests.txt"; fail "the copy's dry-run binary lists no tests"; }
python3 - "$work/solution-dryrun.json" "$work/dryrun-tests.txt" <<'PY' || { cat "$work/solution-dryrun.log"; fail "the copy's dry run of the solution"; }
import json, sys
tests = [t for t in json.load(open(sys.argv[1]))["tests"] if "dryrun" in t.get("tags", [])]
perf = [t for t in tests if ": Lab03Perf." in t["name"]]
suites = [line.rstrip(".\n") for line in open(sys.argv[2]) if line.strip() and not line.startswith(" ")]
bad = [f'{t["name"]}: {t.get("rooflab_status")}' for t in tests if t["status"] != "passed" or t["max_score"] != 0]
if len(perf) != 1 or bad or suites != ["Lab03Perf"]:
    sys.exit(f"{len(perf)} perf tests dry-run (want the one asked for); not passed or worth points: {bad}; "
             f"the copy's dry-run binary has the suites {suites} (want Lab03Perf alone: no checks against the "
             f"reference answers)")
print(f"the copy's dry run: {perf[0]['name']} passed, 0 points; its binary has the perf tests alone")
PY
# What needs the solutions says it belongs to the full course (a usage error), never grades the stubs as them.
if (cd "$work/course" && build/default/grader/rooflab-cli grade 03 --solutions > "$work/refused.log" 2>&1); then
  fail "grade --solutions ran in the copy"
fi
grep -q "student copy" "$work/refused.log" || { cat "$work/refused.log"; fail "grade --solutions in the copy: not refused as such"; }
grep -q "NOT verified" "$work/solution-copy.log" && fail "the copy tried to verify against a reference: $(grep 'NOT verified' "$work/solution-copy.log")"
return 0
}

compare() {
for who in stub solution; do
  [[ -f "$work/$who-copy.json" ]] || fail "no grade of the $who in the copy: run this script's copy mode first"
  "$cli" grade 03 --submission "$work/$who" --build-dir "$tree" --no-verify "${opts[@]}" --json "$work/$who-tree.json" \
    --report-dir "$work/$who-tree" > "$work/$who-tree.log" 2>&1 || { cat "$work/$who-tree.log"; fail "grade in this tree ($who)"; }
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def tests(name):
    r = json.load(open(f"{work}/{name}.json"))
    return r["score"], {t["name"]: (t["score"], t["max_score"], t.get("status")) for t in r["tests"]}
problems = []
for who in ("stub", "solution"):
    (copy_score, copy), (tree_score, tree) = tests(f"{who}-copy"), tests(f"{who}-tree")
    if copy != tree:
        for name in sorted(set(copy) | set(tree)):
            if copy.get(name) != tree.get(name):
                problems.append(f"{who}: {name}: copy {copy.get(name)}, this tree {tree.get(name)}")
    if copy_score != tree_score:
        problems.append(f"{who}: score {copy_score} in the copy, {tree_score} in this tree")
    print(f"{who}: {copy_score:g} in the copy, {tree_score:g} in this tree, {len(copy)} tests")
stub_score, sol_score = tests("stub-copy")[0], tests("solution-copy")[0]
if not (stub_score == 0 and sol_score > 0):
    problems.append(f"the stub scored {stub_score} and the solution {sol_score}: want 0 and more than 0")
if problems:
    print("\n".join(problems))
    sys.exit(1)
PY
}

case "$mode" in
  copy) copy_checks ;;
  compare) compare ;;
  all)
    copy_checks
    compare
    ;;
  *) fail "unknown mode $mode (copy, compare)" ;;
esac
