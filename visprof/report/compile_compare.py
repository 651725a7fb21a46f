"""Eager vs torch.compile, side by side per category: what did compile speed up?

Reads two ``ProfileResult``s of the same model and configuration, one eager and one compiled
(``visprof compare-compile MODEL``, or ``visprof.profile(..., compile=True)`` twice).

Inductor fuses pointwise work into neighbouring kernels, so a category's compiled time is the
time of the kernels anchored in it (a GEMM, conv or SDPA, else the kernel's most specific op),
and ``fused`` says what else ran inside them; eager timed that work in its own kernels. Two
views of each category are given: its share of each run's own total, and its compiled time as
a share of the *eager* total, which compares the same work on the same scale (shares of the
compiled total grow wherever fusion shrank the total).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from visprof.base.spelling import option
from visprof.result import ProfileResult

__all__ = ["CPU_BREAKDOWN_NOTE", "CompileRow", "breakdown_is_of_compiled_code", "check_compile_pair", "compare_compile",
           "comparison_rows_as_dicts", "render_compile_comparison"]


@dataclass
class CompileRow:
    category: str
    eager_ms: float
    compiled_ms: float
    eager_share: float  # of the eager run's activity time
    compiled_share: float  # of the compiled run's activity time
    compiled_of_eager: float  # compiled_ms / the eager run's activity time
    fused: dict[str, float] = field(default_factory=dict)  # compiled: ms of its kernels that also ran this work
    # The library work alone (kernels of ops with counted FLOPs: GEMM, conv, attention products),
    # which both programs run as library calls; the rest is pointwise and layout work.
    eager_flop_ms: float = 0.0
    compiled_flop_ms: float = 0.0
    eager_total_ms: float = 0.0  # the eager run's activity time: the scale of the points

    @property
    def library_points(self) -> float:
        """Compiled minus eager library time, in points of the eager total: the same work on
        the same scale. 0 for a category without library work."""
        if not self.eager_total_ms:
            return 0.0
        return (self.compiled_flop_ms - self.eager_flop_ms) / self.eager_total_ms * 100

    @property
    def share_points(self) -> float:
        """Compiled minus eager share, in percentage points."""
        return (self.compiled_share - self.eager_share) * 100

    @property
    def same_scale_points(self) -> float:
        """Compiled time minus eager time, in points of the eager total."""
        return (self.compiled_of_eager - self.eager_share) * 100


# On the CPU the attributed pass runs a compiled model eagerly (op capture cannot time the ops
# inside Inductor's C++ kernels): both breakdowns are of the eager model, and a table of them had
# shown run-to-run noise (batch norm 8.6 -> 0.46 host ms) as what compile changed.
CPU_BREAKDOWN_NOTE = ("per category: not compared. On the CPU the attributed pass runs a compiled model eagerly (op "
                      "capture cannot time the ops inside Inductor's generated code), so both breakdowns are of the "
                      "eager model; only the latency above is the compiled program's. On a GPU the compiled run's "
                      "kernels are attributed (through Inductor's provenance, else by name).")


def breakdown_is_of_compiled_code(compiled: ProfileResult) -> bool:
    """Whether a compiled result's categories time the compiled program (a GPU's kernels), not
    the eager ops the CPU path captures instead."""
    return compiled.measurement != "cpu"


def check_compile_pair(eager: ProfileResult, compiled: ProfileResult) -> None:
    """BadInputError unless ``eager`` and ``compiled`` are one model's eager and compiled runs in one setting:
    render_compile_comparison had printed "eager vs torch.compile" for arguments swapped, or for two eager
    runs of two models, where only compare_compile's table (a GPU's) checked them."""
    from visprof.base.errors import BadInputError

    if not compiled.config.compile or eager.config.compile:
        raise BadInputError("compare_compile needs an eager result and a compiled one (config.compile), in that "
                            f"order; got compile={eager.config.compile} and compile={compiled.config.compile}")
    settings = {"model": (eager.model.name, compiled.model.name),
                "batch": (eager.model.batch_size, compiled.model.batch_size),
                "precision": (eager.config.precision, compiled.config.precision),
                "device": (eager.config.device, compiled.config.device)}
    differ = [f"{name} {a} and {b}" for name, (a, b) in settings.items() if a != b]
    if differ:
        raise BadInputError(f"compare_compile compares one model's runs in one setting: {', '.join(differ)}")


def compare_compile(eager: ProfileResult, compiled: ProfileResult) -> list[CompileRow]:
    """One row per category present in either result, in the eager result's report order."""
    from visprof.base.errors import BadInputError

    check_compile_pair(eager, compiled)
    if not breakdown_is_of_compiled_code(compiled):
        raise BadInputError(f"compare_compile: {CPU_BREAKDOWN_NOTE}")
    e_totals, c_totals = eager.category_totals(), compiled.category_totals()
    e_total, c_total = eager.activity_ms(), compiled.activity_ms()
    order = list(e_totals) + [c for c in c_totals if c not in e_totals]
    rows = []
    for cat in order:
        e, c = e_totals.get(cat), c_totals.get(cat)
        e_ms, c_ms = (e.time_ms if e else 0.0), (c.time_ms if c else 0.0)
        if not (e_ms or c_ms or (c and c.fused)):
            continue  # category_totals lists every category; one that ran in neither run is no row
        rows.append(CompileRow(
            category=cat, eager_ms=e_ms, compiled_ms=c_ms,
            eager_share=e_ms / e_total if e_total else 0.0, compiled_share=c_ms / c_total if c_total else 0.0,
            compiled_of_eager=c_ms / e_total if e_total else 0.0, fused=dict(c.fused) if c else {},
            eager_flop_ms=e.flop_time_ms if e else 0.0, compiled_flop_ms=c.flop_time_ms if c else 0.0,
            eager_total_ms=e_total))
    return rows


def comparison_rows_as_dicts(rows: list[CompileRow]) -> list[dict]:
    """The rows with their derived points, for JSON."""
    return [{**row.__dict__, "share_points": row.share_points, "same_scale_points": row.same_scale_points,
             "library_points": row.library_points} for row in rows]


def _layout_note(eager: ProfileResult, compiled: ProfileResult) -> list[str]:
    """Inductor lays convolutions out channels-last; an eager NCHW run does other convolution
    work (cuDNN's NCHW<->NHWC conversions, other kernels), so its library times differ."""
    layout = compiled.attribution.inductor_conv_layout if compiled.attribution else None
    if layout != "channels_last" or eager.config.channels_last:
        return []
    return ["Inductor ran the convolutions channels-last (its layout optimisation) and this eager run ran them NCHW, "
            "so the convolution kernels differ (cuDNN converts NCHW<->NHWC around each eager convolution): compare "
            f"with an eager {option('channels_last', True)} run for the same convolution work."]


def render_compile_comparison(eager: ProfileResult, compiled: ProfileResult) -> str:
    check_compile_pair(eager, compiled)
    m, cfg = eager.model, eager.config
    lines = [f"eager vs torch.compile: {m.name}, batch {m.batch_size}, {cfg.precision}, {cfg.device}"]
    if eager.timing and compiled.timing:
        e, c = eager.timing.latency_ms.median, compiled.timing.latency_ms.median
        # named: a bare "(0.41x)" read either way (diff prints B over A, compiled over eager)
        lines.append(f"latency (median): eager {e:.3f} ms, compiled {c:.3f} ms (compile's speed-up x{e / c:.2f})")
    if breakdown_is_of_compiled_code(compiled):
        lines += _category_comparison(eager, compiled)
    else:
        lines += ["", CPU_BREAKDOWN_NOTE]
    # the CPU's own note on the compiled run says what CPU_BREAKDOWN_NOTE says
    notes = [w for w in compiled.warnings if "compile" in w and "op capture runs the model eagerly" not in w]
    if notes:
        lines += ["", "compiled run:", *(f"  - {w}" for w in notes)]
    failed = [f"{label}: {c.name}" for label, r in (("eager", eager), ("compiled", compiled)) for c in r.failed_checks]
    if failed:
        lines += ["", "SELF-CHECKS FAILED (the numbers above may be wrong):", *(f"  - {f}" for f in failed)]
    return "\n".join(lines)


def _category_comparison(eager: ProfileResult, compiled: ProfileResult) -> list[str]:
    from visprof.report.text_table import format_table

    rows = compare_compile(eager, compiled)
    table = [[r.category, f"{r.eager_ms:.3f}", f"{r.eager_share:.1%}", f"{r.compiled_ms:.3f}", f"{r.compiled_share:.1%}",
              f"{r.share_points:+.1f}", f"{r.same_scale_points:+.1f}",
              f"{r.eager_flop_ms:.3f} / {r.compiled_flop_ms:.3f} ({r.library_points:+.1f})"
              if r.eager_flop_ms or r.compiled_flop_ms else "-",
              ", ".join(f"{k} {v:.2f}" for k, v in sorted(r.fused.items(), key=lambda kv: -kv[1])) or "-"]
             for r in rows]
    lines = ["", *format_table(["category", "eager ms", "share", "compiled ms", "share", "Δ pts", "Δ pts of eager",
                                "library ms (Δ pts)", "fused into it (ms)"], table)]
    lines += ["", "Δ pts: compiled share minus eager share. Δ pts of eager: compiled time minus eager time, in "
                  "points of the eager total. library: eager / compiled time of the GEMM, convolution and attention "
                  "kernels alone, which both programs call as libraries (the same work on the same scale); the rest "
                  "of a category is pointwise and layout work that Inductor fuses.",
              "Inductor fuses pointwise work into neighbouring kernels: a fused kernel counts in the category of "
              "its anchor (a GEMM/conv/SDPA, else its most specific op); 'fused into it' is the time of those "
              "kernels that also ran the named work, which eager ran in kernels of its own."]
    return lines + _layout_note(eager, compiled)
