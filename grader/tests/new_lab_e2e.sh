#!/usr/bin/env bash
# `rooflab new-lab` end to end (issue 27). In a scratch copy of the course (the files git knows, tracked or
# untracked and not ignored; never the tree itself) it scaffolds the next free lab id, then checks:
#   1. nothing changed but new files under labs/NN-NAME/ and solutions/NN-NAME/ and one added line of
#      labs/CMakeLists.txt; a second new-lab with the same id is refused (exit 2) and changes nothing;
#   2. the lab builds alone (ROOFLAB_LABS=NN) against this build's harness (cmake/RooflabHarness.cmake);
#   3. `rooflab selftest` passes on every variant of it: the stub scores 0 saying "not implemented", the
#      scaffolded solution earns full marks, its known-bad case loses the test it names and nothing else.
#   new_lab_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli=$(realpath "$1") build=$(realpath "$2") src=$(realpath "$3")
work="$build/e2e-new-lab"
course="$work/course"
name=scaffold-check
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s)
rm -rf "$work"
mkdir -p "$work"

# ---- the scratch course, and what it holds before new-lab ----
python3 - "$src" "$course" "$work/before.json" <<'PY'
import hashlib, json, os, shutil, subprocess, sys
src, course, out = sys.argv[1:]
try:
    listed = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode().split("\0")
except (OSError, subprocess.CalledProcessError):  # not a git checkout (a release): everything but build trees
    listed = [os.path.relpath(os.path.join(d, f), src) for d, dirs, files in os.walk(src)
              for f in files if not os.path.relpath(d, src).split(os.sep)[0] == "build"]
files = sorted(f for f in listed if f and os.path.isfile(os.path.join(src, f)))  # not the deleted ones
for f in files:
    os.makedirs(os.path.dirname(os.path.join(course, f)) or course, exist_ok=True)
    shutil.copy2(os.path.join(src, f), os.path.join(course, f))
json.dump({f: hashlib.sha256(open(os.path.join(course, f), "rb").read()).hexdigest() for f in files}, open(out, "w"))
PY
last=$(ls "$course/labs" | sed -n 's/^\([0-9][0-9]\)-.*/\1/p' | sort | tail -1)
id=$(printf '%02d' $((10#$last + 1)))
dir="$id-$name"

# ---- scaffold, and what changed ----
cp "$course/labs/CMakeLists.txt" "$work/registration-before"
"$cli" new-lab "$id" "$name" --root "$course" > "$work/new-lab.log" 2>&1 || { cat "$work/new-lab.log"; fail "new-lab exited $?"; }
rc=0
"$cli" new-lab "$id" another-name --root "$course" > "$work/new-lab-again.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat "$work/new-lab-again.log"; fail "new-lab with a taken id exited $rc, want 2 (a usage error)"; }
grep -q "lab id $id is taken by $dir" "$work/new-lab-again.log" ||
  { cat "$work/new-lab-again.log"; fail "the refusal does not say why"; }
python3 - "$course" "$work/before.json" "$work/registration-before" "$dir" <<'PY'
import hashlib, json, os, sys
course, before_file, registration_before, lab = sys.argv[1:]
before = json.load(open(before_file))
after = {}
for d, _, files in os.walk(course):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), course)
        after[rel] = hashlib.sha256(open(os.path.join(course, rel), "rb").read()).hexdigest()
ours = (f"labs/{lab}/", f"solutions/{lab}/")
problems = [f"removed: {f}" for f in sorted(set(before) - set(after))]
problems += [f"new file outside the lab's two folders: {f}" for f in sorted(set(after) - set(before))
             if not f.startswith(ours)]
problems += [f"changed: {f}" for f in sorted(set(before) & set(after))
             if before[f] != after[f] and f != "labs/CMakeLists.txt"]
# labs/CMakeLists.txt: the old lines, in order, and one more, the lab's registration.
old = open(registration_before).read().splitlines()
new = open(os.path.join(course, "labs/CMakeLists.txt")).read().splitlines()
added = list(new)
for line in old:
    if line in added: added.remove(line)
    else: problems.append(f"labs/CMakeLists.txt lost the line {line!r}")
if [l for l in new if l in old] != old: problems.append("labs/CMakeLists.txt: the old lines were reordered")
if added != [f"add_subdirectory({lab})"]:
    problems.append(f"labs/CMakeLists.txt: added {added}, want only add_subdirectory({lab})")
made = sorted(f for f in set(after) - set(before) if f.startswith(ours))
for half in ours:
    if not any(f.startswith(half) for f in made): problems.append(f"new-lab wrote nothing under {half}")
print("\n".join(problems) if problems else
      f"new-lab: {len(made)} files under labs/{lab}/ and solutions/{lab}/, one line in labs/CMakeLists.txt, "
      "nothing else changed; the same id again refused")
sys.exit(1 if problems else 0)
PY
scaffolded=$(date +%s)

# ---- build the lab alone, against this build's harness ----
# The course's own top CMakeLists.txt, which imports this build's harness (harness/harness.cmake names it)
# instead of compiling common/ again.
cmake -S "$course" -B "$work/build" -G Ninja -C "$build/harness/harness.cmake" -DROOFLAB_SELFTEST=ON \
  -DROOFLAB_LABS="$id" -DROOFLAB_STUDENT_DIR="$course/solutions" \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure of lab $id failed"; }
configured=$(date +%s)
# Every binary the manifest lists for the lab (the stub, the solution, each known-bad case).
mapfile -t targets < <(python3 - "$work/build/rooflab/labs.json" <<'PY'
import json, sys
for lab in json.load(open(sys.argv[1]))["labs"]:
    for v in lab["variants"].values():
        for b in v["binaries"]:
            if b["target"]: print(b["target"])
PY
)
[ "${#targets[@]}" -gt 0 ] || fail "the manifest lists no binaries of lab $id"
cmake --build "$work/build" --target "${targets[@]}" > "$work/build.log" 2>&1 ||
  { tail -n 60 "$work/build.log"; fail "lab $id does not build"; }
built=$(date +%s)

# ---- grade: every variant through rooflab selftest ----
# The harness was compiled for this tree's data/ and labs/; the scratch course's (the lab's thresholds.json)
# are named by the variables that override them (rooflab/specs.hpp).
export ROOFLAB_DATA_DIR="$course/data" ROOFLAB_LABS_DIR="$course/labs"
mapfile -t variants < <(python3 - "$work/build/rooflab/labs.json" <<'PY'
import json, sys
for lab in json.load(open(sys.argv[1]))["labs"]:
    for name, v in lab["variants"].items():
        if v["expect"]: print(name)
PY
)
printf '%s\n' "${variants[@]}" | grep -q '^st-' || fail "lab $id has no known-bad case (solutions/$dir/selftest/)"
for v in "${variants[@]}"; do
  "$cli" selftest --build-dir "$work/build" --lab "$id" --variant "$v" > "$work/selftest-$v.log" 2>&1 ||
    { cat "$work/selftest-$v.log"; fail "selftest of lab $id variant $v"; }
  tail -n 1 "$work/selftest-$v.log"
done
grep -q "not implemented" "$work/selftest-stubs.log" || fail "the stub's failures do not say \"not implemented\""

# ---- a known-bad case out of date with its solution: the tree still configures, the case's test fails ----
# (the scaffold's case patches the loop header of the solution's kernel; a solution edit takes it away)
case_dir=$(ls -d "$course/solutions/$dir/selftest/"*/ | head -n1)
case=$(basename "$case_dir")
sed -i 's/i < n; i += grid_threads()/i < n; i += grid_threads() \/* edited *\//' "$course/solutions/$dir/kernels.cu"
cmake -S "$course" -B "$work/build" > "$work/stale-configure.log" 2>&1 ||
  { cat "$work/stale-configure.log"; fail "a stale known-bad case stopped the configure"; }
grep -q "known-bad case $case left out" "$work/stale-configure.log" || fail "the configure did not warn about $case"
! ctest --test-dir "$work/build" --output-on-failure -R "^lab$id[.]selftest[.]st-$case\$" > "$work/stale-test.log" 2>&1 ||
  { cat "$work/stale-test.log"; fail "the stale case's test passed"; }
grep -q "must match exactly once" "$work/stale-test.log" || { cat "$work/stale-test.log"; fail "the stale case's test does not say why"; }
done_at=$(date +%s)
echo "new-lab $id: scaffold $((scaffolded - start)) s, configure $((configured - scaffolded)) s," \
     "build ${#targets[@]} binaries $((built - configured)) s, selftest $((done_at - built)) s"
