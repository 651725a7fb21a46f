"""Nanoseconds per call, from Python, of visprof's native primitives and of the NVTX
bindings users already have, measured in one process.

    python bench/native_overhead.py --json bench/results/native-overhead-h200.json

Target (issue 2): external-id push+pop plus NVTX push+pop together at most 1 us, and no
slower than torch.cuda.nvtx's push+pop alone.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402

CALLS = 200_000
REPEATS = 7


def ns_per_call(body, calls: int = CALLS) -> float:
    """Median over REPEATS of the per-call time of `body(calls)`, loop overhead included
    (it is part of what a Python caller pays)."""
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter_ns()
        body(calls)
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch

    from visprof.native import native
    from visprof.native.tracer import KernelTracer

    c = native()
    has_gpu = torch.cuda.is_available()
    handle = c.nvtx.register_message("bench")
    rows = {}

    def empty_loop(n):
        for _ in range(n):
            pass

    def ext_id(n, push=c.tracer.push_external_id, pop=c.tracer.pop_external_id):
        for i in range(n):
            push(i + 1)
            pop()

    def visprof_nvtx(n, push=c.nvtx.push_registered, pop=c.nvtx.pop):
        for i in range(n):
            push(handle, 0xFF00FF00, i)
            pop()

    def visprof_nvtx_message(n, push=c.nvtx.push, pop=c.nvtx.pop):
        for i in range(n):
            push("bench", 0xFF00FF00, i)
            pop()

    def op_scope(n, enter=c.op_enter, exit_=c.op_exit):
        for i in range(n):
            enter(i + 1, handle, 0xFF00FF00, -1)
            exit_()

    def torch_nvtx(n, push=torch.cuda.nvtx.range_push, pop=torch.cuda.nvtx.range_pop):
        for _ in range(n):
            push("bench")
            pop()

    rows["empty loop (reference)"] = ns_per_call(empty_loop)
    tracer = KernelTracer() if has_gpu else None
    if tracer:
        tracer.start()
    rows["external id push+pop"] = ns_per_call(ext_id)
    rows["visprof NVTX push+pop (registered)"] = ns_per_call(visprof_nvtx)
    rows["visprof NVTX push+pop (message)"] = ns_per_call(visprof_nvtx_message)
    rows["external id + NVTX push+pop (op_enter/op_exit)"] = ns_per_call(op_scope)
    if tracer:
        tracer.stop()
        # Experimental: ops linked by a launch callback reading a thread-local op id, so
        # op_enter stores an int instead of calling CUPTI's push (VISPROF_API_TRACE=callback).
        callback_tracer = KernelTracer(kinds=c.tracer.KERNELS | c.tracer.CALLBACK_CORRELATION)
        callback_tracer.start()
        if c.tracer.correlates_by_callback():
            rows["op id (callback mode) + NVTX push+pop (op_enter/op_exit)"] = ns_per_call(op_scope)
        callback_tracer.stop()
    if has_gpu:
        rows["torch.cuda.nvtx range_push+range_pop"] = ns_per_call(torch_nvtx)
    try:
        import nvtx as nvtx_package

        def package_annotate(n, annotate=nvtx_package.annotate):
            for _ in range(n):
                with annotate("bench", domain="bench"):
                    pass

        def package_push_pop(n, push=nvtx_package.push_range, pop=nvtx_package.pop_range):
            for _ in range(n):
                push("bench", domain="bench")
                pop(domain="bench")

        rows["nvtx package annotate()"] = ns_per_call(package_annotate, CALLS // 4)
        rows["nvtx package push_range+pop_range"] = ns_per_call(package_push_pop, CALLS // 4)
    except ImportError:
        rows["nvtx package annotate()"] = None

    if has_gpu:
        from visprof.native.timer import EventTimer

        stream = torch.cuda.current_stream()
        handle_ = stream.cuda_stream

        timer = EventTimer(0)

        def timer_interval(n):
            # Events are created once and reused; what is timed is start+stop per interval.
            timer.reset()
            for _ in range(n):
                timer.stop(timer.start(handle_), handle_)

        timer_interval(CALLS // 10)  # create the event pool outside the timing

        rows["event timer interval (start+stop)"] = ns_per_call(timer_interval, CALLS // 10)

        def hooked_alloc(n, malloc=c.alloc.device_malloc, free=c.alloc.device_free):
            for _ in range(n):
                free(malloc(4096, 0, handle_), 0, handle_)

        rows["hooked alloc+free (cudaMallocAsync, 4 KiB)"] = ns_per_call(hooked_alloc, CALLS // 10)

    def host_alloc(n, malloc=c.alloc.host_malloc, free=c.alloc.host_free):
        for _ in range(n):
            free(malloc(4096, -1), -1)

    rows["hooked alloc+free (host backend, 4 KiB)"] = ns_per_call(host_alloc)

    combined = rows["external id + NVTX push+pop (op_enter/op_exit)"]
    separate = rows["external id push+pop"] + rows["visprof NVTX push+pop (registered)"]
    torch_ref = rows.get("torch.cuda.nvtx range_push+range_pop")
    callback_mode = rows.get("op id (callback mode) + NVTX push+pop (op_enter/op_exit)")
    verdict = {
        "external id + NVTX, one crossing (ns)": combined,
        "external id + NVTX, separate calls (ns)": separate,
        "at most 1 us": combined <= 1000.0,
        "no slower than torch.cuda.nvtx": (combined <= torch_ref) if torch_ref else None,
        "callback mode: no slower than torch.cuda.nvtx": (callback_mode <= torch_ref)
        if torch_ref and callback_mode else None,
    }
    width = max(len(k) for k in rows)
    print(f"{'primitive':<{width}}  ns/call")
    for name, value in rows.items():
        print(f"{name:<{width}}  {'-' if value is None else f'{value:8.1f}'}")
    for name, value in verdict.items():
        print(f"{name}: {value}")
    result = {"provenance": provenance(), "native": c.native_info(), "ns_per_call": rows, "target": verdict}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
