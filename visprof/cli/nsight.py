"""The Nsight commands of the ``visprof`` command line, registered by ``visprof.cli.app``:

    visprof profile MODEL --nvtx-only          visprof's NVTX ranges only, for nsys/ncu
    visprof nsys import REPORT.sqlite          breakdown of an nsys recording
    visprof nsys run [-o BASE] -- PROGRAM...   record with nsys, export, import
    visprof ncu MODEL --category C             Nsight Compute counters per category (ncu_run)

Torch, sqlite readers and the profiler load inside the commands.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path


def add_nvtx_only_option(profile_parser: argparse.ArgumentParser) -> None:
    profile_parser.add_argument(
        "--nvtx-only", action="store_true",
        help="run with visprof's NVTX ranges only (no CUPTI, no passes), the measured iterations between "
             "cudaProfilerStart/Stop: for nsys --capture-range=cudaProfilerApi and ncu --profile-from-start off")


def check_nvtx_only_args(args: argparse.Namespace) -> None:
    """``visprof profile --nvtx-only``'s options, before torch loads (the CLI runs it first)."""
    from visprof.base.errors import BadInputError

    not_applicable = [name for name, given in (("--json", args.json), ("--trace", args.trace), ("--passes", args.passes),
                                                ("--compile", args.compile), ("--top", args.top)) if given]
    if not_applicable:
        raise BadInputError(f"--nvtx-only runs no measuring pass, so {', '.join(not_applicable)} cannot apply; "
                            "profile under nsys and import it (visprof nsys run) for a breakdown")
    if args.categories is not None and not args.categories.is_file():
        raise BadInputError(f"--categories: no such file: {args.categories}")


def cmd_profile_nvtx_only(args: argparse.Namespace) -> int:
    run_nvtx_only = importlib.import_module("visprof.nsight.nvtx_only").run_nvtx_only
    run = run_nvtx_only(args.model, batch_size=args.batch_size, img_size=args.img_size, precision=args.precision,
                        channels_last=args.channels_last, device=args.device, grad_mode=args.grad_mode,
                        autocast=args.autocast, warmup=args.warmup,
                        iterations=args.iterations,
                        category_file=str(args.categories) if args.categories is not None else None,
                        progress=not args.quiet)
    print(run.summary())
    return 0


# --- nsys ------------------------------------------------------------------------------------

def _report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON")
    parser.add_argument("--top", type=int, default=15, metavar="N", help="show the N costliest modules (default: 15)")
    parser.add_argument("--categories", type=Path, metavar="FILE", help="extra category rules (for rows without an op)")


def add_commands(commands) -> None:
    """Adds the `nsys` and `ncu` commands to visprof's subcommand parser."""
    nsys = commands.add_parser("nsys", help="Nsight Systems: import a recording, or record a program",
                               description="Attribute an Nsight Systems recording to visprof's categories.")
    sub = nsys.add_subparsers(dest="nsys_command", metavar="SUBCOMMAND", required=True)
    imp = sub.add_parser("import", help="attribute an nsys SQLite export (nsys export --type sqlite)",
                         description="Attribute the kernels, memcpys and memsets of an nsys SQLite export to "
                                     "visprof's categories and modules, through visprof's NVTX ranges.")
    imp.add_argument("export", type=Path, metavar="REPORT.sqlite")
    _report_options(imp)
    imp.set_defaults(handler=cmd_nsys_import)

    run = sub.add_parser("run", help="record a program with nsys, export it and import it",
                         description="Record PROGRAM with Nsight Systems (CUDA and NVTX tracing), export it to "
                                     "SQLite and print visprof's breakdown. Example: visprof nsys run -- "
                                     "visprof profile resnet50 --nvtx-only")
    run.add_argument("--output", "-o", type=Path, default=Path("visprof-nsys"), metavar="BASE",
                     help="writes BASE.nsys-rep and BASE.sqlite (default: visprof-nsys)")
    run.add_argument("--capture-range", choices=("auto", "none", "cudaProfilerApi"), default="auto",
                     help="auto: the profiler API for `visprof profile --nvtx-only`, else the whole run")
    run.add_argument("--nsys", metavar="PATH", help="the nsys executable (default: $VISPROF_NSYS, PATH, /usr/local/cuda/bin)")
    run.add_argument("--no-import", action="store_true", help="only record and export")
    _report_options(run)
    run.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ...")
    run.set_defaults(handler=cmd_nsys_run)

    _register_ncu(commands)


def _register_ncu(commands) -> None:
    from visprof.cli.arguments import img_size, positive_int
    from visprof.base.options import PRECISIONS

    ncu = commands.add_parser(
        "ncu", help="Nsight Compute counters of a category's kernels: its roofline position by counters",
        description="Profile MODEL, then run Nsight Compute on a sample of one category's kernels (through "
                    "visprof's NVTX filter, --clock-control none) and fold SM/DRAM throughput, occupancy, "
                    "tensor-pipe use and DRAM bytes into the profile.")
    ncu.add_argument("model", help="timm model name")
    ncu.add_argument("--category", "-c", action="append", required=True, metavar="C",
                     help="a category (attention, convolution, linear, ...); repeat for several, or 'all'")
    ncu.add_argument("--samples", type=positive_int, default=2, metavar="K",
                     help="ops profiled per kind of op (same aten op, module class and FLOPs; default 2)")
    ncu.add_argument("--batch-size", "-b", type=positive_int, metavar="N", help="default: 64")
    ncu.add_argument("--img-size", type=img_size, metavar="N|HxW|test|train")
    ncu.add_argument("--precision", choices=PRECISIONS)
    ncu.add_argument("--channels-last", action="store_true")
    ncu.add_argument("--device", metavar="DEV")
    ncu.add_argument("--ncu", metavar="PATH", help="the ncu executable (default: $VISPROF_NCU, PATH, /usr/local/cuda/bin)")
    ncu.add_argument("--csv", type=Path, metavar="FILE", help="also keep ncu's raw CSV output")
    ncu.add_argument("--timeout", type=positive_int, default=1800, metavar="S", help="per ncu run (default 1800 s)")
    ncu.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    _report_options(ncu)
    ncu.set_defaults(handler=cmd_ncu, check=_check_ncu_args)


def _check_ncu_args(args: argparse.Namespace) -> None:
    _check_report_args(args, {"--csv": args.csv})


def cmd_ncu(args: argparse.Namespace) -> int:
    """After ``_check_ncu_args`` (the CLI runs it first)."""
    profile_with_ncu = importlib.import_module("visprof.nsight.ncu_run").profile_with_ncu
    categories = ["all"] if "all" in args.category else list(dict.fromkeys(args.category))
    result = profile_with_ncu(args.model, categories, samples=args.samples, batch_size=args.batch_size,
                              img_size=args.img_size, precision=args.precision, channels_last=args.channels_last,
                              device=args.device, category_file=str(args.categories) if args.categories else None,
                              ncu=args.ncu, timeout=args.timeout, progress=not args.quiet, csv_path=args.csv)
    _print_result(result, args)
    print()
    print(importlib.import_module("visprof.nsight.ncu_report").format_counters(result.counters))
    return 0


def _print_result(result, args) -> None:
    from visprof.base.outputs import atomic_write_json
    from visprof.report.table import render

    print(render(result, top_modules=args.top))
    if args.json is not None:
        atomic_write_json(args.json, result.to_json() + "\n", kind="profile")
        print(f"[visprof] wrote {args.json}", file=sys.stderr)


def _check_report_args(args, outputs: dict | None = None, inputs: dict | None = None, sqlite: tuple = ()) -> None:
    """Before any work: the output paths (writable, distinct, none of them an input: the
    --categories file, or ``inputs``), the rules file, --top. ``sqlite``: the outputs that are SQLite
    files (nsys run's export), whose owner the command checks itself."""
    from visprof.base.errors import BadInputError
    from visprof.base.output_paths import check_output_paths

    check_output_paths({"--json": args.json, **(outputs or {})},
                       inputs={"--categories file": args.categories, **(inputs or {})}, sqlite=sqlite,
                       kinds={"--json": "profile", "--csv": "ncu-csv"})  # nsys's -o files are nsys's own kinds
    if args.categories is not None and not args.categories.is_file():
        raise BadInputError(f"--categories: no such file: {args.categories}")
    if args.top < 1:
        raise BadInputError(f"--top must be >= 1, got {args.top}")


def cmd_nsys_import(args: argparse.Namespace) -> int:
    _check_report_args(args, inputs={"nsys export": args.export})
    import_nsys = importlib.import_module("visprof.nsight.nsys_import").import_nsys
    result = import_nsys(args.export, category_file=args.categories, top_modules=args.top)
    print(_import_line(result))
    _print_result(result, args)
    return 0


def _import_line(result) -> str:
    env = result.environment
    a = result.attribution
    return (f"nsys import: {env.get('path')} (nsys {env.get('nsys_version')}, export schema "
            f"{env.get('export_schema')}): {a.kernel_count * a.iterations:g} GPU rows in {a.iterations} "
            f"iteration(s) owned by visprof's ranges")


def cmd_nsys_run(args: argparse.Namespace) -> int:
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    nsys_run = importlib.import_module("visprof.nsight.nsys_run")
    report, sqlite = nsys_run.output_paths(args.output)
    if args.no_import and args.json is not None:
        from visprof.base.errors import BadInputError

        raise BadInputError("--no-import only records and exports, so --json cannot apply; drop one of them "
                            "(visprof nsys import BASE.sqlite --json FILE imports the recording later)")
    # an earlier run's pair may be replaced, nothing else (nsys_run.check_replaceable; run_nsys checks it again)
    _check_report_args(args, {"-o report": report, "-o export": sqlite}, sqlite=("-o export",))
    nsys_run.check_replaceable(report, sqlite)
    run_nsys = nsys_run.run_nsys
    outputs = run_nsys(program, args.output, capture_range=args.capture_range, nsys=args.nsys)
    print(f"[visprof] wrote {outputs.report} and {outputs.sqlite}", file=sys.stderr)
    if outputs.program_status:
        print(f"visprof: warning: nsys exited with status {outputs.program_status}", file=sys.stderr)
    if args.no_import:
        return 0
    import_nsys = importlib.import_module("visprof.nsight.nsys_import").import_nsys
    result = import_nsys(outputs.sqlite, category_file=args.categories, top_modules=args.top)
    print(_import_line(result))
    _print_result(result, args)
    return 0
