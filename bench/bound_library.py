"""A bound library (``visprof bounds``) from the per-kernel counters `bench/ncu_roofline.py` recorded.

    python bench/bound_library.py bench/results/h200-s15-ncu/ncu-roofline-h200.json -o /tmp/h200-bounds.json
    visprof bounds coverage /tmp/h200-bounds.json /tmp/profiles.db

`bench/ncu_roofline.py` keeps each model's `visprof ncu` counters (``result.counters.kernels``) in
its rows rather than whole ProfileResults; this turns those rows into the counter sets
``visprof bounds build`` takes from `visprof ncu --json` results, and pools them with any such
results given beside them (e.g. the ``ncu-bounds`` step of ``bench/h200_session.sh``):

    python bench/bound_library.py bench/results/h200-s15-ncu/ncu-roofline-h200.json ncu-bounds/ncu-*.json -o lib.json

Record: bench/results/bounds-2026-12-03/.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from visprof.analysis.measured_bounds import CounterSet, build_library, counter_set
from visprof.base.errors import BadInputError
from visprof.base.output_paths import check_output_paths
from visprof.result import KernelCounters, ProfileResult


def counter_sets(rows: list[dict]) -> list[CounterSet]:
    return [CounterSet(model=row["model"], gpu=row["gpu"], tool=row["tool"],
                       kernels=[KernelCounters(**k) for k in row["kernels"]]) for row in rows]


def read(path: Path) -> list[CounterSet]:
    """An ncu_roofline.py recording (its rows), or one `visprof ncu --json` result."""
    doc = json.loads(path.read_text())
    if isinstance(doc, dict) and "rows" in doc:
        return counter_sets(doc["rows"])
    return [counter_set(ProfileResult.from_dict(doc))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recordings", nargs="+", type=Path,
                        help="bench/ncu_roofline.py --json outputs and/or `visprof ncu --json` results")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        check_output_paths({"-o": args.output}, inputs={"recordings": args.recordings})  # never write over an input
        sets = [one for path in args.recordings for one in read(path)]
        library = build_library(sets)
    except BadInputError as exc:
        print(f"bound_library.py: {exc}", file=sys.stderr)
        return 2
    library.save(args.output)
    print(f"{args.output}: {len(library.entries)} entries from {len(sets)} models on {library.gpu}")
    for e in library.entries:
        span = f"{e.dram_pct_range[0]:.0f}-{e.dram_pct_range[1]:.0f}" if e.dram_pct_range else "-"
        print(f"  {e.family[:60]:<60} {e.category:<13} SM {e.sm_pct:5.1f}%  DRAM {e.dram_pct:5.1f}% ({span})  "
              f"{e.bound:<8} {','.join(e.models)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
