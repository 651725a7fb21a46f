"""The predictor against published GPU pairs: RTX 3090 -> RTX 4090 from H200 profiles.

For every profiled model that timm's published CSVs (shared/data/timm-benchmarks) list on
both GPUs at the profile's image size, it predicts each GPU's throughput at the CSV's batch
size (fp16, as timm's --amp ran) from the profile with `visprof.analysis.predict`, and
compares with the published numbers:

* speed-up 4090/3090: Spearman rank correlation (target >= 0.8) and the median absolute
  error of the ratio (target <= 10%; Habitat: 11.8% on iteration time);
* absolute throughput on each GPU: median absolute and signed error.

It prints one line per model, then the summary table, and writes JSON with provenance.

    # from an H200 sweep (a store or a folder of ProfileResult JSON files):
    python bench/predict_check.py --from results.db --json bench/results/predict-check-h200.json

    # the models to sweep: in both CSVs, at the CSV image size that is the model's default
    python bench/predict_check.py --write-model-list bench/predict_check_models.txt --count 200

    # a baseline needing no GPU: op FLOPs/bytes captured on the CPU (batch 1), pure roofline
    # (every group at 100% of its roof, 1 us per kernel); says what the specs alone explain
    python bench/predict_check.py --cpu-baseline --count 160 --json bench/results/predict-check-cpu-baseline.json
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CSV_DIR = REPO.parent / "shared" / "data" / "timm-benchmarks"
FILES = {"rtx3090": "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv",
         "rtx4090": "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"}
TARGETS = {"spearman": 0.8, "median_abs_ratio_error": 0.10}


def published(csv_dir: Path) -> dict[str, dict[tuple[str, int], dict]]:
    out = {}
    for gpu, name in FILES.items():
        with open(csv_dir / name, encoding="utf-8") as fh:
            out[gpu] = {(r["model"], int(r["infer_img_size"])): r for r in csv.DictReader(fh) if not r["model"].startswith("test_")}
    return out


def both(pub) -> list[tuple[str, int]]:
    return sorted(set(pub["rtx3090"]) & set(pub["rtx4090"]))


def default_size_rows(pub) -> list[tuple[str, int, dict]]:
    """Per model in both CSVs, the row at its default pretrained image size (else the smallest)."""
    from timm.models import get_pretrained_cfg, is_model

    by_model: dict[str, list[int]] = {}
    for model, img in both(pub):
        by_model.setdefault(model, []).append(img)
    rows = []
    for model, sizes in sorted(by_model.items()):
        if not is_model(model):
            continue
        cfg = get_pretrained_cfg(model)
        default = cfg.input_size[-1] if cfg is not None and cfg.input_size else None
        img = default if default in sizes else min(sizes)
        rows.append((model, img, pub["rtx3090"][(model, img)]))
    return rows


def stratified(rows, count: int, max_gmacs: float | None = None):
    """Up to ``count`` models spread over families (round-robin over timm modules)."""
    from visprof.analysis.families import family

    by_family: dict[str, list] = {}
    for row in rows:
        if max_gmacs is not None and float(row[2]["infer_gmacs"] or 0) > max_gmacs:
            continue
        by_family.setdefault(family(row[0]), []).append(row)
    for members in by_family.values():
        members.sort(key=lambda r: float(r[2]["infer_gmacs"] or 0))
    chosen, depth = [], 0
    while len(chosen) < count and any(depth < len(m) for m in by_family.values()):
        for fam in sorted(by_family):
            members = by_family[fam]
            if depth < len(members) and len(chosen) < count:
                # spread within a family too: smallest, largest, middle, ...
                index = [0, len(members) - 1][depth % 2] if depth < 2 else (depth * 7919) % len(members)
                row = members[index]
                if row not in chosen:
                    chosen.append(row)
        depth += 1
    return chosen


MAX_PARAMS_M = 1000  # the sweep lists leave out models over 1B parameters (the CSVs' param_count is in millions)


def population(rows):
    """The rows (``default_size_rows``) of models with at most ``MAX_PARAMS_M`` million parameters."""
    return [row for row in rows if float(row[2]["param_count"] or 0) <= MAX_PARAMS_M]


def uniform(rows, count: int, seed: int):
    """``count`` models drawn uniformly (``random.Random(seed).sample``) from ``population(rows)``,
    by name: a sample of the population the issue names (every model in both CSVs), where
    ``stratified`` gives each family equal weight."""
    import random

    from visprof.base.errors import BadInputError

    population_ = population(rows)
    if count > len(population_):
        raise BadInputError(f"--count {count} is more than the {len(population_)} models to draw from")
    return sorted(random.Random(seed).sample(population_, count))


def pick_profiles(results, pub, profile_batch: int | None, skipped: list[str], also_at: int | None = None):
    """One profile per (model, image size) in both CSVs: at ``profile_batch`` if given, else
    the one whose batch is closest (by ratio) to the CSV's, newest first among equals. With
    ``also_at``, only models that also have a profile at that batch (to compare batches on
    the same models)."""
    from visprof.analysis.families import architecture

    chosen: dict[tuple, object] = {}
    wanted = None if also_at is None else {(architecture(r.model.name), r.model.img_size) for r in results
                                           if (r.model.batch_size or 1) == also_at}
    for result in results:
        key = (architecture(result.model.name), result.model.img_size)
        if wanted is not None and key not in wanted:
            continue
        if key not in pub["rtx3090"] or key not in pub["rtx4090"]:
            skipped.append(f"{result.model.name}@{result.model.img_size}: not in both CSVs at this size")
            continue
        batch = result.model.batch_size or 1
        if profile_batch is not None and batch != profile_batch:
            continue
        target = int(pub["rtx3090"][key]["infer_batch_size"])
        distance = abs(math.log(batch / target))
        if key not in chosen or distance <= chosen[key][0]:
            chosen[key] = (distance, result)
    return [result for _, result in chosen.values()]


def check(results, pub, efficiency: float | None = None, profile_batch: int | None = None, excess: str = "clock",
          also_at: int | None = None) -> dict:
    """Per-model predictions against the CSVs, and the summary."""
    from visprof.analysis.families import architecture, family
    from visprof.analysis.metrics import ratio_errors, spearman
    from visprof.analysis.predict import predict_result, speedup_band
    from visprof.base.errors import BadInputError

    rows, skipped = [], []
    for result in pick_profiles(results, pub, profile_batch, skipped, also_at):
        key = (architecture(result.model.name), result.model.img_size)
        row = {"model": result.model.name, "img_size": key[1], "family": family(key[0]),
               "profile_gpu": (result.gpu or {}).get("name"), "profile_batch": result.model.batch_size,
               "profile_precision": result.config.precision}
        on = {}
        try:
            for gpu in FILES:
                ref = pub[gpu][key]
                batch = int(ref["infer_batch_size"])
                p = predict_result(result, gpu, batch_size=batch, precision="fp16", efficiency=efficiency,
                                   source=None if efficiency is None else "h200", excess=excess)
                row[f"{gpu}_batch"] = batch
                row[f"{gpu}_predicted"] = p.samples_per_s
                row[f"{gpu}_published"] = float(ref["infer_samples_per_sec"])
                row[f"{gpu}_shares"] = p.shares
                on[gpu] = p
        except BadInputError as exc:
            skipped.append(str(exc))
            continue
        row["speedup_predicted"] = row["rtx4090_predicted"] / row["rtx3090_predicted"]
        row["speedup_published"] = row["rtx4090_published"] / row["rtx3090_published"]
        row["speedup_error"] = row["speedup_predicted"] / row["speedup_published"] - 1
        band = speedup_band(on["rtx3090"], on["rtx4090"])
        if band:
            row["speedup_band"] = list(band)
            row["band_width"] = band[1] / band[0] - 1
        rows.append(row)
    summary: dict = {"models": len(rows), "skipped": len(skipped)}
    if len(rows) >= 3:
        pred = [r["speedup_predicted"] for r in rows]
        pubs = [r["speedup_published"] for r in rows]
        summary["spearman"] = spearman(pred, pubs)
        summary["speedup_error"] = ratio_errors(pred, pubs)
        for gpu in FILES:
            summary[f"{gpu}_throughput_error"] = ratio_errors([r[f"{gpu}_predicted"] for r in rows],
                                                              [r[f"{gpu}_published"] for r in rows])
        summary["meets_targets"] = {
            "spearman>=0.8": summary["spearman"] >= TARGETS["spearman"],
            "median_abs_ratio_error<=10%": summary["speedup_error"]["median_abs"] <= TARGETS["median_abs_ratio_error"],
            "models>=150": len(rows) >= 150}
        summary.update(by_band(rows))
        if "spearman" in summary.get("decided", {}):
            from visprof.analysis.comparison import DECIDED_BAND

            c = summary["decided"]
            summary["meets_targets"][f"spearman>=0.8 where the band <= {DECIDED_BAND:.0%} (>= 150 models)"] = (
                c["models"] >= 150 and c["spearman"] >= TARGETS["spearman"])
        by_family: dict[str, list[float]] = {}
        for r in rows:
            by_family.setdefault(r["family"], []).append(r["speedup_error"])
        summary["by_family_median_error"] = {f: statistics.median(v) for f, v in sorted(by_family.items())}
    return {"rows": rows, "skipped": skipped, "summary": summary}


def by_band(rows: list[dict]) -> dict:
    """The check on the models the spec ratios decide (``speedup_band`` at most DECIDED_BAND
    wide: how time far below the roof scales moves the prediction by at most the 10% error
    target either way), on the rest, and on every width cut-off."""
    from visprof.analysis.comparison import DECIDED_BAND
    from visprof.analysis.metrics import ratio_errors, spearman

    banded = [r for r in rows if "band_width" in r]
    if len(banded) < 3:
        return {}

    def stats(subset):
        if len(subset) < 3:
            return {"models": len(subset)}
        pred, pubs = [r["speedup_predicted"] for r in subset], [r["speedup_published"] for r in subset]
        return {"models": len(subset), "spearman": spearman(pred, pubs), "speedup_error": ratio_errors(pred, pubs)}

    return {"decided": {"band_width_max": DECIDED_BAND, **stats([r for r in banded if r["band_width"] <= DECIDED_BAND])},
            "undecided": stats([r for r in banded if r["band_width"] > DECIDED_BAND]),
            "by_band_width": [{"band_width_max": w, **stats([r for r in banded if r["band_width"] <= w])}
                              for w in (0.05, 0.10, 0.15, 0.20, 0.30, 0.50)]}


def print_report(outcome: dict, label: str) -> None:
    rows = sorted(outcome["rows"], key=lambda r: r["speedup_error"])
    print(f"{'model':42s} {'img':>4s} {'3090 pred':>10s} {'pub':>9s} {'4090 pred':>10s} {'pub':>9s} "
          f"{'speed-up pred':>13s} {'pub':>6s} {'error':>7s}")
    for r in rows:
        print(f"{r['model'][:42]:42s} {r['img_size']:4d} {r['rtx3090_predicted']:10.0f} {r['rtx3090_published']:9.0f} "
              f"{r['rtx4090_predicted']:10.0f} {r['rtx4090_published']:9.0f} {r['speedup_predicted']:13.3f} "
              f"{r['speedup_published']:6.3f} {r['speedup_error']:+7.1%}")
    for line in outcome["skipped"][:20]:
        print(f"skipped: {line}")
    s = outcome["summary"]
    print()
    print(f"predict_check ({label}): {s['models']} models, {s['skipped']} skipped")
    if "spearman" in s:
        e = s["speedup_error"]
        print(f"  speed-up 3090->4090   Spearman {s['spearman']:.3f} (target >= 0.8)   median |error| {e['median_abs']:.1%} "
              f"(target <= 10%)   mean {e['mean_abs']:.1%}   p90 {e['p90_abs']:.1%}   median signed {e['median_signed']:+.1%}")
        for gpu in FILES:
            t = s[f"{gpu}_throughput_error"]
            print(f"  {gpu} throughput   median |error| {t['median_abs']:.1%}   median signed {t['median_signed']:+.1%}   "
                  f"p90 {t['p90_abs']:.1%}")
        for label_, c in (("decided", s.get("decided")), ("undecided", s.get("undecided"))):
            if c and "spearman" in c:
                print(f"  {label_:9s} ({c['models']} models, band {'<=' if label_ == 'decided' else '>'} "
                      f"{s['decided']['band_width_max']:.0%}): Spearman {c['spearman']:.3f}   median |error| "
                      f"{c['speedup_error']['median_abs']:.1%}")
        if s.get("by_band_width"):
            print("  by band width: " + "   ".join(f"<={c['band_width_max']:.0%}: {c['models']} models"
                                                   + (f" {c['spearman']:.3f}" if "spearman" in c else "")
                                                   for c in s["by_band_width"]))
        print("  targets: " + ", ".join(f"{k} {'MET' if v else 'NOT MET'}" for k, v in s["meets_targets"].items()))


def load_profiles(sources: list[str]):
    from visprof.analysis import sources as S

    loaded = S.load(sources)
    return [m.result for m in loaded.profiles]


def cpu_structure(model_name: str, img: int):
    """A CPU result holding only roofline groups: one forward of the model (batch 1, bf16
    autocast) under visprof's op capture (the template forward of the attributed pass), each
    op a pseudo-kernel; its host times are not used."""
    import torch

    from visprof.analysis import roofline
    from visprof.attribution.attribute import attribute
    from visprof.capture.op_capture import ModuleTracker, OpCapture
    from visprof.passes.models import resolve_model
    from visprof.passes.attributed import build_trace
    from visprof.result import ModelInfo, ProfileResult, RunConfig

    spec = resolve_model(model_name, img_size=img)
    module = spec.module.eval()
    tracker = ModuleTracker(module)
    capture = OpCapture(tracker, nvtx=False, flops=True)
    x = torch.randn(1, *spec.input_size)
    with torch.inference_mode(), tracker, capture, torch.autocast("cpu", torch.bfloat16):
        module(x)
    attr = attribute(build_trace(None, capture, tracker, 1))
    result = ProfileResult(ModelInfo(spec.name, "timm", spec.param_count, [1, *spec.input_size], 1, spec.input_size[-1]),
                           RunConfig("bf16", device="cpu", passes=["attributed"]), "cpu")
    result.roofline = roofline.summarize(attr, None, "bf16")
    return result


def cpu_baseline_profiles(rows, progress: bool = True):
    """``cpu_structure`` of each (model, image size)."""
    results = []
    for i, (model, img, _) in enumerate(rows):
        start = time.perf_counter()
        try:
            result = cpu_structure(model, img)
        except Exception as exc:  # noqa: BLE001 - a model that fails is listed, the rest go on
            print(f"[{i + 1}/{len(rows)}] {model}: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr, flush=True)
            continue
        results.append(result)
        if progress:
            print(f"[{i + 1}/{len(rows)}] {model}@{img}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return results


def _finite(value):
    """NaN (a Spearman over constant values) as null: JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="sources", nargs="+", help="stores or folders of H200 ProfileResults")
    parser.add_argument("--cpu-baseline", action="store_true", help="profile on the CPU and predict a pure roofline")
    parser.add_argument("--write-model-list", type=Path, metavar="FILE", help="write the models to sweep and exit")
    parser.add_argument("--count", type=int, default=200, help="models for --write-model-list / --cpu-baseline")
    parser.add_argument("--random-seed", type=int, metavar="SEED",
                        help="--write-model-list: draw the models uniformly with this seed (default: spread over families)")
    parser.add_argument("--models", type=Path, metavar="FILE",
                        help="check only the models named in this list (one a line, as --write-model-list writes)")
    parser.add_argument("--max-gmacs", type=float, default=None, help="--cpu-baseline: skip models above this")
    parser.add_argument("--profile-batch", type=int, help="use only profiles at this batch (default: per model, the "
                                                              "batch closest to the CSV's)")
    parser.add_argument("--same-models-at", type=int, metavar="BATCH",
                        help="only models that also have a profile at this batch (compare two --profile-batch runs "
                             "on the same models)")
    parser.add_argument("--excess", choices=("clock", "bound", "compute", "none", "all"), default="all",
                        help="how time above the roofline scales (visprof.analysis.group_scaling.predict_group); "
                             "all: the default mode (clock) last (the summary and the JSON), the others before it")
    parser.add_argument("--csv-dir", type=Path, default=CSV_DIR)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from visprof.base.output_paths import check_output_path

    # Checked before the work, written whole or not at all (a temporary file renamed into place).
    from visprof.base.outputs import atomic_write_text

    # Checked before the work, written whole or not at all (a temporary file renamed into place).
    if args.write_model_list:
        check_output_path(args.write_model_list, "--write-model-list")
    if args.json:
        check_output_path(args.json, "--json")
    pub = published(args.csv_dir)
    if args.write_model_list:
        rows = default_size_rows(pub)
        rows = stratified(rows, args.count) if args.random_seed is None else uniform(rows, args.count, args.random_seed)
        atomic_write_text(args.write_model_list, "".join(f"{m}\n" for m, _, _ in rows))
        sizes = {m: img for m, img, _ in rows}
        atomic_write_text(args.write_model_list.with_suffix(".sizes.json"), json.dumps(sizes, indent=1) + "\n")
        print(f"wrote {len(rows)} models to {args.write_model_list} (their CSV image sizes in "
              f"{args.write_model_list.with_suffix('.sizes.json')}; all are each model's default size where the CSVs have it)")
        return 0
    if args.cpu_baseline:
        rows = stratified(default_size_rows(pub), args.count, args.max_gmacs)
        results = cpu_baseline_profiles(rows)
        outcome = check(results, pub, efficiency=1.0)
        label = "CPU-captured op costs, pure roofline (every group at its roof), no GPU measurement"
    elif args.sources:
        profiles = load_profiles(args.sources)
        if args.models:
            from visprof.sweep.selection import read_model_list

            names = set(read_model_list(args.models))
            profiles = [p for p in profiles if p.model.name in names]
            missing = sorted(names - {p.model.name for p in profiles})
            if missing:
                print(f"{len(missing)} of the {len(names)} models in {args.models} have no profile in the sources: "
                      f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}", file=sys.stderr)
        batch = f", profiles at batch {args.profile_batch}" if args.profile_batch else ""
        from visprof.analysis.group_scaling import EXCESS_MODES

        modes = EXCESS_MODES if args.excess == "all" else (args.excess,)
        outcomes = {mode: check(profiles, pub, profile_batch=args.profile_batch, excess=mode,
                                also_at=args.same_models_at) for mode in modes}
        for mode in modes[1:]:
            print_report(outcomes[mode], f"measured profiles, time above the roof scaled by {mode}{batch}")
            print()
        outcome, label = outcomes[modes[0]], f"measured profiles, time above the roof scaled by {modes[0]}{batch}"
        outcome = {**outcome, "other_modes": {m: o["summary"] for m, o in outcomes.items() if m != modes[0]}}
    else:
        parser.error("give --from STORE|FOLDER, --cpu-baseline or --write-model-list")
    print_report(outcome, label)
    if args.json:
        doc = _finite({"provenance": provenance(), "method": label, "targets": TARGETS, **outcome})
        atomic_write_text(args.json, json.dumps(doc, indent=1, allow_nan=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def run(entry) -> int:
    """``entry()``, with a user mistake (a missing store, a file that is no profile) as one line;
    visprof's messages name options as a command line's flags, as visprof's own CLI does."""
    from visprof.base.errors import BadInputError
    from visprof.base.spelling import command_line

    try:
        with command_line():
            return entry()
    except BadInputError as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(run(main))
