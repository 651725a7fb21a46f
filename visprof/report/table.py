"""Plain-text terminal report of a ``ProfileResult``.

Sections: header, categories, top modules, timing, ops to add to the taxonomy, self-checks,
warnings. A failed self-check is always printed, with a loud line; CPU results are labelled
as host-clock measurements in the header and in every time column.
"""
from __future__ import annotations

import os
import textwrap

from visprof.base.errors import BadInputError
from visprof.base.options import regime_label
from visprof.result import NSYS_IMPORT, AttributionSummary, CategoryRow, KernelFamilyRow, MemorySummary, ProfileResult, category_totals
from visprof.report.roofline_text import roofline_section
from visprof.report.text_table import format_table

MIB = float(1 << 20)
_ANSI = {"red": "1;31", "green": "32", "yellow": "33"}
# How the report header names where the input size came from (ModelInfo.img_size_origin).
ORIGIN_LABELS = {"test": "test size, as timm's benchmark.py", "train": "training size",
                 "config": "its config's one size, as timm's benchmark.py",
                 "requested": "as requested", "built": "the size the module was built for",
                 "assumed": "assumed: no pretrained config"}
CPU_BANNER = "HOST CLOCK (CPU) MEASUREMENT: times are host-clock op durations, not GPU kernel times"


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, style: str) -> str:
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if self.color else text


def _fmt(value: float | None, spec: str, scale: float = 1.0, empty: str = "-") -> str:
    return empty if value is None else format(value / scale, spec)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _mib(value: int | None) -> str:
    return _fmt(value, ".1f", MIB)


def _category_cells(label: str, row: CategoryRow) -> list[str]:
    return [
        label,
        _fmt(row.time_ms, ".3f"),
        _share(row.share),
        _fmt(row.kernel_count, "g"),
        _fmt(row.flops or None, ".2f", 1e9),
        # below 1 TFLOP/s (the CPU, a tiny op) three decimals, or every row would read 0.0
        _fmt(row.tflops, ".1f" if (row.tflops or 0) >= 1 else ".3f"),
        _mib(row.live_bytes_at_peak),
        _mib(row.transient_peak_bytes),
        _mib(row.reserved_bytes_at_peak),
    ]


def _params(count: int) -> str:
    """A parameter count as people write it: 86.6M, 1.2K (a toy module read "0.0M"), 12."""
    if count >= 1e5:
        return f"{count / 1e6:.1f}M params"
    return f"{count / 1e3:.1f}K params" if count >= 1e3 else f"{count} params"


def _header(result: ProfileResult) -> list[str]:
    m, c = result.model, result.config
    parts = [f"{m.name} ({m.source})"]
    if m.param_count:
        parts.append(_params(m.param_count))
    elif m.param_count is None:  # a frozen TorchScript module's (its warnings say why), or an import's that had none
        parts.append("params unknown")
    if m.batch_size:
        parts.append(f"batch {m.batch_size}")
    if m.img_size:
        h, w = (m.input_shape[-2:] if len(m.input_shape) == 4 else (m.img_size, m.img_size))
        size = f"{h}px" if h == w else f"{h}x{w}px"
        if len(m.input_shape) == 4 and m.input_shape[1] != 3:  # grayscale, RGBD, multispectral: said, as 3 is assumed
            size = f"{m.input_shape[1]}-channel {size}"
        parts.append(f"{size} ({ORIGIN_LABELS[m.img_size_origin]})" if m.img_size_origin in ORIGIN_LABELS else size)
    parts += [regime_label(c), "channels_last" if c.channels_last else "NCHW"]
    if c.compile:
        parts.append("compiled")
    threads = (result.environment or {}).get("cpu_threads")
    parts.append(f"{c.device}, {threads} thread{'' if threads == 1 else 's'}" if c.device == "cpu" and threads else c.device)
    lines = ["visprof profile: " + " · ".join(parts)]
    gpu = (result.gpu or {}).get("name")
    imported = NSYS_IMPORT in result.config.passes
    measured = ("GPU kernel time (Nsight Systems recording, visprof nsys import)" if imported
                else "GPU kernel time (CUPTI)" if result.measurement == "gpu" else "host clock around each op")
    lines.append(f"{'GPU: ' + gpu + ' · ' if gpu else ''}measured: {measured} · {result.created_at} · visprof {result.visprof_version}")
    return lines


def format_categories(
    rows: list[CategoryRow],
    cpu: bool = False,
    width: int | None = None,
    memory: MemorySummary | None = None,
    empty: str = "(no attributed pass: no category breakdown)",
) -> str:
    """The category table alone: a total line per category, then its sub-category lines;
    ``empty`` where there are no rows."""
    if not rows:
        return empty
    # On the CPU path each row is one op timed by the host clock: there are no kernels.
    headers = ["category", "host ms" if cpu else "GPU ms", "share", "ops" if cpu else "kernels", "GFLOP", "TFLOP/s",
               "live MiB@peak", "transient MiB", "reserved MiB@peak"]
    totals = category_totals(rows, memory)
    cells: list[list[str]] = []
    for cat, total in totals.items():
        subs = [r for r in rows if r.category == cat]
        if not subs:  # a category nothing ran in (category_totals lists every one, at zero)
            continue
        if len(subs) == 1 and subs[0].subcategory is None:
            cells.append(_category_cells(cat, subs[0]))
            continue
        cells.append(_category_cells(cat, total))
        cells += [_category_cells(f"  {r.subcategory or '(none)'}", r) for r in subs]
    grand = CategoryRow("total", None, sum(t.time_ms for t in totals.values()), sum(t.share for t in totals.values()),
                        sum(t.kernel_count for t in totals.values()), sum(t.flops for t in totals.values()), None,
                        memory.peak_bytes if memory else None, None, memory.reserved_peak_bytes if memory else None)
    cells.append(_category_cells("total", grand))
    # Columns with no data at all (no memory pass, no FLOP counts) only take width.
    keep = [i for i in range(len(headers)) if i == 0 or any(r[i] != "-" for r in cells)]
    lines = format_table([headers[i] for i in keep], [[r[i] for i in keep] for r in cells], width)
    return "\n".join(lines)


def _categories(result: ProfileResult, width: int | None, cpu: bool) -> list[str]:
    title = "Time by category, per iteration" + (" (host clock)" if cpu else "")
    kwargs = {}
    if result.attribution is not None:  # the pass ran, and its ops took no time: an identity model
        kwargs["empty"] = "(the attributed pass recorded no op that takes time: nothing to break down)"
    return [title, *format_categories(result.categories, cpu, width, result.memory, **kwargs).splitlines()]


def _modules(result: ProfileResult, width: int | None, cpu: bool, top: int | None) -> list[str]:
    modules = result.modules[:top] if top is not None else result.modules
    if not modules:
        return []
    headers = ["module", "class", "host ms" if cpu else "GPU ms", "self ms", "share", "ops" if cpu else "kernels"]
    rows = [[m.path or "(root)", m.cls, _fmt(m.time_ms, ".3f"), _fmt(m.self_time_ms, ".3f"), _share(m.share), _fmt(m.kernel_count, "g")]
            for m in modules]
    return ["", f"Top {len(rows)} modules (time includes children)", *format_table(headers, rows, width)]


# Rows of the op-type and kernel-family tables in the text report (the result keeps them all).
TOP_OP_TYPES = 10


def _op_types(result: ProfileResult, width: int | None, cpu: bool) -> list[str]:
    """The costliest op types and kernel families, as torch.profiler's key_averages() and
    nsys stats' cuda_gpu_kern_sum would list them."""
    lines: list[str] = []
    unit = "host ms" if cpu else "GPU ms"
    if result.op_types:
        rows = [[r.op_type, _key(r.category, r.subcategory), _fmt(r.calls, "g"),
                 _fmt(r.time_ms, ".3f"), _share(r.share), _fmt(r.gflop or None, ".2f"), _fmt(r.mb or None, ".1f")]
                for r in result.op_types[:TOP_OP_TYPES]]
        lines += ["", f"Top {len(rows)} of {len(result.op_types)} op types, per iteration",
                  *format_table(["op type", "category", "calls", unit, "share", "GFLOP", "MB"], rows, width)]
    if result.kernel_families and not cpu:
        rows = [[r.family, _family_category(r), _fmt(r.calls, "g"),
                 _fmt(r.time_ms, ".3f"), _share(r.share), _fmt(r.gflop or None, ".2f"), _fmt(r.mb or None, ".1f"),
                 _fmt(r.blocks, ".0f"), _fmt(r.threads, ".0f")]
                for r in result.kernel_families[:TOP_OP_TYPES]]
        lines += ["", f"Top {len(rows)} of {len(result.kernel_families)} kernel families, per iteration "
                      "(blocks, threads: per launch and per block, the median by time)",
                  *format_table(["kernel family", "category", "calls", unit, "share", "GFLOP", "MB", "blocks",
                                 "threads"], rows, width)]
        lines += _launch_sizes(result)
    return lines


def _key(category: str, subcategory: str | None) -> str:
    return f"{category}/{subcategory}" if subcategory else category


def _family_category(row: KernelFamilyRow) -> str:
    """The family's category; with its share of the family's time where its kernels went to
    several (a shared kernel such as ATen's elementwise one), e.g. ``activation 72%``."""
    key = _key(row.category, row.subcategory)
    if not row.by_category or len(row.by_category) < 2 or not row.time_ms:
        return key
    # at most 99%: the others have time, and "100%" would read as all of it
    return f"{key} {min(round(100 * row.by_category.get(key, 0.0) / row.time_ms), 99)}%"


def _launch_sizes(result: ProfileResult) -> list[str]:
    """One line: how much kernel time ran in launches too small to give every SM a block, and
    in persistent kernels sized to the GPU."""
    under = result.small_launches()
    if under is None:
        return []
    sms = result.sm_count
    largest = max((r.blocks_max for r in under), default=0)
    line = (f"Launch sizes: {_share(sum(r.share for r in under))} of kernel time in launches of at most "
            f"{largest or sms - 1} thread blocks, fewer than this GPU's {sms} SMs")
    per_sm = sum(r.share for r in result.launch_sizes if r.one_per_sm)
    if per_sm:
        line += f"; {_share(per_sm)} in launches of exactly {sms} (persistent kernels, sized to the GPU)"
    return ["", line + " (launch_sizes in the result has them all)"]


def _timing(result: ProfileResult, cpu: bool) -> list[str]:
    lines = [""]
    t = result.timing
    clock = "host clock" if cpu else "CUDA events"
    if t is None:
        lines.append("Timing: no clean timing pass")
    else:
        lat = t.latency_ms
        lines.append(f"Latency ({clock}, clean pass, {t.iterations} iterations): median {lat.median:.3f} ms"
                     f"  p10 {lat.p10:.3f}  p90 {lat.p90:.3f}  mean {lat.mean:.3f}  std {lat.std:.3f}  min {lat.min:.3f}  max {lat.max:.3f}")
        lines.append(f"Throughput: {t.samples_per_s:,.1f} samples/s")
        if t.busy_ms is not None:
            idle = "" if t.idle_ms is None else f";  idle (host/launch-bound) {t.idle_ms:.3f} ms ({_share(t.idle_ms / lat.median if lat.median else None)} of latency)"
            lines.append(f"{'Host' if cpu else 'GPU'} busy {t.busy_ms:.3f} ms/iter{idle}")
        if t.max_memory_allocated_bytes is not None:
            lines.append(f"Peak memory (max_memory_allocated, timing pass): {_mib(t.max_memory_allocated_bytes)} MiB")
    a = result.attribution
    if a is not None:
        if cpu:  # one pseudo-kernel per op on the host clock: no copies, sets or devices
            lines.append(f"Attributed pass ({a.iterations} iterations): op time sum {a.kernel_ms:.3f} ms/iter; "
                         f"{_coverage(a, cpu)}")
        else:
            busy = ", ".join(f"device {d}: {ms:.3f} ms" for d, ms in a.busy_ms.items()) or "-"
            source = "Recording" if NSYS_IMPORT in result.config.passes else "Attributed pass"
            lines.append(f"{source} ({a.iterations} iterations): kernel sum {a.kernel_ms:.3f} ms/iter, memcpy "
                         f"{a.memcpy_ms:.3f}, memset {a.memset_ms:.3f}; busy {busy}; {_coverage(a, cpu)}")
    if result.memory is not None:
        lines.append(_memory_line(result.memory))
    elif cpu:
        lines.append("Memory: not measured (the memory pass needs a GPU; host memory is not profiled)")
    elif "memory" not in result.config.passes:
        lines.append("Memory: not measured (the memory pass was not run)")
    if result.passes:
        walls = ", ".join(f"{name} {info.wall_s:.2f} s" for name, info in result.passes.items())
        total = f"; whole profile {result.wall_s:.2f} s" if result.wall_s is not None else ""
        lines.append(f"Wall time: {walls}{total}")
    return lines


def _coverage(a: AttributionSummary, cpu: bool) -> str:
    # None: the pass recorded no time (an identity model); "coverage 0.0%" read as every op missed.
    if a.coverage is None:
        return f"coverage: nothing to attribute (no {'op' if cpu else 'kernel, copy or set'} took time)"
    return f"coverage {_share(a.coverage)}"


def _memory_line(mem: MemorySummary) -> str:
    line = f"Memory pass: peak held by tensors {_mib(mem.peak_bytes)} MiB"
    allocated = mem.torch_peaks.get("max_memory_allocated")
    if allocated:
        line += f" (torch.cuda.max_memory_allocated {_mib(allocated)} MiB)"
    if mem.reserved_peak_bytes is not None:
        line += f"; reserved {_mib(mem.reserved_peak_bytes)} MiB"
    if mem.baseline_bytes is not None:
        line += f"; {_mib(mem.baseline_bytes)} MiB held before the forwards"
    return line + f"; {mem.alloc_count} allocations ({mem.method or 'allocation hooks'})"


def _taxonomy_gaps(result: ProfileResult, cpu: bool) -> list[str]:
    a = result.attribution
    if a is None:
        return []
    lines = []
    if a.other_ops:
        lines += ["", "Ops in 'other' (no rule matched; extend the taxonomy, see docs/taxonomy.md):"]
        unit = "calls" if cpu else "kernels"
        lines += [f"  {o.name}: {o.time_ms:.3f} ms, {o.count:g} {unit}" for o in a.other_ops]
    if a.unattributed_kernels and a.coverage is not None:  # rows of no time are no share of nothing
        lines += ["", f"Unattributed kernels (no op, no kernel rule): {a.unattributed_ms:.3f} ms/iter, {_share(1 - a.coverage)} of activity:"]
        lines += [f"  {k.name}: {k.time_ms:.3f} ms, {k.count:g}x" for k in a.unattributed_kernels]
    return lines


def _checks(result: ProfileResult, style: _Style) -> list[str]:
    lines = ["", "Self-checks"]
    if not result.checks and result.attribution is not None and result.attribution.coverage is None:
        return lines + ["  none: the attributed pass recorded no op that takes time, so there was nothing to cross-check"]
    if not result.checks:
        return lines + [style("  none recorded: these numbers were not cross-checked", "yellow")]
    for c in result.checks:
        status = style("PASS", "green") if c.passed else style("FAIL", "red")
        unit = f" {c.unit}" if c.unit else ""
        line = f"  {status}  {c.name}: {_fmt(c.value, '.4g')}{unit} vs reference {_fmt(c.reference, '.4g')}{unit} (tolerance ±{c.tolerance * 100:.3g}%)"
        lines.append(line + (f"  [{c.detail}]" if c.detail else ""))
    failed = result.failed_checks
    if failed:
        names = ", ".join(c.name for c in failed)
        lines.append(style(f"!!! {len(failed)} of {len(result.checks)} SELF-CHECKS FAILED ({names}): the numbers above may be wrong !!!", "red"))
    return lines


def _wrap(lines: list[str], width: int | None) -> list[str]:
    """Wrap prose lines to ``width`` (tables are fitted by format_table instead)."""
    if width is None:
        return lines
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()))
        out += textwrap.wrap(line, width, subsequent_indent=indent + "    ", break_on_hyphens=False) or [""]
    return out


def render(result: ProfileResult, width: int | None = None, color: bool = False, top_modules: int | None = None) -> str:
    """The result as a plain-text report (ANSI colours only with ``color=True``).

    ``width`` fits tables (by shortening names) and wraps prose; None leaves lines as long
    as they need to be. ``top_modules`` shows at most that many of the result's modules.
    ``result`` may also be the path of a result saved as JSON (`visprof profile --json FILE`).
    """
    if isinstance(result, (str, os.PathLike)):
        result = ProfileResult.load(result)
    elif not isinstance(result, ProfileResult):
        raise BadInputError(f"the report is of a ProfileResult or the path of one saved as JSON, got a "
                            f"{type(result).__name__}")
    style = _Style(color)
    cpu = result.measurement != "gpu"
    lines = _header(result)
    if cpu:
        lines.append(style(f"*** {CPU_BANNER} ***", "yellow"))
    lines = _wrap(lines, width) + [""]
    lines += _categories(result, width, cpu)
    lines += roofline_section(result, width)
    lines += _modules(result, width, cpu, top_modules)
    lines += _op_types(result, width, cpu)
    prose = _timing(result, cpu) + _taxonomy_gaps(result, cpu) + _checks(result, style)
    if result.notes:
        prose += ["", "Notes", *(f"  * {n}" for n in result.notes)]
    if result.warnings:
        prose += ["", "Warnings", *(style(f"  ! {w}", "yellow") for w in result.warnings)]
    return "\n".join(lines + _wrap(prose, width)) + "\n"
