"""Records the two real Nsight Systems fixtures on a CPU-only machine (NVTX tracing only):

    coatnet_nano_rw_224.nsys2022.sqlite.gz  visprof profile coatnet_nano_rw_224 --img-size 64
                                            -b 1 --device cpu --iterations 2 --nvtx-only
    training_loop.nsys2022.sqlite.gz        training_loop.py: 2 SGD steps under visprof.trace()

Needs an nsys: $VISPROF_NSYS (e.g. the Debian 2022.4 pack of /work/shared/tools/nsys-pack.sh,
with LD_LIBRARY_PATH set to its host-linux-x64 folder). Each program runs under
`nsys profile --trace nvtx --sample none --cpuctxsw none`, is exported with
`nsys export --type sqlite`, and then loses the tables visprof does not read and that describe
the recording machine (environment variables, process and thread lists): NVTX_EVENTS,
StringIds, the ENUM_* tables and the export's meta data stay as nsys wrote them.

    python tests/data/nsys/record_cpu_fixtures.py
"""
from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
KEEP = {"StringIds", "NVTX_EVENTS", "EXPORT_META_DATA", "META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME"}
PROGRAMS = {
    "coatnet_nano_rw_224": [sys.executable, "-m", "visprof", "profile", "coatnet_nano_rw_224", "--img-size", "64",
                            "-b", "1", "--device", "cpu", "--iterations", "2", "--warmup", "1", "--nvtx-only",
                            "--quiet"],
    "training_loop": [sys.executable, str(HERE / "training_loop.py")],
}


def record(name: str, program: list[str], nsys: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / name
        subprocess.run([nsys, "profile", "--trace", "nvtx", "--sample", "none", "--cpuctxsw", "none",
                        "--output", str(base), *program], check=True, env=env, cwd=scratch)
        sqlite = base.with_suffix(".sqlite")
        subprocess.run([nsys, "export", "--type", "sqlite", "--output", str(sqlite), str(base) + ".nsys-rep"],
                       check=True, cwd=scratch)
        db = sqlite3.connect(sqlite)
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if table not in KEEP and not table.startswith("ENUM_"):
                db.execute(f"DROP TABLE {table}")
        db.execute("DELETE FROM EXPORT_META_DATA WHERE name LIKE '%PATH%' OR name IN ('EXPORT_HOST', 'EXPORT_USER')")
        db.commit()
        db.execute("VACUUM")
        db.close()
        out = HERE / f"{name}.nsys2022.sqlite.gz"
        with open(sqlite, "rb") as src, gzip.GzipFile(out, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    nsys = os.environ.get("VISPROF_NSYS") or shutil.which("nsys")
    if not nsys:
        sys.exit("set VISPROF_NSYS to an nsys executable")
    for name in sys.argv[1:] or PROGRAMS:
        record(name, PROGRAMS[name], nsys)
