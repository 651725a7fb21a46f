"""``visprof compare-compile MODEL``: profile a model eager and torch.compile'd, side by side."""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

from visprof.base.errors import VisprofError
from visprof.base.options import PRECISIONS


def add_commands(commands) -> None:
    """Registers the command on the CLI's sub-parsers (called from visprof.cli.app.build_parser)."""
    from visprof.cli.arguments import img_size, non_negative_int, positive_int

    cmd = commands.add_parser(
        "compare-compile",
        help="profile a model eager and torch.compile'd, per category side by side",
        description="Profile one model twice, eager and torch.compile'd (timing and attributed passes), and show "
                    "per category what compile changed, with the work Inductor fused into each category's kernels.",
    )
    cmd.add_argument("model", help="timm model name")
    # Each as visprof profile's, with its defaults; the regime (--grad-mode, --autocast) is profile()'s default.
    cmd.add_argument("--batch-size", "-b", type=positive_int, metavar="N", help="as for visprof profile (default: 64 "
                     "on a GPU, 2 on the CPU)")
    cmd.add_argument("--img-size", type=img_size, metavar="N|HxW|test|train", help="as for visprof profile (default: test)")
    cmd.add_argument("--precision", choices=PRECISIONS, help="as for visprof profile (default: bf16 on a GPU, fp32 on the CPU)")
    cmd.add_argument("--channels-last", action="store_true", help="NHWC inputs and weights, in both runs")
    cmd.add_argument("--device", metavar="DEV", help="cpu, cuda or cuda:N (default: cuda:0 if a GPU is visible)")
    cmd.add_argument("--warmup", type=non_negative_int, metavar="N", help="warm-up iterations before each run's timing pass")
    cmd.add_argument("--iterations", type=positive_int, metavar="N", help="measured iterations of each run's timing "
                     "pass (default: until the median is stable)")
    cmd.add_argument("--json", type=Path, metavar="FILE", help="write both results and the comparison as JSON")
    cmd.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    cmd.set_defaults(handler=cmd_compare_compile, check=_check_outputs)


def _check_outputs(args: argparse.Namespace) -> None:
    from visprof.base.output_paths import check_output_paths

    check_output_paths({"--json": args.json}, kinds={"--json": "compare-compile"})


def cmd_compare_compile(args: argparse.Namespace) -> int:
    """After ``_check_outputs`` (the CLI runs it first)."""
    from visprof.base.outputs import write_json_summary

    options = {"batch_size": args.batch_size, "img_size": args.img_size, "precision": args.precision,
               "device": args.device, "warmup": args.warmup, "iterations": args.iterations}
    kwargs: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    kwargs.update(channels_last=args.channels_last, progress=not args.quiet, passes="timing,attributed")
    profile = importlib.import_module("visprof.profiler").profile
    eager = profile(args.model, compile=False, **kwargs)
    try:
        compiled = profile(args.model, compile=True, **kwargs)
    except VisprofError:
        # the eager run's minutes are not lost without a word: its latency, then the compiled run's error
        if eager.timing is not None:
            print(f"eager run of {eager.model.name} finished: latency (median) {eager.timing.latency_ms.median:.3f} ms; "
                  "the compiled run failed (below), so nothing is compared and no --json is written")
        raise
    from visprof.report.compile_compare import (CPU_BREAKDOWN_NOTE, breakdown_is_of_compiled_code, compare_compile,
                                                 comparison_rows_as_dicts, render_compile_comparison)

    print(render_compile_comparison(eager, compiled))
    if args.json is not None:
        doc: dict[str, Any] = {"eager": eager.to_dict(), "compiled": compiled.to_dict()}
        if breakdown_is_of_compiled_code(compiled):
            doc["comparison"] = comparison_rows_as_dicts(compare_compile(eager, compiled))
        else:  # two breakdowns of the eager model: no per-category comparison
            doc.update(comparison=None, comparison_note=CPU_BREAKDOWN_NOTE)
        write_json_summary(args.json, "compare-compile", doc)
        if not args.quiet:
            print(f"[visprof] wrote {args.json}", file=sys.stderr)
    return 0
