"""A store in a folder the user cannot write to (a shared mount, a colleague's runs) is read.

SQLite reads a WAL store through a -shm file beside it, which a reader must create: every command
that opens stores ended in "sqlite3.OperationalError: attempt to write a readonly database". The
tests run the reader in a user namespace (``unshare --user``), where even root is held to the
folder's permission bits, as any user is."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from visprof.base.child_env import child_env, module_command
from visprof.store.result_store import open_store
from visprof.sweep.plan import SweepPlan

DATA = Path(__file__).resolve().parents[1] / "data"
VIT = DATA / "h200-result-vit_base_patch16_224.json"


def _as_another_user(*command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "--user", *command], capture_output=True, text=True, env=child_env(),
                          cwd=cwd, timeout=120)


@pytest.fixture
def read_only_folder(tmp_path):
    if shutil.which("unshare") is None:
        pytest.skip("no unshare: cannot run a reader that the folder's permissions hold")
    folder = tmp_path / "shared"
    folder.mkdir()
    probe = _as_another_user("touch", str(folder / "probe"), cwd=tmp_path)
    folder.chmod(0o555)
    denied = _as_another_user("touch", str(folder / "probe2"), cwd=tmp_path)
    folder.chmod(0o755)
    if probe.returncode != 0 or denied.returncode == 0:
        pytest.skip(f"user namespaces do not hold to folder permissions here ({probe.stderr.strip()})")
    (folder / "probe").unlink()
    yield folder
    folder.chmod(0o755)


def _store(folder: Path, wal_rows: bool) -> Path:
    path = folder / "s.db"
    cell = SweepPlan(["vit_base_patch16_224"], "cuda").cells()[0]
    with open_store(path, write=True) as store:
        store.add_result(cell, json.loads(VIT.read_text()))
    if wal_rows:  # a row committed but not checkpointed: what a running (or killed) sweep leaves
        checkpointed = path.read_bytes()
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("INSERT INTO meta (key, value) VALUES ('late', 'row')")
        conn.commit()
        wal = path.with_name("s.db-wal").read_bytes()
        conn.close()  # the last connection checkpoints and deletes the -wal: undo both
        path.write_bytes(checkpointed)
        path.with_name("s.db-wal").write_bytes(wal)
    return path


def test_a_store_in_a_folder_the_user_cannot_write_is_exported(read_only_folder, tmp_path):
    store = _store(read_only_folder, wal_rows=False)
    read_only_folder.chmod(0o555)
    done = _as_another_user(*module_command("visprof"), "export", str(store), "-o", str(tmp_path / "rows.csv"),
                            cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "warning" not in done.stderr
    assert len((tmp_path / "rows.csv").read_text().splitlines()) == 2  # the header and the one row
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["s.db"]  # nothing written beside it


def test_rows_only_in_the_wal_file_are_said_to_be_left_out(read_only_folder, tmp_path):
    store = _store(read_only_folder, wal_rows=True)
    read_only_folder.chmod(0o555)
    code = ("import sys; from visprof.store.result_store import open_store\n"
            f"with open_store({str(store)!r}) as s: print(s.meta().get('late'), len(list(s.results())))\n")
    done = _as_another_user(sys.executable, "-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "1"]  # read as at the last checkpoint
    assert "s.db's folder is read-only to you, so the rows in s.db-wal" in done.stderr
    assert "VisprofWarning" in done.stderr  # in a script, a Python warning that can be filtered
    quiet = ("import warnings; from visprof.base.errors import VisprofWarning\n"
             "warnings.simplefilter('ignore', VisprofWarning)\n" + code)
    filtered = _as_another_user(sys.executable, "-c", quiet, cwd=tmp_path)
    assert filtered.returncode == 0 and filtered.stdout.split() == ["None", "1"] and filtered.stderr == ""
    # the CLI: one line, as its errors are
    cli = _as_another_user(*module_command("visprof"), "export", str(store), "-o", str(tmp_path / "rows.csv"),
                           cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    [line] = [line for line in cli.stderr.splitlines() if "read-only" in line]
    assert line.startswith("visprof: warning: ") and "s.db-wal" in line and "VisprofWarning" not in cli.stderr


def test_a_dry_run_lists_the_plan_of_a_store_in_a_folder_the_user_cannot_write(read_only_folder, tmp_path):
    """A dry run creates nothing: it had been refused with "--store: directory ... is not writable"."""
    store = _store(read_only_folder, wal_rows=False)
    read_only_folder.chmod(0o555)
    done = _as_another_user(*module_command("visprof"), "sweep", "vit_base_patch16_224", "resnet18", "--store",
                            str(store), "--device", "cpu", "--dry-run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 planned, 0 already in the store, 2 to run" in done.stdout, done.stdout  # its row is an H200's
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["s.db"]
    refused = _as_another_user(*module_command("visprof"), "sweep", "resnet18", "--store", str(store),
                               "--device", "cpu", cwd=tmp_path)  # a real run must write there
    assert refused.returncode == 2 and "not writable" in refused.stderr, refused.stderr
