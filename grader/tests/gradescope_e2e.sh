#!/usr/bin/env bash
# The Gradescope package end to end: gradescope-package writes the zip; its run_autograder, in a scratch root
# laid out like Gradescope's (source/, submission/, results/), grades Lab 01's solution (uploaded as one zipped
# folder, with macOS's __MACOSX beside it) and its stub (the two files at the top). Checks the zip's contents,
# that each results.json holds only what Gradescope reads, that its scores are those `grade --submission` gives
# the same files with the same seed, that every test has a status, and that the perf tests are not tests
# but listed in the output, graded later on the GPU cluster. setup.sh is only syntax-checked (it installs packages as root); run_autograder is pointed at this
# build's grader and at the build tree of grader.submission_verified instead of the ones setup.sh builds.
#   gradescope_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-gradescope"
tree="$build/e2e-submission/tree"
lab=01-memory-bandwidth
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# ---- the package ----
"$cli" gradescope-package 01 --out "$work/autograder.zip" --seed 4242 > "$work/package.log" 2>&1 ||
  { cat "$work/package.log"; fail "gradescope-package exited $?"; }
listing="$(unzip -Z1 "$work/autograder.zip")"
for f in setup.sh run_autograder rooflab CMakeLists.txt "labs/$lab/rubric.json" "labs/$lab/kernels.cu" grader/main.cpp; do
  grep -qx "$f" <<<"$listing" || fail "the package lacks $f"
done
if grep -qE '^(build[^/]*|\.git)/' <<<"$listing"; then fail "the package holds a build tree or .git"; fi
root="$work/autograder"
mkdir -p "$root"
unzip -q "$work/autograder.zip" -d "$root/source"
for f in run_autograder setup.sh rooflab; do [[ -x "$root/source/$f" ]] || fail "$f is not executable in the package"; done
bash -n "$root/source/setup.sh" || fail "setup.sh is not valid bash"
grep -q -- "--seed 4242" "$root/source/run_autograder" || fail "run_autograder does not pass the package's seed"

# ---- run_autograder on two submissions, each compared with grade --submission of the same files ----
autograde() {  # autograde NAME: grades $root/submission; its results.json kept as $work/NAME.json
  rm -rf "$root/results"
  ROOFLAB_AUTOGRADER_ROOT="$root" ROOFLAB_CLI="$cli" ROOFLAB_AUTOGRADER_BUILD="$tree" \
    ROOFLAB_AUTOGRADER_ARGS="--no-verify --timeout 120" "$root/source/run_autograder" > "$work/$1.log" 2>&1 ||
    { cat "$work/$1.log"; fail "run_autograder exited $?"; }
  [[ -f "$root/results/results.json" ]] || { cat "$work/$1.log"; fail "$1: no results/results.json"; }
  cp "$root/results/results.json" "$work/$1.json"
}
alone() {  # alone NAME DIR: what grade --submission gives DIR, as $work/NAME-alone.json
  "$cli" grade 01 --submission "$2" --build-dir "$tree" --kind analytic --kind emu --no-verify --timeout 120 \
    --seed 4242 --no-color --json "$work/$1-alone.json" --report-dir "$work/$1-alone" > "$work/$1-alone.log" 2>&1 ||
    { cat "$work/$1-alone.log"; fail "grade --submission $1"; }
}
check() {  # check NAME TOTAL
  python3 - "$work/$1.json" "$work/$1-alone.json" "$2" <<'PY'
import json, sys
gs, alone, total = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
problems = []
extra = set(gs) - {"score", "output", "visibility", "stdout_visibility", "tests"}
if extra: problems.append(f"keys Gradescope does not read: {sorted(extra)}")
for t in gs["tests"]:
    if set(t) - {"name", "score", "max_score", "status", "output", "tags", "visibility"}:
        problems.append(f"{t.get('name')}: keys Gradescope does not read: {sorted(t)}")
    if not (isinstance(t.get("name"), str) and isinstance(t.get("output"), str)
            and isinstance(t.get("score"), (int, float)) and isinstance(t.get("max_score"), (int, float))):
        problems.append(f"malformed test {t}")
    if t.get("status") not in ("passed", "failed"):  # no status: Gradescope shows the test as passed
        problems.append(f"{t['name']}: status {t.get('status')}")
if abs(sum(t["score"] for t in gs["tests"]) - gs["score"]) > 1e-9: problems.append("score is not the tests' sum")
perf = [t for t in gs["tests"] if " perf:" in t["name"]]
if perf: problems.append(f"{len(perf)} perf tests listed as tests; they belong in the output, graded later")
owed = [l for l in gs["output"].splitlines() if l.startswith("  lab01 perf: ")]
if len(owed) < 6: problems.append(f"the output lists {len(owed)} perf tests as graded later, want Lab 01's six graded ones")
if "40 performance points" not in gs["output"] or "GPU cluster" not in gs["output"]:
    problems.append("the output does not say the 40 perf points are graded on the GPU cluster:\n" + gs["output"][:300])
mine = {t["name"]: t for t in gs["tests"]}
for t in alone["tests"]:
    if t["max_score"] == 0: continue
    g = mine.get(t["name"])
    if g is None or (g["score"], g["max_score"]) != (t["score"], t["max_score"]):
        problems.append(f"{t['name']}: grade --submission gives {t['score']}/{t['max_score']}, run_autograder "
                        f"{g and (g['score'], g['max_score'])}")
if gs["score"] != alone["score"] or gs["score"] != total:
    problems.append(f"run_autograder scored {gs['score']}, grade --submission {alone['score']}, expected {total}")
print("\n".join(problems) if problems else f"{gs['score']:g} points, as grade --submission gives; perf left to the cluster")
sys.exit(1 if problems else 0)
PY
}

start=$(date +%s)
mkdir -p "$root/submission/homework-1/$lab" "$root/submission/__MACOSX/homework-1"
cp "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp" "$root/submission/homework-1/$lab/"
echo "resource fork" > "$root/submission/__MACOSX/homework-1/._kernels.cu"
autograde solved
alone solved "$root/submission/homework-1"
check solved 60 || fail "the solution's results.json"

rm -rf "$root/submission"
mkdir -p "$root/submission"
cp "$src/labs/$lab/kernels.cu" "$src/labs/$lab/answers.cpp" "$root/submission/"
autograde stub
alone stub "$root/submission"
check stub 0 || fail "the stub's results.json"
echo "two submissions through run_autograder and grade --submission: $(( $(date +%s) - start )) s"
