"""``visprof profile MODEL``: one model's report on screen, then the files asked for (--json, --trace).

The options the user gave go on to ``visprof.profile``, which holds the defaults; everything that
can be checked without running (output paths, the rules file, the option mix) is checked first.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

from visprof.base.errors import BadInputError
from visprof.base.options import AUTOCAST_MODES, GRAD_MODES, PASSES, PRECISIONS
from visprof.cli import nsight as nsight_cli
from visprof.cli.arguments import img_size, non_negative_int, pass_list, positive_int

__all__ = ["OutputWriter", "add_commands", "cmd_profile"]


def add_commands(commands) -> None:
    """Registers ``profile`` on the CLI's sub-parsers (called from visprof.cli.app.build_parser)."""
    prof = commands.add_parser(
        "profile",
        help="profile one model",
        description="Profile one model (a timm name such as resnet50 or vit_base_patch16_224).",
    )
    prof.add_argument("model", help="timm model name; pretrained tags (name.tag) and a timm/ prefix are accepted")
    prof.add_argument("--batch-size", "-b", type=positive_int, metavar="N", help="default: 64 on a GPU, 2 on the CPU")
    prof.add_argument("--img-size", type=img_size, metavar="N|HxW|test|train",
                      help="input size: N, HxW, test (default: the pretrained config's test size, as timm's benchmark.py) "
                           "or train (its training input size)")
    prof.add_argument("--precision", choices=PRECISIONS, help="bf16/fp16 run under autocast (default: bf16 on a GPU, fp32 on the CPU)")
    prof.add_argument("--autocast", choices=AUTOCAST_MODES,
                      help="latency regime with bf16/fp16: autocast entered per forward (default, as timm's benchmark.py), "
                           "around the whole loop (weight casts cached), or a model cast up front")
    prof.add_argument("--grad-mode", choices=GRAD_MODES, help="grad mode around the loop (default: inference_mode, as timm's benchmark.py since July 2025)")
    # default None, not False: "not given" is profile()'s own default (a module's own layout, a name's NCHW)
    prof.add_argument("--channels-last", action="store_true", default=None,
                      help="run NHWC (channels-last) inputs and weights (default: NCHW)")
    prof.add_argument("--compile", action="store_true", help="torch.compile the model first")
    prof.add_argument("--device", metavar="DEV", help="cpu, cuda or cuda:N (default: cuda:0 if a GPU is visible)")
    prof.add_argument("--warmup", type=non_negative_int, metavar="N", help="warm-up iterations before the timing pass (default: until three agree within 5%%; the other passes run after it, on the warm model)")
    prof.add_argument("--iterations", type=positive_int, metavar="N", help="measured iterations (default: until the median is stable)")
    prof.add_argument(
        "--passes",
        type=pass_list,
        metavar="LIST",
        help=f"comma-separated passes to run, from {','.join(PASSES)} (default: all the device can run; "
             "on the CPU all but memory, which needs a GPU)",
    )
    prof.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON")
    prof.add_argument("--trace", type=Path, metavar="FILE", help="also write a Chrome/Perfetto trace")
    prof.add_argument("--top", type=positive_int, metavar="N", help="show the N costliest modules (default: 15)")
    prof.add_argument("--categories", type=Path, metavar="FILE", help="extra category rules, checked before the built-in ones")
    prof.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    nsight_cli.add_nvtx_only_option(prof)
    prof.set_defaults(handler=cmd_profile, check=_check_before_torch)


def cmd_profile(args: argparse.Namespace) -> int:
    """After ``_check_before_torch`` (the CLI runs it first)."""
    if args.nvtx_only:
        return nsight_cli.cmd_profile_nvtx_only(args)

    # Only options the user gave are passed on: the defaults live in one place, profile().
    options = {
        "batch_size": args.batch_size,
        "img_size": args.img_size,
        "precision": args.precision,
        "autocast": args.autocast,
        "grad_mode": args.grad_mode,
        "device": args.device,
        "warmup": args.warmup,
        "iterations": args.iterations,
        "passes": args.passes,
        "channels_last": args.channels_last,
        "category_file": str(args.categories) if args.categories is not None else None,
        "top_modules": args.top,  # how many modules the result keeps
    }
    kwargs: dict[str, Any] = {key: value for key, value in options.items() if value is not None}
    kwargs.update(compile=args.compile, progress=not args.quiet)
    # The trace is written after the report is on screen: profile() hands over what it needs.
    attributed: dict[str, Any] = {}
    if args.trace is not None:
        kwargs["on_trace"] = lambda trace, attribution: attributed.update(trace=trace, attribution=attribution)

    writer = OutputWriter(args.checked_outputs, quiet=args.quiet)
    try:
        # Imported here: it loads torch, timm and the native extension.
        profile = importlib.import_module("visprof.profiler").profile
        result = profile(args.model, **kwargs)

        render = importlib.import_module("visprof.report.table").render
        table = render(result, top_modules=args.top) if args.top is not None else render(result)
        print(table, flush=True)  # on screen before any file is written (a closed pipe: closed_stdout)
        if args.json is not None:
            writer.write("--json", lambda path: result.to_json(path))
        if args.trace is not None:
            if attributed:
                chrome = importlib.import_module("visprof.report.chrome_trace")
                writer.write("--trace", lambda path: chrome.to_chrome_trace(attributed["trace"],
                                                                            attributed["attribution"], path))
            else:
                writer.skip("--trace", "the attributed pass did not run (see the warnings above)")
    except KeyboardInterrupt:
        raise KeyboardInterrupt(writer.unwritten_note()) from None
    return writer.exit_code()


def _check_before_torch(args: argparse.Namespace) -> None:
    if args.nvtx_only:
        nsight_cli.check_nvtx_only_args(args)
    else:
        args.checked_outputs = _check_profile_inputs(args)


def _check_profile_inputs(args: argparse.Namespace) -> dict[str, Path]:
    """Everything about the command line that can be checked before minutes of profiling:
    output paths (writable, distinct, not an input), the rules file, the option mix."""
    from visprof.base.output_paths import check_output_paths

    outputs = check_output_paths({"--json": args.json, "--trace": args.trace},
                                 inputs={"--categories file": args.categories}, kinds={"--json": "profile", "--trace": "chrome-trace"})
    if args.trace is not None and args.passes is not None and "attributed" not in args.passes:
        raise BadInputError("--trace writes the attributed pass, which --passes leaves out; add attributed "
                            f"(--passes {','.join((*args.passes, 'attributed'))})")
    if args.categories is not None:
        # Parsed in full here (cheap: no torch), so a bad rule fails at once.
        categories = importlib.import_module("visprof.attribution.categories")
        categories.CategoryTable.default().extend_from_file(args.categories)
    return outputs


class OutputWriter:
    """Writes the output files one by one after the report; a failed write is one error line
    and the next file is still tried. Knows which files were not written, for Ctrl-C."""

    def __init__(self, outputs: dict[str, Path], quiet: bool):
        self.pending = dict(outputs)  # option -> path, not yet written
        self.quiet = quiet
        self.failed = False

    def write(self, option: str, write) -> None:
        from visprof.base.errors import OutputWriteError

        path = self.pending[option]
        before = file_identity(path)
        if not self.quiet:
            print(f"[visprof] writing {path}", file=sys.stderr, flush=True)
        try:
            write(path)
        except OutputWriteError as error:
            self.failed = True
            print(f"visprof: error: {error}", file=sys.stderr, flush=True)
            return
        except KeyboardInterrupt:
            # Ctrl-C between the rename and the return: the new file is complete and in place.
            if file_identity(path) != before and file_identity(path) is not None:
                del self.pending[option]
            raise
        del self.pending[option]
        if not self.quiet:
            print(f"[visprof] wrote {path}", file=sys.stderr, flush=True)

    def skip(self, option: str, reason: str) -> None:
        self.failed = True
        print(f"visprof: error: {option} {self.pending.pop(option)} was not written: {reason}", file=sys.stderr,
              flush=True)

    def unwritten_note(self) -> str:
        if not self.pending:
            return ""
        shown = [f"{path} (its previous version is unchanged)" if path.exists() else str(path)
                 for path in self.pending.values()]
        return "not written: " + ", ".join(shown)

    def exit_code(self) -> int:
        from visprof.base.errors import EXIT_OUTPUT

        return EXIT_OUTPUT if self.failed else 0


def file_identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, mtime) of ``path``, None if absent: an atomic write changes the inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns
