#!/usr/bin/env bash
# The Gradescope package end to end: gradescope-package writes the zip for Lab 02 with a seed; it must hold no
# solutions/, no known-bad case and no line of a solution (solution_lines.py, as the release test checks a
# student copy), and the reference values it recorded for every analytic and CPU-backend test, with that seed.
# Its run_autograder, in a scratch root laid out like Gradescope's (source/, submission/, results/), then grades
# two uploads, verified against those records only: Lab 02's solution (one zipped folder, with macOS's __MACOSX
# beside it) must earn every analytic and CPU-backend point, and a forged report (Lab 02's forged-report case,
# its two files at the top) nothing for its kernels, for the mismatch. Each results.json must hold only what
# Gradescope reads and list the perf tests as graded later on the GPU cluster; the solution's must give every
# test the score `grade --submission` gives the same files verified against a run of the reference solutions
# (build/solutions): the records verify as the reference binaries do. setup.sh is only syntax-checked (it installs packages as root);
# run_autograder is pointed at this build's grader and at the shared build tree of grader.submission_verified.
#   gradescope_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-gradescope"
tree="$build/e2e-submission/tree"
lab=02-ridge-point
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# ---- the package: what it holds and what it must not ----
start=$(date +%s)
"$cli" gradescope-package 02 --out "$work/autograder.zip" --seed 4242 > "$work/package.log" 2>&1 ||
  { cat "$work/package.log"; fail "gradescope-package exited $?"; }
listing="$(unzip -Z1 "$work/autograder.zip")"
for f in setup.sh run_autograder rooflab CMakeLists.txt "labs/$lab/rubric.json" "labs/$lab/kernels.cu" grader/main.cpp \
         reference/02/analytic.json reference/02/emu.json common/prebuilt/calibration_kernels.fatbin \
         common/prebuilt/calibration_kernels.json; do
  grep -qx "$f" <<<"$listing" || fail "the package lacks $f"
done
# The calibration kernels travel compiled, as in a student copy (release_e2e.sh checks the fatbinary itself).
if grep -qx "common/src/calibration_kernels.cu" <<<"$listing"; then fail "the package holds the calibration kernels' source"; fi
if grep -qE '^(build[^/]*|\.git|solutions|templates|labs/01-memory-bandwidth)/' <<<"$listing"; then
  fail "the package holds a build tree, .git, solutions/, new-lab's template or a lab it does not grade"
fi
if grep -qE '(^|/)selftest/' <<<"$listing"; then fail "the package holds known-bad cases"; fi
root="$work/autograder"
mkdir -p "$root"
unzip -q "$work/autograder.zip" -d "$root/source"
for f in run_autograder setup.sh rooflab; do [[ -x "$root/source/$f" ]] || fail "$f is not executable in the package"; done
bash -n "$root/source/setup.sh" || fail "setup.sh is not valid bash"
grep -q -- "--seed 4242" "$root/source/run_autograder" || fail "run_autograder does not pass the package's seed"
grep -q -- '--reference-values "$source/reference"' "$root/source/run_autograder" ||
  fail "run_autograder does not verify against the recorded reference values"
python3 "$src/grader/tests/solution_lines.py" "$src" "$root/source" > "$work/leaks.txt" 2> "$work/leaks.log" ||
  { cat "$work/leaks.txt"; fail "solution lines in the package"; }
# Every analytic and CPU-backend test of the lab's rubric is recorded, with the package's seed and provenance.
python3 - "$root/source/reference/02" "$src/labs/$lab/rubric.json" <<'PY' || fail "the recorded reference values"
import json, sys
rubric = json.load(open(sys.argv[2]))["tests"]
problems = []
for kind, graded in (("analytic", {"analytic"}), ("emu", {"correctness"})):
    rec = json.load(open(f"{sys.argv[1]}/{kind}.json"))
    want = {t["test"] for t in rubric if t["kind"] in graded}
    if (rec["lab"], rec["kind"], rec["seed"]) != ("02", kind, "4242"):
        problems.append(f"{kind}.json: lab {rec['lab']} kind {rec['kind']} seed {rec['seed']}")
    if set(rec["tests"]) != want:
        problems.append(f"{kind}.json records {sorted(rec['tests'])}, the rubric has {sorted(want)}")
    if not rec["about"].get("commit") or not rec["about"].get("rooflab_version"):
        problems.append(f"{kind}.json: no commit or rooflab version in {rec['about']}")
print("\n".join(problems) or "records: every analytic and CPU-backend test of Lab 02, seed 4242")
sys.exit(1 if problems else 0)
PY
echo "the package: $(( $(date +%s) - start )) s"

# ---- run_autograder on two submissions; the solution's grade compared with grade --submission's ----
autograde() {  # autograde NAME: grades $root/submission; its results.json kept as $work/NAME.json
  rm -rf "$root/results"
  ROOFLAB_AUTOGRADER_ROOT="$root" ROOFLAB_CLI="$cli" ROOFLAB_AUTOGRADER_BUILD="$tree" \
    ROOFLAB_AUTOGRADER_ARGS="--timeout 120" "$root/source/run_autograder" > "$work/$1.log" 2>&1 ||
    { cat "$work/$1.log"; fail "run_autograder exited $?"; }
  [[ -f "$root/results/results.json" ]] || { cat "$work/$1.log"; fail "$1: no results/results.json"; }
  grep -q "checked against the reference values recorded in $root/source/reference" "$work/$1.log" ||
    { cat "$work/$1.log"; fail "$1: not verified against the recorded values"; }
  cp "$root/results/results.json" "$work/$1.json"
}
alone() {  # alone NAME DIR: what grade --submission gives DIR, verified by the reference binaries, as $work/NAME-alone.json
  "$cli" grade 02 --submission "$2" --build-dir "$tree" --kind analytic --kind emu --verify --timeout 120 \
    --seed 4242 --no-color --json "$work/$1-alone.json" --report-dir "$work/$1-alone" > "$work/$1-alone.log" 2>&1 ||
    { cat "$work/$1-alone.log"; fail "grade --submission $1"; }
}
check() {  # check NAME ANALYTIC EMU: the points each kind must earn (and those of $work/NAME-alone.json, if there)
  python3 - "$work/$1.json" "$work/$1-alone.json" "$2" "$3" <<'PY'
import json, os, sys
gs = json.load(open(sys.argv[1]))
alone = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else None
want = {"analytic": float(sys.argv[3]), "emu": float(sys.argv[4])}
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
owed = [l for l in gs["output"].splitlines() if l.startswith("  lab02 perf: ")]
if len(owed) != 1: problems.append(f"the output lists {len(owed)} perf tests as graded later, want Lab 02's one graded one")
if "10 performance points" not in gs["output"] or "GPU cluster" not in gs["output"]:
    problems.append("the output does not say the 10 perf points are graded on the GPU cluster:\n" + gs["output"][:300])
for kind, points in want.items():
    got = sum(t["score"] for t in gs["tests"] if kind in t["tags"])
    if got != points: problems.append(f"{kind}: {got:g} points, want {points:g}")
mine = {t["name"]: t for t in gs["tests"]}
for t in alone["tests"] if alone else []:
    if t["max_score"] == 0: continue
    g = mine.get(t["name"])
    if g is None or (g["score"], g["max_score"]) != (t["score"], t["max_score"]):
        problems.append(f"{t['name']}: grade --submission gives {t['score']}/{t['max_score']}, run_autograder "
                        f"{g and (g['score'], g['max_score'])}")
if alone and gs["score"] != alone["score"]:
    problems.append(f"run_autograder scored {gs['score']}, grade --submission {alone['score']}")
same = ", as grade --submission gives" if alone else ""
print("\n".join(problems) if problems else f"{gs['score']:g} points{same}; perf left to the cluster")
sys.exit(1 if problems else 0)
PY
}

start=$(date +%s)
mkdir -p "$root/submission/homework-1/$lab" "$root/submission/__MACOSX/homework-1"
cp "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp" "$root/submission/homework-1/$lab/"
echo "resource fork" > "$root/submission/__MACOSX/homework-1/._kernels.cu"
autograde solved
alone solved "$root/submission/homework-1"
check solved 27 12 || fail "the solution's results.json"

rm -rf "$root/submission"
mkdir -p "$root/submission"
cp "$build/selftest/$lab/forged-report/kernels.cu" "$src/solutions/$lab/answers.cpp" "$root/submission/"
autograde forged
check forged 27 0 || fail "the forged report's results.json"
grep -q "do not match an independent run of the reference solution" "$work/forged.json" ||
  fail "the forged report lost its points for another reason: $(grep -o '"output": "[^"]*' "$work/forged.json" | head -3)"
echo "two submissions through run_autograder, one through grade --submission: $(( $(date +%s) - start )) s"
