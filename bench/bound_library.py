"""A bound library (``visprof bounds``) from the per-kernel counters `bench/ncu_roofline.py` recorded.

    python bench/bound_library.py bench/results/h200-s15-ncu/ncu-roofline-h200.json -o /tmp/h200-bounds.json
    visprof bounds coverage /tmp/h200-bounds.json /tmp/profiles.db

`bench/ncu_roofline.py` keeps each model's `visprof ncu` counters (``result.counters.kernels``) in
its rows rather than whole ProfileResults; this turns those rows into the counter sets
``visprof bounds build`` takes from `visprof ncu --json` results. Record:
bench/results/bounds-2026-12-03/.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from visprof.analysis.measured_bounds import CounterSet, build_library
from visprof.result import KernelCounters


def counter_sets(rows: list[dict]) -> list[CounterSet]:
    return [CounterSet(model=row["model"], gpu=row["gpu"], tool=row["tool"],
                       kernels=[KernelCounters(**k) for k in row["kernels"]]) for row in rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recordings", nargs="+", type=Path, help="bench/ncu_roofline.py --json outputs")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = [row for path in args.recordings for row in json.loads(path.read_text())["rows"]]
    library = build_library(counter_sets(rows))
    library.save(args.output)
    print(f"{args.output}: {len(library.entries)} entries from {len(rows)} models on {library.gpu}")
    for e in library.entries:
        span = f"{e.dram_pct_range[0]:.0f}-{e.dram_pct_range[1]:.0f}" if e.dram_pct_range else "-"
        print(f"  {e.family[:60]:<60} {e.category:<13} SM {e.sm_pct:5.1f}%  DRAM {e.dram_pct:5.1f}% ({span})  "
              f"{e.bound:<8} {','.join(e.models)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
