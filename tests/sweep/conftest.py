"""Fixtures of the sweep's tests that run the real CLI or ``run_sweep`` without building a model."""
from __future__ import annotations

import pytest


@pytest.fixture
def recorded_cells(monkeypatch):
    """The cells the sweep hands its workers, which run none of them."""
    from visprof.sweep import local

    cells = []

    def run(self, source):
        while (task := source.next_task()) is not None:
            cells.append(task.cell)
            source.in_flight -= 1

    monkeypatch.setattr(local.LocalExecutor, "run", run)
    return cells
