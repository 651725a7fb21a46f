"""A command's operands may come after its options, or between them: ``visprof compare a.db
--base rtx3090 --target rtx4090 b.csv`` and ``visprof sweep resnet18 --device cpu vit_tiny_patch16_224``
used to be refused as "unrecognized arguments: b.csv", naming a file that was a valid input."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cli_process import visprof
from visprof.cli.app import build_parser

TIMM = Path(__file__).resolve().parents[1] / "data" / "timm"
CSV_3090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv"
CSV_4090 = TIMM / "benchmark-infer-amp-nchw-pt240-cu124-rtx4090.csv"


@pytest.mark.parametrize("argv, dest, operands", [
    (["compare", "a.db", "--base", "rtx3090", "b.csv", "--target", "rtx4090", "c.json"], "sources",
     ["a.db", "b.csv", "c.json"]),
    (["report", "a.db", "-o", "r.html", "b.csv"], "sources", ["a.db", "b.csv"]),
    (["calibrate", "refs.db", "--base", "rtx4090", "--target", "rtx5090", "profiles.db"], "sources",
     ["refs.db", "profiles.db"]),
    (["import-timm", "a.csv", "--store", "s.db", "b.csv"], "files", [Path("a.csv"), Path("b.csv")]),
    (["sweep", "resnet18", "--device", "cpu", "vit_tiny_patch16_224", "--store", "s.db", "deit_tiny_patch16_224"],
     "models", ["resnet18", "vit_tiny_patch16_224", "deit_tiny_patch16_224"]),
    (["sweep", "--store", "s.db", "resnet18"], "models", ["resnet18"]),
    (["profile", "--device", "cpu", "resnet18", "-b", "1"], "model", "resnet18"),
    (["bounds", "coverage", "lib.json", "--top", "3", "a.db", "b.db"], "sources", ["a.db", "b.db"]),
])
def test_operands_are_read_wherever_they_stand(argv, dest, operands):
    assert getattr(build_parser().parse_args(argv), dest) == operands


def test_operands_after_a_double_dash_may_look_like_options():
    assert build_parser().parse_args(["profile", "--device", "cpu", "--", "-odd"]).model == "-odd"


def test_the_options_are_still_read_as_given():
    args = build_parser().parse_args(["compare", "a.db", "--top", "3", "b.db", "--all", "--json", "c.json"])
    assert (args.top, args.all, str(args.json), args.sources) == (3, True, "c.json", ["a.db", "b.db"])


def test_an_operand_too_many_is_still_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["profile", "resnet18", "--device", "cpu", "vit_tiny_patch16_224"])
    assert exit_.value.code == 2
    # the command's own parser says it, and points at the command's help (it said "usage: visprof --help")
    assert capsys.readouterr().err == ("visprof profile: error: unrecognized arguments: vit_tiny_patch16_224 (usage: "
                                       "visprof profile --help)\n")


def test_an_unknown_option_of_a_sub_command_points_at_its_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["nsys", "run", "--bogus", "--", "python", "x.py"])
    assert capsys.readouterr().err.endswith("unrecognized arguments: --bogus (usage: visprof nsys run --help)\n")


@pytest.mark.parametrize("argv, says", [
    (["sweep", "resnet18", "--store", "r.db", "--retry", "3", "--dry-run"], "--retry 3; did you mean --retries or --retry-failed?"),
    (["compare", "a.csv", "b.csv", "--gpu", "rtx4090"], "--gpu rtx4090; did you mean --gpus?"),
    (["profile", "resnet18", "--batch", "8"], "--batch 8; did you mean --batch-size?"),
])
def test_an_abbreviated_option_is_refused_naming_the_one_meant(argv, says, capsys):
    """argparse's prefix matching had read `sweep --retry 3` as --retry-failed and a model named "3", and
    `compare --gpu rtx4090` as a GPU spec file named rtx4090."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    assert f"unrecognized arguments: {says}" in capsys.readouterr().err


def test_compare_reads_a_table_given_after_the_options(tmp_path):
    for csv in (CSV_3090, CSV_4090):
        shutil.copy(csv, tmp_path / csv.name)
    proc = visprof(tmp_path, "compare", CSV_3090.name, "--base", "rtx3090", "--target", "rtx4090", CSV_4090.name,
                   "--top", "2")
    assert proc.returncode == 0, proc.stderr
    assert "visprof compare: RTX 3090 -> RTX 4090" in proc.stdout
