"""What the bench scripts judged on published GPU pairs share: the command line and the fleet of a pair."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Callable

from visprof.analysis import sources
from visprof.analysis.calibrate import Fleet
from visprof.analysis.calibration_fleet import fleet_from_comparison
from visprof.analysis.compare import compare
from visprof.analysis.gpus import gpu_table
from visprof.base.errors import BadInputError


def pair_fleet(refs: Path, base: str, target: str, store: Path) -> Fleet:
    """The calibration fleet of one pair: the published tables of ``refs`` joined with the profiles of ``store``."""
    table = gpu_table()
    loaded = sources.load([refs, store], table)
    return fleet_from_comparison(compare(loaded.measurements, base, target, table), loaded.profiles, table)[0]


def not_found(prog: str, paths) -> bool:
    """Whether any of ``paths`` is not a file; those are named on one line on stderr."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        print(f"{prog}: not found: {', '.join(missing)}", file=sys.stderr)
    return bool(missing)


def per_pair_main(argv, doc: str, prog: str, run: Callable[[Path, str, str, Path], str]) -> int:
    """``--pair REFS BASE TARGET`` (one or more) and ``--store``; prints ``run(refs, base, target, store)`` per
    pair. A missing input or a BadInputError is one line on stderr, exit status 2."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("REFS_DB", "BASE", "TARGET"))
    parser.add_argument("--store", type=Path, required=True)
    args = parser.parse_args(argv)
    if not_found(prog, [args.store, *(Path(p[0]) for p in args.pair)]):
        return 2
    try:
        for refs, base, target in args.pair:
            print(run(Path(refs), base, target, args.store), flush=True)
    except BadInputError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return 0


def run_visprof(prog: str, *args: str) -> str:
    """``python -m visprof ARGS`` as a user runs it, from the repository; its stdout. A failure ends
    the calling script with visprof's last words."""
    done = subprocess.run([sys.executable, "-m", "visprof", *args], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{prog}: visprof {args[0]} failed: {done.stderr.strip()[-400:]}")
    return done.stdout
