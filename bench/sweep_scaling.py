"""The 2-GPU sweep rate against the 1-GPU rate on the same models (issue 9: >= 1.8).

Two sweep runs of one model list, recorded in their stores (``visprof sweep`` keeps each run's
elapsed and worker start-up time, and each cell's wall time): a run on one GPU and a run on two.
When a run stopped at its time budget before the list's end, the comparison takes the models
both runs measured. Times are steady state, from the first ready worker (start-up apart):

  two GPUs   the 2-GPU run's elapsed minus its start-up, when every model it measured is
             among the common ones (its cells run in list order, so that holds when it
             measured fewer); else its cell walls scaled by elapsed / sum of walls
  one GPU    the 1-GPU run's cell walls of the common models, plus its mean gap between
             cells (elapsed minus start-up minus all its walls, per cell)

The rate ratio is the 1-GPU time over the 2-GPU time for the same models. A 2-GPU run that hit
its budget spends its last seconds with idle workers (no cell is started that could not end in
time), so the ratio it gives is a lower bound.

    python bench/sweep_scaling.py --one-gpu scaling-1gpu.db:1 --two-gpu sweep-h200x2.db:4 \
        --json bench/results/h200x2-s16/sweep-scaling.json
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402


def load_run(spec: str) -> dict:
    """``STORE:RUN_ID`` -> the run's row and {model: (wall_s, gpu_uuid)} of its cells."""
    path, _, run_id = spec.rpartition(":")
    if not path or not run_id.isdigit():
        raise SystemExit(f"expected STORE:RUN_ID (a sweep store and one of its runs), got {spec!r}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM runs WHERE id = ?", (int(run_id),)).fetchone()
    except sqlite3.Error as exc:
        raise SystemExit(f"{path}: not a readable sweep store ({exc})") from None
    if row is None:
        raise SystemExit(f"{path} has no run {run_id} (see its runs table, or `visprof sweep` output)")
    run = dict(row)
    cells = {r["model"]: (r["wall_s"], r["gpu_uuid"]) for r in
             conn.execute("SELECT model, wall_s, gpu_uuid FROM results WHERE run_id = ?", (int(run_id),))}
    conn.close()
    return {"store": path, "run": run, "cells": cells}


def compare(one: dict, two: dict) -> dict:
    common = sorted(set(one["cells"]) & set(two["cells"]))
    if not common:
        raise SystemExit("the two runs measured no model in common")
    one_steady = one["run"]["elapsed_s"] - one["run"]["startup_s"]
    one_gap = (one_steady - sum(w for w, _ in one["cells"].values())) / len(one["cells"])
    one_time = sum(one["cells"][m][0] + one_gap for m in common)
    two_steady = two["run"]["elapsed_s"] - two["run"]["startup_s"]
    two_walls = sum(w for w, _ in two["cells"].values())
    if set(two["cells"]) <= set(common):
        two_time = two_steady
    else:
        two_time = sum(two["cells"][m][0] for m in common) * two_steady / two_walls
    return {
        "models": common, "count": len(common),
        "one_gpu": {"store": one["store"], "run_id": one["run"]["id"], "executor": one["run"]["executor"],
                    "steady_s": one_steady, "time_s_common": one_time, "rate_per_min": len(common) / one_time * 60,
                    "gpus": sorted({g for _, g in one["cells"].values()})},
        "two_gpus": {"store": two["store"], "run_id": two["run"]["id"], "executor": two["run"]["executor"],
                     "steady_s": two_steady, "time_s_common": two_time, "rate_per_min": len(common) / two_time * 60,
                     "gpus": sorted({g for _, g in two["cells"].values()}),
                     "sum_cell_walls_s": two_walls},
        "cell_walls_common_s": {"one_gpu": sum(one["cells"][m][0] for m in common),
                                "two_gpus": sum(two["cells"][m][0] for m in common)},
        "rate_ratio": one_time / two_time,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one-gpu", required=True, metavar="STORE:RUN_ID")
    parser.add_argument("--two-gpu", required=True, metavar="STORE:RUN_ID")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = compare(load_run(args.one_gpu), load_run(args.two_gpu))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"provenance": provenance(), **result}, indent=1) + "\n")
    one, two = result["one_gpu"], result["two_gpus"]
    print(f"same {result['count']} models: 1 GPU {one['time_s_common']:.1f} s ({one['rate_per_min']:.1f} models/min), "
          f"2 GPUs {two['time_s_common']:.1f} s ({two['rate_per_min']:.1f} models/min; GPUs {', '.join(g[:8] for g in two['gpus'])})")
    print(f"cell walls of those models: 1 GPU {result['cell_walls_common_s']['one_gpu']:.1f} s, "
          f"2 GPUs {result['cell_walls_common_s']['two_gpus']:.1f} s (the same work per cell)")
    print(f"rate on 2 GPUs / rate on 1 GPU: {result['rate_ratio']:.2f} (target >= 1.8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
