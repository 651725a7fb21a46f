"""bench/calibrate_check.py: what it refuses before any work."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import calibrate_check  # noqa: E402


def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path, capsys):
    store = tmp_path / "calibrate.json"  # a store named as the run's JSON, in the --out folder
    store.write_bytes(b"not touched")
    refs = tmp_path / "refs.db"
    refs.write_bytes(b"")
    rc = calibrate_check.main(["--pair", str(refs), "rtx3090", "rtx4090", "--store", str(store), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("calibrate_check.py:") and "calibrate.json" in err[0]
    assert store.read_bytes() == b"not touched"


def test_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("a file")
    rc = calibrate_check.main(["--pair", str(tmp_path / "r.db"), "a", "b", "--store", str(tmp_path / "s.db"),
                               "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("calibrate_check.py: --out")
