#!/usr/bin/env bash
# grade-class end to end: a small generated class of Lab 01 (a solution, a stub, known-bad cases, one of them
# as a .tar.gz and one as a .zip) plus every kind of bad input. Checks that grades.csv totals equal what
# `grade --submission` gives each student alone, that the bad inputs are refused with their reason while
# the others are graded, that a second run grades nothing and that an edited submission alone is regraded.
# Kept small for CI: CPU-backend and analytic tests only, no verification run, and the build tree of
# grader.submission_verified (its harness is built once for both; CTest runs the two one after the other).
#   class_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-class"
tree="$build/e2e-submission/tree"
rm -rf "$work"
subs="$work/submissions" lab=01-memory-bandwidth cases="$build/selftest/01-memory-bandwidth"
mkdir -p "$work/src" "$subs"
fail() { echo "FAIL: $*"; exit 1; }

# ---- the students, each first as a folder laid out like labs/ ----
make_student() {  # name kernels.cu answers.cpp
  mkdir -p "$work/src/$1/$lab"
  cp "$2" "$work/src/$1/$lab/kernels.cu"
  cp "$3" "$work/src/$1/$lab/answers.cpp"
}
make_student solved "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp"
make_student stub "$src/labs/$lab/kernels.cu" "$src/labs/$lab/answers.cpp"
make_student skips "$cases/skips-tail/kernels.cu" "$src/solutions/$lab/answers.cpp"
make_student broken "$cases/compile-error/kernels.cu" "$src/solutions/$lab/answers.cpp"
make_student crashes "$cases/crash-scale/kernels.cu" "$src/solutions/$lab/answers.cpp"
make_student cublas "$cases/calls-cublas/kernels.cu" "$src/solutions/$lab/answers.cpp"
cp -r "$work/src/solved" "$work/src/stub" "$work/src/crashes" "$work/src/cublas" "$subs/"
tar -C "$work/src" -czf "$subs/skips.tar.gz" skips              # one top-level folder, looked through
zip_dir() {  # zip_dir FOLDER ARCHIVE: the folder's files at the archive's top, with their Unix modes
  python3 -c 'import os, sys, zipfile
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
    for d, _, fs in os.walk(sys.argv[1]):
        for f in fs: z.write(os.path.join(d, f), os.path.relpath(os.path.join(d, f), sys.argv[1]))' "$1" "$2"
}
zip_dir "$work/src/broken" "$subs/broken.zip"                    # laid out like labs/ at the top

# ---- bad inputs: each refused with its reason, never stopping the others ----
mkdir "$subs/empty"
mkdir -p "$subs/twin" && cp -r "$work/src/solved/$lab" "$subs/twin/"
zip_dir "$work/src/solved" "$subs/twin.zip"
ln -s /etc "$subs/linked"
truncate -s 2G "$subs/huge.zip"                                   # a 2 GB upload (sparse: costs no disk)
python3 - "$subs" "$src/solutions/$lab" <<'PY'
import sys, zipfile
subs, sol = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(f"{subs}/escape.zip", "w") as z:
    z.write(f"{sol}/kernels.cu", "01-memory-bandwidth/kernels.cu")
    z.writestr("../../outside.txt", "written outside the upload")
with zipfile.ZipFile(f"{subs}/symlinked.zip", "w") as z:
    link = zipfile.ZipInfo("01-memory-bandwidth/kernels.cu")
    link.external_attr = (0o120777 << 16)                         # a symbolic link entry
    z.writestr(link, "/etc/passwd")
PY
echo "not a submission" > "$subs/notes.txt"

run_class() {
  "$cli" grade-class "$subs" 01 --out "$work/out" --build-dir "$tree" --kind analytic --kind emu --no-verify \
    --timeout 120 "$@" > "$work/class.log" 2>&1 || { cat "$work/class.log"; fail "grade-class exited $?"; }
}
start=$(date +%s)
run_class
echo "first run: $(( $(date +%s) - start )) s"
out="$work/out"
grep -q "notes.txt: ignored" "$work/class.log" || fail "notes.txt was not reported as ignored"

# ---- grades.csv against each student graded alone ----
csv_total() { awk -F, -v s="$1" '$1 == s { t += $4 } END { printf "%g", t }' "$out/grades.csv"; }
# (Three kinds of result, to keep CI short: full marks, a crash, a compile error; the others' totals are checked
# against what they must earn below. Without the coverage hint, as grade-class grades: it earns no points.)
for who in solved broken crashes; do
  "$cli" grade 01 --submission "$work/src/$who" --build-dir "$tree" --kind analytic --kind emu --no-verify \
    --no-coverage --timeout 120 --no-color --json "$work/alone-$who.json" --report-dir "$work/alone-$who" > "$work/alone-$who.log" 2>&1 ||
    { cat "$work/alone-$who.log"; fail "grade --submission $who"; }
  alone=$(python3 -c 'import json,sys; print("%g" % json.load(open(sys.argv[1]))["score"])' "$work/alone-$who.json")
  [[ "$(csv_total "$who")" == "$alone" ]] || fail "$who: grades.csv gives $(csv_total "$who"), grade --submission $alone"
  echo "$who: $alone points, as graded alone"
done
[[ "$(csv_total solved)" == 60 ]] || fail "the solution earned $(csv_total solved) of 60"
# ---- grades-lms.csv: one row per student, its totals those of grades.csv, a status for each ----
python3 - "$out/grades-lms.csv" "$out/grades.csv" <<'PY' || fail "grades-lms.csv does not agree with grades.csv"
import csv, sys
from collections import defaultdict
wide = list(csv.DictReader(open(sys.argv[1])))
long_total = defaultdict(float)
for r in csv.DictReader(open(sys.argv[2])): long_total[r["student"]] += float(r["points"])
names = [r["student"] for r in wide]
assert len(names) == len(set(names)) == len(long_total), (names, sorted(long_total))
for r in wide:
    assert abs(float(r["total"]) - long_total[r["student"]]) < 1e-9, r
    assert abs(float(r["total"]) - float(r["lab01"])) < 1e-9, r
    assert r["status"], r
by = {r["student"]: r for r in wide}
assert by["solved"]["status"] == "graded" and by["solved"]["total"] == by["solved"]["total_gradable"] == "60", by["solved"]
assert by["crashes"]["status"].startswith("crashed in lab01 "), by["crashes"]
assert by["empty"]["status"].startswith("not graded: empty submission"), by["empty"]
PY
[[ "$(csv_total stub)" == 0 ]] || fail "the stub earned $(csv_total stub)"
[[ "$(csv_total cublas)" == 30 ]] || fail "cuBLAS in kernels.cu earned $(csv_total cublas) (its kernel tests must all be lost)"
for who in skips broken crashes; do
  t=$(csv_total "$who"); awk -v t="$t" 'BEGIN { exit !(t > 0 && t < 60) }' || fail "$who earned $t (a known-bad case loses some points, not all)"
done
python3 - "$out" <<'PY' || fail "a JUnit file is not valid XML or lacks a student's failures"
import sys, xml.etree.ElementTree as ET
out = sys.argv[1]
for who, failing in [("solved", 0), ("stub", 15), ("broken", 7)]:
    root = ET.parse(f"{out}/junit/{who}.xml").getroot()
    assert int(root.get("failures")) == failing, (who, root.get("failures"))
PY

# ---- the summary names who crashed, did not compile, and every refused input with its reason ----
summary="$out/summary.txt"
expect_line() { grep -qF -- "$1" "$summary" || { cat "$summary"; fail "the summary lacks: $1"; }; }
expect_line "crashed (1):"
expect_line "crashes (lab01 Lab01Kernels.Scale)"
expect_line "did not compile (1):"
expect_line "broken (lab01 emu)"
expect_line "used a forbidden library (1):"
expect_line "cublas (lab01 emu)"
expect_line "empty: empty submission"
expect_line "twin: two submissions are named twin (twin and twin.zip)"
expect_line "linked: it is a symbolic link"
expect_line "huge: huge.zip was refused: it is 2048.0 MiB, over the limit of 64 MiB"
expect_line "escape: escape.zip was refused: it holds a path with \`..\` (../../outside.txt)"
expect_line "symlinked: symlinked.zip was refused: it holds a link"
[[ ! -e "$work/outside.txt" && ! -e "$out/outside.txt" ]] || fail "the .. entry was written"
grep -q "^twin,01,not graded,0,0$" "$out/grades.csv" || fail "the twins have no not-graded row"

# ---- a seed that is not a number is a usage error, before anything is graded ----
for bad in "--seed 12ab" "--seed 1.5"; do
  set +e
  # shellcheck disable=SC2086
  "$cli" grade-class "$subs" 01 --out "$work/badseed" $bad > "$work/badseed.log" 2>&1
  rc=$?
  set -e
  [[ $rc == 2 ]] && grep -q "is not a seed" "$work/badseed.log" || { cat "$work/badseed.log"; fail "$bad: exit $rc"; }
done
set +e
ROOFLAB_SEED=secret "$cli" grade 01 --submission "$work/src/solved" --build-dir "$tree" > "$work/badseed.log" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] && grep -q 'ROOFLAB_SEED "secret" is not a seed' "$work/badseed.log" || { cat "$work/badseed.log"; fail "ROOFLAB_SEED=secret: exit $rc"; }
[[ ! -e "$work/badseed/students" ]] || fail "a bad seed graded students"

# ---- a second run grades nothing; an edited submission alone is graded again ----
start=$(date +%s)
run_class
echo "second run: $(( $(date +%s) - start )) s"
graded=$(grep -cE '^\[[0-9]+/[0-9]+\] [a-z]+: [0-9.]+ / ' "$work/class.log" || true)
[[ "$graded" == 0 ]] || { cat "$work/class.log"; fail "the second run graded $graded students"; }
[[ "$(grep -c 'unchanged since its last grade' "$work/class.log")" == 6 ]] || { cat "$work/class.log"; fail "not 6 unchanged"; }
echo "// an edit" >> "$subs/stub/$lab/answers.cpp"
run_class
graded=$(grep -E '^\[[0-9]+/[0-9]+\] [a-z]+: [0-9.]+ / ' "$work/class.log" | sed -E 's/^\[[0-9/]+\] ([a-z]+):.*/\1/')
[[ "$graded" == "stub" ]] || { cat "$work/class.log"; fail "after editing stub, graded: $graded"; }
echo "grade-class: totals match grade --submission; bad inputs refused with their reasons; reruns grade only changes"
