"""The report's pictures, drawn with matplotlib's object API (no pyplot: no global state, no
display needed, safe in a notebook). matplotlib is imported when a figure is drawn.

Each function takes analysis objects (measurements, a comparison) and returns a
``matplotlib.figure.Figure``, or None when the inputs hold nothing to draw;
``png_bytes(fig)`` renders one.
"""
from __future__ import annotations

import io
import math
import re
import warnings
from collections import Counter, defaultdict
from contextlib import contextmanager
from typing import Iterator, Sequence

from visprof.base.errors import VisprofWarning
from visprof.base.output_paths import REPORT_GENERATOR

BOUND_COLORS = {"tensor": "#D1495B", "compute": "#EDAE49", "memory": "#00798C", "unknown": "#B8B8B8", "launch": "#30343F"}
BOUND_NAMES = {"tensor": "tensor-core", "compute": "other compute", "memory": "memory bandwidth", "unknown": "unknown",
               "launch": "launch/host (idle)"}
NO_PROFILE = "#9A9A9A"
GPU_COLORS = ["#1F77B4", "#D62728", "#2CA02C", "#9467BD", "#FF7F0E", "#8C564B"]
MAX_BARS = 60


def require_matplotlib() -> None:
    """Raises the one-line error a report without matplotlib ends in (callers check first,
    before loading their inputs)."""
    import importlib

    from visprof.base.errors import VisprofError

    try:  # imported, not only looked up: an installed matplotlib can fail to import (a NumPy it was not built for)
        importlib.import_module("matplotlib.figure")
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "matplotlib":
            raise VisprofError("the report's figures need matplotlib: pip install 'visprof[report]'") from None
        why = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise VisprofError(f"the report's figures need matplotlib, which cannot be imported here: {why}") from None


def _figure(width: float, height: float):
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    fig.patch.set_facecolor("white")
    return fig


def png_bytes(fig) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    out = io.BytesIO()
    # the PNG's text names the report, so that a later report replaces it and no image of the user's
    fig.savefig(out, format="png", facecolor="white", metadata={"Software": REPORT_GENERATOR})
    return out.getvalue()


# matplotlib's warning for a character its font lacks: "Glyph 12514 (\N{KATAKANA LETTER MO}) missing from font(s) ..."
_MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from (current )?font")


@contextmanager
def one_glyph_warning() -> Iterator[None]:
    """matplotlib warns once per character its font lacks, per figure drawn: a model named in CJK gave a line
    per character, under -q too. Inside this, those become one VisprofWarning; other warnings pass as they were."""
    missing: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        found = _MISSING_GLYPH.match(str(w.message))
        if found:
            missing.add(chr(int(found.group(1))))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if missing:
        shown = "".join(sorted(missing)[:5])
        warnings.warn(f"the figures' font lacks {len(missing)} character(s) of their labels (e.g. {shown!r}): the PNGs "
                      "draw them as empty boxes; the report's tables show them", VisprofWarning, stacklevel=3)


def _categories():
    from visprof.attribution.categories import default_table

    table = default_table()
    return table, [*table.categories, "unattributed"]


def _style(ax, grid_axis: str = "both") -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(True, axis=grid_axis, color="#E5E5E5", linewidth=0.8)
    ax.set_axisbelow(True)


def _log_scale(ax, axis: str, values) -> str:
    """A log scale for ``axis`` ("x" or "y") where ``values`` span a decade or more, else linear:
    over a narrower span a log axis labels its minor ticks (6.955x10^2, 6.96x10^2, ...) on top of
    each other. Returns the suffix for the axis label: ", log" or ""."""
    values = [v for v in values if v and v > 0]
    if not values or max(values) / min(values) < 10:
        return ""
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    return ", log"


def clock_of(profiles: Sequence) -> str:
    """Whose clock the profiles' times are: "gpu" (kernel times), "cpu" (host-clock op times, a CPU
    result's) or "mixed". Reports word their time by it: a CPU result's is no GPU kernel time."""
    host = {m.host_clock for m in profiles}
    return "mixed" if len(host) > 1 else "cpu" if True in host else "gpu"


# The category figure's axes, by clock_of.
TIME_AXIS = {"gpu": "GPU kernel {unit} per image", "cpu": "host {unit} per image",
             "mixed": "{unit} per image (GPU kernel; CPU: host clock)"}
# Time per image in µs up to this longest bar, else in ms: a CPU's host-clock times (0.5-1.3 s an
# image at batch 2) had an axis of "1e6" µs.
MS_FROM_US = 10_000
SHARE_AXIS = {"gpu": "share of kernel time (%)", "cpu": "share of host time (%)", "mixed": "share of its time (%)"}


def device_label(m) -> str:
    """Where a measurement ran, as reports name it: its GPU, or the CPU with its clock said."""
    return "CPU (host clock)" if m.host_clock else m.gpu_id or m.gpu_name.replace("NVIDIA ", "")


def bar_labels(profiles: Sequence) -> list[str]:
    """One label per profile that tells it from the others: model, image size, device, batch and
    precision (a model profiled at three sizes had three bars of one label), and its grad mode where two
    would still read alike."""
    labels = [f"{m.model} @{m.img_label} · {device_label(m)} · b{m.batch_size} · {m.precision}" for m in profiles]
    count = Counter(labels)
    return [f"{label} · {m.result.config.grad_mode}" if count[label] > 1 else label for m, label in zip(profiles, labels)]


def category_bars(profiles: Sequence, max_bars: int = MAX_BARS):
    """Per profile: GPU kernel (a CPU result's: host-clock) time per image by category, the same as
    shares, and time by bound."""
    profiles = [m for m in profiles if m.result is not None and m.result.categories]
    if not profiles:
        return None
    table, order = _categories()
    totals = []
    for m in profiles:
        cats = m.result.category_totals()
        batch = m.batch_size or 1
        total = sum(r.time_ms for r in cats.values())
        if total <= 0:
            continue
        totals.append((m, {c: cats[c].time_ms for c in cats}, total, batch))
    if not totals:
        return None
    note = ""
    if len(totals) > max_bars:
        totals.sort(key=lambda t: -t[2] / t[3])
        note = f" (the {max_bars} slowest per image of {len(totals)})"
        totals = totals[:max_bars]
    # Most GEMM-heavy (attention + linear) at the top.
    totals.sort(key=lambda t: (t[1].get("attention", 0) + t[1].get("linear", 0)) / t[2])
    has_bounds = any(m.result.roofline and m.result.roofline.shares for m, *_ in totals)
    panels = 3 if has_bounds else 2
    fig = _figure(5.0 * panels + (1.6 if has_bounds else 0), max(3.0, 1.4 + 0.3 * len(totals)))
    axes = fig.subplots(1, panels, sharey=True, width_ratios=[1.25, 1, 1][:panels])
    y = list(range(len(totals)))
    clock = clock_of([m for m, *_ in totals])
    longest_us = max(sum(by_cat.values()) / batch * 1e3 for _, by_cat, _, batch in totals)
    unit, per_ms = ("ms", 1.0) if longest_us > MS_FROM_US else ("µs", 1e3)
    for panel, ax in enumerate(axes[:2]):
        left = [0.0] * len(totals)
        for cat in order:
            values = []
            for m, by_cat, total, batch in totals:
                ms = by_cat.get(cat, 0.0)
                values.append(ms / batch * per_ms if panel == 0 else ms / total * 100)
            if not any(values):
                continue
            color = table.category(cat).color
            ax.barh(y, values, left=left, color=color, edgecolor="white", linewidth=0.4,
                    label=table.category(cat).label)
            left = [a + b for a, b in zip(left, values)]
        _style(ax, "x")
        if panel == 0:
            _clip_outliers(ax, y, left)
    axes[0].set_yticks(y, bar_labels([m for m, *_ in totals]), fontsize=8)
    axes[0].set_xlabel(TIME_AXIS[clock].format(unit=unit))
    axes[1].set_xlabel(SHARE_AXIS[clock])
    axes[1].set_xlim(0, 100)
    axes[0].set_title("Time by category" + note, loc="left", fontsize=10)
    axes[1].set_title("Share by category", loc="left", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 9), fontsize=8, frameon=False)
    if has_bounds:
        ax = axes[2]
        left = [0.0] * len(totals)
        for bound in ("tensor", "compute", "memory", "unknown", "launch"):
            values = [((m.result.roofline.shares or {}).get(bound, 0.0) * 100 if m.result.roofline else 0.0)
                      for m, *_ in totals]
            if not any(values):
                continue
            ax.barh(y, values, left=left, color=BOUND_COLORS[bound], edgecolor="white", linewidth=0.4,
                    label=BOUND_NAMES[bound])
            left = [a + b for a, b in zip(left, values)]
        for row, (m, *_) in zip(y, totals):
            if not (m.result.roofline and m.result.roofline.shares):  # say why the row is blank
                ax.text(2, row, "no roofline in this result", va="center", fontsize=7, color="#666666")
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of latency (%)")
        ax.set_title("Time by roofline bound", loc="left", fontsize=10)
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize=8, frameon=False,
                   title="bound", title_fontsize=8)
        _style(ax, "x")
    return fig


def _clip_outliers(ax, y: list[int], lengths: list[float]) -> None:
    """A few models far slower than the rest (SAM at 1024 px next to ResNets) would flatten
    every other bar: the axis stops a little past the longest bar that is not one of them, and
    the longer ones carry their length as text. The cut is at the largest step between
    neighbouring lengths among the longest tenth of the bars (at least the longest), and only
    where the longest is 2.5x or more the longest kept."""
    ordered = sorted(lengths, reverse=True)
    most = max(1, len(ordered) // 10)
    if len(ordered) <= most or ordered[most] <= 0:
        return
    cut = max(range(1, most + 1), key=lambda k: ordered[k - 1] / ordered[k])
    if ordered[0] < 2.5 * ordered[cut]:
        return
    limit = 1.3 * ordered[cut]
    ax.set_xlim(0, limit)
    for row, length in zip(y, lengths):
        if length > limit:
            ax.text(limit * 0.98, row, f"{length:,.0f} ▸", ha="right", va="center", fontsize=7, color="white",
                    fontweight="bold")


def _front(points: list[tuple[float, float, str]], higher_x: bool) -> list[tuple[float, float, str]]:
    """Pareto front, maximizing y and (higher_x) maximizing or (else) minimizing x."""
    ordered = sorted(points, key=lambda p: (-p[0], -p[1]) if higher_x else (p[0], -p[1]))
    front, best = [], -math.inf
    for p in ordered:
        if p[1] > best:
            front.append(p)
            best = p[1]
    return sorted(front, key=lambda p: p[0])


def peak_memory(m) -> float | None:
    return m.result.peak_allocated_bytes() if m.result is not None else None


def pareto(measurements: Sequence):
    """Accuracy against throughput (every GPU), accuracy and throughput against peak memory
    (profiles), each with its Pareto front."""
    from visprof.analysis.accuracy import top1

    with_acc = [(m, top1(m.model, m.img_size)) for m in measurements if m.samples_per_s]
    with_acc = [(m, a) for m, a in with_acc if a is not None]
    profiled = [(m, peak_memory(m)) for m in measurements if m.result is not None and m.samples_per_s]
    profiled = [(m, mem) for m, mem in profiled if mem]
    panels = []
    if with_acc:
        panels.append("acc_thr")
    if any(top1(m.model, m.img_size) is not None for m, _ in profiled):
        panels.append("acc_mem")
    if profiled:
        panels.append("thr_mem")
    if not panels:
        return None
    fig = _figure(5.6 * len(panels), 5.0)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels):
        _style(ax)
        if panel == "acc_thr":
            by_gpu: dict[str, list] = defaultdict(list)
            for m, acc in with_acc:  # a CPU result is its own series, named as the tables name it
                by_gpu["CPU (host clock)" if m.host_clock else m.gpu].append((m.samples_per_s, acc, m.model))
            for i, (gpu, points) in enumerate(by_gpu.items()):
                color = GPU_COLORS[i % len(GPU_COLORS)]
                xs, ys, _ = zip(*points)
                ax.scatter(xs, ys, s=9, color=color, alpha=0.35, linewidths=0)
                front = _front(points, higher_x=True)
                ax.plot([p[0] for p in front], [p[1] for p in front], "-o", color=color, markersize=3.5,
                        linewidth=1.4, label=f"{gpu} (front of {len(points)})")
                if i == 0:
                    for x, y, name in front[-10:]:
                        ax.annotate(name, (x, y), fontsize=6.5, xytext=(3, 2), textcoords="offset points", color="#333333")
            ax.set_xlabel(f"throughput (images/s{_log_scale(ax, 'x', [m.samples_per_s for m, _ in with_acc])})")
            ax.set_ylabel("ImageNet top-1 (%)")
            ax.set_title("Accuracy vs throughput", loc="left", fontsize=10)
            ax.legend(fontsize=8, frameon=False, loc="lower left")
            _clip_accuracy(ax, [a for _, a in with_acc])
        else:
            from matplotlib.lines import Line2D

            from visprof.analysis.roofline import dominant_category

            table, _ = _categories()
            points, colors, dominant = [], [], []
            for m, mem in profiled:
                y = top1(m.model, m.img_size) if panel == "acc_mem" else m.samples_per_s
                if y is None:
                    continue
                points.append((mem / 2**20, y, m.model))
                cat = dominant_category(m.result)
                dominant.append(cat)
                colors.append(table.category(cat).color if cat else NO_PROFILE)
            xs, ys, _ = zip(*points)
            ax.scatter(xs, ys, s=22, c=colors, edgecolors="#444444", linewidths=0.4, zorder=3)
            # the colours' key: a PNG of the figure (--png-dir) is read without the page around it
            ax.legend(handles=[Line2D([], [], marker="o", linestyle="", markersize=5, markerfacecolor=
                                      table.category(cat).color if cat else NO_PROFILE, markeredgecolor="#444444",
                                      label=table.category(cat).label if cat else "no category")
                               for cat in dict.fromkeys(dominant)], fontsize=7, frameon=False, loc="lower right")
            front = _front(points, higher_x=False)
            ax.plot([p[0] for p in front], [p[1] for p in front], "-", color="#444444", linewidth=1.2, zorder=2)
            for x, y, name in front[:12]:
                ax.annotate(name, (x, y), fontsize=6.5, xytext=(3, 2), textcoords="offset points", color="#333333")
            ax.set_xlabel(f"peak memory (MiB{_log_scale(ax, 'x', xs)})")
            if panel == "acc_mem":
                ax.set_ylabel("ImageNet top-1 (%)")
                ax.set_title("Accuracy vs peak memory (colour: dominant category)", loc="left", fontsize=10)
                _clip_accuracy(ax, ys)
            else:
                ax.set_ylabel(f"throughput (images/s{_log_scale(ax, 'y', ys)})")
                ax.set_title("Throughput vs peak memory (colour: dominant category)", loc="left", fontsize=10)
    return fig


def _clip_accuracy(ax, values) -> None:
    """Accuracy axes from a little under the 5th percentile: a few weak models would squash the rest."""
    values = sorted(values)
    if len(values) >= 20:
        low = values[len(values) // 20]
        ax.set_ylim(low - 2, max(values) + 0.7)


def _bound_curve(tensor_ratio: float, bandwidth_ratio: float):
    xs = [i / 100 for i in range(101)]
    return xs, [1 / (f / tensor_ratio + (1 - f) / bandwidth_ratio) for f in xs]


def _predicted_panel(ax, models, color, agreement) -> None:
    from visprof.analysis.comparison import EXPLAINED_WITHIN

    xs, ys = [m.predicted_speedup for m in models], [m.speedup for m in models]
    low, high = min(xs + ys) * 0.97, max(xs + ys) * 1.03
    line = [low, high]
    ax.fill_between(line, [v / (1 + EXPLAINED_WITHIN) for v in line], [v * (1 + EXPLAINED_WITHIN) for v in line],
                    color="#DDDDDD", alpha=0.6, linewidth=0, label=f"within {EXPLAINED_WITHIN:.0%}")
    ax.plot(line, line, color="#555555", linewidth=1)
    from visprof.analysis.comparison import is_decided

    # Filled: models the spec ratios decide (their band is narrow). Hollow, with the band as a
    # bar: models whose prediction moves by more than EXPLAINED_WITHIN as the kernels far below
    # their roof gain nothing, the clock or SMs x clock.
    open_ = [m for m in models if m.predicted_band and not is_decided(m.predicted_band)]
    filled = [m for m in models if not m.predicted_band or is_decided(m.predicted_band)]
    if open_:
        # the band is the range over the off-roof scalings and the prediction one of them, made by
        # another route: it can sit a rounding error outside, which matplotlib refuses as a bar
        ax.errorbar([m.predicted_speedup for m in open_], [m.speedup for m in open_],
                    xerr=[[max(0.0, m.predicted_speedup - m.predicted_band[0]) for m in open_],
                          [max(0.0, m.predicted_band[1] - m.predicted_speedup) for m in open_]],
                    fmt="none", ecolor="#B5B5B5", elinewidth=0.7, alpha=0.6, zorder=2)
        ax.scatter([m.predicted_speedup for m in open_], [m.speedup for m in open_], s=30, facecolors="white",
                   edgecolors=[color(m) for m in open_], linewidths=1.1, zorder=3,
                   label="hollow: the off-roof scaling moves it more (bar: its range)")
    ax.scatter([m.predicted_speedup for m in filled], [m.speedup for m in filled], s=34, c=[color(m) for m in filled],
               edgecolors="#333333", linewidths=0.5, zorder=4)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("speed-up predicted from the model's profile")
    ax.set_ylabel("speed-up measured")
    summary = (f" (Spearman {agreement.spearman:.2f}, median error {agreement.median_abs_error:.1%})"
               if agreement else "")
    if agreement and agreement.decided_spearman is not None:
        summary += (f"\n{agreement.decided} with a range within ±{EXPLAINED_WITHIN:.0%}: "
                    f"Spearman {agreement.decided_spearman:.2f}")
    ax.set_title(f"Measured vs predicted{summary}", loc="left", fontsize=10)


def speedup_scatter(comparison):
    """Speed-up against MACs per activation (every model timm counted), and against the
    share of base-GPU time that is tensor-core bound (profiled models), coloured by dominant
    category; the second with the speed-up a pure two-bound model predicts from the specs; the
    third, the measured speed-up against the one each profile predicts (within 10%: a band)."""
    models = comparison.models
    if not models:
        return None
    table, _ = _categories()
    profiled = [m for m in models if m.shares]
    counted = [m for m in models if m.intensity is not None]
    predicted = [m for m in profiled if m.predicted_speedup]
    panels = (["intensity"] if counted else []) + (["tensor"] if profiled else []) + (["predicted"] if predicted else [])
    if not panels:
        panels = ["rank"]
    fig = _figure(6.0 * len(panels), 4.8)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    median = comparison.median_speedup
    title = f"{comparison.base_name} → {comparison.target_name}"

    def color(m):
        return table.category(m.dominant_category).color if m.dominant_category else NO_PROFILE

    for ax, panel in zip(axes, panels):
        _style(ax)
        if panel == "predicted":
            _predicted_panel(ax, predicted, color, comparison.prediction)
            continue
        ax.axhline(median, color="#555555", linestyle="--", linewidth=1, label=f"median x{median:.2f}")
        if panel == "intensity":
            grey = [m for m in counted if not m.dominant_category]
            colored = [m for m in counted if m.dominant_category]
            ax.scatter([m.intensity for m in grey], [m.speedup for m in grey], s=8, color=NO_PROFILE, alpha=0.45,
                       linewidths=0, label=f"not profiled ({len(grey)})")
            ax.scatter([m.intensity for m in colored], [m.speedup for m in colored], s=28, c=[color(m) for m in colored],
                       edgecolors="#333333", linewidths=0.5, zorder=3)
            ax.set_xlabel(f"MACs per activation (timm's counts{_log_scale(ax, 'x', [m.intensity for m in counted])})")
            ax.set_title(f"Speed-up {title} vs arithmetic intensity", loc="left", fontsize=10)
        elif panel == "tensor":
            xs = [m.shares.get("tensor", 0.0) for m in profiled]
            ax.scatter(xs, [m.speedup for m in profiled], s=34, c=[color(m) for m in profiled], edgecolors="#333333",
                       linewidths=0.5, zorder=3)
            for m, x in zip(profiled, xs):
                if len(profiled) <= 25:
                    ax.annotate(m.model, (x, m.speedup), fontsize=6.5, xytext=(3, 2), textcoords="offset points")
            b, t = comparison.base_spec, comparison.target_spec
            if b and t and b.tensor_peak("fp16") and t.tensor_peak("fp16"):
                tr = t.tensor_peak("fp16") / b.tensor_peak("fp16")
                br = t.memory_bandwidth_gbs / b.memory_bandwidth_gbs
                cx, cy = _bound_curve(tr, br)
                ax.plot(cx, cy, color="#D1495B", linewidth=1.2, alpha=0.8,
                        label=f"tensor-or-bandwidth model (x{tr:.2f} / x{br:.2f})")
            ax.set_xlim(-0.02, 1.02)
            ax.set_xlabel(f"share of {comparison.base_name} time that is tensor-core bound")
            ax.set_title(f"Speed-up {title} vs tensor-core share", loc="left", fontsize=10)
        else:
            ordered = sorted(models, key=lambda m: m.speedup)
            ax.scatter(range(len(ordered)), [m.speedup for m in ordered], s=10, c=[color(m) for m in ordered])
            ax.set_xlabel("models, by speed-up")
        ax.set_ylabel(f"speed-up (throughput {comparison.target_name} / {comparison.base_name})")
    present = sorted({m.dominant_category for m in models if m.dominant_category}, key=lambda c: list(table.categories).index(c)
                     if c in table.categories else 99)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", color=table.category(c).color, markeredgecolor="#333333",
                      label=table.category(c).label) for c in present]
    h0, l0 = axes[0].get_legend_handles_labels()
    # the median line once (every speed-up panel has one), then what else the other panels drew
    later = [pair for ax in axes[1:] for pair in zip(*ax.get_legend_handles_labels()) if not pair[1].startswith("median")]
    extra, extra_labels = [h for h, _ in later], [label for _, label in later]
    fig.legend(h0 + extra + handles, l0 + extra_labels + [f"dominant: {h.get_label()}" for h in handles],
               loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    return fig


def family_boxes(comparison, max_families: int = 18):
    """Speed-up distribution of the largest families, sorted by median."""
    groups: dict[str, list[float]] = defaultdict(list)
    for m in comparison.models:
        groups[m.family].append(m.speedup)
    big = sorted(groups, key=lambda f: -len(groups[f]))[:max_families]
    big = [f for f in big if len(groups[f]) >= 3]
    if len(big) < 2:
        return None
    import statistics

    big.sort(key=lambda f: statistics.median(groups[f]))
    fig = _figure(11, 0.9 + 0.32 * len(big))
    ax = fig.subplots()
    import matplotlib

    # matplotlib 3.10 renamed vert=False to orientation="horizontal" (vert warns from 3.11)
    horizontal = {"orientation": "horizontal"} if tuple(map(int, matplotlib.__version__.split(".")[:2])) >= (3, 10) else {"vert": False}
    ax.boxplot([groups[f] for f in big], **horizontal, widths=0.6, patch_artist=True,
               boxprops={"facecolor": "#CFE3EA", "edgecolor": "#4A6A78"}, medianprops={"color": "#D1495B"},
               flierprops={"markersize": 2.5, "markeredgecolor": "#777777"})
    ax.set_yticks(range(1, len(big) + 1), [f"{f} ({len(groups[f])})" for f in big], fontsize=8)
    ax.axvline(comparison.median_speedup, color="#555555", linestyle="--", linewidth=1)
    ax.set_xlabel(f"speed-up {comparison.base_name} → {comparison.target_name}")
    ax.set_title("Speed-up by family (timm module; the largest families)", loc="left", fontsize=10)
    _style(ax, "x")
    return fig


# Rooflines drawn at most, one row each: the GPUs with the most profiles (roofline_gpus)
MAX_ROOFLINES = 3


def _profiles_by_roofline_gpu(profiles: Sequence) -> dict[str, list]:
    by_gpu: dict[str, list] = defaultdict(list)
    for m in profiles:
        r = m.result
        if r is not None and r.roofline is not None and r.roofline.gpu and r.roofline.categories:
            by_gpu[r.roofline.gpu].append(m)
    return by_gpu


def roofline_gpus(profiles: Sequence) -> tuple[list[str], list[str]]:
    """(the GPUs the roofline figure draws, those it leaves out): the MAX_ROOFLINES with the most
    profiles, first seen among equals; a fourth GPU had been left out without a word."""
    by_gpu = _profiles_by_roofline_gpu(profiles)
    ranked = sorted(by_gpu, key=lambda gpu: -len(by_gpu[gpu]))  # stable: first seen among equals
    return ranked[:MAX_ROOFLINES], ranked[MAX_ROOFLINES:]


def roofline(profiles: Sequence, table_specs) -> object | None:
    """One roofline per GPU (roofline_gpus): its ceilings, each profile's categories (size: time share)
    and op groups (small grey points); beside it, achieved bandwidth of the FLOP-less categories."""
    by_gpu = _profiles_by_roofline_gpu(profiles)
    if not by_gpu:
        return None
    gpus, _ = roofline_gpus(profiles)
    cat_table, order = _categories()
    fig = _figure(11.5, 4.8 * len(gpus))
    grid = fig.subplots(len(gpus), 2, squeeze=False, width_ratios=[1.6, 1])
    for row, gpu in enumerate(gpus):
        spec = table_specs.find(gpu)
        ax, bx = grid[row]
        ms = by_gpu[gpu]
        ceilings = ms[0].result.roofline.ceilings
        bw = ceilings.get("bandwidth_gbs") or (spec.memory_bandwidth_gbs if spec else 1.0)
        tensor = ceilings.get("tensor_tflops") or 0
        fp32 = ceilings.get("fp32_tflops") or 0
        xs_all, ys_all = [], []
        for m in ms:
            for g in m.result.roofline.groups:
                if g.flops > 0 and g.bytes > 0 and g.time_ms > g.helper_ms:
                    xs_all.append(g.flops / g.bytes)
                    ys_all.append(g.flops * g.count / ((g.time_ms - g.helper_ms) * 1e9))
        if xs_all:
            ax.scatter(xs_all, ys_all, s=6, color="#BBBBBB", alpha=0.6, linewidths=0, label="op groups", zorder=2)
        lo = min(xs_all + [1.0]) / 3
        hi = max(xs_all + [2000.0]) * 3
        xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        if tensor:
            ax.plot(xs, [min(tensor, x * bw / 1e3) for x in xs], color="#D1495B", linewidth=1.6,
                    label=f"tensor {tensor:g} TFLOP/s")
        if fp32:
            ax.plot(xs, [min(fp32, x * bw / 1e3) for x in xs], color="#EDAE49", linewidth=1.4, linestyle="--",
                    label=f"FP32 {fp32:g} TFLOP/s")
        total_by_model = {id(m): sum(p.time_ms for p in m.result.roofline.categories) or 1.0 for m in ms}
        # Hundreds of profiles at full size cover the plot; smaller, see-through markers show where they crowd.
        crowd = 1.0 if len(ms) <= 20 else 0.25
        # One scatter of every marker, in the order they were drawn one by one (the same overlaps):
        # a call per marker took 16 s for 2,808 profiles' 4,482 categories.
        points = [(m, p) for m in ms for p in m.result.roofline.categories if p.intensity and p.tflops]
        areas = [(30 + 500 * p.time_ms / total_by_model[id(m)]) * crowd for m, p in points]  # points squared
        if points:
            ax.scatter([p.intensity for _, p in points], [p.tflops for _, p in points], s=areas,
                       color=[cat_table.category(p.category).color for _, p in points], edgecolors="#222222",
                       linewidths=0.6 * crowd, alpha=0.85 if crowd == 1 else 0.5, zorder=4)
        if len(ms) <= 4:
            for (m, p), area in zip(points, areas):
                # Beside the marker, whatever its size: a fixed offset put large markers over their label.
                ax.annotate(f"{p.category}\n{m.model}" if len(ms) > 1 else p.category, (p.intensity, p.tflops),
                            fontsize=6.5, xytext=(math.sqrt(area / math.pi) + 2, 0), textcoords="offset points",
                            va="center", zorder=5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xlabel("arithmetic intensity (FLOP per byte, log)")
        ax.set_ylabel("achieved TFLOP/s (log)")
        name = spec.name if spec else gpu
        ax.set_title(f"Roofline on {name}, {bw:g} GB/s: categories (size: share of time)", loc="left", fontsize=10)
        ax.legend(fontsize=7.5, frameon=False, loc="lower right")
        _style(ax)
        # Bandwidth achieved by categories without FLOPs (median over the profiles).
        gbps: dict[str, list[float]] = defaultdict(list)
        time_in: dict[str, float] = defaultdict(float)
        for m in ms:
            for p in m.result.roofline.categories:
                if p.gbps and not p.flops:
                    gbps[p.category].append(p.gbps)
                    time_in[p.category] += p.time_ms
        cats = [c for c in order if c in gbps]
        if cats:
            import statistics

            values = [statistics.median(gbps[c]) for c in cats]
            bx.barh(range(len(cats)), values, color=[cat_table.category(c).color for c in cats], edgecolor="#333333",
                    linewidth=0.5)
            # Each bar's share of all the profiles' time: a median of two tiny ops can stand out otherwise.
            all_time = sum(total_by_model.values())
            bx.set_yticks(range(len(cats)), [f"{c}\n{time_in[c] / all_time:.1%} of time" for c in cats], fontsize=8)
            bx.axvline(bw, color="#00798C", linewidth=1.5)
            # The bytes are the tensors' sizes, not DRAM traffic: what L2 serves can pass the peak.
            bx.set_xlabel("bytes of the tensors / time, GB/s (median over profiles)")
            bx.invert_yaxis()
        bx.set_title(f"Categories without FLOPs: bandwidth\n(line: DRAM peak, {bw:g} GB/s)", loc="left", fontsize=10)
        _style(bx, "x")
    return fig


__all__ = ["category_bars", "family_boxes", "pareto", "png_bytes", "roofline", "roofline_gpus", "speedup_scatter"]
