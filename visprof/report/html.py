"""A self-contained HTML report: every figure embedded as a PNG, no script, no network.

    build_report(sources.load(paths), "report.html", png_dir="figs")

Sections (each only where the inputs have data for it): the profiles (stacked category and
bound bars, a table), what each profile runs (op types, kernel families), the roofline per GPU,
accuracy/throughput/memory Pareto fronts, and, with measurements on two GPUs, the speed-up
scatter, family spreads and the most and least sensitive models with their explanations.
"""
from __future__ import annotations

import base64
import html
from datetime import datetime, timezone
from pathlib import Path

from visprof.base.errors import BadInputError
from visprof.base.output_paths import REPORT_GENERATOR
from visprof.base.spelling import option

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; color: #1d2329; background: #f6f7f9; }
header { background: #1d2b36; color: #fff; padding: 22px 36px; }
header h1 { margin: 0 0 6px 0; font-size: 24px; font-weight: 600; }
header p { margin: 0; color: #c6d2dc; font-size: 13px; }
main { padding: 8px 36px 40px 36px; max-width: 1500px; }
section { background: #fff; border: 1px solid #e1e5ea; border-radius: 8px; margin: 20px 0; padding: 14px 22px; }
h2 { font-size: 18px; margin: 6px 0 4px 0; }
p.caption { color: #4c5863; font-size: 13px; margin: 4px 0 10px 0; max-width: 1100px; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; }
table { border-collapse: collapse; font-size: 12.5px; margin: 8px 0; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eceff2; text-align: right; white-space: nowrap; }
th { background: #f1f3f5; font-weight: 600; }
td:first-child, th:first-child, td.text { text-align: left; }
td.explain { text-align: left; white-space: normal; max-width: 760px; color: #34404a; }
.tiles { display: flex; gap: 14px; flex-wrap: wrap; margin: 12px 0; }
.tile { background: #fff; border: 1px solid #e1e5ea; border-radius: 8px; padding: 10px 16px; min-width: 150px; }
.tile b { display: block; font-size: 22px; }
.tile span { color: #5b6670; font-size: 12px; }
"""


# A profile's time as the report's sentences name it, by figures.clock_of of the profiles: a CPU
# result's times are host-clock op durations (docs/result-schema.md), never "GPU time".
RUN_TIME = {"gpu": "GPU time", "cpu": "host-clock time",
            "mixed": "time (GPU time; host-clock time for a CPU profile)"}
# What "launches < SMs" holds, by clock_of: a CPU profile launches nothing (each op is its own row).
SMALL_LAUNCHES = {
    "gpu": ", and the share of its kernel time in launches of fewer thread blocks than the GPU has SMs (profiles "
           "made before 2026-12-05 do not have it)",
    "cpu": " (a CPU profile: each op is its own row, no kernels, so no launches to count)",
    "mixed": ", and, for a GPU profile, the share of its kernel time in launches of fewer thread blocks than the GPU "
             "has SMs (profiles made before 2026-12-05 do not have it)",
}
WHERE_THE_TIME_GOES = {
    "gpu": "GPU kernel time per image by operator category, the same as shares, and the share of latency bound by "
           "tensor-core throughput, memory bandwidth, other compute, or the host (idle GPU).",
    "cpu": "Host-clock time per image by operator category (a CPU measurement: each op's duration on the host, not "
           "GPU kernel time), and the same as shares. A CPU profile has no bounds: there are no ceilings to place it by.",
    "mixed": "Time per image by operator category, and the same as shares: GPU kernel time for the GPU profiles, "
             "host-clock op time for the CPU ones (marked \"CPU (host clock)\"); and, for the GPU profiles, the share "
             "of latency bound by tensor-core throughput, memory bandwidth, other compute, or the host (idle GPU).",
}


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _table(headers: list[str], rows: list[list], text_columns: tuple[int, ...] = (0,), explain_column: int | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            cls = ' class="explain"' if i == explain_column else ' class="text"' if i in text_columns else ""
            cells.append(f"<td{cls}>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _fmt(value, spec: str, empty: str = "-") -> str:
    return empty if value is None else format(value, spec)


def _device_column(profiles) -> str:
    """"GPU", or "device" where a CPU result is among them (its cell says "CPU (host clock)")."""
    return "device" if any(m.host_clock for m in profiles) else "GPU"


def _profiles_table(profiles) -> str:
    from visprof.analysis.roofline import dominant_category
    from visprof.report.figures import device_label, peak_memory

    rows = []
    for m in sorted(profiles, key=lambda m: (m.gpu, m.model, m.img_size or 0)):
        r = m.result
        shares = (r.roofline.shares if r.roofline else None) or {}
        bounds = ", ".join(f"{b} {v:.0%}" for b, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.01)
        mem = peak_memory(m)
        rows.append([m.model, m.img_label, device_label(m), str(m.batch_size), m.precision or "-",
                     _fmt(r.timing.latency_ms.median if r.timing else None, ".3f"), _fmt(m.samples_per_s, ",.0f"),
                     _fmt(mem / 2**20 if mem else None, ",.0f"), dominant_category(r) or "-", bounds or "-",
                     "FAIL" if r.failed_checks else "pass" if r.checks else "-"])
    return _table(["model", "img", _device_column(profiles), "batch", "precision", "latency ms", "images/s", "peak MiB",
                   "dominant category", "time by bound", "self-checks"], rows, text_columns=(0, 2, 4, 8, 9, 10))


# Op types and kernel families named per profile in "What the models run".
TOP_OP_TYPES, TOP_KERNEL_FAMILIES = 4, 3


def _what_they_run(profiles) -> str:
    """Per profile with op-type tables: its costliest op types and kernel families, and how much
    of its kernel time ran in launches too small for the GPU's SMs."""
    from visprof.report.figures import clock_of, device_label

    def top(rows, name, n):
        return ", ".join(f"{getattr(r, name)} {r.share:.0%}" for r in rows[:n]) or "-"

    rows = []
    for m in sorted(profiles, key=lambda m: (m.gpu, m.model, m.img_size or 0)):
        r = m.result
        if not r.op_types:
            continue
        under = r.small_launches()
        small = sum(x.share for x in under) if under is not None else None
        # size, batch and precision tell one model's profiles apart (three had read "resnet18 | CPU" alike)
        rows.append([m.model, m.img_label, str(m.batch_size or "-"), m.precision or "-", device_label(m),
                     top(r.op_types, "op_type", TOP_OP_TYPES), top(r.kernel_families, "family", TOP_KERNEL_FAMILIES),
                     _fmt(small, ".1%")])
    if not rows:
        return ""
    shown = [m for m in profiles if m.result.op_types]
    clock = clock_of(shown)
    without = len(profiles) - len(shown)
    caption = ("Each profile's costliest aten op types (convolutions by kind, GEMMs by arithmetic intensity) and "
               f"kernel families, with their share of its {RUN_TIME[clock]}{SMALL_LAUNCHES[clock]}. The JSON results "
               "keep every op type and kernel family."
               + (f" {without} profile(s) without op-type tables (made before they were kept, or without the "
                  "attributed pass) are not listed." if without else ""))
    return (f'<section><h2>What the models run</h2><p class="caption">{html.escape(caption)}</p>'
            + _table(["model", "img", "batch", "precision", _device_column(shown), f"top {TOP_OP_TYPES} op types",
                      f"top {TOP_KERNEL_FAMILIES} kernel families", "launches < SMs"], rows,
                     text_columns=(0, 3, 4, 5, 6))
            + "</section>")


def _calibrated_section(calibration, profiles, table, batch_size: int | None = None) -> str:
    """Each profiled model's calibrated speed-up over a saved calibration's pair, with its 80% band,
    at ``batch_size`` (else the published batch the calibration keeps)."""
    rows, missing = [], 0
    for m in sorted(profiles, key=lambda m: (m.model, m.img_size or 0, m.batch_size or 0)):
        got = calibration.predict(m, table, batch_size=batch_size)
        if got is None:
            missing += 1
            continue
        # the batch the speed-up is at (the caption's), then the profile it comes from: one model's profiles at
        # two batches or precisions had read as one model twice, with two values
        rows.append([m.model, m.img_label, str(batch_size or calibration.batch_size or m.batch_size),
                     f"b{m.batch_size} {m.precision}",
                     f"x{got.spec_speedup:.2f}",
                     f"x{got.calibrated:.2f}",
                     f"x{got.low:.2f} – x{got.high:.2f}",
                     "yes (in sample)" if got.fitted else "its family" if got.family_seen else "no"])
    words = calibration.batch_words(batch_size)
    at = words[0].upper() + words[1:]
    caption = (f"{calibration.describe()}. {at}: the spec ratios' speed-up, the calibrated one "
               f"(the fitted per-bucket corrections on top) and its 80% band. A model the fit saw is in sample; "
               f"a model whose timm family the fit saw gets the narrower band of such models."
               + (" A profile alone has no published base number, so the fit's correction from it is at its median."
                  if calibration.reads_base_number else "")
               + (f" {missing} profile(s) lack what the calibration reads." if missing else ""))
    return (f"<section><h2>Calibrated speed-up {html.escape(calibration.base)} → {html.escape(calibration.target)}</h2>"
            f'<p class="caption">{html.escape(caption)}</p>'
            + _table(["model", "img", "batch", "profile", "spec ratios", "calibrated", "80% band", "in the fit"], rows,
                     text_columns=(0, 3, 7))
            + "</section>")


def _comparison_section(comparison, figures) -> list[str]:
    from visprof.analysis.compare_explain import l2_ratio_text, spec_tensor_ratio

    c = comparison
    out = [f"<section><h2>Speed-up {html.escape(c.base_name)} → {html.escape(c.target_name)}</h2>",
           f'<p class="caption">{len(c.models)} models (a model at each image size it has) measured on both at the '
           f"same image size; median speed-up x{c.median_speedup:.2f}. Sensitivity is a model's speed-up over that median, minus one. "
           "Colour: the model's dominant category in its profile (grey: not profiled).</p>"]
    if c.base_spec and c.target_spec:
        b, t = c.base_spec, c.target_spec
        key, tensor = spec_tensor_ratio(c)  # as compare's spec line
        tiles = [(f"tensor ({key}) ratio" if key else "tensor ratio", f"x{tensor:.2f}" if tensor else "-"),
                 ("FP32 ratio", f"x{t.fp32_tflops / b.fp32_tflops:.2f}"),
                 ("bandwidth ratio", f"x{t.memory_bandwidth_gbs / b.memory_bandwidth_gbs:.2f}"),
                 ("L2 ratio", f"x{l2_ratio_text(t.l2_mb / b.l2_mb)}"), ("median speed-up", f"x{c.median_speedup:.2f}")]
        out.append('<div class="tiles">' + "".join(f'<div class="tile"><b>{v}</b><span>{html.escape(k)}</span></div>'
                                                   for k, v in tiles) + "</div>")
    for name, alt in (("speedup", "speed-up scatter"), ("families", "speed-up by family")):
        if figures.get(name):
            out.append(_img(figures[name], alt))
    shown = c.models[:12] + c.models[-12:] if len(c.models) > 24 else c.models
    rows = [[m.model, str(m.img_size), m.family, f"x{m.speedup:.2f}", f"{m.sensitivity:+.0%}", m.dominant_category or "-",
             m.explanation] for m in shown]
    out.append("<h2>Most and least sensitive models</h2>" if len(c.models) > 24 else "<h2>Models</h2>")
    out.append(_table(["model", "img", "family", "speed-up", "sensitivity", "dominant", "why"], rows,
                      text_columns=(0, 2, 5), explain_column=6))
    profiled = [m for m in c.models if m.shares]
    if profiled:
        # Every profiled model, with what its profile predicts: the explanations and how far they hold.
        agreement = f" {html.escape(c.prediction.sentence())}." if c.prediction else ""
        out.append(f'<h2>Why: the {len(profiled)} profiled models</h2><p class="caption">Time by bound on '
                   f"{html.escape(c.base_name)} from each model's profile, and the speed-up that profile predicts.{agreement}</p>")
        rows = [[m.model, str(m.img_size), f"x{m.speedup:.2f}", f"x{m.predicted_speedup:.2f}" if m.predicted_speedup else "-",
                 f"x{m.predicted_band[0]:.2f} – x{m.predicted_band[1]:.2f}" if m.predicted_band else "-",
                 f"{m.sensitivity:+.0%}", m.dominant_category or "-", m.explanation] for m in profiled]
        out.append(_table(["model", "img", "speed-up", "predicted", "its range", "sensitivity", "dominant", "why"], rows,
                          text_columns=(0, 6), explain_column=7))
    rows = [[a.key, str(a.count), f"x{a.median_speedup:.2f}", f"{a.median_sensitivity:+.0%}",
             f"x{a.min_speedup:.2f} – x{a.max_speedup:.2f}"] for a in c.by_family]
    out.append("<h2>By family</h2>" + _table(["family (timm module)", "models", "median speed-up", "sensitivity", "range"], rows))
    if any(a.key != "(no profile)" for a in c.by_category):
        rows = [[a.key, str(a.count), f"x{a.median_speedup:.2f}", f"{a.median_sensitivity:+.0%}"] for a in c.by_category]
        out.append("<h2>By dominant category</h2>" + _table(["dominant category", "models", "median speed-up", "sensitivity"], rows))
    out.append("</section>")
    return out


def _comparison(loaded, base, target, table, notes, on_progress=None):
    from visprof.analysis.compare import busiest_pair, compare, gpu_keys

    keys = gpu_keys(m for m in loaded.measurements if not m.host_clock)  # compare leaves CPU results out
    named = bool(base or target)  # the user asked for this pair: a pair that fails is their mistake
    if len(keys) < 2 and not named:
        return None
    if len(keys) > 2 and not (base and target):
        pair = busiest_pair(loaded.measurements)
        if pair is None:
            notes.append("no model was measured on two GPUs: no speed-up section")
            return None
        base, target = base or pair[0], target or pair[1]
        notes.append(f"measurements on {len(keys)} GPUs; the speed-up section compares {base} and {target}, "
                     f"the pair with the most models in common (choose with {option('base')}/{option('target')})")
    try:
        comparison = compare(loaded.measurements, base, target, table, on_progress=on_progress)
    except BadInputError as exc:
        if named:
            raise
        notes.append(f"no speed-up section: {exc}")
        return None
    # the notes compare prints (two precisions, two batches, profiles against published rows, other tags, ...);
    # the page had kept three of them. The prediction's agreement is in the Why section's caption.
    if comparison.not_compared:
        notes.append(comparison.not_compared)
    agreement = comparison.prediction.sentence() if comparison.prediction else None
    notes.extend(n for n in comparison.notes if n != agreement)
    return comparison


def _what_was_measured(measurements) -> str:
    """The header's count: "3 measurements of 2 models on 1 GPU(s) (h200)", the CPU results said
    apart as host clock ("... and 1 on the CPU (host clock)"): the CPU is no GPU."""
    gpus = sorted({m.gpu for m in measurements if not m.host_clock})
    on_cpu = sum(m.host_clock for m in measurements)
    where = [f"{len(gpus)} GPU(s) ({', '.join(gpus)})"] if gpus else []
    if on_cpu:
        where.append("the CPU (host clock)" if not gpus else f"{on_cpu} on the CPU (host clock)")
    return (f"{len(measurements)} measurements of {len({m.arch for m in measurements})} models on "
            + " and ".join(where))


def _host_clock_banner(profiles) -> str | None:
    """What the terminal report says of a CPU result, said once at the top: every time below is
    host-clock (all CPU), or which profiles' times are (GPU and CPU mixed)."""
    from visprof.report.table import CPU_BANNER

    on_cpu = sum(m.host_clock for m in profiles)
    if not on_cpu:
        return None
    if on_cpu == len(profiles):
        return CPU_BANNER
    return (f"{on_cpu} of the {len(profiles)} profiles are HOST CLOCK (CPU) MEASUREMENTS, marked \"CPU (host clock)\": "
            "their times are host-clock op durations, not GPU kernel times; the others' are GPU kernel times")


# The figures a report may draw, by name; with ``png_dir`` each is written as NAME.png there.
FIGURES = ("categories", "roofline", "pareto", "speedup", "families")


def render_figures(loaded, comparison, table, on_progress=None) -> dict[str, bytes]:
    """name -> PNG bytes of every figure the inputs allow."""
    from visprof.base.progress import counted
    from visprof.report import figures as F

    drawn = {
        "categories": F.category_bars(loaded.profiles),
        "roofline": F.roofline(loaded.profiles, table),
        "pareto": F.pareto(loaded.measurements),
        "speedup": F.speedup_scatter(comparison) if comparison else None,
        "families": F.family_boxes(comparison) if comparison else None,
    }
    drawn = {name: fig for name, fig in drawn.items() if fig is not None}
    with F.one_glyph_warning():
        return {name: F.png_bytes(drawn[name]) for name in counted(drawn, len(drawn), "figures", on_progress)}


def check_report_outputs(output: str | Path, png_dir: str | Path | None = None, inputs=None) -> None:
    """BadInputError unless the HTML file and every PNG the report may write into ``png_dir``
    can be written, are distinct files, and none of them is one of ``inputs`` (label -> a
    path or paths, as ``check_output_paths`` takes them; a folder holds the files ``load``
    reads from it). Cheap: ``visprof report`` calls it before loading, ``build_report`` again."""
    from visprof.analysis.sources import FOLDER_FILES
    from visprof.base.output_paths import check_output_dir, check_output_paths

    if output is None:  # check_output_paths passes None over as an option not given: the report had been made, then
        # writing it raised a TypeError from pathlib
        raise BadInputError(f"{option('output')}: the report needs a file to be written to, got None")
    pngs = {}
    if png_dir is not None:
        if Path(png_dir).resolve() == Path(output).resolve():  # the report would be written into a folder of its own name
            raise BadInputError(f"{option('output')} and {option('png_dir')} name the same path ({output}): the report "
                                "is a file, the PNGs go into a folder; give each its own")
        png_dir = check_output_dir(png_dir, option("png_dir"))
        if png_dir.is_dir():  # else it is to be made: nothing is in it yet, so no input either
            pngs = {f"{option('png_dir')} {name}": png_dir / f"{name}.png" for name in FIGURES}
    check_output_paths({option("output"): output, **pngs}, inputs=inputs, folder_files=FOLDER_FILES,
                       kinds={option("output"): "html", **{what: "png" for what in pngs}})


def build_report(loaded, output: str | Path, *, png_dir: str | Path | None = None, base: str | None = None,
                 target: str | None = None, title: str = "visprof report", table=None, calibration=None,
                 batch_size: int | None = None, on_progress=None) -> list[Path]:
    """Writes the HTML report and, given ``png_dir``, each figure as a PNG there; returns the
    PNGs written. Every target is checked before any work (none may be one of the files
    ``loaded`` was read from), and the files are written all together or not at all.
    ``calibration`` (``calibration_file.SavedCalibration``): a section of each profile's calibrated
    speed-up over its pair, at ``batch_size`` (else the published batch the calibration keeps).
    ``on_progress`` (e.g. ``visprof.base.progress.Progress.update``) is told how far the comparison
    and the drawing got."""
    from visprof.analysis.gpus import table_or_default
    from visprof.analysis.sources import REPEAT_CONDITIONS, Loaded
    from visprof.base.outputs import atomic_write_all
    from visprof.base.progress import check_callback
    from visprof.report.figures import clock_of
    from visprof.result import visprof_version

    if not isinstance(loaded, Loaded):  # a ProfileResult or a list of paths had raised an AttributeError
        raise BadInputError(f"build_report takes what visprof.analysis.sources.load(paths) returns, got a "
                            f"{type(loaded).__name__}" + (" (sources.load(paths) reads the files)"
                                                          if isinstance(loaded, (str, Path, list, tuple)) else ""))
    if not loaded.measurements:
        raise BadInputError("nothing to report: the inputs hold no measurements")
    check_callback(on_progress)
    check_report_outputs(output, png_dir, {"input": loaded.inputs})
    table = table_or_default(table)
    notes: list[str] = []
    loaded, repeats = loaded.latest_profiles_only()
    if repeats:
        notes.append(f"{repeats} repeated profile(s) of a model under the same conditions ({REPEAT_CONDITIONS}): "
                     "only the latest of each is shown (the latest with categories, where one has them)")
    comparison = _comparison(loaded, base, target, table, notes, on_progress)
    figures = render_figures(loaded, comparison, table, on_progress)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    parts = ["<!DOCTYPE html>", f'<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="{REPORT_GENERATOR}">',
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
             f"<header><h1>{html.escape(title)}</h1><p>{html.escape(_what_was_measured(loaded.measurements))}; "
             f"{len(loaded.profiles)} visprof profiles · made {now} by visprof {html.escape(visprof_version())}</p></header><main>"]
    banner = _host_clock_banner(loaded.profiles)
    if banner:
        parts.append(f'<p class="caption"><b>{html.escape(banner)}</b></p>')
    for note in notes + [f"skipped {s}" for s in loaded.skipped[:10]]:
        parts.append(f'<p class="caption">Note: {html.escape(note)}</p>')
    if loaded.profiles:
        # without a category figure its caption would describe one that is not there
        caption = (WHERE_THE_TIME_GOES[clock_of(loaded.profiles)] if "categories" in figures else
                   "No category breakdown: no profile here ran the attributed pass (profiled with --passes timing, or "
                   "imported without ops); their latency, throughput and peak memory are below.")
        parts.append(f"<section><h2>Where the time goes</h2><p class=\"caption\">{html.escape(caption)}</p>")
        if "categories" in figures:
            parts.append(_img(figures["categories"], "time by category"))
        parts.append(_profiles_table(loaded.profiles) + "</section>")
        parts.append(_what_they_run(loaded.profiles))
    if "roofline" in figures:
        from visprof.report.figures import roofline_gpus

        drawn, left_out = roofline_gpus(loaded.profiles)
        also = (f" One roofline per GPU for the {len(drawn)} with the most profiles ({', '.join(drawn)}); "
                f"not drawn: {', '.join(left_out)}." if left_out else "")
        parts.append("<section><h2>Roofline</h2><p class=\"caption\">Each category of each profile placed by its "
                     "arithmetic intensity (FLOPs over the bytes its ops read and write) and achieved throughput, under "
                     "the GPU's ceilings from its spec row; grey points are op groups. Categories without FLOPs "
                     "(normalization, activations, elementwise, copies) are placed by the bandwidth they reach."
                     f"{html.escape(also)}</p>" + _img(figures["roofline"], "roofline") + "</section>")
    if "pareto" in figures:
        parts.append("<section><h2>Pareto fronts</h2><p class=\"caption\">ImageNet top-1 of timm's pretrained weights "
                     "(where known) against throughput and peak memory; lines join the models no other model beats on "
                     "both axes.</p>" + _img(figures["pareto"], "Pareto fronts") + "</section>")
    if comparison is not None:
        parts += _comparison_section(comparison, figures)
    if calibration is not None and loaded.profiles:
        parts.append(_calibrated_section(calibration, loaded.profiles, table, batch_size))
    parts.append("</main></body></html>")
    pngs = {Path(png_dir) / f"{name}.png": png for name, png in figures.items()} if png_dir is not None else {}
    atomic_write_all({Path(output): "\n".join(parts) + "\n", **pngs}, make_folders=True)
    if png_dir is not None:  # an earlier report's figure this one does not draw had stayed beside the new ones
        for name in FIGURES:
            stale = Path(png_dir) / f"{name}.png"
            # check_report_outputs let only a visprof report's PNG (or an empty file) stand at these names
            if name not in figures and stale.is_file() and stale.stat().st_size:
                stale.unlink()
    return list(pngs)


__all__ = ["FIGURES", "build_report", "check_report_outputs", "render_figures"]
