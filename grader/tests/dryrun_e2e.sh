#!/usr/bin/env bash
# `grade --kind dryrun` end to end: it builds the dry-run binary and runs the perf tests on the CPU backend, so a
# student or an instructor sees them (before, it built nothing and graded nothing). Lab 01 only, in the build
# tree of grader.submission_verified (its harness is built once). The solution's dry-run tests must run, pass
# and be worth 0 points, labelled as a dry run; a kernel that writes nothing (Lab 01's writes-nothing case)
# must fail its dry run of Lab01Perf.Copy (outputs are poisoned before each timed launch), which proves the
# tests ran rather than being listed. That case is graded as a student grades (no --kind: the dry run is part of
# a grade by default; --test keeps it to one test), and again with --no-dry-run, which leaves the dry run out.
#   dryrun_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-dryrun"
tree="$build/e2e-submission/tree"
lab=01-memory-bandwidth
rm -rf "$work"
mkdir -p "$work/solved/$lab" "$work/empty/$lab"
fail() { echo "FAIL: $*"; exit 1; }

cp "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp" "$work/solved/$lab/"
cp "$build/selftest/$lab/writes-nothing/kernels.cu" "$work/empty/$lab/"
cp "$src/solutions/$lab/answers.cpp" "$work/empty/$lab/"

# grade WHO RESULTS [OPTIONS...]
grade() {
  local who="$1" out="$2"
  shift 2
  "$cli" grade 01 --submission "$work/$who" --build-dir "$tree" --no-verify --timeout 300 --no-color \
    --json "$work/$out.json" --report-dir "$work/$out-report" "$@" > "$work/$out.log" 2>&1 ||
    { cat "$work/$out.log"; fail "grade $who ($out) exited $?"; }
}
# The dry run's ceilings are measured once per grade, by the harness's tool outside the sandbox, into the
# calibration cache the tests then read (pipeline.cpp, share_dryrun_ceilings): a cache planted with a copy ceiling
# no CPU reaches (4321 GB/s) must be the one every dry-run perf test reports, where a test that measured its own
# would report the CPU's few GB/s.
cache="$work/cache"
ROOFLAB_CACHE_DIR="$cache" ROOFLAB_EMU_QUIET=1 "$build/common/rooflab-dryrun-calibrate" > "$work/calibrate.log" 2>&1 ||
  { cat "$work/calibrate.log"; fail "the dry-run calibration tool failed"; }
planted=("$cache"/dryrun-ceilings-*.json)
[[ -f "${planted[0]}" ]] || { cat "$work/calibrate.log"; fail "the dry-run calibration tool wrote nothing in $cache"; }
python3 - "${planted[0]}" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["copy_gbps"] = 4321.0
json.dump(c, open(sys.argv[1], "w"))
PY
ROOFLAB_CACHE_DIR="$cache" grade solved solved --kind dryrun
python3 - "$work/solved.json" <<'PY' || { cat "$work/solved.log"; fail "the dry-run tests did not read the ceilings the grade measured"; }
import json, sys
tests = [t for t in json.load(open(sys.argv[1]))["tests"] if "dryrun" in t.get("tags", []) and ": Lab01Perf." in t["name"]]
own = [t["name"] for t in tests if "ceiling copy_bandwidth, 4321.0 GB/s" not in t.get("output", "")
       and "copy_bandwidth" in t.get("output", "")]
if not tests or own:
    sys.exit(f"{len(tests)} dry-run perf tests; these report a copy ceiling of their own: {own}")
PY
grade empty empty --test Lab01Perf.Copy
grade empty empty-no-dry-run --test Lab01Perf.Copy --no-dry-run
grep -q "running dryrun tests" "$work/solved.log" || { cat "$work/solved.log"; fail "no dry-run tests ran"; }

# tests, passed, points of the dry-run tests; whether every one says it is a dry run; Lab01Perf.Copy's status.
summary() {
  python3 - "$1" <<'PY'
import json, sys
tests = [t for t in json.load(open(sys.argv[1]))["tests"] if "dryrun" in t.get("tags", [])]
passed = sum(t["status"] == "passed" for t in tests)
points = sum(t["max_score"] for t in tests)
labelled = all("DRY RUN" in t.get("output", "") for t in tests)
copy = [t["status"] for t in tests if t["name"].endswith(": Lab01Perf.Copy")]
print(len(tests), passed, f"{points:g}", "labelled" if labelled else "unlabelled", copy[0] if copy else "absent")
PY
}
read -r n passed points labelled copy < <(summary "$work/solved.json")
[[ "$n" -gt 0 ]] || fail "the solution's results hold no dry-run test"
[[ "$passed" == "$n" ]] || { cat "$work/solved.log"; fail "the solution passed $passed of $n dry-run tests"; }
[[ "$points" == "0" ]] || fail "dry-run tests are worth $points points (a dry run earns nothing)"
[[ "$labelled" == "labelled" ]] || fail "a dry-run test's output does not say it is a dry run"
read -r _ _ _ _ empty_copy < <(summary "$work/empty.json")
[[ "$empty_copy" == "failed" ]] ||
  { cat "$work/empty.log"; fail "a copy that writes nothing, graded by default: its dry run is $empty_copy"; }
grep -q "DRY RUN: the perf tests also ran" "$work/empty.log" ||
  { cat "$work/empty.log"; fail "a default grade's header does not say the dry run ran"; }
read -r n_off _ _ _ _ < <(summary "$work/empty-no-dry-run.json")
[[ "$n_off" == 0 ]] || { cat "$work/empty-no-dry-run.log"; fail "--no-dry-run still ran $n_off dry-run tests"; }

# Without a GPU, each perf test left owed carries the performance model's prediction for its kernels, labelled
# as a model, beside what the test asks; its points stay owed (predictions.hpp).
"$cli" grade 01 --submission "$work/solved" --build-dir "$tree" --kind static --kind gpu --no-verify --timeout 300 \
  --no-color --json "$work/predicted.json" --report-dir "$work/predicted-report" > "$work/predicted.log" 2>&1 ||
  { cat "$work/predicted.log"; fail "grade --kind static --kind gpu exited $?"; }
python3 - "$work/predicted.json" <<'PY' || { cat "$work/predicted.log"; fail "the perf tests carry no prediction"; }
import json, re, sys
tests = {t["name"].split(": ")[-1]: t for t in json.load(open(sys.argv[1]))["tests"]}
copy = tests.get("Lab01Perf.Copy")
if copy is None:
    sys.exit("Lab01Perf.Copy is not in the results")
want = (r"prediction on NVIDIA H100 SXM5 \(the performance model, not a measurement; no points\): "
        r"lab01::copy_kernel \d+% of the copy ceiling \([\d.]+ [mu]s\), limited by [A-Za-z][A-Za-z0-9 ]*\. The test: copy GB/s.*"
        r"full points at 90%")
problems = []
if not re.search(want, copy["output"]):
    problems.append("Lab01Perf.Copy's output: " + copy["output"])
if copy["rooflab_status"] != "needs a GPU" or copy["score"] != 0:
    problems.append(f"Lab01Perf.Copy: {copy['rooflab_status']}, {copy['score']} points (want owed, 0)")
owed = [n for n, t in tests.items() if n.startswith("Lab01Perf.") and t["rooflab_status"] == "needs a GPU"]
unpredicted = [n for n in owed if "prediction on " not in tests[n]["output"]]
if unpredicted:
    problems.append("owed perf tests without a prediction: " + ", ".join(unpredicted))
if problems:
    sys.exit("\n".join(problems))
print(f"{len(owed)} perf tests owed to a GPU, each with the model's prediction")
PY
echo "dry run of Lab 01: the solution passes $passed of $n tests (0 points); a copy that writes nothing fails"
