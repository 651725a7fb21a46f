"""The ``visprof`` command line (also ``python -m visprof``).

User mistakes (every ``VisprofError``) end with one line, ``visprof: error: <message>``,
and an exit code per kind of failure (see ``visprof.base.errors``); anything else is a bug and
keeps its traceback. ``VISPROF_DEBUG=1`` prints the traceback of user errors too, before their line.

Heavy modules (torch, timm, the profiler) are imported inside the commands, so
``visprof --help`` answers at once.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path
from typing import Sequence

from visprof.base.timm_import import STOPPING_SIGNALS
from visprof.base.errors import EXIT_BAD_INPUT, VisprofError, VisprofWarning
from visprof.base.spelling import command_line
from visprof.cli import nsight as nsight_cli
from visprof.cli.info import visprof_version
from visprof.cli.closed_stdout import pipe_safe_stderr, pipe_safe_stdout
from visprof.cli.profile import OutputWriter, file_identity
from visprof.cli.stop_watchdog import StopWatchdog

EXIT_INTERRUPTED = 130  # the shell's convention for SIGINT (128 + 2)


# --- parser --------------------------------------------------------------------------------

class OneLineErrors(argparse.ArgumentParser):
    """argparse prints the whole usage block before an argument error; a user mistake gets one
    line here, naming where the usage is. Sub-commands' parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        # No abbreviations: options of one name in other commands made a plausible slip another option here
        # (sweep --retry 3 read as --retry-failed and a model named "3"; compare --gpu rtx4090 as --gpus FILE).
        # An unknown option is refused, naming the close ones.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

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
        self._check_command(sys.argv[1:] if args is None else list(args))
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = self._chosen_command(parsed)
            command.error(f"unrecognized arguments: {' '.join(extra)}{command._close_option(extra)}")
        return parsed

    def _check_command(self, args: list[str]) -> None:
        """A misspelt or missing command, named as such: argparse said "invalid choice: 'profle'
        (choose from <14 commands>)" and, for `visprof --bogus`, that a COMMAND is required."""
        action = next((action for action in self._actions if isinstance(action, argparse._SubParsersAction)), None)
        if action is None:
            return
        commands = action.choices
        # The options before a command take no values (--help, --version), so the first word
        # that is not an option is the command; under it, its own parser reads the rest.
        word = next((arg for arg in args if not arg.startswith("-")), None)
        if word is None and any(arg in ("-h", "--help", "--version") for arg in args):
            return  # argparse answers them
        if word is None or word not in commands:
            self.error(self._command_mistake(word, args, commands, (action.metavar or "command").lower()))
        commands[word]._check_command(args[args.index(word) + 1:])

    def _command_mistake(self, word: str | None, args: list[str], commands, kind: str) -> str:
        names = ", ".join(commands)
        if word is not None:
            close = difflib.get_close_matches(word, list(commands), n=1, cutoff=0.6)
            return f"no {kind} {word!r}" + (f"; did you mean {close[0]!r}?" if close else f" ({kind}s: {names})")
        if args:
            return f"{args[0]} is not an option of {self.prog} itself: a {kind} comes first ({kind}s: {names})"
        return f"a {kind} is needed ({kind}s: {names})"

    def _close_option(self, extra: list[str]) -> str:
        """"; did you mean --batch-size?" for an unrecognized --batchsize, when one is close, or for the start of
        an option's name (--batch): abbreviations are not taken, and the ones it starts are named."""
        options = [option for action in self._actions for option in action.option_strings if option.startswith("--")]
        for arg in extra:
            if arg.startswith("--"):
                given = arg.split("=", 1)[0]
                close = list(dict.fromkeys([*difflib.get_close_matches(given, options, n=1, cutoff=0.75),
                                            *(option for option in options if option.startswith(given))]))
                if close:
                    return f"; did you mean {' or '.join(close[:3])}?"
        return ""

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

    # Each command group's module adds its own subcommands with add_commands(commands).
    from visprof.cli import analysis, bounds, diff, info, sweep
    from visprof.cli import compile as compile_cli  # not to shadow the builtin
    from visprof.cli import profile as profile_cli

    info.add_commands(commands)  # info
    profile_cli.add_commands(commands)  # profile
    sweep.add_commands(commands)  # sweep, export
    compile_cli.add_commands(commands)  # compare-compile
    diff.add_commands(commands)  # diff
    nsight_cli.add_commands(commands)  # nsys import/run, ncu
    analysis.add_commands(commands)  # import-timm, compare, predict, calibrate, report
    bounds.add_commands(commands)  # bounds build/coverage
    return parser


# --- entry point ---------------------------------------------------------------------------

# The commands that run models import torch and timm first, holding Ctrl-C meanwhile
# (import_timm_holding_interrupts says why). Before that, a command's ``check`` (a parser default,
# run once, here) refuses what needs no torch to refuse: output paths, option mixes. Its handler
# relies on it having run.
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
            if getattr(args, "check", None) is not None:  # a typo in an output path is said in a blink, not after torch
                args.check(args)
            if args.command in MODEL_COMMANDS:
                from visprof.base.timm_import import import_timm_holding_interrupts

                try:
                    import_timm_holding_interrupts(on_interrupt=say_the_stop_is_coming)
                except KeyboardInterrupt:  # before the command ran: none of its files was written
                    raise KeyboardInterrupt(_files_asked_for(args).unwritten_note()) from None
            if args.command not in FILE_COMMANDS:
                return args.handler(args)
            with _naming_unwritten_files(args):
                return args.handler(args)
    except VisprofError as error:
        _show_traceback_when_debugging()
        _say_error(str(error))
        return error.exit_code
    except OSError as error:
        # A path too long for the file system is the user's, wherever it is first used (a store
        # opened by SQLite, a folder listed): one line. Any other OSError is still visprof's bug.
        if error.errno != errno.ENAMETOOLONG:
            raise
        _show_traceback_when_debugging()
        name = str(error.filename or error)
        _say_error(f"a path is too long for the file system: {name if len(name) < 80 else name[:40] + '...' + name[-24:]}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as interrupt:
        # A command may say what the interruption left undone (e.g. which files were not written).
        detail = f"; {interrupt.args[0]}" if interrupt.args and interrupt.args[0] else ""
        if _terminated:
            _say_error(f"terminated ({_terminated}){detail}")
            return 128 + signal.Signals[_terminated].value  # the shell's convention: 143 for SIGTERM, 129 for SIGHUP
        _say_error(f"interrupted{detail}")
        return EXIT_INTERRUPTED


def _show_traceback_when_debugging() -> None:
    """With VISPROF_DEBUG set (to anything but 0, false, no or nothing), a user error's traceback
    is printed before its line, *too*: the exit code stays the error's (it had become 1, the
    line gone, so a script's `case $?` read every debugged error as a crash)."""
    if os.environ.get("VISPROF_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off"):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            traceback.print_exc(file=sys.stderr)


def _say_error(text: str) -> None:
    """The error's one line; with stderr gone (a closed pipe, a full disk) the exit code says it."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"visprof: error: {text}", file=sys.stderr, flush=True)


# Commands whose outputs (--json, --csv, --save, -o) are written at their end: Ctrl-C names the ones
# it left unwritten, as the README's exit codes say, and as profile's do.
FILE_COMMANDS = {"compare", "predict", "calibrate", "report", "export", "compare-compile"}


@contextlib.contextmanager
def _naming_unwritten_files(args: argparse.Namespace):
    """A KeyboardInterrupt out of the block says which of the files asked for it did not write:
    those whose (device, inode, mtime) is as it was before (an atomic write makes a new inode)."""
    asked = _asked_outputs(args)
    before = {option: file_identity(path) for option, path in asked.items()}
    try:
        yield
    except KeyboardInterrupt as interrupt:
        if interrupt.args and interrupt.args[0]:
            raise
        unwritten = {option: path for option, path in asked.items()
                     if file_identity(path) is None or file_identity(path) == before[option]}
        raise KeyboardInterrupt(OutputWriter(unwritten, quiet=True).unwritten_note()) from None


def _asked_outputs(args: argparse.Namespace) -> dict[str, Path]:
    """The files a command's options ask for: option -> path (``export -o -`` is stdout: no file)."""
    return {f"--{option}": value for option in ("json", "trace", "csv", "save", "output")
            if isinstance(value := getattr(args, option, None), Path)}


def _files_asked_for(args: argparse.Namespace) -> OutputWriter:
    """The files a model command's options ask for, none written yet."""
    return OutputWriter(_asked_outputs(args), quiet=True)


def say_the_stop_is_coming() -> None:
    """Said at once when Ctrl-C comes while torch loads; "interrupted" follows when it has loaded."""
    with contextlib.suppress(OSError, ValueError):  # no stderr to say it on: the stop still comes
        print("visprof: stopping once torch has finished loading", file=sys.stderr, flush=True)


# SIGTERM (timeout, SLURM, docker stop, systemd) and SIGHUP (the terminal closed, an ssh session
# dropped) stop a command as Ctrl-C does: the same cleanup (workers killed, a sweep's run marked
# interrupted, unwritten files named), exit 128 + the signal. Python's default for them is to die at once,
# with the run left "running" and no word. _terminated: the signal's name, once one came.
_terminated = ""


_watchdog: StopWatchdog | None = None


def _stop_on_signal(signum, frame) -> None:
    global _terminated
    if _watchdog is not None:
        _watchdog.handled()
    if signum != signal.SIGINT:
        _terminated = signal.Signals(signum).name
    raise KeyboardInterrupt


def run() -> None:
    """The ``visprof`` console script and ``python -m visprof``: ``main()``, then exit with its code.

    Once ``main`` returns the command is done (its files written, its report printed). A Ctrl-C
    while the interpreter then tears torch down would end the process by SIGINT, with no word and
    a code that says interrupted, so it is ignored from here on."""
    # not where the signal is ignored: under nohup SIGHUP is, and the command must go on
    global _watchdog
    stopping = [getattr(signal, name) for name in STOPPING_SIGNALS
                if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) is not signal.SIG_IGN]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # the same KeyboardInterrupt, seen by the watchdog
        stopping.append(signal.SIGINT)
    with contextlib.suppress(ValueError):  # signal() works in the main thread only
        for signum in stopping:
            signal.signal(signum, _stop_on_signal)
        _watchdog = StopWatchdog(set(stopping))  # after the handlers: signals without one write no wakeup byte
    code = main()
    with contextlib.suppress(ValueError):  # signal() works in the main thread only
        for signum in (signal.SIGINT, *stopping):
            signal.signal(signum, signal.SIG_IGN)
    if _watchdog is not None:
        _watchdog.close()
    _clear_unhandled_interrupt_mark()
    sys.exit(code)


def _clear_unhandled_interrupt_mark() -> None:
    """CPython marks the process "ended by an unhandled Ctrl-C" when a KeyboardInterrupt leaves
    code run by exec(), even where it is caught later, and under ``python -m`` then kills itself
    with SIGINT at exit, without a word, in place of the exit code. namedtuple and dataclass
    definitions are exec'd, so a Ctrl-C that lands in a lazy import can leave that mark; main()
    has handled the interrupt and said so. A successful exec() clears the mark."""
    exec("pass")  # noqa: S102 - a constant: its only effect is the one above
