"""Repacks a wheel without some of its files, so that it fits a size limit (the device
machine takes at most 64 MiB of working tree a call, and Ray's wheel is 76 MiB).

    python bench/slim_wheel.py .whl/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl \
        --drop ray/jars/ --drop '*.js.map'

The defaults drop what a Python-only Ray never loads: ``ray/jars/`` (31 MiB, the Java
worker) and the dashboard's source maps. The wheel's RECORD loses the dropped files' lines,
so pip installs the result as it would the original. The wheel is rewritten in place
(through a temporary file: complete or untouched).
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import sys
import tempfile
import zipfile
from pathlib import Path

DEFAULT_DROP = ("ray/jars/*", "*.js.map")


def slim(path: Path, patterns: list[str]) -> tuple[int, int, int]:
    """(files dropped, bytes before, bytes after)."""
    before = path.stat().st_size
    with zipfile.ZipFile(path) as src:
        names = src.namelist()
        dropped = {n for n in names if any(fnmatch.fnmatch(n, p) or n.startswith(p.rstrip("*")) and p.endswith("/*")
                                           for p in patterns)}
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".partial")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as out:
                for info in src.infolist():
                    if info.filename in dropped:
                        continue
                    data = src.read(info)
                    if info.filename == record:
                        lines = data.decode().splitlines(keepends=True)
                        data = "".join(line for line in lines if line.split(",", 1)[0] not in dropped).encode()
                    out.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return len(dropped), before, path.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--drop", action="append", help=f"glob of files to drop (default: {', '.join(DEFAULT_DROP)})")
    args = parser.parse_args()
    count, before, after = slim(args.wheel, args.drop or list(DEFAULT_DROP))
    print(f"{args.wheel.name}: dropped {count} files, {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
