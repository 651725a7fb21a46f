"""What `visprof profile --nvtx-only` adds per op: the measured loop with visprof's NVTX ranges
(C++ op replay pushing category, op and module ranges; no CUPTI) against the same loop clean.

Target (issue 11): < 1 us per op. No Nsight tool is attached, so this is visprof's own cost
(the RecordFunction observer and the registered pushes); under nsys or ncu the tool adds its
own cost per range on top.

Per model, in a fresh process, batch 1 (launch-bound: the host's time is the wall time, so
host overhead shows in full), after a warm-up: `--rounds` rounds of six loops of one untimed
and `--iterations` timed synchronized forwards, each loop first in turn. Rounds are short (six
loops of three forwards, ~0.1 s at batch 1): the lent host switches between its usual speed and
about half of it every few seconds, and a difference is only fair between loops that ran at
the same speed (before 2026-12-02 a round ran 6 x 10 forwards, and a switch inside it moved
the round's difference by up to 17 us per op). The loops:
  clean         no observer;
  nvtx          what --nvtx-only runs: the observer ranges each op, and is off inside an op
                that makes aten calls of its own (they cost nothing then); kernel-less ops (a
                batch norm's aten::empty) ride in the range of the op that wraps them;
  switch_all    the same, with the observer switched off inside every op, leaves included
                (before 2026-12-01, evening);
  limit2        the same, with the observer off only inside ops of more than 2 nested calls;
  unfolded      switch_all with each kernel-less op in a range of its own, so its wrapper is
                observed as well (before 2026-12-01, afternoon);
  observe_only  the observer seeing every aten call and ranging none (torch's RecordFunction
                per call and the observer's check).
Reported per op, each the median over rounds of the round's paired difference with clean:
  wall  = (median iteration wall - clean's) / ops per iteration
  host  = the same for the host time of the forward call alone (before the synchronize)
with the 25th and 75th percentiles over rounds (the host drifts between rounds), and "steady":
the wall figure over the rounds whose clean loop was within 20% of the run's fastest (the lent
host runs some stretches at half speed, its clean forward too). The table's
"added ms" is nvtx's wall difference before the division; "clean ms" and "nvtx ms" are
medians of their own over rounds.

    python bench/nvtx_overhead.py --rounds 200 --iterations 2 --json bench/results/h200-s16-call2/nvtx-overhead-h200.json
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
STEADY = 1.2  # a round counts as steady when its clean loop is within 20% of the run's fastest


def _loop(runner, iterations: int, capture=None) -> tuple[float, float]:
    """Median (wall, host) ms per iteration of `iterations` synchronized forwards, after one
    untimed forward (in a capture, its first replayed iteration: a replay just installed runs
    on cold caches, which --nvtx-only pays once per run, not per iteration)."""
    walls, hosts = [], []
    for i in range(1 + iterations):
        if capture is not None:
            capture.start_iteration(i)
        t0 = time.perf_counter()
        runner()
        t1 = time.perf_counter()
        runner.sync()
        t2 = time.perf_counter()
        if i == 0:
            continue
        walls.append((t2 - t0) * 1e3)
        hosts.append((t1 - t0) * 1e3)
    return statistics.median(walls), statistics.median(hosts)


def one(name: str, batch: int, precision: str, iterations: int, rounds: int, device: str = "cuda:0") -> dict:
    from visprof.capture.op_capture import ModuleTracker, OpCapture
    from visprof.attribution.categories import default_table
    from visprof.passes.models import resolve_model
    from visprof.native import native
    from visprof.native.aten_observer import load_observer
    from visprof.passes.runner import ModelRunner, RunConfig
    from visprof.passes.timing import warm_up
    from visprof.capture.replay import ReplayCapture

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

    replayed = 1 + iterations  # _loop's untimed forward is replayed too
    replay, why = ReplayCapture.prepare(observer, planned, forward, replayed, timestamps=False)  # as --nvtx-only
    # The plan without kernel-less ops folded into their wrappers (what a replay with host times ranges).
    timed, why_timed = ReplayCapture.prepare(observer, planned, forward, replayed)
    if replay is None or timed is None:
        raise RuntimeError(why or why_timed)
    ops = len(planned.template_ops())
    assert not native().tracer.active()
    captures = {
        "nvtx": replay,
        "switch_all": ReplayCapture(observer, planned, replay._plan, replayed, timestamps=False, nested_limit=-1),
        "limit2": ReplayCapture(observer, planned, replay._plan, replayed, timestamps=False, nested_limit=2),
        "unfolded": ReplayCapture(observer, planned, timed._plan, replayed, timestamps=False, nested_limit=-1),
        # No call mapped to an op: it sees every aten call and pushes nothing, so its cost is
        # torch's RecordFunction per call plus the observer's check of the call.
        "observe_only": ReplayCapture(observer, planned, [-1] * replay.recorded_calls, replayed, timestamps=False),
    }

    def in_capture(capture):
        def loop():
            with capture:
                return _loop(runner, iterations, capture)
        return loop

    loops = {"clean": lambda: _loop(runner, iterations), **{key: in_capture(c) for key, c in captures.items()}}
    rounds_ = []
    for round_ in range(rounds):
        keys = list(loops)
        order = keys[round_ % len(keys):] + keys[:round_ % len(keys)]  # each loop first in turn
        got = {key: loops[key]() for key in order}
        row = {f"{key}_{kind}_ms": got[key][i] for key in loops for i, kind in enumerate(("wall", "host"))}
        for key in captures:
            row[f"{key}_wall_us_per_op"] = (got[key][0] - got["clean"][0]) * 1e3 / ops
            row[f"{key}_host_us_per_op"] = (got[key][1] - got["clean"][1]) * 1e3 / ops
        rounds_.append(row)
    for key, capture in captures.items():
        if capture.diverged_iterations:
            raise RuntimeError(f"{key} replay diverged: {capture.diverged_iterations}")
    result = {"model": name, "batch_size": batch, "ops_per_iteration": ops, "rounds": rounds_,
              "recorded_calls_per_iteration": replay.recorded_calls,
              "folded_ops_per_iteration": len(replay.folded_ops),
              "added_wall_ms": statistics.median(r["nvtx_wall_ms"] - r["clean_wall_ms"] for r in rounds_),
              "clean_wall_ms": statistics.median(r["clean_wall_ms"] for r in rounds_),
              "nvtx_wall_ms": statistics.median(r["nvtx_wall_ms"] for r in rounds_)}
    # The lent host runs some stretches at half speed (the clean forward too): the rounds whose
    # clean loop was within 20% of the fastest say what the replay costs on the host at its usual speed.
    fastest = min(r["clean_wall_ms"] for r in rounds_)
    steady = [r["nvtx_wall_us_per_op"] for r in rounds_ if r["clean_wall_ms"] <= STEADY * fastest]
    result["steady_rounds"] = len(steady)
    result["steady_wall_us_per_op"] = statistics.median(steady)
    for key, capture in captures.items():
        prefix = "" if key == "nvtx" else f"{key}_"
        result[f"{prefix}observed_calls_per_iteration"] = capture.observed_calls / replayed
        for kind in ("wall", "host"):
            values = [r[f"{key}_{kind}_us_per_op"] for r in rounds_]
            result[f"{prefix}{kind}_us_per_op"] = statistics.median(values)
            result[f"{prefix}{kind}_us_per_op_p25_p75"] = _quartiles(values)
    return result


def _quartiles(values: list[float]) -> list[float]:
    if len(values) < 2:
        return [values[0], values[0]]
    q = statistics.quantiles(values, n=4)
    return [q[0], q[2]]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=200)
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
    others = ("switch_all", "limit2", "unfolded", "observe_only")
    print(f"{'model':30s} {'ops':>5s} {'calls':>5s} {'seen':>5s} {'clean ms':>9s} {'added ms':>9s} "
          f"{'wall us/op':>10s} {'(p25-p75)':>12s} {'host us/op':>10s} {'steady':>11s} " + " ".join(f"{k:>12s}" for k in others)
          + "  ok")
    for r in rows:
        if "error" in r:
            print(f"{r['model']:30s} ERROR")
            continue
        ok = r["wall_us_per_op"] < TARGET_US and r["host_us_per_op"] < TARGET_US
        q = r["wall_us_per_op_p25_p75"]
        print(f"{r['model']:30s} {r['ops_per_iteration']:5d} {r['recorded_calls_per_iteration']:5d} "
              f"{r['observed_calls_per_iteration']:5.0f} {r['clean_wall_ms']:9.3f} {r['added_wall_ms']:9.3f} "
              f"{r['wall_us_per_op']:10.3f} {q[0]:5.2f}-{q[1]:<6.2f} {r['host_us_per_op']:10.3f} "
              f"{r['steady_wall_us_per_op']:6.3f} ({r['steady_rounds']:2d}) "
              + " ".join(f"{r[k + '_wall_us_per_op']:12.3f}" for k in others) + f"  {'yes' if ok else 'NO'}")
    print("calls: aten calls per forward; seen: those the observer saw with --nvtx-only; steady: wall us/op over the "
          "rounds (count) whose clean loop was within 20% of the fastest; the other columns: wall us/op of the "
          "variants in the module doc")
    return 0


if __name__ == "__main__":
    sys.exit(main())
