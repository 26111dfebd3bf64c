#!/usr/bin/env bash
# `rooflab inspect` end to end in this tree, whose student files are labs/ (the stubs, in CI): the compiler's
# view, then the traffic section (the lab's traffic hints run with every access site listed), each kernel's
# modelled bytes on a line of its own. A hint that fails makes inspect exit 1 and say it is a hint (one whose
# launcher is still the stub is named on a line instead, exit 0); --no-traffic leaves the section out, --json too
# (one JSON document).
#   inspect_e2e.sh CLI
set -uo pipefail
cli="$1"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$cli" inspect 01 2>&1); rc=$?
grep -q "Memory traffic, modelled on the CPU backend" <<<"$out" || { echo "$out"; fail "no traffic section (exit $rc)"; }
grep -qE "^rooflab: copy: analytic [0-9.e+]+ B, modelled DRAM" <<<"$out" || { echo "$out"; fail "no line for copy's bytes"; }
case $rc in
  0) ;;
  1) grep -q "a traffic hint failed (above); it is a hint" <<<"$out" || { echo "$out"; fail "exit 1 without saying why"; } ;;
  *) echo "$out"; fail "inspect exited $rc" ;;
esac

# The prediction: labelled as a model, on the H100 SXM when this machine has no GPU data/gpus.json knows.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  grep -q "^Predicted on the NVIDIA H100 SXM5 (a model of the compiled code, not a measurement" <<<"$out" ||
    { echo "$out"; fail "no prediction section for the default GPU"; }
fi
h200=$("$cli" inspect 05 --gpu h200-sxm --no-traffic 2>&1) || { echo "$h200"; fail "inspect 05 --gpu h200-sxm exited $?"; }
grep -q "^Predicted on the NVIDIA H200" <<<"$h200" || { echo "$h200"; fail "no prediction for the H200"; }
# Lab 05's floor is at its own timed size (L = 4096), not Lab 01's n: well under a second.
grep -qE "problem size n = 4096$" <<<"$h200" || { echo "$h200"; fail "Lab 05 not inspected at its timed size"; }

# The grids: every lab but 02 records its launches at the timed size (ROOFLAB_INSPECT_TIMED_LAUNCHES), so each kernel a
# threshold grades has a grid and waves there; a launcher that stopped starting its graded kernel at that size, or a
# recording that broke, fails here.
for lab in 01 03 04 05 06 07 08; do
  grids=$("$cli" inspect $lab --json --no-traffic 2>/dev/null) || fail "inspect $lab --json exited $?"
  python3 -c '
import json, sys
ks = json.loads(sys.stdin.read())["kernels"]
bad = [k["kernel"] for k in ks if k["graded_by"] and not (k["grid"] > 0 and k["waves"] > 0)]
sys.exit(f"no grid recorded at the timed size for {bad}" if bad else 0)' <<<"$grids" || fail "inspect $lab: a graded kernel has no grid"
done

quiet=$("$cli" inspect 01 --no-traffic 2>&1) || { echo "$quiet"; fail "inspect --no-traffic exited $?"; }
grep -q "Memory traffic" <<<"$quiet" && fail "--no-traffic printed the traffic section"
json=$("$cli" inspect 01 --json 2>/dev/null) || fail "inspect --json exited $?"
python3 -c 'import json, sys; json.loads(sys.stdin.read())' <<<"$json" || fail "inspect --json is not one JSON document"
python3 -c '
import json, sys
ks = json.loads(sys.stdin.read())["kernels"]
bad = [k["kernel"] for k in ks if not (k.get("prediction") and k["prediction"]["model"] is True and k["prediction"]["limiter"])]
sys.exit(f"no prediction (model, limiter) for {bad}" if bad else 0)' <<<"$json" || fail "inspect --json lacks a prediction"
# --sass: the prediction reads nvdisasm's listing where one is found (the perf-model CTest fetches one into the
# build tree), and says so; with none, it reads PTX and says why.
build_dir="$(dirname "$(dirname "$(realpath "$cli")")")"
nosass=$(ROOFLAB_NVDISASM=/nonexistent/nvdisasm "$cli" inspect 01 --sass --no-traffic 2>&1) ||
  { echo "$nosass"; fail "inspect --sass without nvdisasm exited $?"; }
grep -q "PTX, not SASS: .*no nvdisasm here" <<<"$nosass" || { echo "$nosass"; fail "--sass without nvdisasm does not say why"; }
sass_note="SASS: not checked (no nvdisasm in the toolkit or $build_dir/nvdisasm)"
tool="$(command -v nvdisasm || true)"
[[ -z "$tool" && -x "$build_dir/nvdisasm/nvdisasm" ]] && tool="$build_dir/nvdisasm/nvdisasm"
if [[ -n "$tool" ]]; then
  sass=$(ROOFLAB_NVDISASM="$tool" "$cli" inspect 01 --sass --json 2>/dev/null) || fail "inspect --sass --json exited $?"
  python3 -c '
import json, sys
ks = json.loads(sys.stdin.read())["kernels"]
bad = [k["kernel"] for k in ks if not (k.get("prediction") and k["prediction"]["code_from"] == "SASS")]
sys.exit(f"not read from SASS: {bad}" if bad else 0)' <<<"$sass" || fail "inspect --sass did not read SASS"
  sass_note="--sass read every kernel from SASS ($tool)"
fi
echo "$sass_note"
echo "inspect 01: the compiler's view, the prediction, the modelled traffic of each kernel (exit $rc), --no-traffic and --json without it; inspect 05 on an H200 at its timed size; a grid for every graded kernel of Labs 01 and 03-08"
