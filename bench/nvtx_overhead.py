"""What `visprof profile --nvtx-only` adds per op: the measured loop with visprof's NVTX ranges
(C++ op replay pushing category, op and module ranges; no CUPTI) against the same loop clean.

Target (issue 11): < 1 us per op. No Nsight tool is attached, so this is visprof's own cost
(the RecordFunction observer and the registered pushes); under nsys or ncu the tool adds its
own cost per range on top.

Per model, in a fresh process, batch 1 (launch-bound: the host's time is the wall time, so
host overhead shows in full), after a warm-up: `--rounds` rounds of three loops of
`--iterations` synchronized forwards (clean, with ranges, observe-only), each loop first in
turn. Reported per op:
  wall  = (median iteration wall with ranges - clean) / ops per iteration
  host  = the same for the host time of the forward call alone (before the synchronize)
and the median over rounds. "observe-only" is the wall figure of the same observer seeing every
aten call ("calls" per iteration) with no call mapped to an op (nothing pushed, no clock read):
torch's RecordFunction per call and the observer's check, apart from what visprof does per op.
The table's "added ms" is the wall statistic before the division (the median over rounds of
each round's paired difference), so us/op = added ms * 1000 / ops; "clean ms" and "nvtx ms"
are medians of their own over rounds, and their difference can differ from "added ms" when
the machine drifts between rounds.

    python bench/nvtx_overhead.py --json bench/results/nvtx-overhead-h200.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _fresh_process import run_one  # noqa: E402
from _provenance import provenance  # noqa: E402

MODELS = "resnet50,vit_base_patch16_224,swin_tiny_patch4_window7_224,mobilenetv3_large_100"
TARGET_US = 1.0


def _loop(runner, iterations: int, capture=None) -> tuple[float, float]:
    """Median (wall, host) ms per iteration of `iterations` synchronized forwards."""
    walls, hosts = [], []
    for i in range(iterations):
        if capture is not None:
            capture.start_iteration(i)
        t0 = time.perf_counter()
        runner()
        t1 = time.perf_counter()
        runner.sync()
        t2 = time.perf_counter()
        walls.append((t2 - t0) * 1e3)
        hosts.append((t1 - t0) * 1e3)
    return statistics.median(walls), statistics.median(hosts)


def one(name: str, batch: int, precision: str, iterations: int, rounds: int, device: str = "cuda:0") -> dict:
    from visprof.capture import ModuleTracker, OpCapture
    from visprof.categories import default_table
    from visprof.models import resolve_model
    from visprof.native import native
    from visprof.native.aten_observer import load_observer
    from visprof.passes.runner import ModelRunner, RunConfig
    from visprof.passes.timing import warm_up
    from visprof.replay_capture import ReplayCapture

    spec = resolve_model(name)
    runner = ModelRunner(spec, RunConfig(batch_size=batch, precision=precision, device=device))
    warm_up(runner, None, min_seconds=2.0 if device.startswith("cuda") else 0.0)
    tracker = ModuleTracker(spec.module)
    template = OpCapture(tracker, default_table(), nvtx=False)
    with tracker, template:
        runner()
        runner.sync()
    planned = OpCapture(tracker, default_table(), nvtx=True, template=template, model_name=spec.name)
    observer, why = load_observer()
    if observer is None:
        raise RuntimeError(f"ATen observer unavailable: {why}")

    def forward():
        runner()
        runner.sync()

    replay, why = ReplayCapture.prepare(observer, planned, forward, iterations)
    if replay is None:
        raise RuntimeError(why)
    ops = len(planned.template_ops())
    assert not native().tracer.active()
    # The same observer with no call mapped to an op: it sees every aten call and pushes nothing,
    # so its cost is torch's RecordFunction per call plus the observer's check of the call.
    observe_only = ReplayCapture(observer, planned, [-1] * replay.recorded_calls, iterations)

    def clean_loop():
        return _loop(runner, iterations)

    def in_capture(capture):
        def loop():
            with capture:
                return _loop(runner, iterations, capture)
        return loop

    loops = {"clean": clean_loop, "nvtx": in_capture(replay), "observe_only": in_capture(observe_only)}
    pairs = []
    for round_ in range(rounds):
        order = list(loops)[round_ % 3:] + list(loops)[:round_ % 3]  # each loop first in turn
        got = {key: loops[key]() for key in order}
        clean, ranged, observed = got["clean"], got["nvtx"], got["observe_only"]
        pairs.append({"clean_wall_ms": clean[0], "nvtx_wall_ms": ranged[0], "clean_host_ms": clean[1],
                      "nvtx_host_ms": ranged[1], "observe_only_wall_ms": observed[0],
                      "wall_us_per_op": (ranged[0] - clean[0]) * 1e3 / ops,
                      "host_us_per_op": (ranged[1] - clean[1]) * 1e3 / ops,
                      "observe_only_wall_us_per_op": (observed[0] - clean[0]) * 1e3 / ops})
    if replay.diverged_iterations:
        raise RuntimeError(f"replay diverged: {replay.diverged_iterations}")
    return {"model": name, "batch_size": batch, "ops_per_iteration": ops, "rounds": pairs,
            "wall_us_per_op": statistics.median(p["wall_us_per_op"] for p in pairs),
            "host_us_per_op": statistics.median(p["host_us_per_op"] for p in pairs),
            "observe_only_wall_us_per_op": statistics.median(p["observe_only_wall_us_per_op"] for p in pairs),
            "recorded_calls_per_iteration": replay.recorded_calls,
            "added_wall_ms": statistics.median(p["nvtx_wall_ms"] - p["clean_wall_ms"] for p in pairs),
            "clean_wall_ms": statistics.median(p["clean_wall_ms"] for p in pairs),
            "nvtx_wall_ms": statistics.median(p["nvtx_wall_ms"] for p in pairs)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cuda:0", help="cpu only to try the script out")
    parser.add_argument("--one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.batch_size, args.precision, args.iterations, args.rounds, args.device)))
        return 0
    settings = ["--batch-size", str(args.batch_size), "--precision", args.precision, "--iterations",
                str(args.iterations), "--rounds", str(args.rounds), "--device", args.device]
    rows = [run_one(__file__, name, settings) for name in args.models.split(",")]
    result = {"provenance": provenance(), "device": args.device, "target_us_per_op": TARGET_US, "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n--nvtx-only overhead per op (batch {args.batch_size}, {args.precision}, median of {args.rounds} rounds "
          f"of {args.iterations} iterations; target < {TARGET_US} us)")
    print(f"{'model':32s} {'ops':>5s} {'calls':>5s} {'clean ms':>9s} {'nvtx ms':>9s} {'added ms':>9s} {'wall us/op':>10s} "
          f"{'host us/op':>10s} {'observe-only':>12s}  ok")
    for r in rows:
        if "error" in r:
            print(f"{r['model']:32s} ERROR")
            continue
        ok = r["wall_us_per_op"] < TARGET_US and r["host_us_per_op"] < TARGET_US
        print(f"{r['model']:32s} {r['ops_per_iteration']:5d} {r['recorded_calls_per_iteration']:5d} "
              f"{r['clean_wall_ms']:9.3f} {r['nvtx_wall_ms']:9.3f} {r['added_wall_ms']:9.3f} {r['wall_us_per_op']:10.3f} "
              f"{r['host_us_per_op']:10.3f} {r['observe_only_wall_us_per_op']:12.3f}  {'yes' if ok else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
