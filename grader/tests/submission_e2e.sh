#!/usr/bin/env bash
# End to end, as an instructor grades: `grade --submission` builds the submission in its own sandboxed tree,
# builds the reference solutions in build/solutions and checks every passing test's values against them.
# A forged report (Lab 02's forged-report selftest case) must earn nothing; the solution itself must earn
# every CPU-backend point.
#   submission_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-submission"
# Everything of this test's own, not the tree: grader.class_grading builds it first (Lab 01, its configure) and
# the tests after this one grade in it too (Lab 01 again); deleting it cost each a configure and Lab 01's build.
find "$work" -mindepth 1 -maxdepth 1 ! -name tree -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$work/honest/02-ridge-point" "$work/forged/02-ridge-point"
cp "$src/solutions/02-ridge-point/kernels.cu" "$src/solutions/02-ridge-point/answers.cpp" "$work/honest/02-ridge-point/"
cp "$build/selftest/02-ridge-point/forged-report/kernels.cu" "$work/forged/02-ridge-point/"
cp "$src/solutions/02-ridge-point/answers.cpp" "$work/forged/02-ridge-point/"

score() {  # the emu points a results.json gives, and the text of its outputs
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
emu = [t for t in r["tests"] if "emu" in t.get("tags", [])]
print(f"{sum(t['score'] for t in emu):g} {sum(t['max_score'] for t in emu):g}")
print(" ".join(t.get("output", "") for t in emu).replace("\n", " "))
PY
}

for who in honest forged; do
  "$cli" grade 02 --submission "$work/$who" --kind emu --no-color --build-dir "$work/tree" \
    --report-dir "$work/$who-report" --json "$work/$who-report/results.json" > "$work/$who.log" 2>&1 ||
    { cat "$work/$who.log"; exit 1; }
done
read -r h_score h_max < <(score "$work/honest-report/results.json" | head -1)
read -r f_score f_max < <(score "$work/forged-report/results.json" | head -1)
forged_text="$(score "$work/forged-report/results.json" | tail -1)"
grep -q "compared with a run of the reference solutions" "$work/honest.log" || { echo "not verified:"; cat "$work/honest.log"; exit 1; }
[[ "$h_max" != "0" && "$h_score" == "$h_max" ]] || { echo "the solution earned $h_score of $h_max"; cat "$work/honest.log"; exit 1; }
[[ "$f_score" == "0" ]] || { echo "the forged report earned $f_score of $f_max"; cat "$work/forged.log"; exit 1; }
[[ "$forged_text" == *"do not match an independent run of the reference solution"* ]] ||
  { echo "the forged report lost its points for another reason: $forged_text"; exit 1; }
# With ROOFLAB_HARNESS (as CTest runs this), both trees link that build's harness and compile none of their own.
if [[ -n "${ROOFLAB_HARNESS:-}" ]]; then
  for tree in "$work/tree" "$src/build/solutions"; do
    ! grep -q "^build common/librooflab_common.a" "$tree/build.ninja" ||
      { echo "$tree compiles the harness though ROOFLAB_HARNESS names one"; exit 1; }
    grep -q "^ROOFLAB_HARNESS_TARGETS:[A-Z]*=$ROOFLAB_HARNESS/harness/targets.cmake\$" "$tree/CMakeCache.txt" ||
      { echo "$tree does not import $ROOFLAB_HARNESS's harness"; exit 1; }
  done
fi
echo "honest submission $h_score / $h_max, forged report $f_score / $f_max (values checked against the reference run)"
