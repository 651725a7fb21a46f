"""``visprof diff A B``: two saved profiles side by side (visprof.report.profile_diff)."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_commands(commands) -> None:
    """Registers the command on the CLI's sub-parsers (called from visprof.cli.app.build_parser)."""
    from visprof.cli.arguments import positive_int

    cmd = commands.add_parser(
        "diff",
        help="two saved profiles side by side: what changed per category, op type and kernel family",
        description="Compare two results of visprof profile --json (before and after a change, two GPUs, two "
                    "precisions or batches): latency, time per category and sub-category, the op types and kernel "
                    "families whose time changed most, peak memory, and what differs between the two runs.",
    )
    cmd.add_argument("before", type=Path, metavar="A", help="a result file (visprof profile --json A)")
    cmd.add_argument("after", type=Path, metavar="B", help="another result file")
    cmd.add_argument("--top", type=positive_int, default=10, metavar="N",
                     help="op types and kernel families to show (default 10)")
    cmd.add_argument("--json", type=Path, metavar="FILE", help="also write the comparison as JSON")
    cmd.set_defaults(handler=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from visprof.base.output_paths import check_output_paths
    from visprof.base.outputs import write_json_summary
    from visprof.report.profile_diff import diff_profiles, render_profile_diff
    from visprof.result import ProfileResult

    check_output_paths({"--json": args.json}, inputs={"result file A": args.before, "result file B": args.after},
                       kinds={"--json": "diff"})
    diff = diff_profiles(ProfileResult.load(args.before), ProfileResult.load(args.after))
    diff.same_file = args.before.resolve() == args.after.resolve()
    print(render_profile_diff(diff, (str(args.before), str(args.after)), top=args.top), end="")
    if args.json is not None:
        write_json_summary(args.json, "diff", diff.to_dict())
    return 0
