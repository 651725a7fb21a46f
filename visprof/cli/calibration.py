"""The calibration options of compare, predict, report (--calibration FILE) and calibrate (--save
FILE): a pair's fit saved once and applied to any profile (visprof.analysis.calibration_file)."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class PublishedRow(NamedTuple):
    """What compare has of a profiled model beyond its profile, for calibrated_section."""

    spec: float  # its spec-ratio speed-up at the published batch
    speedup: float  # the published speed-up
    base_over: float | None  # ModelComparison.base_time_over_predicted, from its published base number


def add_calibration_option(parser) -> None:
    parser.add_argument("--calibration", type=Path, metavar="FILE",
                        help="a GPU pair's calibration (visprof calibrate --save): also give each profiled model its "
                             "calibrated speed-up from the pair's base to its target, with the 80%% band (compare: "
                             "its pair unless --base/--target name one)")


def save_calibration(path: Path, fit, fleet, comparison, held) -> None:
    from visprof.analysis.calibration_fleet import base_precision
    from visprof.analysis.calibration_file import SavedCalibration
    from visprof.base.errors import BadInputError

    if comparison.base_spec is None or comparison.target_spec is None:
        raise BadInputError(f"cannot save a calibration of {comparison.base} -> {comparison.target}: both GPUs need a "
                            f"row in the GPU spec table (--gpus FILE)")
    figures = {"spearman": held.calibrated.spearman, "median_abs_error": held.calibrated.median_abs_error,
               "coverage": held.coverage, "family_coverage": held.family_coverage,
               "fleet_median_error": held.fleet_median.median_abs_error, "models": held.models, "families": held.families}
    SavedCalibration.of(fit, fleet, comparison.base_spec.id, comparison.target_spec.id, base_precision(comparison),
                        figures).save(path)
    print(f"saved the calibration to {path} (visprof compare/predict --calibration {path})")


def calibration_pair(saved, table, base: str | None, target: str | None, path) -> tuple[str, str]:
    """compare --calibration: the GPUs to compare, the calibration's unless --base/--target name them,
    which must then be its pair; checked before anything is loaded."""
    from visprof.base.errors import BadInputError

    base, target = base or saved.base, target or saved.target
    pair = tuple(spec.id if (spec := table.find(name)) else name for name in (base, target))
    if pair != (saved.base, saved.target):
        raise BadInputError(f"calibration file {path} is for {saved.base} -> {saved.target}; this comparison is "
                            f"{pair[0]} -> {pair[1]} (--base/--target)")
    return base, target


def compare_calibrated(saved, comparison, table, top: int | None) -> dict:
    """compare --calibration: each compared model with a profile, calibrated from the profile compare
    read, at the published batch; printed with its published speed-up. id(model comparison) -> it."""
    chosen = [mc for mc in comparison.models if mc.profile is not None and mc.predicted_speedup]
    published = [PublishedRow(mc.predicted_speedup, mc.speedup, mc.base_time_over_predicted) for mc in chosen]
    text, rows = calibrated_section(saved, table, [mc.profile for mc in chosen], published, top=top)
    print(text, end="")
    return {id(mc): r for mc, r in zip(chosen, rows) if r is not None}


def csv_columns(calibrated) -> dict:
    """A calibrated speed-up as the extra columns of a compare or predict CSV row ({} without one)."""
    if calibrated is None:
        return {}
    return {"calibrated": calibrated.calibrated, "calibrated_low": calibrated.low, "calibrated_high": calibrated.high,
            "calibration_fitted": calibrated.fitted, "calibration_family_seen": calibrated.family_seen}


def times(ratio: float) -> str:
    return f"x{ratio:.2f}"


def load_calibration(args, table):
    """The --calibration file, checked against the GPU table; None without one."""
    from visprof.analysis.calibration_file import SavedCalibration
    from visprof.base.errors import BadInputError

    if args.calibration is None:
        return None
    saved = SavedCalibration.load(args.calibration)
    for gpu in (saved.base, saved.target):
        if table.find(gpu) is None:
            raise BadInputError(f"calibration file {args.calibration}: its GPU {gpu!r} has no row in the GPU spec table "
                                f"(--gpus FILE)")
    return saved


def _profile_words(m) -> str:
    """The profile a calibrated row is of, as predict's table names it (GPU, precision, batch): one
    model's profiles at two precisions or batches are calibrated apart, and their rows had looked alike."""
    return f"{m.gpu_id or '-'} {m.precision or '-'} b{m.batch_size or '-'}"


def calibrated_section(saved, table, profiles: list, published: list[PublishedRow] | None = None,
                top: int | None = None, batch_size: int | None = None) -> tuple[str, list]:
    """A section of text and the calibrated speed-up of each profile (None where it cannot be
    predicted). ``published``: per profile, what the caller has of its published numbers (compare's,
    at the published batch). ``top``: show the first and last ``top`` rows only. ``batch_size``: the
    batch the speed-ups are at where no number is published (predict's --batch-size; else each
    profile's own)."""
    rows = [saved.predict(p, table, spec=published[i].spec, base_over=published[i].base_over) if published
            else saved.predict(p, table, batch_size=batch_size) for i, p in enumerate(profiles)]
    batch = saved.batch_words(batch_size)
    at = "" if published else (f"; {batch} and the base table's precision"
                               + (", without a published base number (the fit's median)" if saved.reads_base_number
                                  else ""))
    lines = [f"\nCalibrated speed-up {saved.base} -> {saved.target} ({saved.describe()}{at}):",
             f"  {'model':<40} {'img':>5} {'profile':>15} {'spec':>7} {'calibrated':>11} {'80% band':>14}"
             + ("  published" if published else "")]
    shown = [i for i, r in enumerate(rows) if r is not None]
    if top is not None and len(shown) > 2 * top:
        shown = shown[:top] + [None] + shown[-top:]
    for i in shown:
        if i is None:
            lines.append(f"  ... {sum(x is not None for x in rows) - 2 * top} more (--all shows every one; "
                         f"--json and --csv have them)")
        else:
            r = rows[i]
            # the image size tells apart one model's profiles at several sizes (resnet50 was listed four times)
            img = profiles[i].img_size or "-"
            lines.append(f"  {r.model:<40} {img:>5} {_profile_words(profiles[i]):>15} {times(r.spec_speedup):>7} "
                         f"{times(r.calibrated):>11} "
                         f"{times(r.low) + '-' + format(r.high, '.2f'):>14}"
                         + (f" {times(published[i].speedup):>10}" if published else "")
                         + ("  (in the fit)" if r.fitted else "  (family in the fit)" if r.family_seen else ""))
    missing = sum(r is None for r in rows)
    if missing:
        lines.append(f"  ({missing} profile(s) without what the calibration reads: roofline groups, timing, FLOPs and "
                     f"bytes, a GPU with a spec row)")
    if published:
        judged = [(r, pub.speedup) for r, pub in zip(rows, published) if r is not None]
        fresh = [(r, pub) for r, pub in judged if not r.fitted]
        kin = [(r, pub) for r, pub in fresh if r.family_seen]
        split = [("not in the fit, family in it", kin), ("not in the fit, family not in it",
                                                         [x for x in fresh if not x[0].family_seen])] if kin else []
        for name, group in (("all (in sample where the fit saw the model)", judged), ("not in the fit", fresh), *split):
            if group:
                inside = sum(r.low <= pub <= r.high for r, pub in group)
                lines.append(f"  published inside the band, {name}: {inside} of {len(group)} ({inside / len(group):.0%})")
    return "\n".join(lines) + "\n", rows


__all__ = ["PublishedRow", "add_calibration_option", "calibrated_section", "calibration_pair", "compare_calibrated", "csv_columns", "load_calibration",
           "save_calibration", "times"]
