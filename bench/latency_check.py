"""Clean latency of visprof's timing pass against a timm benchmark.py-style loop, each model
in a fresh process so that no earlier tracing or profiler session in the process can colour
either number. The two alternate on one model instance for `--rounds` rounds; the ratio is
taken per round (neighbouring measurements share the host's state of the moment) and the
median ratio is reported. The first H200 runs showed the host drifting by up to 50% between
two identical loops a few seconds apart, which a single before/after pair cannot absorb.

    python bench/latency_check.py --json bench/results/latency-vs-timm-h200.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402
from profile_validation import REFERENCE_MODELS, timm_style_latency_ms  # noqa: E402


def one(name: str, batch: int, precision: str, rounds: int) -> dict:
    import statistics

    from visprof.models import resolve_model
    from visprof.passes.runner import ModelRunner, RunConfig
    from visprof.passes.timing import run_timing_pass

    runner = ModelRunner(resolve_model(name), RunConfig(batch_size=batch, precision=precision, device="cuda:0"))
    timm_ms, visprof_ms = [], []
    for _ in range(rounds):
        timm_ms.append(timm_style_latency_ms(runner, warmup=20, steps=100))
        visprof_ms.append(run_timing_pass(runner).latency_ms.median)
    ratios = [v / t for v, t in zip(visprof_ms, timm_ms)]
    ratio = statistics.median(ratios)
    return {"model": name, "timm_loop_ms": timm_ms, "visprof_ms": visprof_ms, "ratios": ratios,
            "visprof_vs_timm": ratio - 1, "timm_spread": max(timm_ms) / min(timm_ms) - 1,
            "within_3pct": abs(ratio - 1) <= 0.03}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(REFERENCE_MODELS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.batch_size, args.precision, args.rounds)))
        return 0
    rows = []
    for name in args.models.split(","):
        proc = subprocess.run([sys.executable, __file__, "--one", name, "--batch-size", str(args.batch_size),
                               "--precision", args.precision, "--rounds", str(args.rounds)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            rows.append({"model": name, "error": proc.stderr[-500:]})
            print(f"{name}: FAILED", proc.stderr[-300:], flush=True)
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{name:32s} visprof vs timm loop {row['visprof_vs_timm']:+.1%} (median of {args.rounds} rounds; "
              f"timm loop spread {row['timm_spread']:.1%})  {'OK' if row['within_3pct'] else 'FAIL'}", flush=True)
        if args.json:
            args.json.write_text(json.dumps({"provenance": provenance(), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
