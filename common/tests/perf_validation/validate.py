#!/usr/bin/env python3
"""The performance model against a recorded GPU run.

The kernels that ran (lab*/kernels.cu of the run's folder, the reference solutions at the run's commit) are compiled
to PTX, a ptxas report and a cubin for the run's architecture (the model reads the cubin's SASS with nvdisasm:
--nvdisasm-dir fetches it where the toolkit lacks it), each lab's static binary predicts them (`--rooflab-inspect
--code-dir`, the same code path as `rooflab inspect`), and each prediction is put beside the measured figure of
measured.json (with the grids the run launched, where measured.json lists its "launches": the launchers here may
not be the run's). It prints the table that docs/measurements.md records; with --check DOC, it fails when the table
in DOC (between the markers) is not the one the model gives now, so that a change to the model shows in the
document that holds it against the measurements.

No score depends on this: it is how the model is judged, in the open.
"""
import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

def markers(tag=""):
    """The markers around a run's tables in the document: `tag` "" for the H100 run (the first), else the run's own
    ("h200"); the prediction reading PTX and the one reading SASS (`inspect --sass`) each have a table."""
    name = "perf-model-validation" + (f"-{tag}" if tag else "")
    return {code: (f"<!-- {name}{suffix}: begin (common/tests/perf_validation/validate.py writes this table) -->",
                   f"<!-- {name}{suffix}: end -->") for code, suffix in (("PTX", ""), ("SASS", "-sass"))}


def run_static(args, lab, gpu, arch=None, code_dir=None, sass=False, launches=None, names=None):
    """Lab `lab`'s static binary's predictions, {kernel: row}: of the build's capture, or of `code_dir`'s; from
    SASS with `sass`; with the grids of the `launches` file (the run's), where `code_dir`'s launchers did not run;
    with the `names` file, the registry's kernels that `code_dir`'s code names otherwise (--code-names)."""
    binary = args.build / "labs" / "bin" / f"lab{lab}_static"
    argv = [str(binary), "--rooflab-inspect", "--gpu", gpu, "--json"] + (["--sass"] if sass else [])
    if arch:
        argv += ["--arch", arch]
    if code_dir:
        argv += ["--code-dir", str(code_dir)]
    if launches:
        argv += ["--launches", str(launches)]
    if names:
        argv += ["--code-names", str(names)]
    env = dict(os.environ)
    if args.nvdisasm:
        env["ROOFLAB_NVDISASM"] = str(args.nvdisasm)  # the model reads SASS, as with a full toolkit
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
    return {k["kernel"]: k for k in json.loads(out.stdout)["kernels"]}


def compile_kernels(args, src, lab_dir, frozen, arch, out):
    """`src` compiled as the run's build did, into `out`: kernels.<arch>.ptx, .ptxas.txt and .cubin. The three are
    kept in the build tree under a key of everything they are made from (the source, the headers it can include:
    common/include, the lab's folder, the run's frozen headers; the tools and their options), so that the runs whose
    fixtures hold the same code for a lab (Labs 02, 04 and 05 of the H100 and H200 runs) compile it once: a change to
    any of those files is a new key."""
    cmd = [args.nvcc, "-std=c++20", f"-arch={arch}", f"-I{args.source / 'common' / 'include'}", *frozen,
           f"-I{lab_dir}", "-ptx"]
    digest = hashlib.sha256("\0".join(cmd + [str(args.ptxas)]).encode() + b"\0" + src.read_bytes())
    for folder in [args.source / "common" / "include", lab_dir] + [pathlib.Path(f[2:]) for f in frozen]:
        for f in sorted(f for f in folder.rglob("*") if f.is_file()):
            digest.update(b"\0" + str(f).encode() + b"\0" + f.read_bytes())
    cmd.append(str(src))
    cache = args.build / "perf_validation" / "kernels" / digest.hexdigest()[:24]
    names = [f"kernels.{arch}.{ext}" for ext in ("ptx", "ptxas.txt", "cubin")]
    if not all((cache / n).is_file() for n in names):
        work = cache.with_name(cache.name + f".{os.getpid()}")  # written whole, then renamed: no half-written cache
        work.mkdir(parents=True, exist_ok=True)
        ptx = work / names[0]
        subprocess.run(cmd + ["-o", str(ptx)], check=True)
        report = subprocess.run([args.ptxas, f"-arch={arch}", "-m64", "-v", str(ptx), "-o", str(work / names[2])],
                                check=True, capture_output=True, text=True)
        (work / names[1]).write_text(report.stderr)
        try:
            work.rename(cache)
        except OSError:  # another run wrote the same key first: its files are the same
            shutil.rmtree(work, ignore_errors=True)
    for n in names:
        shutil.copyfile(cache / n, out / n)


def predict(args, lab, run_dir, arch, gpu):
    src = run_dir / f"lab{lab}" / "kernels.cu"
    lab_dir = next((args.source / "labs").glob(f"{lab}-*"))
    measured = json.loads((run_dir / "measured.json").read_text())
    # A lab whose headers changed since the run in a way its code cannot compile against: the headers as they
    # stood (measured.json's "lab_headers", folders under perf_validation/ shared by the runs that need them),
    # searched before today's lab folder.
    frozen = [f"-I{run_dir.parent / d}" for d in measured.get("lab_headers", {}).get(lab, [])]
    with tempfile.TemporaryDirectory() as tmp:
        compile_kernels(args, src, lab_dir, frozen, arch, pathlib.Path(tmp))
        # The launches the run recorded (measured.json's "launches"): the grids the prediction counts waves of.
        launches = None
        if "launches" in measured:
            launches = pathlib.Path(tmp) / "launches.json"
            launches.write_text(json.dumps(measured["launches"]))
        # The registry's kernels this code names otherwise (measured.json's "registry_names").
        names = pathlib.Path(tmp) / "names.json"
        names.write_text(json.dumps({now: then for now, then in measured.get("registry_names", {}).items()
                                     if now.startswith(f"lab{lab}::")}))
        out = {"PTX": run_static(args, lab, gpu, arch, tmp, launches=launches, names=names)}
        if args.nvdisasm:
            out["SASS"] = run_static(args, lab, gpu, arch, tmp, sass=True, launches=launches, names=names)
            for k in out["SASS"].values():
                if k["prediction"] and k["prediction"]["code_from"] != "SASS":
                    raise RuntimeError(f"lab {lab}: {k['kernel']} was not read from SASS: {k['prediction']['evidence'][0]}")
        return out


def in_roof(result, kernel, prediction, roofs):
    """A prediction as the measured figure is stated: a fraction of the result's roof."""
    roof = roofs[result.get("roof", "copy")]
    floor = kernel["bytes"] / roof["bytes_per_s"] if "bytes_per_s" in roof else kernel["flops"] / roof["flops"]
    return floor / prediction["time_s"]


def held_out(args):
    """What the model predicts for today's reference solutions of the labs rewritten since the run, on the H100 and
    the H200 (their roofs: each GPU's datasheet figures, the copy ceiling at the model's share of the datasheet).
    docs/measurements.md records it once, before a GPU measures these kernels: it is not checked against the model
    after that, so a later change to the model cannot move the figures it is to be judged by. With --nvdisasm-dir,
    the predictions read SASS (`inspect --sass`)."""
    measured = json.loads((args.run / "measured.json").read_text())
    # Today's kernel for a result whose kernel the run knew by another name (its "registry_names", backwards).
    todays = {then: now for now, then in measured.get("registry_names", {}).items()}
    gpus = {}
    for g in json.loads((args.source / "data" / "gpus.json").read_text())["gpus"]:
        gpus[g["id"]] = g
    model = json.loads((args.source / "data" / "perf_model.json").read_text())
    share = model["architectures"]["sm_90"]["copy_fraction"]["value"]
    lines = ["| test (kernel) | H100 SXM: predicted | H200 SXM: predicted | limiter on the H200 |", "|---|---|---|---|"]
    cache = {}
    for r in measured["results"]:
        if r["lab"] not in args.held_out.split(","):
            continue
        cells = []
        for gpu in ("h100-sxm", "h200-sxm"):
            g = gpus[gpu]
            roofs = {"copy": {"bytes_per_s": g["bandwidth_gbps"]["value"] * 1e9 * share},
                     "fp32": {"flops": g["fp32_tflops"]["value"] * 1e12}, "fp16": {"flops": g["fp16_tflops"]["value"] * 1e12}}
            if (r["lab"], gpu) not in cache:
                cache[(r["lab"], gpu)] = run_static(args, r["lab"], gpu, sass=args.nvdisasm is not None)
            rows = cache[(r["lab"], gpu)]
            kernel = todays.get(r["kernel"], r["kernel"])
            p = rows[kernel]["prediction"]
            if "ratio_to" in r:
                cells.append(f"{p['time_s'] / rows[r['ratio_to']]['prediction']['time_s']:.2f}x")
            else:
                cells.append(f"{100 * in_roof(r, rows[kernel], p, roofs):.1f}%")
            limiter = p["limiter"]
        lines.append(f"| {r['test']} | {cells[0]} | {cells[1]} | {limiter} |")
    return "\n".join(lines)


def all_predictions(args):
    """{lab: {"PTX": rows, "SASS": rows (with nvdisasm)}} for every lab the run measured."""
    measured = json.loads((args.run / "measured.json").read_text())
    arch = measured.get("arch", "sm_90")
    predictions = {}
    for r in measured["results"]:
        if r["lab"] not in predictions:
            predictions[r["lab"]] = predict(args, r["lab"], args.run, arch, measured["gpu"])
    return predictions


def table(args, all_rows, code="PTX"):
    measured = json.loads((args.run / "measured.json").read_text())
    predictions = {lab: by_code[code] for lab, by_code in all_rows.items()}
    rows = []
    within = flagged_right = 0
    wrong_flags = []
    for r in measured["results"]:
        lab = r["lab"]
        p = predictions[lab][r["kernel"]]["prediction"]
        if "ratio_to" in r:
            base = predictions[lab][r["ratio_to"]]["prediction"]
            value = p["time_s"] / base["time_s"]
            shown = f"{value:.2f}x"
            meas = f"{r['measured']:.2f}x"
            predicted_short = value > r["full_at"]
            missed = r["measured"] > r["full_at"]
        else:
            value = in_roof(r, predictions[lab][r["kernel"]], p, measured["roofs"])
            shown = f"{100 * value:.1f}%"
            meas = f"{100 * r['measured']:.1f}%"
            predicted_short = r["full_at"] is not None and value < r["full_at"]
            missed = r["full_at"] is not None and r["measured"] < r["full_at"]
        error = value / r["measured"] - 1
        ok = abs(error) <= 0.2
        within += ok
        if r["full_at"] is not None:
            if predicted_short == missed:
                flagged_right += 1
            else:
                wrong_flags.append(r["test"])
        flag = "-" if r["full_at"] is None else ("short of it" if predicted_short else "meets it")
        rows.append(f"| {r['test']} | {meas} | {shown} | {100 * error:+.0f}%{'' if ok else ' (outside 20%)'} | "
                    f"{flag} | {'short of it' if missed else ('met it' if r['full_at'] is not None else '-')} | {p['limiter']} |")
    graded = sum(1 for r in measured["results"] if r["full_at"] is not None)
    begin, end = markers(args.tag)[code]
    lines = [begin,
             "| test (kernel) | measured | predicted | error | predicted, full-point mark | measured, full-point mark | limiter (model) |",
             "|---|---|---|---|---|---|---|"] + rows + [
        "",
        f"Within 20% of the measured figure: {within} of {len(rows)}. Predicted on the right side of the full-point "
        f"mark: {flagged_right} of {graded}" + (f" (wrong: {', '.join(wrong_flags)})." if wrong_flags else "."),
        end]
    return "\n".join(lines)


RULE_MARKERS = ("<!-- rule-figures: begin (common/tests/perf_validation/validate.py --rule-figures writes this table) -->",
                "<!-- rule-figures: end -->")


def run_references(source, run_id):
    """What the run `run_id` (its fixture folder) measured of the references the rules grade against: its entry of
    data/references.json, which the grader's hints read too (the same figures, shipped with the course)."""
    runs = {r["id"]: r for r in json.loads((source / "data" / "references.json").read_text())["runs"]}
    if run_id not in runs:
        raise SystemExit(f"data/references.json has no run \"{run_id}\" (it has {sorted(runs)})")
    return runs[run_id]["references"]


def rule_figure(args, model, cache, lab, rule=None, run=None, gpu=None):
    """A `predicted` provenance's figure, in its rule's own terms, from what the model predicts for today's reference
    solution of lab `lab` (`model`: the provenance's "model" object, or a goal of goals.json) and what the named run
    measured of the rule's reference (`run` and `gpu` where the object names none; run_references).

    The kernels: a goal names them; a rule's are those the lab's kernel registry says it grades (lab.hpp's
    graded_by), but `over`, so that the rule, its tests and its figure cannot name different kernels.

    figure: "copy_fraction"      the kernels' bytes per second over the run's copy ceiling (the worst kernel's);
            "flops_over"         the kernels' FLOP/s over the reference's (the worst kernel's);
            "reference_time_over" the reference's time over the kernel's (a speedup over it);
            "time_ratio"         the kernel's time over the `over` kernel's (the run's measured time of it where
                                 `over_measured` names one of its references: the same kernel, unchanged since);
            "time_ratio_over_roofline" that ratio over the roofline's own ratio of the two (the longer of each one's
                                 declared bytes at the copy ceiling and FLOPs at the FMA ceiling);
            "flops"              the kernels' FLOP/s (the worst kernel's);
            "over_roofline"      the kernel's time over its roofline time with the GPU's dense FP16 tensor peak (the
                                 longer of its bytes at the copy ceiling and its FLOPs at that peak).
    A measured time `over_measured` names that the run did not measure is the model's prediction of `over`.
    Returns (figure, {kernel: limiter}): the limiters of the kernels the model predicted."""
    run_id = model.get("run", run)
    run = json.loads((args.source / "common" / "tests" / "perf_validation" / run_id / "measured.json").read_text())
    gpu = model.get("gpu", gpu)
    copy = run["roofs"]["copy"]["bytes_per_s"]
    refs = run_references(args.source, run_id)
    key = (gpu, model["reading"])
    if (lab, key) not in cache:
        cache[(lab, key)] = run_static(args, lab, gpu, sass=model["reading"] == "SASS")
    rows = cache[(lab, key)]

    def row(kernel):
        if kernel not in rows or rows[kernel].get("prediction") is None:
            raise SystemExit(f"the model has no prediction for {kernel} (lab {lab}, {gpu})")
        return rows[kernel]

    def time(kernel):
        return row(kernel)["prediction"]["time_s"]

    def reference_time(name):
        r = refs[name]
        return r["time_s"] if "time_s" in r else r["bytes"] / (r["copy_fraction"] * copy)

    def roofline(kernel):
        return max(row(kernel)["bytes"] / copy, row(kernel)["flops"] / refs["fma_ceiling"]["flops"])

    over = model.get("over")
    if "kernels" in model:
        kernels = model["kernels"]
    else:
        graded = [k for k, r in rows.items() if rule in r.get("graded_by", [])]
        if not graded or (over and over not in graded):
            raise SystemExit(f"lab {lab} {rule}: the kernel registry (graded_by) names {graded or 'no kernel'} for the rule"
                             + (f", not its `over` {over}" if over and over not in graded else ""))
        kernels = [k for k in graded if k != over]
    kind = model["figure"]
    measured_over = model.get("over_measured") in refs
    base_s = reference_time(model["over_measured"]) if measured_over else time(over) if over else None
    if kind == "copy_fraction":
        value = min(row(k)["bytes"] / time(k) / copy for k in kernels)
    elif kind == "flops_over":
        value = min(row(k)["flops"] / time(k) / refs[model["reference"]]["flops"] for k in kernels)
    elif kind == "reference_time_over":
        value = min(reference_time(model["reference"]) / time(k) for k in kernels)
    elif kind == "time_ratio":
        value = max(time(k) / base_s for k in kernels)
    elif kind == "time_ratio_over_roofline":
        value = max(time(k) / base_s / (roofline(k) / roofline(over)) for k in kernels)
    elif kind == "flops":
        value = min(row(k)["flops"] / time(k) for k in kernels)
    elif kind == "over_roofline":
        tensor = run["roofs"]["fp16"]["flops"]
        value = max(time(k) / max(row(k)["bytes"] / copy, row(k)["flops"] / tensor) for k in kernels)
    else:
        raise SystemExit(f"unknown figure \"{kind}\"")
    predicted = kernels + ([over] if over and not measured_over else [])
    limiters = {k: row(k)["prediction"]["limiter"] for k in predicted}
    return value, limiters


GOAL_MARKERS = ("<!-- issue38-goals: begin (common/tests/perf_validation/validate.py --rule-figures writes this table) -->",
                "<!-- issue38-goals: end -->")


def figure_text(kind, value, bound=False):
    """A figure of kind `kind` (rule_figure) as the tables print it: a prediction to its shown precision, a goal's or a
    rule's `bound` as written."""
    if kind == "flops":
        return f"{value / 1e12:{'g' if bound else '.0f'}} TFLOP/s"
    if kind in ("copy_fraction", "flops_over"):
        return f"{100 * value:{'g' if bound else '.1f'}}%"
    return f"{value:{'g' if bound else '.2f'}}x"


def goals_table(args, cache):
    """Issue 38's goals (goals.json) as the model's figures for today's reference solutions on the H100 and the H200,
    each against the references its GPU's run measured."""
    spec = json.loads((args.source / "common" / "tests" / "perf_validation" / "goals.json").read_text())
    gpus = list(spec["runs"])
    names = {g["id"]: g["name"] for g in json.loads((args.source / "data" / "gpus.json").read_text())["gpus"]}
    lines = [GOAL_MARKERS[0],
             "| goal | " + " | ".join(f"{names[g]}: predicted" for g in gpus) + " | the goal | met on both | limiter on the "
             f"{names[gpus[-1]]} |",
             "|---|" + "---|" * len(gpus) + "---|---|---|"]
    met_all = 0
    for goal in spec["goals"]:
        model = dict(goal, reading=spec["reading"])
        cells, met, limiters = [], True, {}
        shown = (lambda x: figure_text(model["figure"], x))
        for g in gpus:
            lab = model["kernels"][0].split("::")[0].removeprefix("lab")
            value, limiters = rule_figure(args, model, cache, lab, run=spec["runs"][g], gpu=g)
            # A kernel a run measured, unchanged since: the measurement, the model beside it.
            measured = goal.get("measured", {}).get(g)
            graded = measured if measured is not None else value
            ok = graded >= goal["at_least"] if "at_least" in goal else graded <= goal["at_most"]
            met = met and ok
            cells.append(f"{shown(measured)} measured (model: {shown(value)})" if measured is not None else shown(value))
        bound = goal.get("at_least", goal.get("at_most"))
        target = f"{'at least' if 'at_least' in goal else 'at most'} {figure_text(model['figure'], bound, bound=True)}"
        met_all += met
        kernels = ", ".join(f"{k.split('::')[1]} ({lim})" for k, lim in limiters.items())
        lines.append(f"| {goal['goal']} | " + " | ".join(cells) + f" | {target} | {'on both' if met else 'no'} | {kernels} |")
    lines += ["", f"Met on both GPUs, as predicted (reading {spec['reading']}; measured where a row says so): {met_all} of "
                  f"{len(spec['goals'])}.", GOAL_MARKERS[1]]
    return "\n".join(lines)


def rule_figures(args):
    """Every `predicted` provenance in the labs' thresholds.json (a rule's, or one architecture's range): its figure
    recomputed from the model (rule_figure), the table docs/measurements.md records, and the provenances whose
    recorded figure is not the model's (to two decimals). A predicted provenance without a "model" object cannot be
    recomputed, and is an error."""
    lines = [RULE_MARKERS[0],
             "| lab, rule | on | predicted, in the rule's terms | full / none | predicted, full-point mark | model: GPU, reading | kernels (limiter) |",
             "|---|---|---|---|---|---|---|"]
    wrong, cache, skipped = [], {}, []
    for path in sorted((args.source / "labs").glob("*/thresholds.json")):
        lab = path.parent.name[:2]
        for name, rule in json.loads(path.read_text()).items():
            if not isinstance(rule, dict) or "provenance" not in rule:
                continue
            ranges = [("every GPU" if not rule.get("by_architecture") else "the rest", rule, rule["provenance"])]
            for a in rule.get("by_architecture", []):
                ranges.append((f"{a['from']}" + (f" to {a['before']}" if "before" in a else " on"), a, a["provenance"]))
            for on, numbers, prov in ranges:
                if prov.get("kind") != "predicted":
                    continue
                model = prov.get("model")
                where = f"lab {lab} {name} ({on})"
                if model is None:
                    wrong.append(f"{where}: a predicted provenance names no \"model\" to recompute its figure from")
                    continue
                if model["reading"] == "SASS" and not args.nvdisasm:
                    skipped.append(where)
                    continue
                value, limiters = rule_figure(args, model, cache, lab, rule=name)
                if round(value, 2) != prov["figure"]:
                    wrong.append(f"{where}: the recorded figure is {prov['figure']}, the model gives {value:.2f}")
                mark = (lambda x: figure_text(model["figure"], x, bound=True))
                if "value" in numbers:  # a ratio_max rule: at most its value
                    marks, meets = f"at most {mark(numbers['value'])}", value <= numbers["value"]
                else:
                    marks, meets = f"{mark(numbers['full_at'])} / {mark(numbers['zero_at'])}", value >= numbers["full_at"]
                kernels = ", ".join(f"{k} ({lim})" for k, lim in limiters.items())
                lines.append(f"| {lab} {name} | {on} | {figure_text(model['figure'], value)} | {marks} | {'meets it' if meets else 'short of it'} | "
                             f"{model['gpu']}, {model['reading']} | {kernels} |")
    lines.append(RULE_MARKERS[1])
    if args.nvdisasm:
        lines += ["", goals_table(args, cache)]
    return "\n".join(lines), wrong, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--source", type=pathlib.Path, required=True)
    ap.add_argument("--build", type=pathlib.Path, required=True)
    ap.add_argument("--run", type=pathlib.Path, help="the run's folder: measured.json, lab*/kernels.cu")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--check", type=pathlib.Path, help="the document whose table must be this one")
    ap.add_argument("--tag", default="", help="the run's tables' markers in the document (perf-model-validation-TAG); "
                                              "none for the H100 run's")
    ap.add_argument("--nvdisasm-dir", type=pathlib.Path,
                    help="fetch nvdisasm into this folder (NVIDIA's wheel on PyPI) when the toolkit lacks it, so that "
                         "the model reads SASS as it does with a full toolkit; exit 77 when it cannot be had")
    ap.add_argument("--held-out", metavar="LABS",
                    help="instead: today's solutions of these labs (01,03,...) predicted on the H100 and H200, the "
                         "table docs/measurements.md records before a GPU measures them")
    ap.add_argument("--rule-figures", action="store_true",
                    help="instead: the figure of every `predicted` provenance in the labs' thresholds.json, recomputed "
                         "from the model and the reference its provenance names; with --check, the recorded figures "
                         "and the document's table must be these")
    args = ap.parse_args()
    if not args.rule_figures and args.run is None:
        ap.error("--run is required (but with --rule-figures)")
    args.nvdisasm = None
    args.nvdisasm_note = ""
    if args.nvdisasm_dir:
        beside = pathlib.Path(args.ptxas).parent / "nvdisasm"
        if beside.exists():
            args.nvdisasm = beside
        else:
            fetch = args.source / "cmake" / "nvdisasm" / "fetch_nvdisasm.py"
            got = subprocess.run([sys.executable, str(fetch), str(args.nvdisasm_dir)], capture_output=True, text=True)
            if got.returncode == 0:
                args.nvdisasm = pathlib.Path(got.stdout.strip().splitlines()[-1])
            else:
                args.nvdisasm_note = got.stderr.strip() or got.stdout.strip()
    if args.held_out:
        print(held_out(args))
        return 0
    if args.rule_figures:
        text, wrong, skipped = rule_figures(args)
        print(text)
        status = 0
        for w in wrong:
            print(f"thresholds.json: {w}", file=sys.stderr)
            status = 1
        if args.check:
            doc = args.check.read_text()
            if skipped:
                print(f"SKIPPED: {', '.join(skipped)} (read from SASS; no nvdisasm: {args.nvdisasm_note})")
                return status or 77
            for begin, end in (RULE_MARKERS, GOAL_MARKERS):
                if begin not in doc or end not in doc:
                    print(f"{args.check}: has no table between {begin} and {end}", file=sys.stderr)
                    return 1
                recorded = doc[doc.index(begin):doc.index(end) + len(end)]
                if recorded not in text:
                    print(f"\n{args.check}: the recorded table between {begin} and its end is not what the model gives "
                          f"now; replace it with the one above", file=sys.stderr)
                    status = 1
        return status
    rows = all_predictions(args)
    status = 0
    for code in ("PTX", "SASS") if args.nvdisasm else ("PTX",):
        text = table(args, rows, code)
        print(f"Read from {code}:\n{text}\n")
        if args.check:
            begin, end = markers(args.tag)[code]
            doc = args.check.read_text()
            if begin not in doc or end not in doc:
                print(f"{args.check}: has no {code} table between the markers", file=sys.stderr)
                return 1
            recorded = doc[doc.index(begin):doc.index(end) + len(end)]
            if recorded != text:
                print(f"\n{args.check}: the recorded {code} table is not what the model predicts now; replace it with the "
                      f"one above (and say in the page what changed in the model, and why)", file=sys.stderr)
                status = 1
    if not args.nvdisasm and args.nvdisasm_dir:
        print(f"SKIPPED: the SASS table (no nvdisasm: {args.nvdisasm_note}); the PTX table was checked")
        return status or 77
    return status


if __name__ == "__main__":
    sys.exit(main())
