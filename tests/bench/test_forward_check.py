"""bench/forward_check.py: the calibration judged on models listed before they were profiled."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import forward_check  # noqa: E402


def test_the_list_is_its_names_without_comments_or_blanks(tmp_path):
    path = tmp_path / "models.txt"
    path.write_text("# fixed before the run\nresnet50\n\n  vit_base_patch16_224 \n# convnext_tiny\n")
    assert forward_check.listed_models(path) == {"resnet50", "vit_base_patch16_224"}


def test_the_committed_list_names_253_models_and_no_test_networks():
    listed = forward_check.listed_models(REPO / "bench" / "sweep_models_rest253.txt")
    assert len(listed) == 253 and not any(m.startswith("test_") for m in listed)


def test_new_families_are_the_test_families_no_published_training_model_has():
    families = ["vit", "vit", "aimv2", "aimv2", "fasternet", "fasternet"]
    test = [False, True, True, True, True, False]
    published = [True, True, True, True, True, False]  # the unlisted fasternet has no published pair
    assert forward_check.new_family_flags(families, test, published) == [False, False, True, True, True, False]


def test_the_pt291_list_names_125_models_none_profiled_in_the_2054_result_store():
    listed = forward_check.listed_models(REPO / "bench" / "sweep_models_pt291only.txt")
    rest = forward_check.listed_models(REPO / "bench" / "sweep_models_rest253.txt")
    assert len(listed) == 125 and not any(m.startswith("test_") for m in listed) and not listed & rest


def test_missing_inputs_are_one_line(tmp_path, capsys):
    rc = forward_check.main(["--pair", str(tmp_path / "p.db"), "a", "b", "--store", str(tmp_path / "s.db"),
                             "--models", str(tmp_path / "m.txt"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("forward_check.py: not found:") and "p.db" in err[0]
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path, capsys):
    models = tmp_path / "forward.txt"  # the list, where the run would write its report
    models.write_text("resnet50\n")
    for name in ("p.db", "s.db"):
        (tmp_path / name).write_bytes(b"")
    rc = forward_check.main(["--pair", str(tmp_path / "p.db"), "a", "b", "--store", str(tmp_path / "s.db"),
                             "--models", str(models), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("forward_check.py:") and "forward.txt" in err[0]
    assert models.read_text() == "resnet50\n"
