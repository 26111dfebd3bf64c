#!/usr/bin/env bash
# A student's loop through `grade`, end to end, in the build tree of grader.submission_verified (Lab 01, its
# harness built once): after a full grade, focused runs (--kind analytic, --test). A focused run says in the
# terminal that it is not a grade and writes results-focused.json, leaving the full grade's results.json as
# it was; a grade whose configure inputs are unchanged does not configure the tree again (before, every grade
# printed "configuring ..." and paid for a configure of the whole project), and one with other options does;
# --watch says which file a save changed, and when.
#   focused_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-focused"
tree="$build/e2e-submission/tree"
lab=01-memory-bandwidth
rm -rf "$work"
mkdir -p "$work/sub/$lab"
fail() { echo "FAIL: $*"; exit 1; }
cp "$src/solutions/$lab/answers.cpp" "$work/sub/$lab/"

grade() {  # grade LOG [OPTIONS...]: Lab 01 of the submission, results in $work/report
  local log="$1"
  shift
  "$cli" grade 01 --submission "$work/sub" --build-dir "$tree" --no-verify --no-color --report-dir "$work/report" \
    "$@" > "$work/$log" 2>&1 || { cat "$work/$log"; fail "grade $* exited $?"; }
}

# The last full grade's results (a full grade of every kind builds binaries the other tests do not need).
mkdir -p "$work/report"
echo '{"score": 20, "tests": [], "output": "the last full grade"}' > "$work/report/results.json"
cp "$work/report/results.json" "$work/full-results.json"

# The tests before this one (in CTest's order, which follows their COST) may have configured the shared tree
# for other inputs: one grade with these inputs first, so that the next, with the same inputs, must not
# configure again.
grade warmup.log --kind analytic
grade focused.log --kind analytic
grep -q "FOCUSED RUN (--kind analytic): .*NOT A GRADE" "$work/focused.log" ||
  { cat "$work/focused.log"; fail "the terminal does not say a focused run is not a grade"; }
grep -q "results-focused.json" "$work/focused.log" || fail "the terminal does not say where the focused results are"
[[ -f "$work/report/results-focused.json" ]] || fail "no results-focused.json"
cmp -s "$work/report/results.json" "$work/full-results.json" || fail "a focused run overwrote results.json"
grep -q "configuring" "$work/focused.log" && { cat "$work/focused.log"; fail "a grade with unchanged inputs configured again"; }

grade test.log --test StreamBytes
grep -q "FOCUSED RUN (--test StreamBytes)" "$work/test.log" || { cat "$work/test.log"; fail "--test is not called focused"; }
cmp -s "$work/report/results.json" "$work/full-results.json" || fail "a --test run overwrote results.json"

# --watch: a save of a student file says which file changed and when, and grades again.
"$cli" grade 01 --submission "$work/sub" --build-dir "$tree" --no-verify --no-color --report-dir "$work/report" \
  --kind analytic --watch > "$work/watch.log" 2>&1 &
watcher=$!
watching() {  # watching N WHAT: waits until the watcher has said "watching" N times, while it lives
  local waited=0
  until [[ $(grep -c "watching the student files" "$work/watch.log") -ge $1 ]]; do
    kill -0 "$watcher" 2>/dev/null || { cat "$work/watch.log"; fail "--watch ended: $2"; }
    sleep 1; waited=$((waited + 1))
    [[ $waited -lt 300 ]] || { kill "$watcher"; cat "$work/watch.log"; fail "--watch $2"; }
  done
}
watching 1 "never started watching"
echo "// saved again" >> "$work/sub/$lab/answers.cpp"
watching 2 "did not grade again after a save"
kill "$watcher"
wait "$watcher" 2>/dev/null || true
grep -qE "rooflab: .*/$lab/answers.cpp changed at [0-9]{2}:[0-9]{2}:[0-9]{2}; grading again" "$work/watch.log" ||
  { cat "$work/watch.log"; fail "--watch does not say which file changed and when"; }

# Other options (a seed is not one; hidden tests are): the tree is configured again.
mkdir -p "$work/hidden"
grade hidden.log --kind analytic --hidden-tests "$work/hidden"
grep -q "configuring" "$work/hidden.log" || { cat "$work/hidden.log"; fail "new hidden tests did not configure the tree"; }
echo "focused runs: not a grade, results-focused.json, results.json kept; configured only when its inputs changed"
