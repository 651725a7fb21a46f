"""``visprof nsys run -- python train.py``: record a program with Nsight Systems, export it.

Builds and runs

    nsys profile --trace cuda,nvtx --sample none --cpuctxsw none [--capture-range cudaProfilerApi
                 --capture-range-end stop] --force-overwrite true --output BASE PROGRAM...
    nsys export --type sqlite --force-overwrite true --output BASE.sqlite BASE.nsys-rep

CPU sampling and context switches are off: visprof reads NVTX ranges, CUDA API calls and
GPU work only, and sampling makes reports large. The capture range is the profiler API
when the program is ``visprof profile ... --nvtx-only`` (which brackets exactly its measured
iterations), else the whole run. Both files appear complete or not at all: nsys writes
beside them under a temporary name, renamed once the export succeeded.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from visprof.base.errors import BadInputError
from visprof.nsight.tools import failure, find_tool, run_tool
from visprof.base.output_paths import check_output_paths

CAPTURE_RANGES = ("auto", "none", "cudaProfilerApi")


@dataclass
class NsysOutputs:
    report: Path  # BASE.nsys-rep
    sqlite: Path  # BASE.sqlite
    program_status: int  # nsys's exit status (the program's, for nsys >= 2023)


def output_paths(base: str | Path) -> tuple[Path, Path]:
    base = Path(base)
    if base.suffix in (".nsys-rep", ".qdrep", ".sqlite"):
        base = base.with_suffix("")
    return base.with_name(base.name + ".nsys-rep"), base.with_name(base.name + ".sqlite")


def _device_asked(program: list[str]) -> str | None:
    """The ``--device`` a program's arguments give (``--device X`` or ``--device=X``), lower case."""
    for before, arg in zip(["", *program], program):
        if arg.startswith("--device="):
            return arg.partition("=")[2].lower()
        if before == "--device":
            return arg.lower()
    return None


def wants_profiler_api(program: list[str]) -> bool:
    """True for a visprof --nvtx-only run on a GPU: it brackets its measured iterations with
    cudaProfilerStart/Stop itself (on the CPU there is no CUDA profiler API to call). Without a
    --device (or with auto) the run takes a GPU where one is visible, as this process sees it: on a
    machine without one, the profiler API had been asked for, and nsys recorded nothing."""
    if "--nvtx-only" not in program:
        return False
    device = _device_asked(program)
    if device in (None, "auto"):
        from visprof.base.hardware import torch_cuda

        return torch_cuda() is not None
    return device != "cpu"


def profile_command(nsys: Path, base: Path, program: list[str], capture_range: str, trace: str) -> list[str]:
    command = [str(nsys), "profile", "--trace", trace, "--sample", "none", "--cpuctxsw", "none"]
    if capture_range == "cudaProfilerApi" or capture_range == "auto" and wants_profiler_api(program):
        command += ["--capture-range", "cudaProfilerApi", "--capture-range-end", "stop"]
    return command + ["--force-overwrite", "true", "--output", str(base), *program]


def export_command(nsys: Path, report: Path, sqlite: Path) -> list[str]:
    return [str(nsys), "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(sqlite), str(report)]


# A table visprof adds to the SQLite export it writes: the pair (BASE.nsys-rep, BASE.sqlite) is its own, and a
# later run may replace it; anything else there is the user's (an export or recording of theirs, a store, a text).
RUN_TABLE = "visprof_nsys_run"


def _mark_as_ours(export: Path, program: list[str]) -> None:
    import json
    import sqlite3

    conn = sqlite3.connect(export)
    try:
        with conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {RUN_TABLE} (program TEXT)")
            conn.execute(f"INSERT INTO {RUN_TABLE} VALUES (?)", (json.dumps(program),))
    finally:
        conn.close()


def _is_ours(export: Path) -> bool:
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                (RUN_TABLE,)).fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def check_replaceable(report: Path, sqlite: Path) -> None:
    """An existing BASE.sqlite or BASE.nsys-rep is replaced only where the pair is an earlier run's of
    visprof (its export carries RUN_TABLE), or empty: a second run with the default -o had been refused
    (its own export taken for a results store), while a user's BASE.nsys-rep was replaced unread."""
    ours = sqlite.is_file() and _is_ours(sqlite)
    for what, path in (("-o export", sqlite), ("-o report", report)):
        if path.is_file() and path.stat().st_size and not ours:
            raise BadInputError(f"{what} {path} exists and is no recording visprof nsys run made (its export "
                                f"{sqlite.name} would carry visprof's mark); give another -o, or remove it first if "
                                "it is to go")


def run_nsys(program: list[str], base: str | Path, *, capture_range: str = "auto", nsys: str | None = None,
             trace: str = "cuda,nvtx") -> NsysOutputs:
    """Records `program` with nsys and exports it to SQLite; returns the two files."""
    if not program:
        raise BadInputError("nothing to run: give the program after --, e.g. visprof nsys run -- python train.py")
    if capture_range not in CAPTURE_RANGES:
        raise BadInputError(f"--capture-range must be one of {', '.join(CAPTURE_RANGES)}, got {capture_range!r}")
    report, sqlite = output_paths(base)
    check_output_paths({"report": report, "export": sqlite}, sqlite=("export",))  # nsys's export is SQLite
    check_replaceable(report, sqlite)
    tool = find_tool("nsys", nsys)
    partial = report.with_name(f".{report.name[:-len('.nsys-rep')]}.partial-{os.getpid()}")
    partial_report, partial_sqlite = output_paths(partial)
    command = profile_command(tool, partial, program, capture_range, trace)
    try:
        proc = run_tool("nsys", command, capture=False)
        produced = next((p for p in (partial_report, partial.with_name(partial.name + ".qdrep")) if p.is_file()), None)
        if produced is None:
            why = ("no report was written: with --capture-range cudaProfilerApi nsys records only after the program "
                   "calls cudaProfilerStart" if "cudaProfilerApi" in command else "no report was written")
            raise failure("nsys", proc, f"nsys profile ({why})")
        exported = run_tool("nsys", export_command(tool, produced, partial_sqlite))
        if exported.returncode != 0 or not partial_sqlite.is_file():
            raise failure("nsys", exported, "nsys export")
        _mark_as_ours(partial_sqlite, program)
        os.replace(produced, report)
        os.replace(partial_sqlite, sqlite)
    finally:
        for leftover in (partial_report, partial.with_name(partial.name + ".qdrep"), partial_sqlite):
            if leftover.exists():
                leftover.unlink()
    return NsysOutputs(report, sqlite, proc.returncode)
