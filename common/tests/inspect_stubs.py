#!/usr/bin/env python3
"""`rooflab inspect` on a student copy as shipped: each lab's stubs, as a student runs it on day one.

    inspect_stubs.py --source S --build B --ptxas PTXAS

For every lab, the stubs' PTX that the build compiles (labNN_stubs_ptx, nvcc's device pass over labs/NN-*/kernels.cu)
is read by the lab's static binary (--code-dir), as `rooflab inspect NN` reads a student's code. It must exit 0, list
every kernel of the lab's registry, and predict none of them: each says it is not written yet (a stub's empty body)
or not in the compiled code yet (a template kernel whose launcher is still the stub). Before this test, an unwritten
template kernel stopped the whole inspect (exit 2) and Lab 01's empty stubs were predicted at 100% of the copy
ceiling. So that the check can fail, the same binaries read the solutions' capture: there every kernel is predicted.

Exit codes: 0 as expected, 1 not (what differed is printed), 77 no lab's stubs were built (ROOFLAB_SELFTEST off).
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

NOT_YET = ("not written yet", "not in the compiled code yet")


def inspect(binary, *extra):
    p = subprocess.run([str(binary), "--rooflab-inspect", "--gpu", "h100-sxm", *extra], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", type=pathlib.Path, required=True)
    ap.add_argument("--build", type=pathlib.Path, required=True)
    ap.add_argument("--ptxas", default="ptxas")
    a = ap.parse_args()
    problems, checked = [], 0
    for lab_dir in sorted((a.source / "labs").glob("[0-9][0-9]-*")):
        lab = lab_dir.name[:2]
        ptx = a.build / "labs" / lab_dir.name / "CMakeFiles" / f"lab{lab}_stubs_ptx.dir" / "kernels.ptx"
        binary = a.build / "labs" / "bin" / f"lab{lab}_static"
        if not ptx.exists() or not binary.exists():
            continue
        arch = next((l.split()[1] for l in ptx.read_text().splitlines() if l.startswith(".target")), None)
        if arch is None:
            problems.append(f"lab {lab}: {ptx} names no .target")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            code = pathlib.Path(tmp)
            (code / f"kernels.{arch}.ptx").write_text(ptx.read_text())
            report = subprocess.run([a.ptxas, f"-arch={arch}", "-m64", "-v", str(code / f"kernels.{arch}.ptx"), "-o",
                                     str(code / f"kernels.{arch}.cubin")], capture_output=True, text=True)
            if report.returncode != 0:
                problems.append(f"lab {lab}: ptxas failed on the stubs' PTX:\n{report.stderr}")
                continue
            (code / f"kernels.{arch}.ptxas.txt").write_text(report.stderr)
            rc, out, err = inspect(binary, "--arch", arch, "--code-dir", str(code), "--json")
            if rc != 0:
                problems.append(f"lab {lab}: inspect of the stubs exited {rc}: {err.strip()}")
                continue
            stubs = json.loads(out)["kernels"]
            # The table a student reads says the same, and exits 0 too.
            rc, text, err = inspect(binary, "--arch", arch, "--code-dir", str(code))
            if rc != 0 or not any(n in text for n in NOT_YET):
                problems.append(f"lab {lab}: inspect's table of the stubs (exit {rc}) does not say they are not written "
                                f"yet (its first lines:)\n" + "\n".join((text + err).splitlines()[:8]))
        rc, out, err = inspect(binary, "--json")
        if rc != 0:
            problems.append(f"lab {lab}: inspect of the solutions' capture exited {rc}: {err.strip()}")
            continue
        solutions = json.loads(out)["kernels"]
        checked += 1
        before = len(problems)
        if [k["kernel"] for k in stubs] != [k["kernel"] for k in solutions]:
            problems.append(f"lab {lab}: the stubs' rows {[k['kernel'] for k in stubs]} are not the registry's "
                            f"{[k['kernel'] for k in solutions]}")
        for k in stubs:
            why = k.get("prediction_error") or ""
            if k.get("prediction") is not None or not why.startswith(NOT_YET):
                predicted = k.get("prediction")
                problems.append(f"lab {lab}: the stub {k['kernel']} is " + (
                    f"predicted ({100 * predicted['fraction']:.0f}% of its roof, limited by {predicted['limiter']})"
                    if predicted else f"not said to be unwritten: {why or 'no reason given'}"))
        for k in solutions:
            if k.get("prediction") is None:
                problems.append(f"lab {lab}: the solution's {k['kernel']} has no prediction: {k.get('prediction_error')}")
        if len(problems) == before:
            print(f"lab {lab}: {len(stubs)} stub kernels, none predicted, each said to be unwritten; the solutions' "
                  f"{len(solutions)} predicted")
    if checked == 0:
        print("no lab's stubs were built (configure with ROOFLAB_SELFTEST=ON)")
        return 77
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
