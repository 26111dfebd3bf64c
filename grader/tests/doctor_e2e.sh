#!/usr/bin/env bash
# `rooflab doctor` against canned machines (grader/tests/doctor_fixtures/): each case is the healthy H100 of
# base/ with some answers replaced (its files), removed (the names in `absent`) or both, and an `expect`:
#   base CASE     start from another case's answers (then this one's on top)
#   args ...      more arguments for `rooflab doctor`
#   exit N        the exit code it must give
#   + REGEX       a line of its output must match (grep -E)
#   - REGEX       no line may match
#   report REGEX  a line of its Markdown report must match
# A case without its probe answers runs the probe built for the CPU backend's pretend GPU (a dry run).
# Then the verdict grade uses: measured once, cached with the calibration, replaced by the next doctor.
#   doctor_e2e.sh CLI PROBE FIXTURES SCRATCH [CASE...]
set -uo pipefail
cli=$1 probe=$2 fixtures=$3 scratch=$4
shift 4
rm -rf "$scratch" && mkdir -p "$scratch"
export ROOFLAB_DOCTOR_PROBE=$probe ROOFLAB_EMU_QUIET=1
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# The answers of case $1 laid out in folder $2.
assemble() {
  local case_dir=$fixtures/cases/$1 out=$2 based
  based=$(sed -n 's/^base //p' "$case_dir/expect")
  if [ -n "$based" ]; then assemble "$based" "$out"; else cp "$fixtures/base/"* "$out/"; fi
  find "$case_dir" -maxdepth 1 -type f ! -name expect ! -name absent -exec cp {} "$out/" \;
  if [ -f "$case_dir/absent" ]; then
    local gone
    while read -r gone; do rm -f "$out/$gone"; done < "$case_dir/absent"
  fi
}

# Runs `rooflab doctor` on case $1's answers and checks its expect file.
run_case() {
  local name=$1 dir=$scratch/$1 expect=$fixtures/cases/$1/expect want rc args=()
  mkdir -p "$dir/answers"
  assemble "$name" "$dir/answers"
  read -r -a args <<< "$(sed -n 's/^args //p' "$expect")"
  ROOFLAB_DOCTOR_FIXTURES=$dir/answers ROOFLAB_CACHE_DIR=$dir/cache \
    "$cli" doctor --report-dir "$dir/report" "${args[@]}" > "$dir/out.txt" 2>&1
  rc=$?
  want=$(sed -n 's/^exit //p' "$expect")
  [ "$rc" = "$want" ] || fail "$name: exit code $rc, want $want"
  while IFS= read -r line; do
    case $line in
      "+ "*) grep -Eq -- "${line#+ }" "$dir/out.txt" || fail "$name: no line matches: ${line#+ }" ;;
      "- "*) ! grep -Eq -- "${line#- }" "$dir/out.txt" || fail "$name: a line matches: ${line#- }" ;;
      "report "*) grep -Eq -- "${line#report }" "$dir/report/doctor.md" 2>/dev/null ||
                  fail "$name: the report has no line matching: ${line#report }" ;;
    esac
  done < "$expect"
  echo "case $name: exit $rc"
}

cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(ls "$fixtures/cases")
for c in "${cases[@]}"; do
  before=$failures
  run_case "$c"
  [ "$failures" = "$before" ] || sed "s/^/  $c | /" "$scratch/$c/out.txt"
done

# grade's verdict is measured once and cached: a throttled GPU's verdict stands when the GPU has cooled
# (the canned measurement is now healthy) until `rooflab doctor` measures again and replaces it.
if [ $# -eq 0 ]; then
  gate=$scratch/gate && mkdir -p "$gate/answers" && assemble throttled "$gate/answers"
  export ROOFLAB_DOCTOR_FIXTURES=$gate/answers ROOFLAB_CACHE_DIR=$gate/cache
  "$cli" doctor --gate > "$gate/1.txt" 2>&1
  cp "$fixtures/base/probe-health.json" "$fixtures/base/nvidia-smi.csv" "$gate/answers/"
  "$cli" doctor --gate > "$gate/2.txt" 2>&1
  grep -q "WITHHELD" "$gate/2.txt" || fail "gate: the cached verdict was not used: $(cat "$gate/2.txt")"
  ls "$gate/cache"/doctor-GPU-*-driver580.95.05-1980MHz.json > /dev/null 2>&1 || fail "gate: no verdict cached"
  "$cli" doctor --report-dir "$gate/report" > "$gate/3.txt" 2>&1
  "$cli" doctor --gate > "$gate/4.txt" 2>&1
  grep -q "^perf points: awarded" "$gate/4.txt" || fail "gate: doctor did not replace the verdict: $(cat "$gate/4.txt")"
  echo "gate: cached, kept, replaced"
fi

if [ "$failures" -gt 0 ]; then
  echo "doctor_e2e: $failures failure(s)"
  exit 1
fi
echo "doctor_e2e: every case as expected"
