"""`visprof predict --calibration` with and without --batch-size, against the published speed-ups at that batch.

    python bench/predict_calibrated_batch_check.py --refs /tmp/pair1.db --base rtx3090 --target rtx4090 \\
        --fit-store /tmp/profiles.db --profiles /tmp/h100.db --batch 1024 --out DIR

`visprof calibrate REFS FIT_STORE --save` fits the pair. `visprof predict --from PROFILES --to TARGET
--calibration` then gives each profile's calibrated speed-up twice: as a user who names no batch
gets it (each profile at its own batch: 64 in the sweeps), and with `--batch-size BATCH`. Each is
scored against the published speed-up of the rows timm measured at BATCH on both GPUs (Spearman,
median absolute error, 80% band coverage), by `visprof compare REFS PROFILES`'s join: only models
with one profile, so that the two commands' rows are the same model. Descriptive, and in sample for
the models the fit saw; `predict` has no published base number, so it uses the fit's median.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from _pairs import not_found, run_visprof  # noqa: E402
from visprof.analysis.families import architecture  # noqa: E402
from visprof.analysis.metrics import ratio_errors, spearman  # noqa: E402
from visprof.base.outputs import atomic_write_text  # noqa: E402

PROG = "predict_calibrated_batch_check.py"


def published_at(compared: Path, batch: int) -> dict[str, float]:
    """Published speed-up by architecture, of the rows measured at ``batch`` on both GPUs (one image
    size each: an architecture published at two is left out, as predict's rows do not say which)."""
    rows: dict[str, list[float]] = {}
    with compared.open(newline="") as f:
        for r in csv.DictReader(f):
            if r["base_batch"] == r["target_batch"] == str(batch):
                rows.setdefault(architecture(r["model"]), []).append(float(r["speedup"]))
    return {arch: v[0] for arch, v in rows.items() if len(v) == 1}


def scored(predicted: Path, published: dict[str, float]) -> tuple[str, int]:
    models: dict[str, list[dict]] = {}
    for row in json.loads(predicted.read_text())["calibration"]["models"]:
        models.setdefault(architecture(row["model"]), []).append(row)
    pairs = [(rows[0], published[arch]) for arch, rows in models.items() if len(rows) == 1 and arch in published]
    cal, pub = [r["calibrated"] for r, _ in pairs], [p for _, p in pairs]
    error = ratio_errors(cal, pub)["median_abs"]
    inside = sum(r["low"] <= p <= r["high"] for r, p in pairs) / len(pairs)
    return f"Spearman {spearman(cal, pub):.4f}  median error {error:.3%}  80% band {inside:.1%}", len(pairs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--refs", type=Path, required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--fit-store", type=Path, required=True, help="the profiles the calibration is fitted on")
    parser.add_argument("--profiles", type=Path, required=True, help="the profiles predict reads")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not_found(PROG, (args.refs, args.fit_store, args.profiles)):
        return 2
    pair = ("--base", args.base, "--target", args.target)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run_visprof(PROG, "calibrate", str(args.refs), str(args.fit_store), *pair, "--folds", "2",
                    "--save", str(work / "cal.json"))
        run_visprof(PROG, "compare", str(args.refs), str(args.profiles), *pair, "--csv", str(work / "compared.csv"))
        published = published_at(work / "compared.csv", args.batch)
        lines = [f"{args.base} -> {args.target}: calibration fitted on {args.fit_store.name}, applied to "
                 f"{args.profiles.name}; {len(published)} architectures published at batch {args.batch} on both GPUs"]
        for label, batch in (("no --batch-size (each profile at its own batch)", ()),
                             (f"--batch-size {args.batch}", ("--batch-size", str(args.batch)))):
            out = work / "predicted.json"
            run_visprof(PROG, "predict", "--from", str(args.profiles), "--to", args.target, *batch,
                        "--calibration", str(work / "cal.json"), "--json", str(out))
            figures, n = scored(out, published)
            lines.append(f"  {label:50s} {n:4d} models  {figures}")
    print("\n".join(lines))
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / f"figures-{args.base}-{args.target}.txt", "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
