"""Where the attributed pass's wall time goes: host wall time per iteration of one model
under each instrumentation layer alone and combined (H200 diagnosis for the
attributed-pass/torch.profiler wall-time target).

    python bench/overhead_breakdown.py --models resnet50,swin_tiny_patch4_window7_224

Record: bench/results/overhead-breakdown-h200.json.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _provenance import provenance  # noqa: E402


def wall_ms(runner, context, iterations=20) -> float:
    walls = []
    with context():
        for _ in range(iterations):
            t0 = time.perf_counter_ns()
            runner()
            runner.sync()
            walls.append(time.perf_counter_ns() - t0)
    return statistics.median(walls) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="resnet50,swin_tiny_patch4_window7_224")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from torch.utils._python_dispatch import TorchDispatchMode

    from profile_validation import torch_profiler_loop

    from visprof.base import hardware
    from visprof.attribution.categories import default_table
    from visprof.native.aten_observer import load_observer
    from visprof.passes.attributed import run_attributed_pass
    from visprof.capture.op_capture import ModuleTracker, OpCapture
    from visprof.passes.models import resolve_model
    from visprof.native import native
    from visprof.native.tracer import KernelTracer
    from visprof.passes.runner import ModelRunner, RunConfig
    from visprof.passes.timing import run_timing_pass

    c = native()
    t = c.tracer

    class NoOpMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    out = {}
    for name in args.models.split(","):
        runner = ModelRunner(resolve_model(name), RunConfig(batch_size=64, precision="bf16", device="cuda:0"))
        for _ in range(10):
            runner()
        runner.sync()

        def capture(nvtx=True, hooks=True):
            @contextlib.contextmanager
            def ctx():
                tracker = ModuleTracker(runner.spec.module)
                with (tracker if hooks else contextlib.nullcontext()), OpCapture(tracker, nvtx=nvtx):
                    yield
            return ctx

        def tracer(kinds):
            @contextlib.contextmanager
            def ctx():
                with KernelTracer(kinds=kinds):
                    yield
            return ctx

        def combo(*factories):
            @contextlib.contextmanager
            def ctx():
                with contextlib.ExitStack() as stack:
                    for f in factories:
                        stack.enter_context(f())
                    yield
            return ctx

        all_kinds = t.ALL
        no_driver = t.KERNELS | t.MEMCPY | t.MEMSET | t.RUNTIME | t.EXTERNAL_CORRELATION
        by_callback = t.KERNELS | t.MEMCPY | t.MEMSET | t.CALLBACK_CORRELATION
        work_apis = t.KERNELS | t.MEMCPY | t.MEMSET | t.EXTERNAL_CORRELATION | t.WORK_APIS
        rows = {
            "clean": wall_ms(runner, contextlib.nullcontext),
            "no-op dispatch mode": wall_ms(runner, NoOpMode),
            "module hooks": wall_ms(runner, lambda: ModuleTracker(runner.spec.module)),
            "capture (mode+hooks+nvtx)": wall_ms(runner, capture()),
            "capture without hooks": wall_ms(runner, capture(hooks=False)),
            "tracer kernels only": wall_ms(runner, tracer(t.KERNELS | t.MEMCPY | t.MEMSET)),
            "tracer +runtime+ext": wall_ms(runner, tracer(no_driver)),
            "tracer all (+driver)": wall_ms(runner, tracer(all_kinds)),
            "attributed (tracer all + capture)": wall_ms(runner, combo(tracer(all_kinds), capture())),
            "attributed without driver": wall_ms(runner, combo(tracer(no_driver), capture())),
            "tracer work APIs only": wall_ms(runner, tracer(work_apis)),
            "attributed with work APIs only": wall_ms(runner, combo(tracer(work_apis), capture())),
            "attributed with callback correlation": wall_ms(runner, combo(tracer(by_callback), capture())),
        }
        with KernelTracer(kinds=work_apis) as tr, ModuleTracker(runner.spec.module) as mt, OpCapture(mt):
            runner()
            runner.sync()
        rows["linked share with work APIs only"] = tr.records.linked_fraction()
        with KernelTracer(kinds=by_callback) as tr, ModuleTracker(runner.spec.module) as mt, OpCapture(mt):
            runner()
            runner.sync()
        rows["linked share with callback correlation"] = tr.records.linked_fraction()
        with KernelTracer(kinds=no_driver) as tr, ModuleTracker(runner.spec.module) as mt, OpCapture(mt):
            runner()
            runner.sync()
        rows["linked share without driver"] = tr.records.linked_fraction()
        # The whole attributed pass, with each op capture, against torch.profiler on the same loop.
        for observer in ("1", "0"):
            os.environ["VISPROF_ATEN_OBSERVER"] = observer
            load_observer.cache_clear()
            result = run_attributed_pass(runner, default_table(), iterations=20)
            rows[f"attributed pass, {result.trace.meta['op_capture']}"] = \
                statistics.median(result.wall_ns_per_iteration) / 1e6
        os.environ.pop("VISPROF_ATEN_OBSERVER")
        load_observer.cache_clear()
        rows["torch.profiler (CPU+CUDA activities)"] = torch_profiler_loop(runner, iterations=20)["wall_ms"]
        plain = run_timing_pass(runner, iterations=100).latency_ms.median
        with hardware.ClockSampler(0):
            sampled = run_timing_pass(runner, iterations=100).latency_ms.median
        rows["timing pass latency"] = plain
        rows["timing pass latency with ClockSampler"] = sampled
        out[name] = rows
        print(name)
        for key, value in rows.items():
            print(f"  {key:40s} {value:9.3f}")
        runner.close()
    if args.json:
        args.json.write_text(json.dumps({"provenance": provenance(), "rows": out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
