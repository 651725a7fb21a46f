"""visprof's memory peaks against a plain script's, each in a fresh process, as a user runs them.

bench/latency_check.py compares in one process, model after model. There the reserved peak of
the same plain loop moved with the allocator's history: ResNet-50 680 MiB measured first, 718
MiB measured again after 16 models (bench/results/h200-s16-call1), where visprof said 698 both
times. Reserved memory depends on the order of every allocation and free since the process
started; the figure a user compares with is a fresh process running their script. So here each
side runs alone in its own process, several times:

  plain    timm.create_model(name).cuda().eval(), inputs of its input size, empty_cache,
           reset_peak_memory_stats, a per-forward loop (no_grad, autocast per step; 2 warm-up
           and 3 timed steps), then torch.cuda.max_memory_allocated / max_memory_reserved
  visprof  visprof.profile(name, batch_size=64, precision="bf16"): the memory pass's peak held
           by tensors and its reserved peak

Processes run --parallel at a time (each process has its own allocator: memory peaks do not
depend on what other processes run on the GPU).

    python bench/reserved_fresh.py --repeats 2 --json bench/results/h200-s17-memory/reserved-fresh-h200.json.xz
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _fresh_process import run_one  # noqa: E402
from _provenance import provenance  # noqa: E402
from latency_check import MODELS, cached_segments, plain_memory  # noqa: E402

TOLERANCE = 0.01


def one(name: str, side: str, batch: int) -> dict:
    import torch

    if side == "plain":
        peaks = plain_memory(name, batch, torch.bfloat16)
        return {"model": name, "side": side, "allocated": peaks["max_memory_allocated"],
                "reserved": peaks["max_memory_reserved"], "segments": peaks["segments"]}
    import visprof

    result = visprof.profile(name, batch_size=batch, precision="bf16", progress=False)
    return {"model": name, "side": side, "allocated": result.memory.peak_bytes,
            "reserved": result.memory.reserved_peak_bytes, "segments": cached_segments(),
            "failed_checks": [c.name for c in result.failed_checks]}


def summarize(name: str, runs: list[dict]) -> dict:
    row: dict = {"model": name}
    for side in ("plain", "visprof"):
        done = [r for r in runs if r.get("side") == side]
        row[side] = {"allocated": [r["allocated"] for r in done], "reserved": [r["reserved"] for r in done]}
        row[f"{side}_errors"] = [r["error"][-200:] for r in runs if "error" in r and r.get("side_asked") == side]
    if row["plain"]["reserved"] and row["visprof"]["reserved"]:
        for what in ("allocated", "reserved"):
            plain, mine = statistics.median(row["plain"][what]), statistics.median(row["visprof"][what])
            row[f"{what}_vs_plain"] = mine / plain - 1
            row[f"{what}_within_1pct"] = abs(mine / plain - 1) <= TOLERANCE
        row["plain_reserved_spread"] = max(row["plain"]["reserved"]) / min(row["plain"]["reserved"]) - 1
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--one")
    parser.add_argument("--side", choices=("plain", "visprof"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.side, args.batch_size)))
        return 0
    names = args.models.split(",")
    jobs = [(name, side) for _ in range(args.repeats) for name in names for side in ("plain", "visprof")]
    start = time.perf_counter()

    def run(job):
        name, side = job
        row = run_one(__file__, name, ["--side", side, "--batch-size", str(args.batch_size)])
        row["side_asked"] = side
        return row

    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        runs = list(pool.map(run, jobs))
    rows = [summarize(name, [r for r in runs if r.get("model") == name]) for name in names]
    result = {"provenance": provenance(), "batch_size": args.batch_size, "repeats": args.repeats,
              "wall_s": time.perf_counter() - start, "rows": rows, "runs": runs}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    mib = 2 ** 20
    print(f"memory peaks, each side in fresh processes ({args.repeats} each; MiB, median; within {TOLERANCE:.0%}?)")
    for row in rows:
        if "reserved_vs_plain" not in row:
            print(f"{row['model']:36s} ERROR {row['plain_errors'] or row['visprof_errors']}")
            continue
        fmt = lambda values: "/".join(f"{v / mib:.0f}" for v in values)  # noqa: E731
        print(f"{row['model']:36s} allocated {row['allocated_vs_plain']:+.2%} "
              f"{'ok' if row['allocated_within_1pct'] else 'OFF'} | reserved plain {fmt(row['plain']['reserved'])} "
              f"visprof {fmt(row['visprof']['reserved'])} {row['reserved_vs_plain']:+.2%} "
              f"{'ok' if row['reserved_within_1pct'] else 'OFF'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
