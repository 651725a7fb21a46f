"""Clean latency of visprof's timing pass against a timm benchmark.py-style loop, each model
in a fresh process so that no earlier tracing or profiler session in the process can colour
either number. Order per model: timm loop, visprof timing pass, timm loop again; the two
timm loops bracket visprof and show how much the host itself drifted.

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


def one(name: str, batch: int, precision: str) -> dict:
    import visprof
    from visprof.models import resolve_model
    from visprof.passes.runner import ModelRunner, RunConfig

    runner = ModelRunner(resolve_model(name), RunConfig(batch_size=batch, precision=precision, device="cuda:0"))
    before = timm_style_latency_ms(runner, warmup=50, steps=100)
    runner.close()
    result = visprof.profile(name, batch_size=batch, precision=precision, passes="timing", progress=False)
    runner = ModelRunner(resolve_model(name), RunConfig(batch_size=batch, precision=precision, device="cuda:0"))
    after = timm_style_latency_ms(runner, warmup=50, steps=100)
    visprof_ms = result.timing.latency_ms.median
    reference = (before + after) / 2
    return {"model": name, "timm_loop_before_ms": before, "visprof_ms": visprof_ms, "timm_loop_after_ms": after,
            "visprof_vs_timm": visprof_ms / reference - 1, "timm_drift": after / before - 1,
            "within_3pct": abs(visprof_ms / reference - 1) <= 0.03,
            "sm_clock_mhz": (result.gpu or {}).get("during_run", {}) and result.gpu["during_run"].get("sm_clock_mhz")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(REFERENCE_MODELS))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.batch_size, args.precision)))
        return 0
    rows = []
    for name in args.models.split(","):
        proc = subprocess.run([sys.executable, __file__, "--one", name, "--batch-size", str(args.batch_size),
                               "--precision", args.precision], capture_output=True, text=True)
        if proc.returncode != 0:
            rows.append({"model": name, "error": proc.stderr[-500:]})
            print(f"{name}: FAILED", proc.stderr[-300:], flush=True)
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{name:32s} timm {row['timm_loop_before_ms']:8.3f} / {row['timm_loop_after_ms']:8.3f} ms  visprof "
              f"{row['visprof_ms']:8.3f} ms  ({row['visprof_vs_timm']:+.1%}, timm drift {row['timm_drift']:+.1%})", flush=True)
        if args.json:
            args.json.write_text(json.dumps({"provenance": provenance(), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
