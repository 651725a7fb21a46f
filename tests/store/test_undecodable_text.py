"""A byte that is not UTF-8 in a path or argument (a Latin-1 folder name: Python keeps it as a
lone surrogate) is stored as text SQLite can hold: `visprof sweep --store 'latén/s.db'` raised
UnicodeEncodeError at the run's INSERT, after creating an empty store."""
from __future__ import annotations

import os

import pytest

from visprof.store.result_store import open_store

LATIN1_FOLDER = os.fsdecode(b"lat\xe9n")  # 'lat\udce9n'


def test_an_argv_with_an_undecodable_byte_is_stored_and_read_back(tmp_path):
    with open_store(tmp_path / "s.db", write=True) as store:
        store.start_run(f"visprof sweep resnet18 --store {LATIN1_FOLDER}/s.db", "local", 1, 0)
        store.start_run("visprof sweep r\u00e9snet", "local", 1, 0)  # real UTF-8 text is kept as it is
    with open_store(tmp_path / "s.db") as store:
        assert [run["argv"] for run in store.runs()] == ["visprof sweep resnet18 --store lat\\xe9n/s.db",
                                                         "visprof sweep r\u00e9snet"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names are bytes")
def test_a_sweep_into_a_latin1_folder_runs(tmp_path, capsys):
    from cli_in_process import run_cli

    folder = tmp_path / LATIN1_FOLDER
    folder.mkdir()
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", folder / "s.db", "--device", "cpu", "-b", "1",
                           "--img-size", "32", "--iterations", "1", "--warmup", "0", "--passes", "timing")
    assert code == 0, err
    with open_store(folder / "s.db") as store:
        assert len(list(store.results())) == 1 and store.runs()[0]["status"] == "complete"
