"""The ``import-timm``, ``compare``, ``predict``, ``calibrate`` and ``report`` commands.

``add_commands(commands)`` is called from ``visprof.cli.app.build_parser``. Nothing heavy
is imported until a command runs; every user mistake is a ``VisprofError`` (one line).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visprof.base.options import TIME_BASES, TIME_END_TO_END, TIME_GPU
from visprof.cli.arguments import fold_count, positive_int
from visprof.cli.calibration import (add_calibration_option, calibrated_section, calibration_pair, compare_calibrated,
                                     csv_columns, load_calibration, save_calibration)

__all__ = ["add_commands", "cmd_calibrate", "cmd_compare", "cmd_import_timm", "cmd_predict", "cmd_report"]


def _sources_help(what: str, csvs: bool = True) -> str:
    return (f"{what}: ProfileResult JSON files or folders of them, results stores (SQLite)"
            + (", timm benchmark CSVs (GPU from the file name, or FILE@GPU)" if csvs else ""))


def _add_quiet(parser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr (notes and warnings stay)")


def _add_files(parser, what: str) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help=f"write {what} as JSON")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="write one row per model as CSV")
    parser.add_argument("--gpus", type=Path, metavar="FILE", help="extra GPU spec rows")


def add_commands(commands) -> None:
    imp = commands.add_parser(
        "import-timm", help="add timm benchmark CSV rows to a store's reference table",
        description="Read timm benchmark.py inference CSVs (e.g. benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv) "
                    "and add their rows to the store's reference measurements. Rows already there are kept.")
    imp.add_argument("files", nargs="+", type=Path, metavar="FILE", help="timm inference benchmark CSV(s)")
    imp.add_argument("--gpu", metavar="NAME", help="the GPU they were measured on (default: from the file name, e.g. rtx4090)")
    imp.add_argument("--store", type=Path, required=True, metavar="STORE", help="results store (created if new)")
    imp.add_argument("--precision", metavar="P", help="amp-fp16, amp-bf16, fp32 ... (default: from the file name)")
    imp.add_argument("--gpus", type=Path, metavar="FILE", help="extra GPU spec rows (TOML, the shape of visprof/data/gpus.toml)")
    imp.set_defaults(handler=cmd_import_timm)

    cmp_ = commands.add_parser(
        "compare", help="speed-up of each model between two GPUs, and why",
        description="Join measurements of the same models on two GPUs: speed-up, sensitivity (against the median "
                    "speed-up), aggregates by family, dominant category and bound, and an explanation per profiled model.")
    cmp_.add_argument("sources", nargs="+", metavar="SOURCE", help=_sources_help("inputs"))
    cmp_.add_argument("--base", metavar="GPU", help="the GPU to compare from (default: the first of two)")
    cmp_.add_argument("--target", metavar="GPU", help="the GPU to compare to (default: the other)")
    cmp_.add_argument("--top", type=positive_int, default=15, metavar="N", help="show the N most and N least sensitive (default 15)")
    cmp_.add_argument("--all", action="store_true", help="show every model")
    cmp_.add_argument("--time", choices=TIME_BASES, default=TIME_END_TO_END,
                      help="which time a speed-up divides: end-to-end (default: throughput as measured or published) "
                           "or gpu (visprof profiles only: GPU busy time per sample, without the host's idle time)")
    add_calibration_option(cmp_)
    _add_files(cmp_, "the whole comparison")
    _add_quiet(cmp_)
    cmp_.set_defaults(handler=cmd_compare)

    pred = commands.add_parser(
        "predict", help="predict latency and throughput on a GPU you do not have",
        description="Scale each profile's op groups from its GPU's spec row to the target's (roofline scaling per "
                    "group; see docs/hardware-sensitivity.md).")
    # extend: --from a.db --to X --from b.db reads both (the second --from had replaced the first)
    pred.add_argument("--from", dest="sources", nargs="+", action="extend", required=True, metavar="SOURCE",
                      help=_sources_help("profiles to predict from", csvs=False))
    pred.add_argument("--to", dest="target", required=True, metavar="GPU", help="target GPU (a gpus.toml id, alias or name)")
    pred.add_argument("--batch-size", "-b", type=positive_int, metavar="N", help="predict at this batch (default: each profile's)")
    pred.add_argument("--precision", choices=("fp16", "bf16"), help="switch 16-bit precision (same bytes per value)")
    pred.add_argument("--model", metavar="PATTERN", action="append", help="only models matching this shell pattern "
                      "(a comma list, or the option again, for several; a name without a pretrained tag matches its "
                      "tagged profiles too, one with timm's default tag its untagged ones), as export's --model")
    pred.add_argument("--every-profile", action="store_true",
                      help="predict from every profile (default: per model, GPU and precision, the one whose batch is "
                           "nearest --batch-size, the newest among equals)")
    pred.add_argument("--excess", choices=("clock", "bound", "compute", "none", "fraction"), default="clock",  # group_scaling.EXCESS_MODES
                      help="how time above a group's roofline scales: clock (default): the measured time is a rate "
                           "limit that scales with the boost clock (SMs x clock between GPUs of one compute capability), "
                           "the group takes the longer of it and its roof, and the range column shows the other "
                           "scalings; bound: "
                           "efficiency kept (Habitat); compute: the time above the roof scales with SMs x clock; none: "
                           "every group at its roof; fraction: the roofline share of each group's time scales with its roof's "
                           "resource, the rest with the clock (docs/hardware-sensitivity.md, section 6)")
    add_calibration_option(pred)
    _add_files(pred, "the predictions, with their groups,")
    _add_quiet(pred)
    pred.set_defaults(handler=cmd_predict)

    cal = commands.add_parser(
        "calibrate", help="fit a GPU pair's per-bucket corrections to the spec ratios from published numbers",
        description="From published throughputs on two GPUs (timm CSVs imported into a store, or a user's table) and "
                    "visprof profiles of some of those models: fit how much faster or slower each category, "
                    "sub-category, op type, kernel family and the idle time run on the target than the spec ratios say "
                    "(ridge toward the spec model), and test it on held-out timm families (visprof.analysis.calibrate).")
    cal.add_argument("sources", nargs="+", metavar="SOURCE", help=_sources_help("published numbers and profiles"))
    cal.add_argument("--base", metavar="GPU", help="the GPU the speed-up is from (default: the first of two)")
    cal.add_argument("--target", metavar="GPU", help="the GPU it is to (default: the other)")
    cal.add_argument("--folds", type=fold_count, default=5, metavar="K", help="family folds of the held-out test (default 5)")
    cal.add_argument("--lambda", dest="lam", type=float, metavar="L",
                     help="ridge strength (default: chosen by family-held-out CV inside each training set)")
    cal.add_argument("--top", type=positive_int, default=20, metavar="N", help="buckets shown in the ratio table (default 20)")
    cal.add_argument("--explain", nargs="+", action="extend", metavar="MODEL",  # given twice: both lists
                     help="tell these models' calibrated speed-ups from the fitted ratios: which of their work moved "
                          "them (timm names, with or without the pretrained tag); the JSON has every model's")
    cal.add_argument("--json", type=Path, metavar="FILE",
                     help="write the fit, the ratio table, the held-out figures and every model's sentence as JSON")
    cal.add_argument("--save", type=Path, metavar="FILE",
                     help="write the fit to FILE, for compare and predict --calibration FILE")
    cal.add_argument("--gpus", type=Path, metavar="FILE", help="extra GPU spec rows")
    _add_quiet(cal)
    cal.set_defaults(handler=cmd_calibrate)

    rep = commands.add_parser(
        "report", help="a self-contained HTML report (and PNGs) of profiles and comparisons",
        description="Stacked category bars, throughput/memory/accuracy Pareto fronts, a roofline with each category, "
                    "and (given measurements on two GPUs) the speed-up scatter, in one HTML file with the images inside.")
    rep.add_argument("sources", nargs="+", metavar="SOURCE", help=_sources_help("inputs"))
    rep.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--png-dir", type=Path, metavar="DIR", help="also write each figure as a PNG into DIR")
    rep.add_argument("--base", metavar="GPU", help="speed-up scatter: from this GPU")
    rep.add_argument("--target", metavar="GPU", help="speed-up scatter: to this GPU")
    rep.add_argument("--title", default="visprof report", help="the report's title")
    add_calibration_option(rep)
    rep.add_argument("--batch-size", "-b", type=positive_int, metavar="N",
                     help="with --calibration: the batch the calibrated speed-ups are at (default: the published batch "
                          "the calibration keeps, timm's 1024, where its band's coverage was measured; else "
                          "each profile's own)")
    rep.add_argument("--gpus", type=Path, metavar="FILE", help="extra GPU spec rows")
    _add_quiet(rep)
    rep.set_defaults(handler=cmd_report)


def _table(args):
    from visprof.analysis.gpus import gpu_table

    return gpu_table(args.gpus)


def _say(text: str) -> None:
    print(f"[visprof] {text}", file=sys.stderr, flush=True)


def _warn(text: str) -> None:
    """One ``visprof: warning:`` line (cli.app's display of VisprofWarning), as docs/cli.md says."""
    import warnings

    from visprof.base.errors import VisprofWarning

    warnings.warn(text, VisprofWarning, stacklevel=2)


def _progress(args: argparse.Namespace, steps: int):
    """The command's progress on stderr (``base.progress``): a line per step, and how far a long one
    got every few seconds; silenced by --quiet. Reading 3,000 profiles and predicting them takes
    10-40 s, which a command that said nothing seemed to hang through. Nothing in the first seconds:
    a command that ends or is refused at once says only its output, or its one error line."""
    from visprof.base.progress import LOG_UPDATE_S, Progress

    return Progress(steps, args.command, enabled=not args.quiet, delay_s=LOG_UPDATE_S)


def _load(paths, table, progress=None):
    """``sources.load``, saying which files inside the input folders it passed over (a JSON that is
    not a profile result, e.g. one truncated or another tool's), so that none is left out unseen.
    ``progress`` (a ``Progress``) starts a step for the reading and is told how far it got."""
    from visprof.analysis import sources

    if progress is not None:
        progress.step(f"reading {len(paths)} input(s)")
    loaded = sources.load(paths, table, on_progress=progress.update if progress is not None else None)
    if loaded.skipped:
        shown = "; ".join(loaded.skipped[:3]) + (f"; and {len(loaded.skipped) - 3} more" if len(loaded.skipped) > 3 else "")
        _say(f"skipped {len(loaded.skipped)} file(s) of the input folders: {shown}")
    return loaded


def cmd_import_timm(args: argparse.Namespace) -> int:
    from visprof.analysis.sources import csv_gpu
    from visprof.analysis.store_adapter import open_store
    from visprof.analysis.timm_csv import read_benchmark_csv
    from visprof.base.output_paths import check_not_an_input
    from visprof.store.result_store import ResultStore

    check_not_an_input({"--store": args.store}, {"CSV": args.files, "--gpus file": args.gpus})
    ResultStore.check_path(args.store, write=True)  # a damaged or foreign store: refused before reading the CSVs
    table = _table(args)
    parsed = []
    for path in args.files:  # every file is read and checked before the store changes
        gpu_name = csv_gpu(path, args.gpu, table, how="give --gpu NAME", precision_given=args.precision is not None)
        parsed.append((path, gpu_name, read_benchmark_csv(path, gpu_name, args.precision)))
    with open_store(args.store, write=True) as store:
        for path, gpu_name, result in parsed:
            differing = store.differing_references(result.rows)  # before the rows are added
            added = store.add_references(result.rows)
            dropped = f"; dropped {result.test_rows_dropped} test_* rows" if result.test_rows_dropped else ""
            rows = f"{len(result.rows)} row{'s' if len(result.rows) != 1 else ''}"
            print(f"{path.name}: {rows} on {gpu_name} ({result.rows[0]['precision']}), "
                  f"{added} new, {len(result.rows) - added} already in {args.store}{dropped}")
            if differing:  # a corrected file imported again kept the wrong numbers without a word
                row, stored = differing[0]
                _warn(f"{path.name}: {len(differing)} row(s) already in {args.store} with other numbers were kept as "
                      f"stored, e.g. {row['model']} @{row['img_size']} batch {row['batch_size']}: {_rate(stored)} "
                      f"stored, {row['samples_per_s']:g} in the file; to use the file's, import it into a new store")
            for warning in result.warnings[:5]:
                _warn(warning)
            if len(result.warnings) > 5:
                _warn(f"{path.name}: and {len(result.warnings) - 5} more warnings of this kind")
    return 0


def _rate(samples_per_s: float | None) -> str:
    return "no samples/s" if samples_per_s is None else f"{samples_per_s:g} samples/s"


def _inputs(args: argparse.Namespace) -> dict:
    """What the command reads, for the output checks: the sources (a folder as the files
    ``sources.load`` reads from it) and the --gpus file."""
    from visprof.analysis.sources import input_paths

    return {"input": input_paths(args.sources), "--gpus file": args.gpus,
            "--calibration file": getattr(args, "calibration", None)}


def _check_outputs(args: argparse.Namespace, summary: str, **paths) -> None:
    """The output paths: writable, distinct, and none of them one of the command's inputs
    (a source, a file in a source folder, a store's side file, the --gpus file)."""
    from visprof.analysis.sources import FOLDER_FILES
    from visprof.base.output_paths import check_output_paths

    flags = {k: f"--{k.replace('_', '-')}" for k in paths}
    writes = {**_OUTPUT_KIND, "json": summary, "csv": f"{summary}-csv"}
    check_output_paths({flags[k]: v for k, v in paths.items()}, inputs=_inputs(args), folder_files=FOLDER_FILES,
                       kinds={flags[k]: writes[k] for k in paths})


_OUTPUT_KIND = {"save": "calibration"}  # what each output option writes; --json and --csv: the command's own


def cmd_compare(args: argparse.Namespace) -> int:
    from visprof.analysis.compare import compare
    from visprof.base.errors import BadInputError
    from visprof.base.outputs import atomic_write_text, write_json_summary
    from visprof.report.compare_text import format_comparison, rows_to_csv

    _check_outputs(args, "compare", json=args.json, csv=args.csv)
    if args.time == TIME_GPU and args.calibration:
        raise BadInputError("--time gpu compares visprof's GPU busy time; a calibration is fitted to end-to-end "
                            "published numbers: leave out one of --time gpu and --calibration")
    table = _table(args)
    saved = load_calibration(args, table)
    base, target = calibration_pair(saved, table, args.base, args.target, args.calibration) if saved else (args.base,
                                                                                                          args.target)
    with _progress(args, 2) as progress:
        loaded = _load(args.sources, table, progress)
        progress.step(f"joining and predicting {len(loaded.measurements)} measurements")
        try:
            comparison = compare(loaded.measurements, base, target, table, time=args.time,
                                 on_progress=progress.update)
        except BadInputError as exc:
            if saved and not (args.base and args.target):  # the pair came from the file, not the command line
                raise BadInputError(f"{exc} (the GPUs of the calibration file {args.calibration}: {saved.base} -> "
                                    f"{saved.target})") from None
            raise
    print(format_comparison(comparison, top=None if args.all else args.top), end="")
    calibrated = compare_calibrated(saved, comparison, table, None if args.all else args.top) if saved else {}
    if args.json is not None:
        doc = comparison.to_dict()
        if saved:
            doc["calibration"] = {"file": str(args.calibration), "about": saved.describe(),
                                  "models": [r.row() for r in calibrated.values()]}
        write_json_summary(args.json, "compare", doc, indent=2, allow_nan=False)
    if args.csv is not None:
        atomic_write_text(args.csv, rows_to_csv([{**m.row(), **csv_columns(calibrated.get(id(m)))}
                                                 for m in comparison.models]), kind="compare-csv")
    return 0


def _check_not_circular(comparison) -> None:
    """The published side of a calibration must not be the profiles themselves: with --target h200
    and H200 profiles, the fit scored its features against themselves (Spearman 0.974, leakage)."""
    from visprof.base.errors import BadInputError

    for side in ("base", "target"):
        own = sum(getattr(m, side).kind == "profile" for m in comparison.models)
        if own:
            gpu = getattr(comparison, side)
            raise BadInputError(
                f"the {side} GPU's numbers ({gpu}) are visprof profiles for {own} of {len(comparison.models)} models: a "
                "calibration fits the profiles against published numbers of both GPUs, not against themselves; give "
                f"the {gpu}'s published table (a timm CSV or your own), or use visprof compare for profile-to-profile")


def cmd_calibrate(args: argparse.Namespace) -> int:
    import math

    import numpy as np

    from visprof.analysis.calibrate import fit_calibration, unpublished_predictions
    from visprof.analysis.calibration_ratios import format_ratio_table, ratio_table
    from visprof.analysis.calibration_fleet import fleet_from_comparison, profiling_gpus_note
    from visprof.analysis.families import architecture
    from visprof.analysis.calibration_sentences import sentences
    from visprof.analysis import sources
    from visprof.analysis.compare import compare
    from visprof.analysis.held_out import family_held_out
    from visprof.base.errors import BadInputError
    from visprof.base.outputs import write_json_summary

    if args.lam is not None and not (math.isfinite(args.lam) and args.lam > 0):
        raise BadInputError(f"--lambda must be a positive number, not {args.lam}")
    _check_outputs(args, "calibrate", json=args.json, save=args.save)
    table = _table(args)
    why = "calibrate needs visprof profiles of some of the models"
    sources.refuse_csvs_only(args.sources, why)
    with _progress(args, 4) as progress:
        loaded = _load(args.sources, table, progress)
        if not loaded.profiles:
            raise sources.no_profiles_error(why, references=len(loaded.measurements))
        mixed = profiling_gpus_note(loaded.profiles)
        if mixed:
            _say(f"note: {mixed}")
        progress.step(f"joining and predicting {len(loaded.measurements)} measurements")
        comparison = compare(loaded.measurements, args.base, args.target, table, on_progress=progress.update)
        _check_not_circular(comparison)
        # before the fit: a typo costs no minute
        _check_explained_names(args.explain or [], comparison, {p.model for p in loaded.profiles})
        for warning in (comparison.implausible, comparison.software, comparison.paths):
            if warning:
                _warn(warning)
        for note in _input_notes(comparison):
            _say(f"note: {note}")
        fleet, missing = fleet_from_comparison(comparison, loaded.profiles, table)
        families = len({fleet.families[i] for i in range(len(fleet.families)) if np.isfinite(fleet.log_obs[i])})
        if args.folds > families:
            _say(f"note: --folds {args.folds}, but the models are of {families} families: {families} folds, one "
                 "family each")
        published = int(np.isfinite(fleet.log_obs).sum())
        progress.step(f"fitting {published} models with a profile and both published numbers ({missing} joined "
                      "models without a usable profile)")
        fit = fit_calibration(fleet, lam=args.lam)
        rows = ratio_table(fit, fleet)
        progress.step("testing on held-out families")
        held = family_held_out(fleet, folds=args.folds, lam=args.lam, on_progress=progress.update)
    unpublished = unpublished_predictions(fit, fleet)
    # the joined models left out, here too: the progress line that said it is gone under -q
    unused = f" ({missing} more published on both without a usable profile)" if missing else ""
    print(f"{comparison.base} -> {comparison.target}: {published} models with published numbers{unused}, "
          f"{len(fleet.features)} buckets and covariates")
    print(format_ratio_table(rows, fit, top=args.top), end="")
    print(held.lines(), end="")
    if unpublished:
        at = f" at batch {fleet.batch_size} (the published table's)" if fleet.batch_size else ""
        print(f"{len(unpublished)} profiled model(s) without both published numbers predicted{at} (in --json): "
              + ", ".join(f"{p['model']} x{p['calibrated']:.2f} ({p['low']:.2f}-{p['high']:.2f})" for p in unpublished[:3])
              + (" ..." if len(unpublished) > 3 else ""))
    if args.explain:
        print(_explained(fit, fleet, args.explain, {architecture(mc.model) for mc in comparison.models}), end="")
    if args.save is not None:
        save_calibration(args.save, fit, fleet, comparison, held)
    if args.json is not None:
        doc = {"base": comparison.base, "target": comparison.target, "models": published, "missing": missing,
               "unpublished": unpublished,
               "lambda": fit.lam, "offset": math.exp(fit.intercept), "band_quantiles": [fit.q_low, fit.q_high],
               "band_quantiles_family_seen": [fit.q_low_seen, fit.q_high_seen],
               "band_leverage_c": [fit.c, fit.c_seen],
               "ratios": [b.row() for b in rows], "held_out": held.to_dict(), "software_note": comparison.software,
               "path_note": comparison.paths,
               "sentences": [s.row() for s in sentences(fit, fleet)]}
        write_json_summary(args.json, "calibrate", doc, allow_nan=False)
    return 0


def _input_notes(comparison) -> list[str]:
    """compare's notes on the inputs that a calibration fits as well (tables of another precision than the
    profiles, two tables of one GPU that disagree, ...), which calibrate had fitted without a word; not
    those it warns of, nor compare's agreement of spec predictions (calibrate has its own baselines)."""
    said = {comparison.implausible, comparison.software, comparison.paths,
            comparison.prediction.sentence() if comparison.prediction else None}
    return [note for note in comparison.notes if note not in said]


def _explained(fit, fleet, names: list[str], published: set[str]) -> str:
    """The sentences of the named models, one line each, told from the fit on the whole pair; a name
    the calibration does not hold is said so, and why: not published on both GPUs (``published``:
    the architectures that are), or published without a usable profile."""
    from visprof.analysis.calibration_sentences import sentences
    from visprof.analysis.families import architecture

    lines = ["told from the fit on all models of the pair (in sample; the held-out figures above come from fits "
             "without the model's family):"]
    for name in names:
        told = sentences(fit, fleet, [name])
        why = ("published on both GPUs, but no profile at a published image size or no spec prediction"
               if architecture(name) in published else "not published on both GPUs, and its profile gives no spec "
               "prediction")
        lines += [f"  {s.text()}" for s in told] or [f"  {name}: not among the calibrated models ({why})"]
    return "\n".join(lines) + "\n"


def _check_explained_names(names: list[str], comparison, profiled: set[str]) -> None:
    """--explain names a model the pair publishes on both GPUs, or one profiled that calibrate
    predicts without them (any pretrained tag of it); profiled-only ones had been refused."""
    import difflib

    from visprof.analysis.families import architecture
    from visprof.base.errors import BadInputError

    known = sorted({architecture(mc.model) for mc in comparison.models} | {architecture(m) for m in profiled})
    for name in names:
        if architecture(name) not in known:
            # timm's names are lower case: RESNET50 is resnet50, which difflib's case-blind ratio misses
            close = ([arch for arch in known if arch.lower() == architecture(name).lower()]
                     or difflib.get_close_matches(architecture(name), known, n=3, cutoff=0.6))
            hint = f"; did you mean: {', '.join(close)}?" if close else ""
            raise BadInputError(f"--explain {name}: no published row on both {comparison.base} and "
                                f"{comparison.target}, and no profile, under this name{hint}")


def prediction_row(p) -> dict:
    from visprof.analysis.comparison import share_columns

    row = p.to_dict()
    row.pop("bound_ms")
    shares = row.pop("shares")
    row.update(share_columns(shares))
    row["notes"] = "; ".join(row["notes"])
    span = row.pop("latency_range_ms")
    row.pop("latency_by_scaling")
    row["latency_low_ms"], row["latency_high_ms"] = span if span else (None, None)
    return row


def cmd_predict(args: argparse.Namespace) -> int:
    from visprof.store.model_filter import matches_model, model_globs

    from visprof.analysis import sources
    from visprof.analysis.predict import choose_profiles, higher_peaks_note, predict_many
    from visprof.base.errors import BadInputError
    from visprof.base.outputs import atomic_write_text, write_json_summary
    from visprof.base.progress import counted
    from visprof.report.compare_text import format_predictions, rows_to_csv

    _check_outputs(args, "predict", json=args.json, csv=args.csv)
    table = _table(args)
    target = table.get(args.target)
    saved = load_calibration(args, table)  # before minutes of loading
    if saved is not None and saved.target != target.id:
        raise BadInputError(f"calibration file {args.calibration} is for {saved.base} -> {saved.target}; --to is "
                            f"{target.id} (predict onto its target, or give the calibration of this GPU)")
    why = "predict reads visprof profiles: JSON files, folders or stores"
    profiles, unread = sources.profile_inputs(args.sources, why)
    if unread:
        _say(f"note: {', '.join(map(str, unread))} not read: predict reads profiles, and a CSV holds none")
    with _progress(args, 2) as progress:
        loaded = _load(profiles, table, progress)
        globs = model_globs(args.model)
        results = [m.result for m in loaded.profiles if matches_model(m.model, globs)]
        if not results:
            raise sources.no_profiles_error(why, model=",".join(args.model) if args.model else None,
                                            references=len(loaded.measurements) - len(loaded.profiles))
        left_out = 0
        if not args.every_profile:
            results, left_out = choose_profiles(results, args.batch_size)
        progress.step(f"predicting {len(results)} profile(s) on the {target.id}")
        predictions, skipped = predict_many(counted(results, len(results), "profiles", progress.update), target,
                                            batch_size=args.batch_size, precision=args.precision, table=table,
                                            excess=args.excess)
    if not predictions:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        raise BadInputError(f"nothing could be predicted: {skipped[0]}{more}")
    if left_out:  # first: the table below can run to thousands of lines
        rule = ("per model, image size, GPU and precision the one nearest --batch-size, the newest among equals"
                if args.batch_size else "per model, image size, GPU, precision and batch the newest")
        print(f"({left_out} more profile(s) of the same models not used: {rule}; --every-profile predicts them all)")
    if args.excess == "clock":  # once per profiled GPU, not in every model's notes
        for source_id, precision in sorted({(p.source_gpu, p.precision) for p in predictions}):
            if note := higher_peaks_note(table.get(source_id), target, precision):
                _say(f"note: {note}")
    print(format_predictions(predictions, target.short_name, skipped), end="")
    # (model, image size, batch, GPU, precision) of the profile -> its calibrated speed-up; without the
    # precision, a model profiled at fp16 and at bf16 had one entry, and both CSV rows the last one's
    calibrated = {}
    if saved:
        used = {id(r) for r in results}
        profiles = [m for m in loaded.profiles if id(m.result) in used]
        text, rows = calibrated_section(saved, table, profiles, batch_size=args.batch_size)
        print(text, end="")
        calibrated = {(m.model, m.img_size, m.batch_size, m.gpu_id, m.precision): r
                      for m, r in zip(profiles, rows) if r is not None}
    if args.json is not None:
        doc = {"target": target.as_dict(), "predictions": [p.to_dict(groups=True) for p in predictions], "skipped": skipped}
        if saved:
            doc["calibration"] = {"file": str(args.calibration), "about": saved.describe(),
                                  "models": [r.row() for r in calibrated.values()]}
        write_json_summary(args.json, "predict", doc, indent=2, default=_json_default)
    if args.csv is not None:
        atomic_write_text(args.csv, rows_to_csv([
            {**prediction_row(p),
             **csv_columns(calibrated.get((p.model, p.img_size, p.source_batch, p.source_gpu, p.source_precision)))}
            for p in predictions]), kind="predict-csv")
    return 0


def _json_default(value):
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def cmd_report(args: argparse.Namespace) -> int:
    from visprof.base.errors import BadInputError
    from visprof.report.figures import require_matplotlib
    from visprof.report.html import build_report, check_report_outputs

    # Both before minutes of loading: the outputs (never an input), then the plotting library.
    check_report_outputs(args.output, args.png_dir, _inputs(args))
    if args.batch_size and args.calibration is None:
        raise BadInputError("--batch-size sets the batch of the calibrated speed-ups: it needs --calibration FILE")
    require_matplotlib()
    table = _table(args)
    calibration = load_calibration(args, table)
    if calibration is not None and (args.base or args.target):
        # one pair on the page: --base/--target naming another than the calibration's had made a speed-up section of
        # one pair beside calibrated speed-ups of another (compare refuses it too)
        calibration_pair(calibration, table, args.base, args.target, args.calibration)
    with _progress(args, 2) as progress:
        loaded = _load(args.sources, table, progress)
        progress.step(f"comparing and drawing {len(loaded.measurements)} measurements")
        written = build_report(loaded, args.output, png_dir=args.png_dir, base=args.base, target=args.target,
                               title=args.title, table=table, calibration=calibration, batch_size=args.batch_size,
                               on_progress=progress.update)
    pngs = (f" and {len(written)} PNGs in {args.png_dir}" if written else " (no figure to write as a PNG)") \
        if args.png_dir else ""
    print(f"wrote {args.output}{pngs}")
    return 0
