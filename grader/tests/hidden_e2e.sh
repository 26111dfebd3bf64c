#!/usr/bin/env bash
# Hidden tests end to end: grader/tests/hidden/01 holds one for Lab 01, an analytic question the public tests
# never ask (16- and 32-byte elements). Graded with --hidden-tests, the solution earns its 2 points and a
# submission that passes every public test but caps the element size at 8 bytes loses them; graded without,
# the hidden test is not there. Analytic tests only (the hidden test is one), in the build tree of
# grader.submission_verified.
#   hidden_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-hidden"
tree="$build/e2e-submission/tree"
lab=01-memory-bandwidth
hidden="$src/grader/tests/hidden"
rm -rf "$work"
mkdir -p "$work/solved/$lab" "$work/capped/$lab"
fail() { echo "FAIL: $*"; exit 1; }

cp "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp" "$work/solved/$lab/"
cp "$src/solutions/$lab/kernels.cu" "$work/capped/$lab/"
python3 - "$src/solutions/$lab/answers.cpp" "$work/capped/$lab/answers.cpp" <<'PY'
import sys
text = open(sys.argv[1]).read()
find = "return arrays * static_cast<double>(n) * static_cast<double>(elem_bytes);"
if text.count(find) != 1:
    sys.exit("the solution's stream_bytes changed: update hidden_e2e.sh's patch")
capped = "return arrays * static_cast<double>(n) * static_cast<double>(std::min<std::size_t>(elem_bytes, 8));"
open(sys.argv[2], "w").write(text.replace(find, capped))
PY

grade() {  # grade NAME RESULTS [grade options]: grades $work/NAME's analytic tests into $work/RESULTS.json
  local who="$1" out="$2"
  shift 2
  "$cli" grade 01 --submission "$work/$who" --build-dir "$tree" --kind analytic --no-verify --timeout 120 \
    --no-color --json "$work/$out.json" --report-dir "$work/$out" "$@" > "$work/$out.log" 2>&1 ||
    { cat "$work/$out.log"; fail "grade $who ($out) exited $?"; }
}
start=$(date +%s)
grade solved solved-hidden --hidden-tests "$hidden"
grade capped capped-hidden --hidden-tests "$hidden"
grade capped capped-public
grep -q "lab 01: 1 hidden test graded" "$work/solved-hidden.log" || fail "the run does not say it graded a hidden test"

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
hidden_id = "lab01 analytic: Lab01Hidden.StreamBytesOfWideElements"
def load(name):
    r = json.load(open(f"{work}/{name}.json"))
    return r, {t["name"]: t for t in r["tests"]}
problems = []
for name, want_hidden, want_score in (("solved-hidden", 2, 32), ("capped-hidden", 0, 30), ("capped-public", None, 30)):
    r, tests = load(name)
    h = tests.get(hidden_id)
    if want_hidden is None:
        if h is not None: problems.append(f"{name}: the hidden test was graded without --hidden-tests")
    elif h is None:
        problems.append(f"{name}: no hidden test in results.json")
    elif (h["score"], h["max_score"]) != (want_hidden, 2):
        problems.append(f"{name}: the hidden test earned {h['score']}/{h['max_score']}, want {want_hidden}/2: {h['output']}")
    public = [t for n, t in tests.items() if n != hidden_id]
    lost = [t["name"] for t in public if t["score"] < t["max_score"]]
    if lost: problems.append(f"{name}: public tests lost points: {lost}")
    if r["score"] != want_score: problems.append(f"{name}: score {r['score']}, want {want_score}")
print("\n".join(problems) if problems else
      "hidden test: the solution 2/2, the capped answer 0/2 with every public test passed; absent without the flag")
sys.exit(1 if problems else 0)
PY
echo "three analytic grades: $(( $(date +%s) - start )) s"
