"""The ``sweep`` and ``export`` commands (registered by ``visprof.cli.app.build_parser``).

Kept torch-free at import, like the rest of the CLI: ``visprof sweep --help`` answers at once.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import shlex
import sys
from pathlib import Path

from visprof.cli.arguments import COMMAND_STARTED, non_negative_int, positive_int
from visprof.base.errors import BadInputError, VisprofError
from visprof.base.options import PASSES, PRECISIONS
from visprof.base.sizes import parse_img_size

__all__ = ["add_commands", "cmd_sweep", "cmd_export"]

_FORMATS = ("csv", "parquet", "json", "timm")


def _list(convert, what: str):
    def parse(text: str) -> list:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}")
        try:
            return [convert(item) for item in items]
        # ArgumentTypeError: a shared type of cli.arguments, worded as for the other commands
        except (ValueError, BadInputError, argparse.ArgumentTypeError) as exc:
            raise argparse.ArgumentTypeError(f"{what}: {exc}") from None
    return parse


def _precision(text: str) -> str:
    if text not in PRECISIONS:
        raise ValueError(f"unknown precision {text!r}; choose from {', '.join(PRECISIONS)}")
    return text


def _memory_format(text: str) -> bool:
    text = text.lower().replace("-", "_")
    if text in ("nchw", "contiguous"):
        return False
    if text in ("nhwc", "channels_last"):
        return True
    raise ValueError(f"unknown memory format {text!r}; choose nchw or channels_last")


def _pass(text: str) -> str:
    if text not in PASSES:
        raise ValueError(f"unknown pass {text!r}; choose from {', '.join(PASSES)}")
    return text


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:  # "nan <= 0" is false: checked apart
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, got {text}")
    return value


def _file_or_stdout(text: str) -> Path | None:
    """``-o -``: standard output, as without -o (None), the way most tools read ``-``."""
    return None if text == "-" else Path(text)


def _profile_option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value  # a bare string, e.g. grad_mode=inference_mode
    return key.strip().replace("-", "_"), parsed


def add_commands(commands: argparse._SubParsersAction) -> None:
    sweep = commands.add_parser(
        "sweep",
        help="profile many models x configurations x GPUs into a resumable results store",
        description="Profile many models, each configuration, on every GPU of this machine (or a Ray cluster), "
                    "into one SQLite results store. The same command again resumes: finished cells are skipped.",
    )
    sweep.add_argument("models", nargs="*", metavar="MODEL",
                       help="timm names or patterns ('vit_*', '*convnext*'), space- or comma-separated "
                            "(none: a starter list of 8 models, one of each kind)")
    sweep.add_argument("--store", type=Path, required=True, metavar="FILE", help="the results store (SQLite; created if new)")
    pick = sweep.add_argument_group("models")
    pick.add_argument("--model-list", type=Path, metavar="FILE",
                      help="one model name or pattern a line (as timm's benchmark.py); NAME@SIZE: that image size only")
    pick.add_argument("--all", action="store_true", dest="all_models", help="every model timm has")
    pick.add_argument("--exclude", action="append", default=[], metavar="PATTERNS", help="leave out names matching these patterns")
    pick.add_argument("--limit", type=positive_int, metavar="N", help="the first N selected models only")
    pick.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                      help="import this module (name or .py path) in the driver and every worker first, "
                           "e.g. one that registers your models with timm's register_model")
    # Each list option may be given more than once, and adds to its list (-b 1 -b 2 is -b 1,2), as
    # --exclude, --import and -O do: argparse's last-one-wins had swept only -b 2, without a word.
    config = sweep.add_argument_group("configurations (comma-separated lists are crossed; a list given twice adds up)")
    config.add_argument("--batch-size", "-b", type=_list(positive_int, "batch sizes"), action="extend", metavar="LIST",
                        help="default: 64 on a GPU, 2 on the CPU; on out of memory a batch decays as in timm's benchmark.py "
                             "(on the CPU, a batch the host-memory estimate says cannot fit fails at once, as an "
                             "oom naming the batch that fits)")
    config.add_argument("--img-size", type=_list(parse_img_size, "image sizes"), action="extend", metavar="LIST", help="N, HxW, test or train each (default: test, the pretrained config's test size as timm's benchmark.py)")
    config.add_argument("--precision", type=_list(_precision, "precisions"), action="extend", metavar="LIST",
                        help=f"of {','.join(PRECISIONS)} (default: bf16 on a GPU, fp32 on the CPU)")
    config.add_argument("--channels-last", action="store_true", help="NHWC only (same as --memory-format channels_last)")
    config.add_argument("--memory-format", type=_list(_memory_format, "memory formats"), action="extend", metavar="LIST",
                        help="nchw, channels_last or both (nchw,channels_last)")
    config.add_argument("--passes", type=_list(_pass, "passes"), action="extend", metavar="LIST",
                        help=f"of {','.join(PASSES)} (default: all; on the CPU all but memory, which needs a GPU)")
    config.add_argument("--warmup", type=non_negative_int, metavar="N", help="warm-up iterations before the timing pass (default: until three agree within 5%%)")
    config.add_argument("--iterations", type=positive_int, metavar="N", help="timed iterations (default: until the median is stable)")
    config.add_argument("--compile", action="store_true", help="torch.compile each model first")
    config.add_argument("--profile-option", "-O", type=_profile_option, action="append", default=[], metavar="KEY=VALUE",
                        help="a keyword of visprof.profile passed on to every cell (VALUE as JSON, else a string); one the "
                             "sweep sets itself or cannot pass on (category_file, in_chans, paths) is refused, naming why")
    where = sweep.add_argument_group("where")
    where.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                       help="auto: the GPUs of --gpus, else the CPU (default)")
    where.add_argument("--gpus", default="all", metavar="all|0,1", help="GPUs to use, a worker on each (default: all)")
    where.add_argument("--workers", type=positive_int, metavar="N", help="CPU sweeps: worker processes (default 1)")
    where.add_argument("--ray", metavar="auto|local|ADDRESS",
                       help="run each cell as a Ray task: auto (a running cluster), local (start one), or an address")
    run = sweep.add_argument_group("running")
    run.add_argument("--timeout", type=_positive_float, default=None, metavar="S",
                     help="seconds a cell may take before its worker is killed (default: 300 on GPUs, 1800 on the CPU)")
    run.add_argument("--retries", type=non_negative_int, default=1, metavar="N",
                     help="tries again after a worker crash or a timeout (default 1); model errors are not retried")
    run.add_argument("--retry-failed", action="store_true", help="also rerun cells that failed in earlier runs")
    run.add_argument("--fresh-process", action="store_true", help="a new worker process for every cell (as timm's bulk_runner)")
    run.add_argument("--time-budget", type=_positive_float, metavar="S",
                     help="stop starting cells in time to end within S seconds (exit 0; run again to resume)")
    run.add_argument("--dry-run", "-n", action="store_true",
                     help="list the cells a run would measure and how many the store holds, with a time estimated "
                          "from the store's cells; creates nothing, runs nothing")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    run.add_argument("--verbose", "-v", action="store_true", help="show the workers' own output on stderr")
    run.add_argument("--json", type=Path, metavar="FILE", help="also write the summary as JSON")
    sweep.set_defaults(handler=cmd_sweep, check=_check_before_torch)

    export = commands.add_parser(
        "export",
        help="write a results store's rows as csv, parquet, json or timm's benchmark CSV",
        description="Write a results store's rows to a file (or stdout) as csv, parquet, json, or timm "
                    "(the columns of timm's benchmark.py CSVs, to join timm's published results).",
    )
    export.add_argument("store", type=Path, help="a results store written by visprof sweep")
    export.add_argument("--format", "-f", choices=_FORMATS, default="csv", help="default: csv")
    export.add_argument("--output", "-o", type=_file_or_stdout, metavar="FILE",
                        help="default (or -): stdout (parquet needs a file)")
    export.add_argument("--model", metavar="PATTERN", action="append", help="only models matching this pattern "
                        "('vit_*'; a comma list, or the option again, for several); a name without a pretrained tag "
                        "(resnet18) matches its tagged rows too (resnet18.a1_in1k), and one with timm's default tag "
                        "its untagged rows")
    export.add_argument("--gpu", metavar="PATTERN", help="only rows of GPUs whose name matches ('*H200*') or of one GPU (h200); cpu: the CPU's rows")
    export.add_argument("--failures", action="store_true", help="export the failures instead (csv or json)")
    export.add_argument("--batch-size", "-b", type=positive_int, metavar="N",
                        help="--format timm: the rows of this batch size (timm's CSVs have one row per model and size)")
    export.add_argument("--precision", choices=PRECISIONS, help="--format timm: the rows of this precision")
    export.set_defaults(handler=cmd_export)


def _check_before_torch(args: argparse.Namespace) -> None:
    """The options, the model list (read here, once: a pipe is empty after; as a folder of inputs "/"
    was walked whole, a traceback) and the output paths: the store, the summary and the files the
    sweep reads, none of which may be another (or its -wal)."""
    from visprof.base.output_paths import check_output_paths
    from visprof.sweep.selection import load_model_list

    _check_memory_formats(args.channels_last, args.memory_format)
    args.loaded_model_list = load_model_list(args.model_list) if args.model_list is not None else None
    scripts = [name for name in args.imports if name.endswith(".py")]
    inputs = {"--model-list file": args.model_list, "--import file": scripts}
    if args.dry_run and Path(args.store).exists():
        # the store is only read ("creates nothing"): a store in a read-only folder is listed
        check_output_paths({"--json": args.json}, inputs={**inputs, "--store": args.store}, kinds={"--json": "sweep"})
    else:  # a dry run of a store the run would create checks its path as the run does (a missing folder, "-")
        check_output_paths({"--store": args.store, "--json": args.json}, inputs=inputs, sqlite=("--store",),
                           kinds={"--json": "sweep"})


def cmd_sweep(args: argparse.Namespace) -> int:
    """After ``_check_before_torch`` (the CLI runs it first)."""
    from visprof.sweep.run import run_sweep

    if not args.models and args.model_list is None and not args.all_models:
        from visprof.sweep.selection import STARTER_MODELS

        args.models = list(STARTER_MODELS)
        print(f"[visprof] no models named: the starter list ({', '.join(STARTER_MODELS)}); name models or "
              f"patterns ('resnet50,vit_*'), or use --model-list FILE or --all for others", file=sys.stderr)
    memory_formats = list(args.memory_format or [])
    if args.channels_last:
        memory_formats.append(True)
    options = _profile_options(args)
    try:
        summary = run_sweep(
            args.models,
            store=args.store,
            model_list=args.loaded_model_list,
            all_models=args.all_models,
            exclude=args.exclude,
            limit=args.limit,
            batch_sizes=args.batch_size or (),
            img_sizes=args.img_size or (),
            precisions=args.precision or (),
            channels_last=memory_formats,
            passes=args.passes,  # None: all that the sweep's devices can run
            profile_options=options,
            device=args.device,
            gpus=args.gpus,
            workers=args.workers,
            ray=args.ray,
            imports=args.imports,
            timeout_s=args.timeout,
            retries=args.retries,
            retry_failed=args.retry_failed,
            fresh_process=args.fresh_process,
            # of the whole command: torch's and timm's imports had taken seconds of it unseen (a 14 s budget
            # took 16-20 s), which a job under a hard limit pays for; the summary's elapsed counts them too
            time_budget_s=args.time_budget,
            dry_run=args.dry_run,
            started_at=COMMAND_STARTED,
            progress=not args.quiet,
            echo_worker_output=args.verbose,
            argv=shlex.join(["visprof", *sys.argv[1:]]),  # pasted back into a shell, it runs the same sweep
        )
    except KeyboardInterrupt as interrupt:
        # Ctrl-C or SIGTERM once the run began: what its cells measured is still worth reading, so the summary
        # (its first line says "interrupted") goes to stdout and --json as a finished sweep's does; the exit
        # code still says interrupted (130, or 143 for SIGTERM).
        summary = getattr(interrupt, "sweep_summary", None)
        if summary is None:
            raise
        print(summary.render())
        if args.json is None:
            raise
        _write_summary(args.json, summary)
        raise KeyboardInterrupt(f"the summary of the cells run is in {args.json}") from None
    print(summary.render(top=None if args.dry_run else 5))  # a dry run is asked for its whole list
    if args.json is not None:
        _write_summary(args.json, summary)
    return 0


def _write_summary(path: Path, summary) -> None:
    from visprof.base.outputs import write_json_summary

    write_json_summary(path, "sweep", summary.to_dict(), indent=2)


def _profile_options(args: argparse.Namespace) -> dict:
    """The profile options of ``-O`` and of --warmup, --iterations and --compile, which are also
    profile options: one given twice with two values is refused, naming both (``-O iterations=3
    --iterations 5`` had run 5 without a word); given twice alike, it is taken once."""
    given = [(f"-O {key}={value if isinstance(value, str) else json.dumps(value)}", key, value)
             for key, value in args.profile_option]
    given += [(f"--{key} {getattr(args, key)}", key, getattr(args, key)) for key in ("warmup", "iterations")
              if getattr(args, key) is not None]
    if args.compile:
        given.append(("--compile", "compile", True))
    options, said = {}, {}
    for text, key, value in given:
        if key in options and options[key] != value:
            raise BadInputError(f"{said[key]} and {text} contradict each other: give one of them")
        options[key], said[key] = value, text
    return options


def _check_memory_formats(channels_last: bool, memory_formats: list[bool] | None) -> None:
    """``--channels-last`` is ``--memory-format channels_last``: with a --memory-format that also
    names nchw, the two contradict each other and are refused, not half obeyed."""
    if channels_last and memory_formats and not all(memory_formats):
        given = ",".join(dict.fromkeys("channels_last" if nhwc else "nchw" for nhwc in memory_formats))
        raise BadInputError(f"--channels-last means channels_last only, and --memory-format {given} asks for nchw: "
                            "give one of them (--memory-format nchw,channels_last sweeps both)")


def _stored_gpu(store: Path, gpu: str | None) -> tuple[str | None, list[str]]:
    """``--gpu`` as export's pattern, and the GPU names the store holds. A name without a pattern's
    characters that names a GPU as the other commands do (``h200``, ``H200``, ``rtx4090``) is that
    GPU's stored name: only '*H200*' had matched, and ``--gpu H200`` exported nothing, with exit 0."""
    if not gpu:
        return gpu, []
    from visprof.analysis.gpus import gpu_table
    from visprof.store.result_store import open_store

    try:
        with open_store(store) as reader:
            held = reader.device_names()  # the CPU's rows as "cpu", for the warning of a filter that matches nothing
    except VisprofError:
        return gpu, []  # export_store says what is wrong with the store
    if gpu.lower() == "cpu":
        return "cpu", held  # the CPU's rows are "cpu" in the store; CPU had matched none
    if any(c in gpu for c in "*?["):
        return gpu, held
    table = gpu_table()
    spec = table.find(gpu)
    same = [name for name in held if name.lower() == gpu.lower()
            or (spec is not None and table.find(name) is not None and table.find(name).id == spec.id)]
    return (same[0].replace("[", "[[]").replace("*", "[*]").replace("?", "[?]") if len(same) == 1 else gpu), held


def cmd_export(args: argparse.Namespace) -> int:
    # export_store checks the output (writable, not the store) before it reads anything.
    export_store = importlib.import_module("visprof.store.export").export_store
    gpu, held = _stored_gpu(args.store, args.gpu)
    was_there = args.output is not None and Path(args.output).exists()
    count = export_store(args.store, args.output, args.format, model=args.model, gpu=gpu, failures=args.failures,
                         batch_size=args.batch_size, precision=args.precision)
    models = ",".join(args.model) if args.model else None
    filters = (("model", models), ("gpu", args.gpu), ("batch-size", args.batch_size), ("precision", args.precision))
    matched_none = count == 0 and any(value for _, value in filters)
    if matched_none:  # an empty export is otherwise silent on stdout
        print(f"visprof: warning: no row of {args.store} matches " + " and ".join(
            f"--{name} {value!r}" for name, value in filters if value)
              + (f" (its rows' devices: {', '.join(held)})" if args.gpu and held else "")
              + (f"; {args.output} was left as it was" if was_there else ""), file=sys.stderr)
    if args.output is not None and not (matched_none and was_there):
        print(f"[visprof] wrote {count} rows to {args.output}", file=sys.stderr)
    return 0
