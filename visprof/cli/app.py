"""The ``visprof`` command line (also ``python -m visprof``).

User mistakes (every ``VisprofError``) end with one line, ``visprof: error: <message>``,
and an exit code per kind of failure (see ``visprof.base.errors``); anything else is a bug and
keeps its traceback. ``VISPROF_DEBUG=1`` shows the traceback of user errors too.

Heavy modules (torch, timm, the profiler) are imported inside the commands, so
``visprof --help`` answers at once.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

from visprof.base.options import AUTOCAST_MODES, GRAD_MODES, PASSES, PRECISIONS
from visprof.base.timm_import import STOPPING_SIGNALS
from visprof.base.errors import BadInputError, VisprofError, VisprofWarning
from visprof.base.spelling import command_line
from visprof.cli import nsight as nsight_cli
from visprof.cli.arguments import img_size, non_negative_int, pass_list, positive_int
from visprof.cli.closed_stdout import pipe_safe_stderr, pipe_safe_stdout

EXIT_INTERRUPTED = 130  # the shell's convention for SIGINT (128 + 2)


# --- parser --------------------------------------------------------------------------------

class OneLineErrors(argparse.ArgumentParser):
    """argparse prints the whole usage block before an argument error; a user mistake gets one
    line here, naming where the usage is. Sub-commands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (usage: {self.prog} --help)\n")

    # A command's operands may stand anywhere among its options, as `visprof compare a.db --base
    # rtx3090 --target rtx4090 b.csv` or `visprof sweep resnet18 --device cpu vit_tiny_patch16_224`:
    # argparse's plain parse took the first run of operands and refused the rest as "unrecognized
    # arguments". Intermixed parsing reads options first, then every operand wherever it stood. A
    # parser of sub-commands (nsys, bounds) or with a `-- PROGRAM ...` remainder cannot be parsed
    # that way and keeps the plain parse; so does a command line with `--` (operands that look like
    # options follow it, and the intermixed parse drops the `--` before it reads them).
    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixing or not self._operands_can_intermix() or (args is not None and "--" in args):
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # parse_known_intermixed_args calls back in here, twice
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but arguments no parser took are refused by the command's own parser: the
        message ended "(usage: visprof --help)" for `visprof profile resnet18 extra`."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self._chosen_command(parsed).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    def _chosen_command(self, parsed: argparse.Namespace) -> "OneLineErrors":
        """The innermost (sub-)command parser that ``parsed`` chose (``visprof nsys run``'s), else this one."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None))
                if isinstance(chosen, OneLineErrors):
                    return chosen._chosen_command(parsed)
        return self

    def _operands_can_intermix(self) -> bool:
        operands = self._get_positional_actions()
        return bool(operands) and not any(action.nargs in (argparse.PARSER, argparse.REMAINDER) for action in operands)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrors(
        prog="visprof",
        description="Profile PyTorch vision models: latency, peak memory and where they go, by operator category.",
    )
    parser.add_argument("--version", action="version", version=f"visprof {visprof_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    info = commands.add_parser("info", help="show versions, the native backend and the visible GPUs")
    info.set_defaults(handler=cmd_info)

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
    prof.set_defaults(handler=cmd_profile)

    # Each command group's module adds its own subcommands with add_commands(commands).
    from visprof.cli import analysis, bounds, diff, sweep
    from visprof.cli import compile as compile_cli  # not to shadow the builtin

    sweep.add_commands(commands)  # sweep, export
    compile_cli.add_commands(commands)  # compare-compile
    diff.add_commands(commands)  # diff
    nsight_cli.add_commands(commands)  # nsys import/run, ncu
    analysis.add_commands(commands)  # import-timm, compare, predict, calibrate, report
    bounds.add_commands(commands)  # bounds build/coverage
    return parser


# --- commands ------------------------------------------------------------------------------

def cmd_profile(args: argparse.Namespace) -> int:
    if args.nvtx_only:
        return nsight_cli.cmd_profile_nvtx_only(args)
    outputs = _check_profile_inputs(args)

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

    writer = _OutputWriter(outputs, quiet=args.quiet)
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


def _check_profile_inputs(args: argparse.Namespace) -> dict[str, Path]:
    """Everything about the command line that can be checked before minutes of profiling:
    output paths (writable, distinct, not an input), the rules file, the option mix."""
    from visprof.base.output_paths import check_output_paths

    outputs = check_output_paths({"--json": args.json, "--trace": args.trace},
                                 inputs={"--categories file": args.categories}, kinds={"--json": "json", "--trace": "json"})
    if args.trace is not None and args.passes is not None and "attributed" not in args.passes:
        raise BadInputError("--trace writes the attributed pass, which --passes leaves out; add attributed "
                            f"(--passes {','.join((*args.passes, 'attributed'))})")
    if args.categories is not None:
        # Parsed in full here (cheap: no torch), so a bad rule fails at once.
        categories = importlib.import_module("visprof.attribution.categories")
        categories.CategoryTable.default().extend_from_file(args.categories)
    return outputs


class _OutputWriter:
    """Writes the output files one by one after the report; a failed write is one error line
    and the next file is still tried. Knows which files were not written, for Ctrl-C."""

    def __init__(self, outputs: dict[str, Path], quiet: bool):
        self.pending = dict(outputs)  # option -> path, not yet written
        self.quiet = quiet
        self.failed = False

    def write(self, option: str, write) -> None:
        from visprof.base.errors import OutputWriteError

        path = self.pending[option]
        before = _identity(path)
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
            if _identity(path) != before and _identity(path) is not None:
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


def _identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, mtime) of ``path``, None if absent: an atomic write changes the inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns


def cmd_info(args: argparse.Namespace) -> int:
    rows = [
        ("visprof", visprof_version()),
        ("native", _native_line()),
        ("torch", _torch_line()),
        ("timm", _package_version("timm")),
        ("NVML", _guarded(_nvml_line)),
    ]
    # timm imports torchvision: shown on its own only when its import fails, so the line
    # above that fails with it is explained.
    vision = _package_version("torchvision")
    if vision.startswith("import failed"):
        rows.insert(4, ("torchvision", vision))
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(_guarded(_gpu_lines, "GPUs: unknown ({})"))
    return 0


def _native_line() -> str:
    try:
        info = importlib.import_module("visprof.native").native_info()
    except Exception as exc:  # not built, a library it links is missing, ...
        return f"unavailable ({type(exc).__name__}: {exc})"
    if not isinstance(info, dict):
        return str(info)
    if info.get("backend") == "unavailable":
        return f"unavailable ({info.get('error', 'no reason given')})"
    return ", ".join(f"{key}={value}" for key, value in info.items())


def _failure(exc: BaseException) -> str:
    """``Type: message``, on one line (the first of a message that has several)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _import(name: str):
    """The module ``name``; None when it is not installed; raises _ImportFailed with one line
    when importing it (or something it imports) raises, whatever it raises."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise _ImportFailed(f"import failed: {_failure(exc)}") from None
    except Exception as exc:  # a broken install: a missing dependency, a library that does not load, ...
        raise _ImportFailed(f"import failed: {_failure(exc)}") from None


class _ImportFailed(Exception):
    pass


def _guarded(line, template: str = "unavailable ({})") -> str:
    """``line()``, or ``template`` with the reason when it raises (torch failing to import)."""
    try:
        return line()
    except _ImportFailed as exc:
        return template.format(str(exc))
    except Exception as exc:
        return template.format(_failure(exc))


def _torch_line() -> str:
    try:
        torch = _import("torch")
    except _ImportFailed as exc:
        return str(exc)
    if torch is None:
        return "not installed"
    cuda = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU-only build"
    return f"{torch.__version__} ({cuda})"


def _package_version(name: str) -> str:
    try:
        module = _import(name)
    except _ImportFailed as exc:
        return str(exc)
    return "not installed" if module is None else str(getattr(module, "__version__", "unknown version"))


def _nvml_line() -> str:
    from visprof.base.hardware import nvml_unavailable_reason

    reason = nvml_unavailable_reason()
    return f"unavailable ({reason})" if reason else "available"


def _gpu_lines() -> str:
    from visprof.base.hardware import device_summary, no_gpu_reason

    gpus = device_summary()
    if not gpus:
        return f"GPUs: none ({no_gpu_reason()})"
    return "\n".join([f"GPUs: {len(gpus)}"] + [f"  {_format_gpu(gpu)}" for gpu in gpus])


def _format_gpu(gpu: dict) -> str:
    parts = [f"cuda:{gpu['torch_index']}", str(gpu["name"])]
    if gpu.get("memory_total_bytes"):
        parts.append(f"{gpu['memory_total_bytes'] / 2**30:.1f} GiB")
    if gpu.get("compute_capability"):
        parts.append(f"sm_{gpu['compute_capability'].replace('.', '')}")
    if gpu.get("driver_version"):
        parts.append(f"driver {gpu['driver_version']} (CUDA {gpu.get('cuda_driver_version')})")
    if gpu.get("power_limit_w"):
        parts.append(f"power limit {gpu['power_limit_w']:.0f} W")
    if gpu.get("max_sm_clock_mhz"):
        parts.append(f"max clocks SM {gpu['max_sm_clock_mhz']} / mem {gpu.get('max_mem_clock_mhz')} MHz")
    if gpu.get("pci_bus_id"):
        parts.append(f"pci {gpu['pci_bus_id']}")
    return ", ".join(parts)


def visprof_version() -> str:
    try:
        return importlib.import_module("visprof").__version__
    except (ImportError, AttributeError):
        pass
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("visprof")
    except PackageNotFoundError:
        return "unknown"


# --- entry point ---------------------------------------------------------------------------

# The commands that run models import torch and timm first, holding Ctrl-C meanwhile
# (import_timm_holding_interrupts says why).
MODEL_COMMANDS = {"profile", "sweep", "compare-compile", "ncu"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (argparse's own errors and --help included). Its
    messages name options as flags (``--batch-size 8``), where the Python API names keywords."""
    with warnings.catch_warnings(), command_line():  # the caller's warning display, back as it was on return
        warnings.showwarning = _show_warning(warnings.showwarning)
        return _main(argv)


def _show_warning(show):
    """visprof's own warnings (VisprofWarning) as one ``visprof: warning:`` line, as its errors
    are; any other as Python shows it."""

    def shown(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, VisprofWarning):
            print(f"visprof: warning: {message}", file=sys.stderr if file is None else file)
        else:
            show(message, category, filename, lineno, file, line)

    return shown


def _main(argv: Sequence[str] | None) -> int:
    try:
        # Parsing is inside: an argument type may import torch (sweep's --img-size), and --help
        # writes to stdout.
        with pipe_safe_stdout(), pipe_safe_stderr():
            try:
                args = build_parser().parse_args(argv)
            except SystemExit as exit_:  # --help, --version, or a usage error argparse printed
                return exit_.code if isinstance(exit_.code, int) else 0
            if args.command in MODEL_COMMANDS:
                from visprof.base.timm_import import import_timm_holding_interrupts

                try:
                    import_timm_holding_interrupts(on_interrupt=say_the_stop_is_coming)
                except KeyboardInterrupt:  # before the command ran: none of its files was written
                    raise KeyboardInterrupt(_files_asked_for(args).unwritten_note()) from None
            return args.handler(args)
    except VisprofError as error:
        if os.environ.get("VISPROF_DEBUG"):
            raise
        _say_error(str(error))
        return error.exit_code
    except KeyboardInterrupt as interrupt:
        # A command may say what the interruption left undone (e.g. which files were not written).
        detail = f"; {interrupt.args[0]}" if interrupt.args and interrupt.args[0] else ""
        if _terminated:
            _say_error(f"terminated ({_terminated}){detail}")
            return 128 + signal.Signals[_terminated].value  # the shell's convention: 143 for SIGTERM, 129 for SIGHUP
        _say_error(f"interrupted{detail}")
        return EXIT_INTERRUPTED


def _say_error(text: str) -> None:
    """The error's one line; with stderr gone (a closed pipe, a full disk) the exit code says it."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"visprof: error: {text}", file=sys.stderr, flush=True)


def _files_asked_for(args: argparse.Namespace) -> "_OutputWriter":
    """The files a model command's options ask for (--json, --trace), none written yet."""
    asked = {f"--{option}": Path(getattr(args, option)) for option in ("json", "trace")
             if getattr(args, option, None) is not None}
    return _OutputWriter(asked, quiet=True)


def say_the_stop_is_coming() -> None:
    """Said at once when Ctrl-C comes while torch loads; "interrupted" follows when it has loaded."""
    with contextlib.suppress(OSError, ValueError):  # no stderr to say it on: the stop still comes
        print("visprof: stopping once torch has finished loading", file=sys.stderr, flush=True)


# SIGTERM (timeout, SLURM, docker stop, systemd) and SIGHUP (the terminal closed, an ssh session
# dropped) stop a command as Ctrl-C does: the same cleanup (workers killed, a sweep's run marked
# interrupted, unwritten files named), exit 128 + the signal. Python's default for them is to die at once,
# with the run left "running" and no word. _terminated: the signal's name, once one came.
_terminated = ""


def _stop_on_signal(signum, frame) -> None:
    global _terminated
    _terminated = signal.Signals(signum).name
    raise KeyboardInterrupt


def run() -> None:
    """The ``visprof`` console script and ``python -m visprof``: ``main()``, then exit with its code.

    Once ``main`` returns the command is done (its files written, its report printed). A Ctrl-C
    while the interpreter then tears torch down would end the process by SIGINT, with no word and
    a code that says interrupted, so it is ignored from here on."""
    # not where the signal is ignored: under nohup SIGHUP is, and the command must go on
    stopping = [getattr(signal, name) for name in STOPPING_SIGNALS
                if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) is not signal.SIG_IGN]
    with contextlib.suppress(ValueError):  # signal() works in the main thread only
        for signum in stopping:
            signal.signal(signum, _stop_on_signal)
    code = main()
    with contextlib.suppress(ValueError):  # signal() works in the main thread only
        for signum in (signal.SIGINT, *stopping):
            signal.signal(signum, signal.SIG_IGN)
    _clear_unhandled_interrupt_mark()
    sys.exit(code)


def _clear_unhandled_interrupt_mark() -> None:
    """CPython marks the process "ended by an unhandled Ctrl-C" when a KeyboardInterrupt leaves
    code run by exec(), even where it is caught later, and under ``python -m`` then kills itself
    with SIGINT at exit, without a word, in place of the exit code. namedtuple and dataclass
    definitions are exec'd, so a Ctrl-C that lands in a lazy import can leave that mark; main()
    has handled the interrupt and said so. A successful exec() clears the mark."""
    exec("pass")  # noqa: S102 - a constant: its only effect is the one above
