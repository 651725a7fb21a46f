"""An option that takes a list adds to it when given again, as ``--exclude``, ``--import`` and ``-O``
do. With argparse's last-one-wins, ``visprof sweep resnet18 -b 1 -b 2`` swept batch 2 only,
``predict --from a.json --to rtx4090 --from b.json`` predicted from b.json only, and
``calibrate --explain A --explain B`` told B only, each without a word."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cli_process import visprof
from visprof.cli.app import build_parser

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = DATA / "h200-result-vit_base_patch16_224.json"
H100 = DATA / "h100-result-vit_base_patch16_224.json"


@pytest.mark.parametrize("given, dest, expected", [
    (["-b", "1", "-b", "2,4"], "batch_size", [1, 2, 4]),
    (["--precision", "fp32", "--precision=bf16"], "precision", ["fp32", "bf16"]),
    (["--img-size", "160", "--img-size", "224"], "img_size", [160, 224]),
    (["--memory-format", "nchw", "--memory-format", "channels_last"], "memory_format", [False, True]),
    (["--passes", "timing", "--passes", "attributed"], "passes", ["timing", "attributed"]),
])
def test_a_sweep_list_given_twice_adds_up(given, dest, expected):
    args = build_parser().parse_args(["sweep", "resnet18", "--store", "s.db", *given])
    assert getattr(args, dest) == expected


def test_a_sweep_list_not_given_is_left_to_the_defaults():
    args = build_parser().parse_args(["sweep", "resnet18", "--store", "s.db"])
    assert (args.batch_size, args.img_size, args.precision, args.memory_format, args.passes) == (None,) * 5


def test_predict_from_given_twice_reads_both():
    args = build_parser().parse_args(["predict", "--from", "a.json", "--to", "rtx4090", "--from", "b.db", "c.db"])
    assert args.sources == ["a.json", "b.db", "c.db"]


def test_calibrate_explain_given_twice_tells_both():
    args = build_parser().parse_args(["calibrate", "refs.db", "p.db", "--explain", "resnet50", "--explain", "vgg16"])
    assert args.explain == ["resnet50", "vgg16"]


def test_predict_reads_the_profiles_of_both_from_options(tmp_path):
    for result in (H200, H100):
        shutil.copy(result, tmp_path / result.name)
    proc = visprof(tmp_path, "predict", "--from", H200.name, "--to", "rtx4090", "--from", H100.name)
    assert proc.returncode == 0, proc.stderr
    # the H100 profile is predicted; the H200 one (recorded before roofline groups were) is named as not
    rows = [line for line in proc.stdout.splitlines() if line.startswith("vit_base_patch16_224 ")]
    assert len(rows) == 1 and "h100-sxm" in rows[0], proc.stdout
    assert "Not predicted (1)" in proc.stdout and "no roofline groups" in proc.stdout, proc.stdout
