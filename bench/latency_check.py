"""Clean latency of visprof's timing pass against a timm benchmark.py-style loop, each model
in a fresh process so that no earlier tracing or profiler session in the process can colour
either number. The two alternate on one model instance for `--rounds` rounds; the ratio is
taken per round (neighbouring measurements share the host's state of the moment) and the
median ratio is reported. The first H200 runs showed the host drifting by up to 50% between
two identical loops a few seconds apart, which a single before/after pair cannot absorb.

timm's benchmark.py reports the mean step time; visprof reports the median. On a quiet host
they agree; on this one a few slow steps move a mean by several percent (a second H200 run,
bench/results/h200-callback-1, saw the timm loop's mean move 39% between rounds). Both
statistics are compared like for like: the loop's median against visprof's median (the
acceptance figure) and the loop's mean against visprof's mean.

    python bench/latency_check.py --json bench/results/latency-vs-timm-h200.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _fresh_process import run_one  # noqa: E402
from _provenance import provenance  # noqa: E402
from profile_validation import REFERENCE_MODELS, timm_style_steps_ms  # noqa: E402


def one(name: str, batch: int, precision: str, rounds: int) -> dict:
    import statistics

    from visprof.models import resolve_model
    from visprof.passes.runner import ModelRunner, RunConfig
    from visprof.passes.timing import run_timing_pass

    runner = ModelRunner(resolve_model(name), RunConfig(batch_size=batch, precision=precision, device="cuda:0"))
    loop_median, loop_mean, visprof_median, visprof_mean = [], [], [], []
    for _ in range(rounds):
        steps = timm_style_steps_ms(runner, warmup=20, steps=100)
        loop_median.append(statistics.median(steps))
        loop_mean.append(statistics.mean(steps))
        latency = run_timing_pass(runner).latency_ms
        visprof_median.append(latency.median)
        visprof_mean.append(latency.mean)
    by_median = statistics.median(v / t for v, t in zip(visprof_median, loop_median))
    by_mean = statistics.median(v / t for v, t in zip(visprof_mean, loop_mean))
    return {"model": name, "timm_loop_median_ms": loop_median, "timm_loop_mean_ms": loop_mean,
            "visprof_median_ms": visprof_median, "visprof_mean_ms": visprof_mean,
            "visprof_vs_timm": by_median - 1, "visprof_vs_timm_means": by_mean - 1,
            "timm_median_spread": max(loop_median) / min(loop_median) - 1,
            "timm_mean_spread": max(loop_mean) / min(loop_mean) - 1,
            "within_3pct": abs(by_median - 1) <= 0.03}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(REFERENCE_MODELS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.batch_size, args.precision, args.rounds)))
        return 0
    rows = []
    for name in args.models.split(","):
        row = run_one(__file__, name, ["--batch-size", str(args.batch_size), "--precision", args.precision,
                                       "--rounds", str(args.rounds)])
        rows.append(row)
        if "error" not in row:
            print(f"{name:32s} visprof vs timm loop: medians {row['visprof_vs_timm']:+.1%}, means "
                  f"{row['visprof_vs_timm_means']:+.1%} (median of {args.rounds} rounds; timm loop spread "
                  f"{row['timm_median_spread']:.1%} / {row['timm_mean_spread']:.1%})  "
                  f"{'OK' if row['within_3pct'] else 'FAIL'}", flush=True)
        if args.json:  # after every model: a crash loses nothing done so far
            args.json.write_text(json.dumps({"provenance": provenance(), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
