"""The short report at the end of a sweep: cells done, failures by class, slowest models,
time per cell and rate. Built from the store's rows, so it can be made again later for any
set of cells (``summarize_store``), e.g. over several resumed runs."""
from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from visprof.base.spelling import either, option
from visprof.store.cell import canonical_key

__all__ = ["SweepSummary", "summarize_rows", "summarize_store"]


@dataclass
class SweepSummary:
    planned: int = 0  # cells of the plan
    merged: int = 0  # cells of the cross product that measure what a planned cell does (other names or sizes)
    skipped: int = 0  # already in the store when the run began
    skipped_failed: int = 0  # of skipped: failed for good in an earlier run (--retry-failed reruns them)
    done: int = 0  # measured
    failed: dict[str, int] = field(default_factory=dict)  # error class -> cells
    remaining: int = 0  # not run: time budget, Ctrl-C
    cell_wall_s: list[float] = field(default_factory=list)  # per measured cell, in the worker
    slowest: list[tuple[str, float]] = field(default_factory=list)  # (cell, wall s), slowest first
    elapsed_s: float | None = None  # the run's wall time
    startup_s: float | None = None  # from the start until the first worker was ready
    status: str = "complete"  # "complete" | "time budget" | "interrupted"
    executor: str = ""
    store: str = ""
    failures: list[dict[str, Any]] = field(default_factory=list)  # {cell, error_class, message}
    # a dry run's: the cells a run would measure, and its time estimated from the store's cells
    to_run: list[str] = field(default_factory=list)
    estimate_s: float | None = None
    estimate_basis: str = ""

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    @property
    def median_cell_s(self) -> float | None:
        return statistics.median(self.cell_wall_s) if self.cell_wall_s else None

    @property
    def rate_per_min(self) -> float | None:
        """Cells finished (measured or failed) per minute of this run."""
        finished = self.done + self.failed_total
        return finished / self.elapsed_s * 60 if self.elapsed_s and finished else None

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in self.__dict__.items()}, "median_cell_s": self.median_cell_s,
                "rate_per_min": self.rate_per_min, "failed_total": self.failed_total}

    def __repr__(self) -> str:
        # The summary `visprof sweep` prints, not every cell's wall time (thousands in a long sweep).
        return f"<SweepSummary {self.render(top=3)}>"

    def render(self, top: int | None = 5) -> str:
        """The summary `visprof sweep` prints; ``top``: how many slow cells, failures and (a dry
        run's) cells to run it names, None for all."""
        lines = [f"visprof sweep: {self.status} · {self.executor}" + (f" · store {self.store}" if self.store else "")]
        if self.status == "dry run":
            return "\n".join(lines + self._plan_lines(top))
        earlier = f" ({self.skipped_failed} of them failed earlier)" if self.skipped_failed else ""
        merged = f" ({self.merged} more merged into them)" if self.merged else ""
        counts = f"cells: {self.planned} planned{merged}, {self.skipped} already in the store{earlier}, " \
                 f"{self.done} measured, {self.failed_total} failed"
        if self.remaining:
            counts += f", {self.remaining} not run"
        lines.append(counts)
        if self.skipped_failed:
            lines.append(f"{self.skipped_failed} cell(s) failed in an earlier run and were not tried again "
                         f"({option('retry_failed', True)} tries them; "
                         f"{either('open_store(STORE).failures()', 'visprof export STORE --failures')} lists them)")
        if self.failed:
            lines.append("failed by class: " + ", ".join(f"{name} {n}" for name, n in
                                                        sorted(self.failed.items(), key=lambda kv: (-kv[1], kv[0]))))
        if self.cell_wall_s:
            walls = self.cell_wall_s
            lines.append(f"time per cell (all passes, model build included): median {statistics.median(walls):.2f} s, "
                         f"mean {statistics.fmean(walls):.2f} s, max {max(walls):.2f} s")
        if self.elapsed_s is not None:
            rate = self.rate_per_min
            lines.append(f"elapsed {self.elapsed_s:.1f} s" + (f" · {rate:.1f} cells/min" if rate else ""))
        if self.slowest:
            lines.append("slowest: " + ", ".join(f"{name} {wall:.1f} s" for name, wall in self.slowest[:top]))
        for failure in self.failures[:top]:
            lines.append(f"  FAILED {failure['cell']}: {failure['error_class']}: {_one_line(failure['message'])}")
        if top is not None and len(self.failures) > top:
            lines.append(f"  ... and {len(self.failures) - top} more "
                         f"({either('open_store(STORE).failures()', 'visprof export STORE --format csv --failures')})")
        return "\n".join(lines)


    def _plan_lines(self, top: int | None) -> list[str]:
        """A dry run's: the counts, the estimate, and the cells a run would measure."""
        merged = f" ({self.merged} more merged into them)" if self.merged else ""
        earlier = f" ({self.skipped_failed} of them failed earlier)" if self.skipped_failed else ""
        lines = [f"cells: {self.planned} planned{merged}, {self.skipped} already in the store{earlier}, "
                 f"{len(self.to_run)} to run"]
        if self.estimate_s is not None:
            lines.append(f"estimated: {_duration(self.estimate_s)} at {self.estimate_basis}")
        lines += [f"  {cell}" for cell in self.to_run[:top]]
        if top is not None and len(self.to_run) > top:
            lines.append(f"  ... and {len(self.to_run) - top} more")
        return lines


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _one_line(text: str, width: int = 320) -> str:
    """``text`` on one line of at most ``width``, its start and its end kept: a message's remedy
    comes last (at 160 characters an out-of-memory's "(--batch-size N)" had been cut off)."""
    line = " ".join(str(text).split())
    if len(line) <= width:
        return line
    tail = width // 2
    return f"{line[: width - tail - 5]} ... {line[-tail:]}"


def summarize_rows(results: Iterable[dict[str, Any]], failures: Iterable[dict[str, Any]],
                   **fields: Any) -> SweepSummary:
    """A summary of store rows (``store.rows()`` and ``store.failures()`` dicts)."""
    results, failures = list(results), list(failures)
    walls = [(r["cell_key"], float(r["wall_s"])) for r in results if r.get("wall_s") is not None]
    failed = collections.Counter(f["error_class"] for f in failures)
    summary = SweepSummary(done=len(results), failed=dict(failed), **fields)
    summary.cell_wall_s = [w for _, w in walls]
    summary.slowest = sorted(walls, key=lambda kv: -kv[1])[:10]
    summary.failures = [{"cell": f["cell_key"], "error_class": f["error_class"], "message": f["message"]}
                        for f in failures]
    return summary


def summarize_store(store, cell_keys: Sequence[str] | None = None, **fields: Any) -> SweepSummary:
    """A summary of every row in ``store`` (or of the rows of ``cell_keys``), e.g. a sweep
    spread over several resumed runs."""
    keys = {canonical_key(k) for k in cell_keys} if cell_keys is not None else None
    results = [r for r in store.rows() if keys is None or canonical_key(r["cell_key"]) in keys]
    failures = [f for f in store.failures() if keys is None or canonical_key(f["cell_key"]) in keys]
    return summarize_rows(results, failures, store=str(store.path), **fields)
