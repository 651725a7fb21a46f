"""How far `visprof predict`'s peak-memory estimate decides whether a model fits a GPU.

timm's benchmark.py runs each model at its batch (1024 in the published CSVs) and, where that
runs out of memory, retries smaller batches (``decay_batch_step``); the CSV's
``infer_batch_size`` is the batch that ran. So a row at the full batch fit the card, a row at a
smaller one did not: a witness of fitting that visprof did not make. For every profiled (model,
image size) of a CSV, this predicts the peak memory at the CSV's full batch on its GPU (the
profile chosen as ``visprof predict`` chooses it) and bins the estimate over the card's memory
against how often the published run fit.

    python bench/memory_fit_check.py --store profiles.db \\
        --csv ../shared/data/timm-benchmarks/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv@rtx3090 ... \\
        --json bench/results/memory-fit-2026-12-06/memory-fit.json
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

EDGES = (0.0, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, float("inf"))


def published_batches(path: Path) -> dict[tuple[str, int], int]:
    with path.open(newline="") as f:
        return {(r["model"], int(r["infer_img_size"])): int(r["infer_batch_size"]) for r in csv.DictReader(f)}


def check(results, csv_path: Path, gpu: str) -> dict:
    from visprof.analysis.gpus import gpu_table
    from visprof.analysis.predict import choose_profiles, predict_many

    table = gpu_table()
    target = table.get(gpu)
    ran = published_batches(csv_path)
    full = max(ran.values())
    chosen, _ = choose_profiles([r for r in results if (r.model.name, r.model.img_size) in ran], full)
    predictions, _ = predict_many(chosen, target, batch_size=full, table=table)
    pairs = [(p.peak_memory_bytes / (target.memory_gb * 1e9), ran[(p.model, p.img_size)] == full)
             for p in predictions if p.peak_memory_bytes]
    bins = []
    for lo, hi in zip(EDGES, EDGES[1:]):
        fit = [f for share, f in pairs if lo <= share < hi]
        bins.append({"from": lo, "to": hi, "models": len(fit), "fit": sum(fit),
                     "fit_share": sum(fit) / len(fit) if fit else None})
    wrong_at_one = sum((share < 1.0) != fit for share, fit in pairs)  # the one cut predict made before the band
    return {"csv": csv_path.name, "gpu": target.id, "memory_gb": target.memory_gb, "batch": full,
            "models": len(pairs), "bins": bins, "wrong_with_one_cut_at_1": wrong_at_one,
            "verdict_of": {label: _verdicts(predictions, ran, full, label) for label in ("yes", "NO", "near")}}


def _verdicts(predictions, ran, full, label) -> dict:
    """How the published runs went for the models predict marks ``label`` in its fits column."""
    from visprof.report.compare_text import fits_label

    fit = [ran[(p.model, p.img_size)] == full for p in predictions if fits_label(p) == label]
    return {"models": len(fit), "fit": sum(fit)}


def render(report: dict) -> str:
    lines = [f"{report['csv']} on the {report['gpu']} ({report['memory_gb']:g} GB), batch {report['batch']}: "
             f"{report['models']} profiled models"]
    lines.append(f"  {'estimate / memory':>17}  {'models':>6}  {'ran at full batch':>17}")
    for b in report["bins"]:
        span = f"{b['from']:g}-{b['to']:g}"
        share = "-" if b["fit_share"] is None else f"{b['fit_share']:.0%}"
        lines.append(f"  {span:>17}  {b['models']:>6}  {share:>17}")
    verdicts = ", ".join(f"{label}: {v['fit']}/{v['models']} fit" for label, v in report["verdict_of"].items())
    lines.append(f"  predict's fits column: {verdicts}")
    lines.append(f"  one cut at 1.0x (yes below, NO above) wrong for {report['wrong_with_one_cut_at_1']} of "
                 f"{report['models']} models ({report['wrong_with_one_cut_at_1'] / max(report['models'], 1):.1%})")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="profiles: a results store, JSON files or folders")
    parser.add_argument("--csv", nargs="+", required=True, metavar="CSV@GPU", help="a timm CSV and its GPU's id")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from visprof.analysis import sources

    results = [m.result for m in sources.load([args.store]).profiles]
    reports = []
    for item in args.csv:
        path, _, gpu = item.rpartition("@")
        reports.append(check(results, Path(path), gpu))
        print(render(reports[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"provenance": provenance(sys.argv), "reports": reports}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
