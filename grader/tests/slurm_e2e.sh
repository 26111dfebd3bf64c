#!/usr/bin/env bash
# Grading a class through Slurm, for real: a one-node cluster on the loopback (munged, slurmctld and slurmd from
# Debian's munge and slurm-wlm, a generated slurm.conf), three Lab 01 submissions (a solution, a stub, a
# known-bad case) graded by an sbatch job array, merged by the collection job; then a task resubmitted alone,
# the GPU script's directives, a node without a GPU refusing a perf grade, and sbatch missing. The daemons are
# stopped by their pids. Where Slurm cannot be started (not root, packages missing) it says why and fails.
#   slurm_e2e.sh CLI BUILD_DIR SOURCE_DIR
set -euo pipefail
cli="$1" build="$2" src="$3"
fail() { echo "FAIL: $*"; exit 1; }
[[ "$(id -u)" == 0 ]] || fail "starting slurmctld and slurmd needs root (CI runs as root); run this test as root"
for tool in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v "$tool" >/dev/null || fail "$tool is missing: apt-get install slurm-wlm munge (./rooflab test installs them)"
done

work="$build/e2e-slurm"
rm -rf "$work"
mkdir -p "$work/munge/key" "$work/state" "$work/spool"
chmod 755 "$work/munge"   # munged's socket folder must be reachable by every user
chmod 700 "$work/munge/key"
head -c 1024 /dev/urandom > "$work/munge/key/munge.key"
chmod 400 "$work/munge/key/munge.key"

stop() {  # by pid, never by name: other Slurm daemons on this machine are not ours
  # Jobs still running (a failed check) are cancelled first: their steps outlive slurmd.
  if [[ -s "$work/slurmctld.pid" ]]; then
    # shellcheck disable=SC2046
    scancel $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    sleep 1
  fi
  for f in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    [[ -s "$f" ]] && kill "$(cat "$f")" 2>/dev/null || true
  done
}
trap stop EXIT
port=$(( 20000 + $$ % 20000 ))
cat > "$work/slurm.conf" <<EOF
ClusterName=rooflabtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$(( port + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"
munged -f --socket="$work/munge/munge.sock" --key-file="$work/munge/key/munge.key" --log-file="$work/munge/munged.log" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" || fail "munged did not start: $(cat "$work/munge/munged.log")"
slurmctld -c || fail "slurmctld did not start: $(cat "$work/slurmctld.log")"
slurmd -N localhost || fail "slurmd did not start: $(cat "$work/slurmd.log")"
for _ in $(seq 60); do
  [[ "$(sinfo -h -o %T 2>/dev/null)" == idle ]] && break
  sleep 0.5
done
[[ "$(sinfo -h -o %T 2>/dev/null)" == idle ]] || { cat "$work/slurmctld.log" "$work/slurmd.log"; fail "the node never became idle"; }
echo "slurm: a one-node cluster on 127.0.0.1:$port is up"

wait_job() {  # jobid: until it has left the queue (15 minutes at most)
  for _ in $(seq 900); do
    [[ -z "$(squeue -h -j "$1" 2>/dev/null)" ]] && return 0
    sleep 1
  done
  squeue; fail "job $1 still queued or running after 15 minutes"
}

# ---- three Lab 01 submissions ----
lab=01-memory-bandwidth subs="$work/submissions" out="$work/out"
mkdir -p "$subs/solved/$lab" "$subs/stub/$lab" "$subs/skips/$lab"
cp "$src/solutions/$lab/kernels.cu" "$src/solutions/$lab/answers.cpp" "$subs/solved/$lab/"
cp "$src/labs/$lab/kernels.cu" "$src/labs/$lab/answers.cpp" "$subs/stub/$lab/"
cp "$build/selftest/$lab/skips-tail/kernels.cu" "$src/solutions/$lab/answers.cpp" "$subs/skips/$lab/"

# CPU only (no GPU here); one student per task; the tasks share grader.submission_verified's tree and take turns.
"$cli" slurm-script "$subs" 01 --out "$out" --cpu-only --chunk 1 --cpus-per-task 1 --partition cpu --time 00:20:00 \
  --build-dir "$build/e2e-submission/tree" --kind analytic --kind emu --no-verify --timeout 120 --submit \
  > "$work/submit.log" 2>&1 || { cat "$work/submit.log"; fail "slurm-script --submit"; }
cat "$work/submit.log"
grep -q -- "--array=0-2" "$out/slurm/grade.sbatch" || fail "not an array of 3 tasks"
! grep -q -- "--gres" "$out/slurm/grade.sbatch" || fail "a CPU-only script asks for a GPU"
collect_job=$(sed -n 's/^collect=//p' "$out/slurm/jobs")
wait_job "$collect_job"
cat "$out/slurm/logs/collect.out"
csv_total() { awk -F, -v s="$1" '$1 == s { t += $4 } END { printf "%g", t }' "$out/grades.csv"; }
[[ "$(csv_total solved)" == 60 ]] || fail "solved: $(csv_total solved) of 60 in grades.csv"
[[ "$(csv_total stub)" == 0 && "$(grep -c '^stub,01,\(analytic\|emu\),0,30$' "$out/grades.csv")" == 2 ]] ||
  { cat "$out/grades.csv"; fail "stub: no analytic and emu rows of 0 of 30"; }
awk -v t="$(csv_total skips)" 'BEGIN { exit !(t > 0 && t < 60) }' || fail "skips earned $(csv_total skips)"
[[ -s "$out/junit/skips.xml" ]] || fail "no JUnit file"

# ---- a failed task is named, and resubmitted alone ----
rm -rf "$out/students/stub"
"$cli" grade-class --out "$out" --collect > "$work/collect.log"
resubmit=$(grep -o "sbatch --array=[0-9,]* [^ ]*grade.sbatch" "$work/collect.log") || { cat "$work/collect.log"; fail "no resubmit command"; }
# Sorted, the students are skips, solved and stub: stub is task 2.
[[ "$resubmit" == "sbatch --array=2 $out/slurm/grade.sbatch" ]] || fail "resubmits the wrong task: $resubmit"
job=$(${resubmit/sbatch/sbatch --parsable})
wait_job "$job"
"$cli" grade-class --out "$out" --collect > "$work/collect.log"
[[ "$(grep -c '^stub,01,\(analytic\|emu\),0,30$' "$out/grades.csv")" == 2 ]] || { cat "$out/grades.csv"; fail "the resubmitted task's student is not back"; }

# ---- perf graded: one GPU per task, exclusive; a node without a GPU grades nothing and fails its task ----
"$cli" slurm-script "$subs" 01 --out "$work/gpu" --partition gpu --account course --chunk 2 > /dev/null
for d in "--gres=gpu:1" "--exclusive" "--account=course" "--partition=gpu" "--array=0-1" "--require-gpu" "ROOFLAB_CACHE_DIR="; do
  grep -q -- "$d" "$work/gpu/slurm/grade.sbatch" || fail "the GPU script lacks $d"
done
set +e
SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_JOB_ID=0 TMPDIR="$work" bash "$work/gpu/slurm/grade.sbatch" > "$work/nogpu.log" 2>&1
rc=$?
set -e
[[ $rc == 4 ]] && grep -q "this node has no GPU" "$work/nogpu.log" || { cat "$work/nogpu.log"; fail "a node without a GPU graded (exit $rc)"; }
[[ ! -e "$work/gpu/students" ]] || fail "the GPU-less task wrote results"

# ---- no Slurm: the scripts are written, and the message says how to submit them ----
set +e
PATH=/usr/local/nothing "$cli" grade-class "$subs" 01 --out "$work/noslurm" --slurm --cpu-only > "$work/noslurm.log" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "Slurm is not installed here" "$work/noslurm.log" || { cat "$work/noslurm.log"; fail "no message without sbatch"; }
[[ -s "$work/noslurm/slurm/grade.sbatch" ]] || fail "no script written without sbatch"
echo "slurm: 3 submissions graded by a job array and merged; a task resubmitted alone; GPU and no-Slurm cases refused"
