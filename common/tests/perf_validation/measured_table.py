#!/usr/bin/env python3
"""A GPU run's perf measures beside what the thresholds predicted: the table docs/measurements.md records after a run.

    measured_table.py RESULTS_JSON --source DIR

RESULTS_JSON is a grade's results.json from a GPU (`./rooflab grade --solutions --kind gpu --json FILE`; the lent
machine's `.gpu/on-device` writes it as solutions.json), whose perf tests carry `rooflab_measures` (award() records
one per quantity it grades). For each measure: the test, the rule (the quantity in the lab's thresholds.json), the
measured fraction in the rule's own terms, the rule's full-point and zero marks on the run's architecture, the
points the test earned, and the rule's recorded prediction where its provenance is `predicted` (its figure, the GPU
and the reading it was made for) with the measurement over it. Then how many predictions came within 20% of the
measurement and on the same side of the full-point mark. A rule whose provenance is not `predicted` gets "-": a
figure that was measured, or estimated, is no prediction of the model's.

The predicted figures were stated against the references the last run measured (cuBLAS, the naive path, the copy
ceiling); this run measured its own, so a difference between the two runs' references shows in the error too. The
table says which run each prediction was made against.

Exit codes: 0 the table printed; 1 no measure in the file (a dry run, or a grade without a GPU, records none);
2 the file cannot be read.
"""
import argparse
import json
import pathlib
import sys


def arch_rule(rule, cc):
    """The rule's marks (full_at, zero_at) and provenance on compute capability `cc` (90: sm_90): the first of its
    `by_architecture` entries that covers it, else the rule itself (as rooflab::Threshold::on does)."""
    for entry in rule.get("by_architecture", []):
        low = int(entry["from"].removeprefix("sm_"))
        high = int(entry["before"].removeprefix("sm_")) if "before" in entry else None
        if cc >= low and (high is None or cc < high):
            return entry, entry.get("provenance", rule.get("provenance", {}))
    return rule, rule.get("provenance", {})


def rows(results, source):
    """(lab, test, measure, rule marks, provenance, score, max_score) for every measure in `results`."""
    out = []
    for t in results["tests"]:
        for m in t.get("rooflab_measures", []):
            lab = t["name"].removeprefix("lab")[:2]
            test = t["name"].split(": ", 1)[-1]
            path = next((source / "labs").glob(f"{lab}-*/thresholds.json"))
            rule = json.loads(path.read_text())[m["quantity"]]
            marks, provenance = arch_rule(rule, m.get("architecture", 0))
            out.append((lab, test, m, marks, provenance, t["score"], t["max_score"]))
    return out


def table(results, source):
    lines = ["| test | rule | measured | full / none | points | predicted (model: GPU, reading, date) | measured / predicted |",
             "|---|---|---|---|---|---|---|"]
    predicted = within = same_side = 0
    for lab, test, m, marks, provenance, score, max_score in rows(results, source):
        fraction = m["fraction"]
        cells = [test, f"{lab} {m['quantity']}", f"{100 * fraction:.1f}% of {m['against']}",
                 f"{100 * marks['full_at']:g}% / {100 * marks['zero_at']:g}%", f"{score:g} of {max_score:g}"]
        if provenance.get("kind") == "predicted" and provenance.get("figure"):
            figure = provenance["figure"]
            model = provenance.get("model", {})
            error = fraction / figure - 1
            predicted += 1
            within += abs(error) <= 0.2
            same_side += (figure >= marks["full_at"]) == (fraction >= marks["full_at"])
            cells += [f"{100 * figure:.0f}% ({model.get('gpu', provenance.get('gpu', '?'))}, "
                      f"{model.get('reading', '?')}, {provenance.get('date', '?')}; against run {model.get('run', '?')})",
                      f"{error:+.0%}{'' if abs(error) <= 0.2 else ' (outside 20%)'}"]
        else:
            cells += ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    if len(lines) == 2:
        return None
    lines += ["", f"Predicted: {predicted} of {len(lines) - 2} measures. Within 20% of the measurement: {within} of "
                  f"{predicted}. On the same side of the full-point mark as the measurement: {same_side} of {predicted}."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=pathlib.Path)
    ap.add_argument("--source", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[3])
    args = ap.parse_args()
    try:
        results = json.loads(args.results.read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"measured_table.py: {args.results}: {e}", file=sys.stderr)
        return 2
    text = table(results, args.source)
    if text is None:
        print(f"measured_table.py: {args.results} has no rooflab_measures: a dry run, or a grade without a GPU, "
              "records none", file=sys.stderr)
        return 1
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
