"""A new results store is made whole or not at all.

Ctrl-C during `visprof import-timm CSV --store new.db`, at the moment the store's file first
appears, once left a 4096-byte SQLite file with no tables (or an empty one), which every later
command refused as "not a visprof results store". Real processes, real signals: the child is
stopped (SIGSTOP) at the first sign of the store in its folder, interrupted, and let go; then
new.db must be absent or a whole store, with nothing else left in the folder."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from visprof.base.child_env import child_env, module_command
from visprof.base.errors import BadInputError
from visprof.store.result_store import open_store

CSV = Path(__file__).resolve().parents[1] / "data" / "timm" / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"


def _interrupt_at_the_stores_first_sign(folder: Path) -> tuple[int, str]:
    """(exit code, stderr) of import-timm into folder/new.db, sent SIGINT as soon as anything but
    the CSV shows in the folder (the store, or a file it is being made in)."""
    proc = subprocess.Popen([*module_command("visprof"), "import-timm", CSV.name, "--store", "new.db"], cwd=folder,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=child_env(VISPROF_DEBUG=""))
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            # Not the probe that checks the folder takes new files (`base.outputs`), made before any store.
            if any(name != CSV.name and not name.endswith(".probe") for name in os.listdir(folder)):
                proc.send_signal(signal.SIGSTOP)  # held where it is while the interrupt is sent
                proc.send_signal(signal.SIGINT)
                proc.send_signal(signal.SIGCONT)
                break
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def _whole_store(path: Path) -> bool:
    try:
        with open_store(path) as store:
            return store.count("references") in (0, 60)  # the rows go in whole, in one transaction
    except BadInputError:
        return False


def test_ctrl_c_as_a_new_store_is_made_leaves_none_or_a_whole_one(tmp_path):
    """Repeated until an interrupt lands before the store exists (else each run only shows the
    store whole after the fact): the window is the few ms of writing and syncing it."""
    for attempt in range(8):
        folder = tmp_path / f"run{attempt}"
        folder.mkdir()
        shutil.copy(CSV, folder / CSV.name)
        code, err = _interrupt_at_the_stores_first_sign(folder)
        store = folder / "new.db"
        assert not store.exists() or _whole_store(store), (attempt, code, err, sorted(os.listdir(folder)))
        left = sorted(p for p in os.listdir(folder) if p not in (CSV.name, "new.db"))
        assert left == [], left  # no temporary file, no side file of a store that is not there
        assert "Traceback" not in err, err
        if code == 130 and not store.exists():
            assert err.splitlines()[-1].startswith("visprof: error: interrupted"), err
            break
    else:
        pytest.fail("no interrupt in 8 runs landed while the store was being made")
    print(f"interrupted while the store was made in run {attempt + 1}")


def test_a_new_store_has_no_file_beside_it_once_made(tmp_path):
    with open_store(tmp_path / "new.db", write=True) as store:
        assert store.count("results") == 0 and store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert sorted(os.listdir(tmp_path)) == ["new.db"]


def test_a_file_system_without_hard_links_gets_the_store_by_rename(tmp_path, monkeypatch):
    import errno

    from visprof.store import store_file

    def no_links(*_):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(store_file.os, "link", no_links)
    path = tmp_path / "new.db"
    store_file.create_store_file(path)
    with open_store(path) as store:
        assert store.count() == 0 and store.schema_version >= 1
    assert [p.name for p in tmp_path.iterdir()] == ["new.db"]  # no temporary file left beside it
    store_file.create_store_file(path)  # a store that is there is kept as it is
    assert [p.name for p in tmp_path.iterdir()] == ["new.db"]


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_store_named_as_sqlites_side_file_of_another_is_refused_either_way(tmp_path, suffix):
    """sweep --store runs.db-wal measured and said "complete"; the next command on runs.db made SQLite take
    the store for runs.db's write-ahead log and delete it. And the other way: runs.db made beside a whole
    database named runs.db-wal."""
    side = tmp_path / f"runs.db{suffix}"
    with pytest.raises(BadInputError, match=rf"runs.db{suffix}: SQLite takes a file of this name for the {suffix} "
                                            rf"file of .*runs.db, and deletes it when .*runs.db is opened"):
        open_store(side, write=True)
    assert not side.exists()
    with open_store(tmp_path / "other.db", write=True):
        pass
    shutil.copy(tmp_path / "other.db", side)  # a whole store under the side file's name, made before this check
    with pytest.raises(BadInputError, match=rf"beside it, .*runs.db{suffix} is a whole SQLite database"):
        open_store(tmp_path / "runs.db", write=True)
    assert not (tmp_path / "runs.db").exists() and side.read_bytes() == (tmp_path / "other.db").read_bytes()
    with open_store(tmp_path / "other.db", write=True):  # a store's own WAL beside it is no such database
        pass
