"""Why a self-check fails on a correct run: the passes side by side, per kernel name and per memory step.

For each model: the tracer-only pass and the attributed pass in alternating rounds (A B A B),
their kernel-time sums and SM clocks, and the kernel names whose total time differs most; then
the peak allocated bytes of one forward measured four ways (timing-pass style, after emptying
the cache, under the memory pass's capture, and both), so a failing check points at the step
that changes the work. Run on the GPU:

    python bench/check_diagnosis.py pit_b_224 dla102 --json $OUT/check-diagnosis.json

Record: bench/results/h200-checks-2026-12-01/.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time

import torch
import torch.utils._python_dispatch


def kernel_table(records, bounds_count: int) -> dict[str, float]:
    from visprof.native.records import KIND_KERNEL

    rows = records.kernels
    out: dict[str, float] = collections.defaultdict(float)
    for row in rows[rows["kind"] == KIND_KERNEL]:
        out[records.kernel_names[row["name_id"]]] += (int(row["end_ns"]) - int(row["start_ns"])) / 1e6 / bounds_count
    return out


def traced(runner, iterations, capture=None):
    """Kernel rows of `iterations` forwards under the tracer alone, or under `capture` too."""
    import contextlib

    from visprof.native import native
    from visprof.native.tracer import KernelTracer

    c = native()
    kinds = c.tracer.KERNELS | c.tracer.MEMCPY | c.tracer.MEMSET
    with KernelTracer(kinds=kinds) as tracer:
        for _ in range(iterations):
            with capture() if capture else contextlib.nullcontext():
                runner()
            runner.sync()
    return tracer.records


def sm_clock(index: int) -> float | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return float(pynvml.nvmlDeviceGetClockInfo(pynvml.nvmlDeviceGetHandleByIndex(index), pynvml.NVML_CLOCK_SM))
    except Exception:  # noqa: BLE001 - a diagnostic: no clock is not an error
        return None


class BareDispatchMode(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def kernels_by_op(trace, needles) -> list[dict]:
    """Iteration 0's kernels whose names hold one of `needles`, with the op and module that launched them."""
    ops = {op.external_id: op for op in trace.ops}
    rows = []
    for k in trace.kernels:
        name = trace.kernel_names[int(k["name_id"])]
        op = ops.get(int(k["external_id"]))
        if any(n in name for n in needles) and op is not None and op.iteration == 0:
            module = trace.modules[op.module].path if 0 <= op.module < len(trace.modules) else "?"
            rows.append({"kernel": name[:110], "op": op.name, "module": module})
    return rows[:60]


def mean_clock(sampler) -> float | None:
    clocks = [x["sm_clock_mhz"] for x in sampler.samples if x.get("sm_clock_mhz")]
    return round(sum(clocks) / len(clocks), 1) if clocks else None


def peak_of_forward(runner, before=None, capture=None) -> int:
    import contextlib

    runner.sync()
    if before:
        before()
    torch.cuda.reset_peak_memory_stats(runner.device)
    with capture() if capture else contextlib.nullcontext():
        runner()
    runner.sync()
    return int(torch.cuda.max_memory_allocated(runner.device))


class ConvSdpaLinear(torch.nn.Module):
    """The three-layer model of issue 24: a conv stem, F.scaled_dot_product_attention, two linears."""

    def __init__(self, dim: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.stem = torch.nn.Conv2d(3, dim, 16, 16)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
        return self.proj(x).mean(1)


def diagnose(model, rounds: int, iterations: int) -> dict:
    from visprof.capture.op_capture import ModuleTracker, OpCapture
    from visprof.passes.attributed import run_attributed_pass
    from visprof.passes.memory import empty_cache
    from visprof.passes.setup import make_runner, resolve_run
    from visprof.passes.timing import run_timing_pass
    from visprof.passes.trace_only import run_trace_only_pass
    from visprof.passes.kernel_sequence import isolated_time_ms
    from visprof.base.hardware import ClockSampler

    setup = resolve_run(model)
    runner = make_runner(setup.spec, setup.config)
    out: dict = {"model": setup.spec.name, "img_size": setup.spec.input_size[1], "rounds": []}
    with runner.session():
        timing = run_timing_pass(runner)
        out["timing_peak_allocated"] = timing.max_memory_allocated
        out["latency_ms"] = timing.latency_ms.median
        for r in range(rounds):
            t0 = sm_clock(0)
            with ClockSampler(0, interval_s=0.01) as tro_clock:
                tro = run_trace_only_pass(runner)
            t1 = sm_clock(0)
            with ClockSampler(0, interval_s=0.01) as att_clock:
                att = run_attributed_pass(runner, setup.table, 5)
            t2 = sm_clock(0)
            row = {"trace_only_ms": tro.kernel_ns / 1e6, "attributed_ms": att.kernel_ns / 1e6,
                   "kernels_trace_only": tro.kernels_per_iteration,
                   "kernels_attributed": len(att.trace.kernels) / max(att.trace.iterations, 1),
                   "sm_mhz": [t0, t1, t2], "sm_mhz_sampled": [mean_clock(tro_clock), mean_clock(att_clock)]}
            if tro.sequence is not None and att.sequence is not None:
                a, b = collections.Counter(att.sequence.names), collections.Counter(tro.sequence.names)
                row["launches_only_attributed"] = {k[:160]: v for k, v in (a - b).items()}
                row["launches_only_trace_only"] = {k[:160]: v for k, v in (b - a).items()}
                row["differing_iterations"] = [att.sequence.differing, tro.sequence.differing]
                row["isolated_ms"] = isolated_time_ms(att.sequence, tro.sequence)
            out["rounds"].append(row)
        plain = traced(runner, iterations)
        out["op_capture"] = att.trace.meta.get("op_capture")
        out["kernels_of_interest"] = kernels_by_op(att.trace, ("pow", "UpSample", "clamp"))
        # A Python dispatch mode can change what runs (composite ops branch on isTensorSubclassLike;
        # under inference_mode composite ops reach the mode and ran without autocast,
        # visprof/capture/dispatch.py): a mode that does nothing but call the op shows it.
        bare = traced(runner, iterations, capture=BareDispatchMode)
        a, b = kernel_table(plain, iterations), kernel_table(bare, iterations)
        out["bare_dispatch_mode_diff"] = [{"name": k[:160], "plain_ms": round(a.get(k, 0), 4),
                                           "bare_mode_ms": round(b.get(k, 0), 4)}
                                          for k in sorted(set(a) ^ set(b))[:12]]
        tracker = ModuleTracker(setup.spec.module)
        template = OpCapture(tracker, setup.table, nvtx=False)
        with tracker, template:
            runner()
        runner.sync()
        captured = traced(runner, iterations,
                          capture=lambda: OpCapture(tracker, setup.table, nvtx=True, template=template))
        a, b = kernel_table(plain, iterations), kernel_table(captured, iterations)
        diff = sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, 0) - b.get(k, 0)))
        out["kernel_ms"] = {"plain": sum(a.values()), "python_capture": sum(b.values())}
        out["kernel_diff"] = [{"name": k[:160], "plain_ms": round(a.get(k, 0), 4), "captured_ms": round(b.get(k, 0), 4)}
                              for k in diff[:12]]
        empty = lambda: empty_cache(runner)  # noqa: E731
        tags = lambda: OpCapture(ModuleTracker(setup.spec.module), setup.table, nvtx=False, tags=True, template=template)  # noqa: E731
        out["peak_allocated"] = {
            "plain": peak_of_forward(runner),
            "after_empty_cache": peak_of_forward(runner, before=empty),
            "plain_again": peak_of_forward(runner),
            "under_memory_capture": peak_of_forward(runner, capture=tags),
            "empty_cache_and_capture": peak_of_forward(runner, before=empty, capture=tags),
        }
    runner.close()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results = []
    for model in args.models:
        model = ConvSdpaLinear() if model == "conv-sdpa-linear" else model
        started = time.perf_counter()
        try:
            results.append(diagnose(model, args.rounds, args.iterations))
        except Exception as exc:  # noqa: BLE001 - one model's failure must not lose the others
            results.append({"model": str(model)[:40], "error": f"{type(exc).__name__}: {exc}"})
        results[-1]["wall_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(results[-1]), flush=True)
    if args.json:
        from visprof.base.outputs import atomic_write_text

        doc = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": results}
        atomic_write_text(args.json, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
