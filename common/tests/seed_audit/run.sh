#!/usr/bin/env bash
# The seed audit on the miniature lab: it must fail, naming the question asked only of fixed inputs and the
# one never asked, and accept the seeded question and the yes/no question whose order moved with the seed.
set -uo pipefail
audit="$1" binary="$2" object="$3"
out="$("$audit" --lab 99 --binary "$binary" --object "$object")"
status=$?
echo "$out"
fail() { echo "FAILED: $*"; exit 1; }
[[ $status -eq 1 ]] || fail "the audit should exit 1 (a question not seeded), not $status"
grep -Eq '^  NOT .*lab99::fixed_question\(int\)$' <<<"$out" || fail "fixed_question should be flagged"
grep -Eq '^  NOT .*lab99::never_asked\(\)$' <<<"$out" || fail "never_asked should be flagged"
grep -Eq '^  seeded .*lab99::seeded_question\(double\)$' <<<"$out" || fail "seeded_question should be seeded"
grep -Eq '^  seeded .*lab99::is_big\(double\)$' <<<"$out" || fail "is_big (few answers, seeded order) should be seeded"
grep -q '2 of 4 questions' <<<"$out" || fail "the summary should count 2 of 4"
# A binary that is not an audit binary is a usage error, said as such.
"$audit" --lab 99 --binary /bin/true --object "$object" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "a binary that writes no audit should exit 2"
echo "seed audit: as expected"
