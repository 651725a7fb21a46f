"""`visprof calibrate`'s method on both published GPU pairs, same method and hyper-parameters (issue 25).

    python bench/calibrate_check.py --pair PAIR1.db rtx3090 rtx4090 --pair PAIR2.db rtx4090 rtx5090 \\
        --store profiles.db --out bench/results/calibrate-2026-12-01

Each PAIR.db is ``visprof import-timm BASE.csv TARGET.csv --store PAIR.db``; ``profiles.db`` the
consolidated H200 store. Per pair: the family-held-out figures of the calibrated prediction and of
the three baselines (training folds' median, best single profile feature, spec only), the 80%
band's coverage on held-out families, and the ratio table fitted on all models. Writes
``calibrate.json`` and ``calibrate.txt`` into --out. Nothing here is chosen per pair: the
lambda grid, folds, feature threshold and band level are the module's constants.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from visprof.analysis import sources
from visprof.analysis.calibrate import (LAMBDAS, MIN_MODELS_PER_FEATURE, MIN_SHARE, family_held_out, fit_calibration,
                                        fleet_from_comparison, format_ratio_table, ratio_table,
                                        unpublished_predictions)
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.base.outputs import atomic_write_text


def run_pair(refs: Path, base: str, target: str, store: Path, folds: int) -> tuple[dict, str]:
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    comparison = compare(loaded.measurements, base, target, table)
    fleet, missing = fleet_from_comparison(comparison, loaded.profiles, table)
    fit = fit_calibration(fleet)
    rows = ratio_table(fit, fleet)
    held = family_held_out(fleet, folds=folds)
    unpublished = unpublished_predictions(fit, fleet)
    text = (f"== {comparison.base} -> {comparison.target}: {held.models} models with a profile and both published "
            f"numbers, {len(fleet.features)} buckets and covariates; {len(unpublished)} "
            f"profiled models without them predicted ==\n" + held.lines() + "fit on all models: "
            + format_ratio_table(rows, fit, top=25))
    held_doc = held.to_dict()
    predictions = held_doc.pop("predictions")
    doc = {"base": comparison.base, "target": comparison.target, "refs": refs.name, "models": held.models,
           "unpublished_predictions": unpublished,
           "joined_without_profile": missing, "features": fleet.features, "lambda_all": fit.lam,
           "offset_all": math.exp(fit.intercept), "band_quantiles_all": [fit.q_low, fit.q_high],
           "ratios_all": [b.row() for b in rows], "held_out": held_doc}
    return doc, text, predictions


def write_predictions(path: Path, rows: list[dict]) -> None:
    """Per model, its held-out prediction, band and baselines (gzip CSV, 4 significant digits)."""
    keys = list(rows[0])
    lines = [",".join(keys)] + [",".join(f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k]) for k in keys)
                                for r in rows]
    atomic_write_text(path, "\n".join(lines) + "\n")  # gzipped: the name ends in .gz


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("REFS_DB", "BASE", "TARGET"))
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    docs, texts = [], []
    for refs, base, target in args.pair:
        doc, text, predictions = run_pair(Path(refs), base, target, args.store, args.folds)
        print(text, flush=True)
        write_predictions(args.out / f"held-out-{base}-{target}.csv.gz", predictions)
        docs.append(doc)
        texts.append(text)
    settings = {"lambdas": list(LAMBDAS), "folds": args.folds, "min_share": MIN_SHARE,
                "min_models_per_feature": MIN_MODELS_PER_FEATURE}
    atomic_write_text(args.out / "calibrate.json", json.dumps({"settings": settings, "pairs": docs}, indent=1) + "\n")
    atomic_write_text(args.out / "calibrate.txt", "\n".join(texts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
