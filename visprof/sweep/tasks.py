"""What an executor (local workers or Ray) asks of the sweep that feeds it.

The sweep owns the queue, the retry policy, the time budget and the store; an executor only
runs tasks and reports what became of each, so both executors share every rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from visprof.sweep.plan import Cell

__all__ = ["Task", "TaskSource"]


@dataclass(frozen=True)
class Task:
    cell: Cell
    attempt: int = 1  # this attempt's number, counting the attempts of earlier runs
    # attempts of earlier runs that this run's budget does not count (a --retry-failed retry): a cell
    # that succeeds counts them too, as its failure row did (they had been lost from the store)
    earlier: int = 0


class TaskSource(Protocol):
    hard_deadline: float | None  # time.monotonic() at which in-flight tasks are abandoned

    def next_task(self) -> Task | None:
        """The next task to start now, or None (nothing left, or the time budget is spent)."""

    def has_work(self) -> bool:
        """Whether tasks may still be started (a retry can add one after next_task said None)."""

    def pending(self) -> int:
        """How many tasks may still be started now (0 once the time budget stops new ones)."""

    def started(self, task: Task, where: str) -> None:
        """``task`` was handed to a worker (``where``: "cuda:1", "cpu", "ray")."""

    def worker_ready(self, where: str, facts: dict[str, Any]) -> None:
        """A worker started; ``facts`` as ``execute.worker_facts`` gives them."""

    def finished(self, task: Task, outcome: dict[str, Any], facts: dict[str, Any] | None) -> None:
        """``outcome`` (see ``execute.execute_cell``; kinds "crash" and "timeout" come from the
        executor) of ``task``, measured by the worker described by ``facts`` (None if unknown)."""
