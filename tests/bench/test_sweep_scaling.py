"""bench/sweep_scaling.py: the 2-GPU rate against the 1-GPU rate, on the models both runs measured."""
from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "sweep_scaling.py"


@pytest.fixture(scope="module")
def scaling():
    spec = importlib.util.spec_from_file_location("sweep_scaling", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _store(path: Path, run_id: int, elapsed: float, startup: float, cells: dict[str, tuple[float, str]]) -> str:
    """The two tables the comparison reads, as a sweep store has them."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, executor TEXT, elapsed_s REAL, startup_s REAL)")
    conn.execute("CREATE TABLE results (run_id INTEGER, model TEXT, wall_s REAL, gpu_uuid TEXT)")
    conn.execute("INSERT INTO runs VALUES (?, 'workers', ?, ?)", (run_id, elapsed, startup))
    conn.executemany("INSERT INTO results VALUES (?, ?, ?, ?)",
                     [(run_id, model, wall, gpu) for model, (wall, gpu) in cells.items()])
    conn.commit()
    conn.close()
    return f"{path}:{run_id}"


def test_the_rate_ratio_is_taken_on_the_models_both_runs_measured(tmp_path, scaling):
    # One GPU measured a, b, c, d in 10 + 20 + 30 + 40 s (and 1 s between cells); two GPUs got
    # through a, b, c (60 s of cells) in 32 s of steady time before their budget ended.
    one = _store(tmp_path / "one.db", 1, 105.0, 1.0, {"a": (10, "g0"), "b": (20, "g0"), "c": (30, "g0"), "d": (40, "g0")})
    two = _store(tmp_path / "two.db", 4, 40.0, 8.0, {"a": (10, "g0"), "b": (20, "g1"), "c": (30, "g0")})
    result = scaling.compare(scaling.load_run(one), scaling.load_run(two))
    assert result["models"] == ["a", "b", "c"]
    assert result["one_gpu"]["time_s_common"] == pytest.approx(63.0)  # 60 s of cells + 3 x 1 s between
    assert result["two_gpus"]["time_s_common"] == pytest.approx(32.0)
    assert result["rate_ratio"] == pytest.approx(63.0 / 32.0)
    assert result["two_gpus"]["gpus"] == ["g0", "g1"]


def test_a_two_gpu_run_with_models_of_its_own_is_scaled_to_the_common_ones(tmp_path, scaling):
    one = _store(tmp_path / "one.db", 1, 31.0, 1.0, {"a": (10, "g0"), "b": (20, "g0")})
    two = _store(tmp_path / "two.db", 2, 25.0, 5.0, {"a": (10, "g0"), "e": (30, "g1")})
    result = scaling.compare(scaling.load_run(one), scaling.load_run(two))
    assert result["models"] == ["a"]
    assert result["two_gpus"]["time_s_common"] == pytest.approx(10 * 20 / 40)  # its walls x steady / all walls
    with pytest.raises(SystemExit):
        scaling.compare(scaling.load_run(one), scaling.load_run(_store(tmp_path / "none.db", 3, 9.0, 1.0, {"z": (5, "g0")})))
