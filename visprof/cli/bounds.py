"""The ``bounds`` command: Nsight Compute bounds per kernel family, reused across profiles.

    visprof bounds build NCU_RESULT.json ... -o LIBRARY.json      pool `visprof ncu` results of one GPU
    visprof bounds coverage LIBRARY.json SOURCE ...                how much of each profile's time rests
                                                                   on measured bounds, how much on estimates

See ``visprof.analysis.measured_bounds``. Registered by ``visprof.cli.app``.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter, defaultdict
from pathlib import Path

from visprof.cli.arguments import positive_int


def add_commands(commands) -> None:
    bounds = commands.add_parser(
        "bounds", help="bounds measured by Nsight Compute, per kernel family, for every profile that runs it",
        description="Pool the per-kernel counters of `visprof ncu` results into a library keyed by kernel family "
                    "and category, and tell for any profile on the same GPU how much of its kernel time rests on "
                    "those measured bounds and how much on the roofline's estimate from tensor sizes.")
    sub = bounds.add_subparsers(dest="bounds_command", metavar="SUBCOMMAND", required=True)
    build = sub.add_parser("build", help="a bound library from `visprof ncu` results of one GPU")
    build.add_argument("results", nargs="+", type=Path, metavar="NCU_RESULT", help="ProfileResult JSON written by `visprof ncu --json`")
    build.add_argument("-o", "--output", type=Path, required=True, metavar="LIBRARY", help="the library (JSON) to write")
    build.set_defaults(handler=cmd_bounds_build)
    cov = sub.add_parser("coverage", help="how much of each profile's kernel time the library measured")
    cov.add_argument("library", type=Path, metavar="LIBRARY")
    cov.add_argument("sources", nargs="+", metavar="SOURCE",
                     help="ProfileResult JSON files or folders of them, results stores (SQLite)")
    cov.add_argument("--top", type=positive_int, default=10, metavar="N",
                     help="show the N profiles with the least measured time and the N costliest unmeasured families")
    cov.add_argument("--json", type=Path, metavar="FILE", help="write every profile's coverage as JSON")
    cov.set_defaults(handler=cmd_bounds_coverage)


def cmd_bounds_build(args: argparse.Namespace) -> int:
    from visprof.analysis.measured_bounds import build_library, counter_set
    from visprof.base.output_paths import check_output_paths
    from visprof.result import ProfileResult

    check_output_paths({"-o": args.output}, inputs={"NCU_RESULT": args.results}, kinds={"-o": "bounds"})
    _refuse_repeats(args.results)
    library = build_library(counter_set(ProfileResult.load(path)) for path in args.results)
    library.save(args.output)
    kinds = defaultdict(int)
    for entry in library.entries:
        kinds[entry.bound or "unknown"] += 1
    print(f"{args.output}: {len(library.entries)} kernel families x categories on {library.gpu} ({library.tool}), "
          + ", ".join(f"{n} {bound}-bound" for bound, n in sorted(kinds.items())))
    return 0


def _named(m) -> str:
    """A profile as the coverage lists it: one model's runs at two batches or precisions had read alike."""
    size = f" @{m.img_size}" if m.img_size else ""
    return f"{m.model}{size} b{m.batch_size} {m.precision}"


def _refuse_repeats(paths: list[Path]) -> None:
    """One ncu result given twice (the same name, ./x, a link, a copy, a gzipped copy) would count
    its launches and weights twice without a word: refused, naming it. Compared by content,
    decompressed, which no name or compression hides."""
    from visprof.base.errors import BadInputError
    from visprof.base.inputs import read_input_bytes

    seen: dict[bytes, Path] = {}
    for path in paths:
        try:
            digest = hashlib.sha256(read_input_bytes(path, "NCU_RESULT")).digest()
        except BadInputError:
            continue  # loading it says what is wrong with it
        if digest in seen:
            first = seen[digest]
            how = "is given twice" if str(first) == str(path) else f"is the same result as {first}"
            raise BadInputError(f"NCU_RESULT {path} {how}: its kernels would count twice in the library")
        seen[digest] = path


def cmd_bounds_coverage(args: argparse.Namespace) -> int:
    from visprof.analysis import sources
    from visprof.analysis.measured_bounds import BoundLibrary, coverage, gpu_name
    from visprof.base.errors import BadInputError
    from visprof.base.output_paths import check_output_paths
    from visprof.base.outputs import write_json_summary

    check_output_paths({"--json": args.json}, inputs={"LIBRARY": args.library, "input": sources.input_paths(args.sources)},
                       folder_files=sources.FOLDER_FILES, kinds={"--json": "bounds-coverage"})
    library = BoundLibrary.load(args.library)
    why = "bounds coverage reads visprof profiles: JSON files, folders or stores"
    profiles, unread = sources.profile_inputs(args.sources, why)
    if unread:
        print(f"note: {', '.join(map(str, unread))} not read: bounds coverage reads profiles, and a CSV holds none",
              file=sys.stderr)
    read = sources.load(profiles)
    if read.skipped:  # a truncated file in a folder had been left out without a word (predict names them)
        print(f"note: skipped {len(read.skipped)} file(s) of the input folders: {', '.join(read.skipped[:3])}"
              + (" ..." if len(read.skipped) > 3 else ""), file=sys.stderr)
    loaded, repeats = read.latest_profiles_only()
    if not loaded.profiles:
        raise sources.no_profiles_error(why, references=len(loaded.measurements))
    on_gpu = [m for m in loaded.profiles if gpu_name(m.result) == library.gpu]
    with_families = [m for m in on_gpu if m.result.kernel_families]
    elsewhere = Counter(gpu_name(m.result) or "the CPU" for m in loaded.profiles if gpu_name(m.result) != library.gpu)
    # Every profile read is accounted for: repeats of a measurement count once (its latest).
    left_out = (f"{len(loaded.profiles) - len(on_gpu)} on other GPUs or the CPU, {len(on_gpu) - len(with_families)} "
                f"without kernel families and {repeats} older repeats left out")
    if not with_families:
        ran_on = (f"; they ran on {', '.join(f'{name} ({n})' for name, n in elsewhere.most_common())}"
                  if elsewhere else "")
        raise BadInputError(f"no profile in the inputs ran on {library.gpu}, the library's GPU, with kernel families "
                            f"({left_out}{ran_on}): give profiles made on {library.gpu} with the attributed pass")
    print(f"{len(with_families)} profiles on {library.gpu} with kernel families ({left_out}); library: "
          f"{len(library.entries)} entries", file=sys.stderr)
    rows = [(m, coverage(library, m.result)) for m in with_families]
    kernel_ms = sum(c.kernel_ms for _, c in rows)
    measured_ms = sum(c.measured_ms for _, c in rows)
    shares = sorted(c.measured_share for _, c in rows)
    print(f"measured bounds: {measured_ms / kernel_ms:.1%} of all kernel time; per profile median "
          f"{shares[len(shares) // 2]:.1%} (lowest {shares[0]:.1%}, highest {shares[-1]:.1%})")
    under_ms = sum(c.under_filled_ms for _, c in rows)
    copies_ms = sum(c.copies_ms for _, c in rows)
    # each part only where it reads above 0.0%, which would only be noise
    under, copies = under_ms / kernel_ms, copies_ms / kernel_ms
    parts = [f"latency-bound by launch size (fewer thread blocks than the GPU has SMs), not measured: {under:.1%} of "
             "all kernel time"] if round(under, 3) > 0 else []
    parts += [f"memcpy/memset (no kernels for ncu): {copies:.1%}"] if round(copies, 3) > 0 else []
    if parts:
        estimated = 1 - measured_ms / kernel_ms - under - copies
        print("; ".join(parts) + f"; estimated from tensor sizes: {estimated:.1%}")
    unsplit = sum(c.unsplit_shared for _, c in rows)
    if unsplit:
        print(f"note: {unsplit} of the {len(rows)} profiles keep one category per kernel-family row (made before "
              "rows kept their split): a family the library measured in several categories takes its largest "
              "category's bound for all of its time there", file=sys.stderr)
    print(f"the {min(args.top, len(rows))} profile(s) with the least measured time:")
    for m, c in sorted(rows, key=lambda r: r[1].measured_share)[:args.top]:
        print(f"  {_named(m)}: {c.line()}")
    unmeasured: dict[tuple[str, str], float] = defaultdict(float)
    for _, c in rows:
        for family, category, ms in c.unmeasured:
            unmeasured[(family, category)] += ms / c.kernel_ms / len(rows)
    shown = sorted(unmeasured.items(), key=lambda x: -x[1])[:args.top]
    print(f"the {len(shown)} unmeasured kernel families with the most time (mean share of a profile's kernel time):")
    for (family, category), share in shown:
        print(f"  {share:6.1%}  {family} ({category})")
    if args.json is not None:
        doc = [{"model": m.model, "img_size": m.img_size, "batch_size": m.batch_size, "precision": m.precision,
                "grad_mode": m.result.config.grad_mode, "kernel_ms": c.kernel_ms, "measured_ms": c.measured_ms,
                "by_bound_ms": c.by_bound_ms, "under_filled_ms": c.under_filled_ms, "copies_ms": c.copies_ms}
               for m, c in rows]
        write_json_summary(args.json, "bounds-coverage", {"gpu": library.gpu, "profiles": doc})
    return 0
