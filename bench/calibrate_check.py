"""`visprof calibrate`'s method and the spec-only models on both published GPU pairs, same constants (issue 25).

    python bench/calibrate_check.py --pair PAIR1.db rtx3090 rtx4090 --pair PAIR2.db rtx4090 rtx5090 \\
        --store profiles.db --out bench/results/calibrate-2026-12-04

Each PAIR.db is ``visprof import-timm BASE.csv TARGET.csv --store PAIR.db``; ``profiles.db`` a
visprof results store of profiles (any number of models; none is hard-coded). Per pair, family
held out: the calibrated prediction (Spearman, median |error|, its ratio to the fleet median's,
the 80% band's coverage with the share below and above), the fleet median, the best single
profile feature, the spec-only models (visprof's default ``clock`` and every ``--spec-excess``
mode, nothing of the target used), the within-family ceiling, how much the published speed-up of
models that run identical work differs (the ceiling that noise leaves any predictor), the fit on
all models judged on them (in sample: what the buckets can say at most) and, with
``--model-held-out SEED``, the same folds dealt at random over models; then the per-op-type ratio
table fitted on all models, and the group-norm models with what their profile says is the cause.
Writes ``calibrate.json``, ``calibrate.txt`` and ``held-out-BASE-TARGET.csv.gz`` into --out,
atomically. Nothing is chosen per pair: the lambda grid, folds, feature threshold, band level and
spec models are the modules' constants.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

from visprof.analysis import sources
from visprof.analysis.calibrate import (LAMBDAS, MIN_MODELS_PER_FEATURE, MIN_SHARE, Fit, fit_calibration,
                                        unpublished_predictions)
from visprof.analysis.calibration_buckets import buckets_of
from visprof.analysis.calibration_ratios import BucketRatio, format_ratio_table, ratio_table
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.calibration_sentences import sentences
from visprof.analysis.compare import compare
from visprof.analysis.held_out import family_held_out, in_sample, model_held_out
from visprof.analysis.gpus import gpu_table
from visprof.analysis.repeatability import identical_work_groups, repeatability
from visprof.base.errors import BadInputError
from visprof.base.output_paths import check_output_paths
from visprof.base.outputs import atomic_write_text

GROUP_NORM_SHARE = 0.02  # a "group-norm model" spends at least this share of its profiled time in group norm
# The kernels that tell group norms apart (bench/results/two-pairs-2026-12-01/group-norm-kernels.txt):
# the generic apply step of a multi-group norm, and the one-group (row-wise) statistics kernel.
GENERIC_APPLY = "at::native::elementwise_kernel"
ONE_GROUP = "RowwiseMoments"


def op_type_table(rows: list[BucketRatio], fit: Fit, top: int = 30) -> str:
    """The fitted ratio of every op-type bucket (``op:``), heaviest training weight first."""
    ops = sorted((b for b in rows if b.feature.startswith("op:")), key=lambda b: -b.weight)
    lines = [f"per op type (x of what the spec ratios say; offset x{math.exp(fit.intercept):.3f} and category / "
             f"sub-category included), by training weight:",
             f"  {'op type':<62} {'ratio':>7} {'own':>7} {'weight':>7} {'models':>6}"]
    lines += [f"  {b.feature[3:][:62]:<62} x{b.ratio:>6.3f} x{b.own:>6.3f} {b.weight:>7.1f} {b.models:>6}" for b in ops[:top]]
    if len(ops) > top:
        lines.append(f"  ... {len(ops) - top} more op types")
    return "\n".join(lines) + "\n"


def group_norm_cause(result) -> dict | None:
    """A profile's group-norm share and, where its kernel families are recorded, which group-norm
    kernels run; None for a model with less than GROUP_NORM_SHARE of its time in group norm."""
    buckets = buckets_of(result)
    share = sum(v for k, v in buckets.items() if k.startswith("op:") and k.endswith("/group_norm"))
    if share < GROUP_NORM_SHARE:
        return None
    casts = buckets.get("sub:memory/cast", 0.0)
    families = [k for k in result.kernel_families or [] if k.subcategory == "group"]
    total = sum(k.time_ms for k in result.categories if k.time_ms) + max(result.timing.idle_ms or 0.0, 0.0)
    generic = sum(k.time_ms for k in families if k.family == GENERIC_APPLY) / total if families else None
    one_group = any(ONE_GROUP in k.family for k in families)
    if not families:
        cause = "kernel families not recorded in this profile"
    elif generic and generic >= GROUP_NORM_SHARE:
        cause = f"apply step in PyTorch's generic {GENERIC_APPLY} ({generic:.1%} of time)"
    elif one_group:
        cause = "one-group norm (RowwiseMomentsCUDAKernel), no generic apply kernel"
    else:
        cause = "group-norm kernels: " + ", ".join(sorted({k.family for k in families}))
    return {"group_norm_share": share, "cast_share": casts, "generic_apply_share": generic, "cause": cause}


def group_norm_lines(models: list[dict]) -> str:
    lines = [f"group-norm models (>= {GROUP_NORM_SHARE:.0%} of profiled time in group norm), held out:",
             f"  {'model':<34} {'published':>9} {'spec':>6} {'calib.':>6} {'GN':>6} {'casts':>6}  cause"]
    lines += [f"  {m['model'][:34]:<34} x{m['speedup']:>8.2f} x{m['spec_speedup']:>5.2f} x{m['calibrated']:>5.2f} "
              f"{m['group_norm_share']:>6.1%} {m['cast_share']:>6.1%}  {m['cause']}" for m in models]
    return "\n".join(lines) + "\n"


def run_pair(refs: Path, base: str, target: str, store: Path, folds: int, spec_excess: list[str],
             model_seed: int | None = None) -> tuple[dict, str, list]:
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    comparison = compare(loaded.measurements, base, target, table)
    fleet, missing = fleet_from_comparison(comparison, loaded.profiles, table, spec_excess=spec_excess)
    fit = fit_calibration(fleet)
    own = in_sample(fit, fleet)
    rows = ratio_table(fit, fleet)
    held = family_held_out(fleet, folds=folds)
    by_model = model_held_out(fleet, folds=folds, seed=model_seed) if model_seed is not None else None
    unpublished = unpublished_predictions(fit, fleet)
    held_doc = held.to_dict()
    predictions = held_doc.pop("predictions")
    results = {m.model: m.result for m in loaded.profiles if m.result is not None}  # the last profile per model
    gn = [{**p, **cause} for p in predictions if p["model"] in results
          for cause in [group_norm_cause(results[p["model"]])] if cause]
    gn.sort(key=lambda m: m["speedup"])
    # Identical work is told from op-type tables per iteration, so both members' profiles must be at one
    # batch: the batch at which the store profiled the most models (every model has a batch-64 profile).
    batches = Counter(m.result.model.batch_size for m in loaded.profiles if m.result is not None)
    common_batch = batches.most_common(1)[0][0] if batches else None
    at_common = {m.model: m.result for m in loaded.profiles
                 if m.result is not None and m.result.model.batch_size == common_batch}
    repeat = repeatability(identical_work_groups(at_common), dict(zip(fleet.models, fleet.log_obs)))
    told = sentences(fit, fleet, [m["model"] for m in gn])
    text = (f"== {comparison.base} -> {comparison.target}: {held.models} models with a profile and both published "
            f"numbers, {len(fleet.features)} buckets and covariates; {len(unpublished)} "
            f"profiled models without them predicted ==\n" + held.lines()
            + (by_model.lines() if by_model else "") + (repeat.line() if repeat else "")
            + f"fit on all models, judged on them (in sample, nothing held out): Spearman {own.spearman:.3f}, "
              f"median |err| {own.median_abs_error:.1%}\n"
            + "fit on all models: "
            + format_ratio_table(rows, fit, top=25) + op_type_table(rows, fit) + group_norm_lines(gn)
            + "the same models told from the fit on all models (visprof calibrate --explain):\n"
            + "".join(f"  {s.text()}\n" for s in told))
    doc = {"base": comparison.base, "target": comparison.target, "refs": refs.name, "models": held.models,
           "unpublished_predictions": unpublished,
           "joined_without_profile": missing, "features": fleet.features, "lambda_all": fit.lam,
           "offset_all": math.exp(fit.intercept), "band_quantiles_all": [fit.q_low, fit.q_high],
           "ratios_all": [b.row() for b in rows], "group_norm_models": gn,
           "group_norm_sentences": [t.row() for t in told], "held_out": held_doc,
           "in_sample": {"spearman": own.spearman, "median_abs_error": own.median_abs_error},
           "model_held_out": {k: v for k, v in by_model.to_dict().items() if k != "predictions"} if by_model else None,
           "repeatability": repeat.to_dict() if repeat else None}
    return doc, text, predictions


def prepare_out(out: Path, names: list[str], inputs: dict) -> None:
    """Makes the --out folder and checks the files to be written there, before any work: each
    writable and none of them one of the run's ``inputs`` (BadInputError)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"--out {out}: cannot make the folder ({exc.strerror})") from None
    check_output_paths({f"--out {name}": out / name for name in names}, inputs=inputs)


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
    parser.add_argument("--spec-excess", nargs="*", default=["fraction"], metavar="MODE",
                        help="other spec-only models to judge beside the default (group_scaling.EXCESS_MODES; default: fraction)")
    parser.add_argument("--model-held-out", type=int, metavar="SEED",
                        help="also judge the fit on models dealt to folds at random with this seed, families ignored, "
                             "to read the family split against (off by default)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    docs, texts = [], []
    try:
        prepare_out(args.out, ["calibrate.json", "calibrate.txt"] + [f"held-out-{b}-{t}.csv.gz" for _, b, t in args.pair],
                    {"--store": args.store, "--pair": [p[0] for p in args.pair]})
        for refs, base, target in args.pair:
            doc, text, predictions = run_pair(Path(refs), base, target, args.store, args.folds, args.spec_excess,
                                                args.model_held_out)
            print(text, flush=True)
            write_predictions(args.out / f"held-out-{base}-{target}.csv.gz", predictions)
            docs.append(doc)
            texts.append(text)
    except BadInputError as exc:
        print(f"calibrate_check.py: {exc}", file=sys.stderr)
        return 2
    settings = {"lambdas": list(LAMBDAS), "folds": args.folds, "min_share": MIN_SHARE,
                "min_models_per_feature": MIN_MODELS_PER_FEATURE, "spec_excess": args.spec_excess,
                "group_norm_share": GROUP_NORM_SHARE}
    atomic_write_text(args.out / "calibrate.json", json.dumps({"settings": settings, "pairs": docs}, indent=1) + "\n")
    atomic_write_text(args.out / "calibrate.txt", "\n".join(texts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
