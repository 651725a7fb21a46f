"""Two profiles side by side: what changed, per category, op type and kernel family.

    visprof diff before.json after.json

For one model before and after a change (an attention implementation swapped, a torch upgrade),
on two GPUs, at two precisions or batch sizes: the latency, the time of each category and
sub-category, the op types and kernel families whose time moved most, and the peak memory. Times
are per iteration (one batch); where the two batches differ, per sample, and the header says so.
The header names what differs between the runs (model, GPU, batch, precision, software, ...), so a
change is not read as the cause of what another difference did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from visprof.base.errors import BadInputError
from visprof.base.json_documents import summary_document
from visprof.report.text_table import format_table
from visprof.result import NSYS_IMPORT, ProfileResult

__all__ = ["DiffRow", "ProfileDiff", "diff_profiles", "render_profile_diff"]


@dataclass
class DiffRow:
    key: str  # "attention", "attention/core", an op type, a kernel family
    a_ms: float
    b_ms: float

    @property
    def change_ms(self) -> float:
        return self.b_ms - self.a_ms

    @property
    def ratio(self) -> float | None:
        """B's time over A's; None where A had none."""
        return self.b_ms / self.a_ms if self.a_ms > 0 else None


@dataclass
class ProfileDiff:
    a: ProfileResult
    b: ProfileResult
    per: str  # "batch" (same batch size) or "sample" (times divided by each run's batch)
    differences: list[str]  # what differs between the two runs, e.g. "GPU: NVIDIA H100 80GB HBM3 -> NVIDIA H200"
    latency: DiffRow | None  # median latency, per batch or sample; None without both timing passes
    total: DiffRow | None  # the attributed passes' activity time; None without both attributed passes
    categories: list[DiffRow]  # categories, each followed by its sub-categories, in A's report order
    op_types: list[DiffRow] = field(default_factory=list)  # largest change first
    kernel_families: list[DiffRow] = field(default_factory=list)
    peak_bytes: tuple[int | None, int | None] = (None, None)  # allocated, per forward (not scaled)
    notes: list[str] = field(default_factory=list)
    same_file: bool = False  # A and B were read from one file (`visprof diff X X`)

    def __repr__(self) -> str:
        # The headline, not the two results inside (27 kB each): print(diff) shows the tables.
        latency = f", latency x{self.latency.ratio:.2f}" if self.latency and self.latency.ratio else ""
        differs = "; ".join(self.differences) or "nothing recorded"
        total = f", attributed time x{self.total.ratio:.2f}" if self.total and self.total.ratio else ""
        return f"<ProfileDiff {self.a.model.name} -> {self.b.model.name}, per {self.per}{latency}{total}; differs in: {differs}>"

    def __str__(self) -> str:
        return render_profile_diff(self)

    def to_dict(self) -> dict:
        def rows(items: list[DiffRow]) -> list[dict]:
            return [{"key": r.key, "a_ms": r.a_ms, "b_ms": r.b_ms, "change_ms": r.change_ms, "ratio": r.ratio}
                    for r in items]
        doc = {"per": self.per, "differences": self.differences, "notes": self.notes,
               "latency": rows([self.latency])[0] if self.latency else None,
               "total": rows([self.total])[0] if self.total else None,
               "categories": rows(self.categories), "op_types": rows(self.op_types),
               "kernel_families": rows(self.kernel_families),
               "peak_bytes": {"a": self.peak_bytes[0], "b": self.peak_bytes[1]}}
        return summary_document("diff", doc)  # the --json file's document, its schema first (docs/cli.md)


def _describe(result: ProfileResult) -> dict[str, str]:
    """The run's settings that a difference in time may come from."""
    gpu = result.gpu.get("name") if isinstance(result.gpu, dict) else None
    env = result.environment or {}
    cpu = env.get("cpu") if isinstance(env.get("cpu"), dict) else {}
    shape = result.model.input_shape[-2:] if len(result.model.input_shape or []) >= 4 else []
    config = result.config
    # each may be missing from an older result ("" or None): a difference needs both sides
    return {"model": result.model.name, "parameters": f"{result.model.param_count:,}" if result.model.param_count else "",
            "GPU": gpu or "CPU (host clock)", "batch": str(result.model.batch_size),
            "input": "x".join(map(str, shape)) or str(result.model.img_size), "precision": config.precision,
            # model-cast against per-forward autocast moves all the cast time: it had read as "a rerun"
            "autocast": config.autocast or "", "layout": "channels_last" if config.channels_last else "NCHW",
            "compiled": "yes" if config.compile else "no", "grad mode": config.grad_mode,
            "passes": "+".join(config.passes or []),
            "torch": str(env.get("torch")), "timm": str(env.get("timm")), "visprof": result.visprof_version,
            # the host's speed is a CPU run's latency, and a launch-bound GPU run's
            "host CPU": str(cpu.get("name") or ""),
            # on the CPU, torch's intra-op threads set the latency; a result made before it was recorded has none
            "CPU threads": str(env.get("cpu_threads") or "") if result.measurement != "gpu" else ""}


def _changed_most(a: dict[str, float], b: dict[str, float], scale_a: float, scale_b: float) -> list[DiffRow]:
    rows = [DiffRow(key, a.get(key, 0.0) * scale_a, b.get(key, 0.0) * scale_b) for key in {**a, **b}]
    return sorted(rows, key=lambda r: (-abs(r.change_ms), r.key))


def _category_rows(a: ProfileResult, b: ProfileResult, scale_a: float, scale_b: float) -> list[DiffRow]:
    def times(result: ProfileResult) -> dict[str, float]:
        out = {name: row.time_ms for name, row in result.category_totals().items()}
        out.update({f"{row.category}/{row.subcategory}": row.time_ms for row in result.categories if row.subcategory})
        return out

    ta, tb = times(a), times(b)
    order = list(dict.fromkeys([*ta, *tb]))

    def split_alike(top: str) -> bool:
        """Whether both runs split ``top`` into sub-categories, or one did not run it: an older
        result has none for some categories (normalization), and 0 there is not "none ran"."""
        return all(any(k.startswith(top + "/") for k in t) or not t.get(top) for t in (ta, tb))

    # each category, then its sub-categories (category_totals lists every category, even idle ones)
    tops = [k for k in order if "/" not in k]
    keyed = [k for top in tops
             for k in [top, *(s for s in order if s.startswith(top + "/") and split_alike(top))]]
    return [DiffRow(k, ta.get(k, 0.0) * scale_a, tb.get(k, 0.0) * scale_b) for k in keyed if ta.get(k) or tb.get(k)]


def diff_profiles(a: ProfileResult | str | Path, b: ProfileResult | str | Path) -> ProfileDiff:
    """``b`` against ``a`` (A: before, B: after): results, or the paths of result files
    (``visprof.diff("before.json", "after.json")``; ``print()`` it for the tables)."""
    a, b = (ProfileResult.load(r) if isinstance(r, (str, Path)) else _result(r) for r in (a, b))
    batch_a, batch_b = a.model.batch_size or 1, b.model.batch_size or 1
    per = "batch" if batch_a == batch_b else "sample"
    scale_a, scale_b = (1.0, 1.0) if per == "batch" else (1 / batch_a, 1 / batch_b)
    da, db = _describe(a), _describe(b)
    differences = [f"{name}: {da[name]} -> {db[name]}" for name in da if da[name] != db[name] and da[name] and db[name]]
    notes = []
    if a.measurement != b.measurement:
        notes.append("one result is timed by the host clock (a CPU run) and the other by the GPU: their times are of "
                     "different clocks and work")
    attributed = all(_attributed(r) for r in (a, b))
    if attributed and a.measurement != "gpu" and b.measurement != "gpu" and a.config.compile != b.config.compile:
        # the table compare-compile refuses on the CPU: both breakdowns are of the eager model
        attributed = False
        notes.append("on the CPU the op capture runs a compiled model eagerly, so both breakdowns are of the eager "
                     "model and their differences are run-to-run noise, not torch.compile's: only latency and peak "
                     "memory are compared (on a GPU the compiled run's kernels are attributed)")
    for name, result in (("A", a), ("B", b)):
        if result.timing is None:
            notes.append(f"{name} ran without the timing pass (passes: {', '.join(result.config.passes)}), so latency "
                         "is not compared")
        if not _attributed(result):
            # Its categories are 0, but not because nothing ran: they were not measured.
            notes.append(f"{name} ran without the attributed pass (passes: {', '.join(result.config.passes)}), so "
                         "time by category, op type and kernel family is not compared")
        elif not result.op_types and result.activity_ms():
            notes.append(f"{name} has no op-type or kernel-family tables (made by a visprof before they were kept), "
                         "so they are not compared; profile it again to compare them")
    tables = attributed and all(r.op_types for r in (a, b))
    latency = None
    if a.timing is not None and b.timing is not None:
        latency = DiffRow("latency", a.timing.latency_ms.median * scale_a, b.timing.latency_ms.median * scale_b)
    peak = (a.peak_allocated_bytes(), b.peak_allocated_bytes())
    if latency is None and not attributed and not all(peak):
        # a timing-only result against an attributed-only one had printed its header and exited 0
        raise BadInputError("nothing to compare: " + "; ".join(notes) + "; profile both with the same passes")
    return ProfileDiff(
        a, b, per, differences, latency,
        DiffRow("total", a.activity_ms() * scale_a, b.activity_ms() * scale_b) if attributed else None,
        _category_rows(a, b, scale_a, scale_b) if attributed else [],
        _changed_most({r.op_type: r.time_ms for r in a.op_types}, {r.op_type: r.time_ms for r in b.op_types},
                      scale_a, scale_b) if tables else [],
        _changed_most({r.family: r.time_ms for r in a.kernel_families},
                      {r.family: r.time_ms for r in b.kernel_families}, scale_a, scale_b) if tables else [],
        peak, notes)


def _attributed(result: ProfileResult) -> bool:
    """Whether the result's attributed pass ran (or an nsys recording stands in for it)."""
    if result.config.passes:
        return "attributed" in result.config.passes or NSYS_IMPORT in result.config.passes
    return result.attribution is not None or any(row.time_ms for row in result.categories)  # an older result


def _result(given) -> ProfileResult:
    if isinstance(given, ProfileResult):
        return given
    raise BadInputError(f"diff takes two results (ProfileResult, or the path of a result file), got a "
                        f"{type(given).__name__}")


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 100 else f"{value:.1f}"


def _cells(row: DiffRow, label: str) -> list[str]:
    ratio = f"x{row.ratio:.2f}" if row.ratio is not None else "new"
    if row.a_ms and not row.b_ms:
        ratio = "gone"  # as "new" says it for B alone, not "x0.00" as if it ran in no time
    change = f"{row.change_ms:+.3f}" if abs(row.change_ms) < 100 else f"{row.change_ms:+.1f}"
    return [label, _ms(row.a_ms), _ms(row.b_ms), change, ratio if row.b_ms or row.a_ms else "-"]


def render_profile_diff(diff: ProfileDiff, names: tuple[str, str] | None = None, top: int = 10,
                        width: int | None = None) -> str:
    """The text `visprof diff` prints; ``names``: how the header names the two (their files)."""
    a, b = diff.a, diff.b
    unit = "ms/batch" if diff.per == "batch" else "ms/sample"
    lines = [f"visprof diff: A = {names[0]}, B = {names[1]}" if names else "visprof diff: B against A",
             f"A: {a.model.name} · batch {a.model.batch_size} · {a.config.precision} · "
             f"{_describe(a)['GPU']}",
             f"B: {b.model.name} · batch {b.model.batch_size} · {b.config.precision} · "
             f"{_describe(b)['GPU']}",
             "differs in: " + ("; ".join(diff.differences) if diff.differences else
                               "nothing: A and B are the same file" if diff.same_file else
                               # two copies of one result are no rerun: one run made both
                               f"nothing: A and B are copies of one result (made {a.created_at})"
                               if a.created_at and a.created_at == b.created_at else "nothing recorded (a rerun)")]
    if diff.per == "sample":
        lines.append(f"times per sample: the batches differ ({a.model.batch_size} and {b.model.batch_size})")
    lines += [f"note: {note}" for note in diff.notes]
    clock = "GPU" if a.measurement == b.measurement == "gpu" else "host"
    head = ["", f"A {unit}", "B", "change", "B/A"]
    rows = [_cells(diff.latency, "latency (median)")] if diff.latency else []
    if diff.total is not None:
        rows.append(_cells(diff.total, f"{clock} time (attributed)"))
    if rows:
        lines += ["", *format_table(head, rows, width)]
    category_rows = [_cells(r, r.key if "/" not in r.key else "  " + r.key.split("/", 1)[1]) for r in diff.categories]
    if category_rows:
        lines += ["", f"Time by category ({clock} time)", *format_table(["category", *head[1:]], category_rows, width)]
    for title, items, column in (("Op types", diff.op_types, "op type"),
                                 ("Kernel families", diff.kernel_families, "kernel family")):
        moved = [r for r in items if r.change_ms][:top]
        if moved:
            lines += ["", f"{title} whose time changed most (top {len(moved)} of {len(items)})",
                      *format_table([column, *head[1:]], [_cells(r, r.key) for r in moved], width)]
    pa, pb = diff.peak_bytes
    if pa and pb:
        lines += ["", f"peak memory allocated (one forward): {pa / (1 << 20):,.1f} MiB -> {pb / (1 << 20):,.1f} MiB "
                      f"(x{pb / pa:.2f})"]
    return "\n".join(lines) + "\n"

