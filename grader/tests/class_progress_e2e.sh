#!/usr/bin/env bash
# grade-class with its output in a file (nohup, a Slurm log): the first lines are there from the first
# second, not when the first student's grade ends (its first build takes minutes). The grade is held up by a
# `cmake` first in PATH that waits a few seconds and fails: while it waits, the log must already say how many
# students will be graded, what the first build costs, and which student is being graded. Nothing is built.
#   class_progress_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
work="$build/e2e-class-progress"
lab=01-memory-bandwidth
rm -rf "$work"
mkdir -p "$work/subs/alice/$lab" "$work/tree/bin"
fail() { echo "FAIL: $*"; exit 1; }
cp "$src/labs/$lab/answers.cpp" "$work/subs/alice/$lab/"
# In the build tree: the build sandbox lets the build run programs from there.
cat > "$work/tree/bin/cmake" <<'SH'
#!/bin/sh
sleep 6
echo "a cmake that waits, then fails (class_progress_e2e.sh)" >&2
exit 1
SH
chmod +x "$work/tree/bin/cmake"

PATH="$work/tree/bin:$PATH" "$cli" grade-class "$work/subs" 01 --out "$work/out" --build-dir "$work/tree" \
  --kind analytic --no-verify > "$work/log.txt" 2>&1 &
pid=$!
sleep 3  # the grade is waiting in its configure
log_then="$(cat "$work/log.txt")"
kill -0 "$pid" 2>/dev/null || { cat "$work/log.txt"; fail "grade-class ended before the check (the test proves nothing)"; }
wait "$pid" || true
echo "--- the log 3 s in:"
echo "$log_then"
grep -q "1 to grade" <<<"$log_then" || fail "the log says nothing of the students to grade while the first grade runs"
grep -q "expect [0-9]*-[0-9]* minutes on [0-9]* core" <<<"$log_then" || fail "no word on what the first build costs"
grep -q "alice: grading" <<<"$log_then" || fail "the log does not say which student is being graded"
grep -q "alice: GRADER FAILED" "$work/log.txt" || { cat "$work/log.txt"; fail "the held-up grade did not end as failed"; }
echo "grade-class: progress in the log from the first second"
