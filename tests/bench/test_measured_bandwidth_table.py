"""bench/measured_bandwidth_table.py: groups pair within a model, b is the slow-down over the
bandwidth ratio's gain, clipped, and a key needs MIN_MODELS models."""
from __future__ import annotations

import json
import sqlite3
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import measured_bandwidth_table as table  # noqa: E402


def group(category, op, time_ms, flops=1e9, nbytes=1e8, subcategory=None):
    return {"category": category, "subcategory": subcategory, "op": op, "flops": flops, "bytes": nbytes,
            "tensor_core": None, "time_ms": time_ms}


def store(path: Path, results: list[tuple[int, str, list[dict]]]) -> Path:
    """A store with the columns the table reads: results with a timing pass and a result_json."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY, model TEXT, img_height INTEGER, precision TEXT, "
                 "batch_size INTEGER, busy_ms REAL, result_json BLOB)")
    for rid, model, groups in results:
        blob = zlib.compress(json.dumps({"roofline": {"groups": groups}}).encode())
        conn.execute("INSERT INTO results VALUES (?,?,?,?,?,?,?)", (rid, model, 224, "bf16", 64, 1.0, blob))
    conn.commit()
    conn.close()
    return path


def test_shares_pair_groups_within_models_and_need_enough_models(tmp_path):
    gain = table.BANDWIDTH_RATIO - 1
    models = [f"m{i}" for i in range(table.MIN_MODELS)]
    fast = store(tmp_path / "h200.db", [
        (i + 1, m, [group("elementwise", "aten.add.Tensor", 2.0),
                    group("convolution", "aten.conv2d.default", 4.0, subcategory="depthwise"),
                    group("linear", "aten.linear.default", 1.0, flops=5e9)])  # no H100 partner (other FLOPs)
        for i, m in enumerate(models)] + [(99, "rare", [group("pooling", "aten.mean.dim", 1.0)])])
    slow = store(tmp_path / "h100.db", [
        (i + 1, m, [group("elementwise", "aten.add.Tensor", 2.0 * (1 + 0.5 * gain)),
                    group("convolution", "aten.conv2d.default", 3.9, subcategory="depthwise"),  # faster: b 0
                    group("linear", "aten.linear.default", 1.0, flops=6e9)])
        for i, m in enumerate(models)] + [(99, "rare", [group("pooling", "aten.mean.dim", 1.3)])])
    keys = {(k["category"], k["subcategory"], k["op"]): k for k in table.share_table(slow, fast)["keys"]}
    assert set(keys) == {("elementwise", None, "aten.add.Tensor"), ("convolution", "depthwise", "aten.conv2d.default")}
    add = keys[("elementwise", None, "aten.add.Tensor")]
    assert add["models"] == table.MIN_MODELS and add["bandwidth_share"] == pytest.approx(0.5, abs=1e-4)
    assert keys[("convolution", "depthwise", "aten.conv2d.default")]["bandwidth_share"] == 0.0


def test_the_table_is_written_whole_and_read_back(tmp_path, monkeypatch):
    models = [f"m{i}" for i in range(table.MIN_MODELS)]
    fast = store(tmp_path / "h200.db", [(i + 1, m, [group("memory", "aten.to.dtype", 1.0)]) for i, m in enumerate(models)])
    slow = store(tmp_path / "h100.db", [(i + 1, m, [group("memory", "aten.to.dtype", 2.0)]) for i, m in enumerate(models)])
    out = tmp_path / "t.json"
    monkeypatch.setattr(sys, "argv", ["measured_bandwidth_table.py", "--h100", str(slow), "--h200", str(fast), "-o", str(out)])
    assert table.main() == 0
    doc = json.loads(out.read_text())
    assert doc["format"] == table.FORMAT and doc["pairs"] == table.MIN_MODELS
    assert doc["keys"][0]["bandwidth_share"] == 1.0  # x2.0 is past the bandwidth ratio: clipped


def test_an_input_named_as_the_output_is_refused_and_left_as_it_was(tmp_path, monkeypatch, capsys):
    fast = store(tmp_path / "h200.db", [(1, "m", [group("memory", "aten.to.dtype", 1.0)])])
    slow = store(tmp_path / "h100.db", [(1, "m", [group("memory", "aten.to.dtype", 2.0)])])
    before = slow.read_bytes()
    monkeypatch.setattr(sys, "argv", ["measured_bandwidth_table.py", "--h100", str(slow), "--h200", str(fast), "-o", str(slow)])
    assert table.main() == 2
    assert slow.read_bytes() == before
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is an input store" in err[0]
