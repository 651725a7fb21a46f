"""Cells that measure the same thing under other spellings are one cell.

`visprof sweep deit_tiny_patch16_224,mobilenetv3_small_100 -b 1 --img-size test,train,224` ran 3
cells a model, all at 224x224: neither has a test size apart from its training size. And
`resnet18` beside `resnet18.a1_in1k` (its default tag) ran twice. The plan now reads each model's
sizes and default tag from timm's registry (a look-up, no model built), keeps the first spelling's
key, says how many it merged, and counts a merged cell as done where the store holds any of its
spellings: stores swept before keep resuming.
"""
from __future__ import annotations

import json
import time

from cli_in_process import run_cli
from device_stores import VIT, NoExecutor, measured_here
from visprof.store.result_store import ResultStore
from visprof.store.versions import SoftwareVersions
from visprof.sweep.plan import ModelSizes, SweepPlan
from visprof.sweep.placement import DoneOn
from visprof.sweep.run import _Sweep
from visprof.sweep.selection import registry_sizes

NAMED_AND_224 = ["test", "train", "224"]


def test_the_registry_gives_sizes_and_the_default_tag_without_building():
    assert registry_sizes("deit_tiny_patch16_224") == ModelSizes("deit_tiny_patch16_224.fb_in1k", (224, 224), (224, 224))
    assert registry_sizes("resnet18") == registry_sizes("resnet18.a1_in1k") == ModelSizes(
        "resnet18.a1_in1k", (224, 224), (288, 288))
    assert registry_sizes("resnet18.tv_in1k").name == "resnet18.tv_in1k"  # another tag: another config
    assert registry_sizes("no_such_model_here") is None


def test_sizes_that_resolve_to_one_input_are_one_cell_under_the_first_spelling():
    plan = SweepPlan(["deit_tiny_patch16_224", "mobilenetv3_small_100"], "cpu", batch_sizes=[1],
                     img_sizes=NAMED_AND_224, sizes=registry_sizes)
    assert [c.key for c in plan.cells()] == ["deit_tiny_patch16_224|b1|img=default|fp32|nchw|timing+attributed",
                                             "mobilenetv3_small_100|b1|img=default|fp32|nchw|timing+attributed"]
    assert plan.merged == 4
    assert plan.spellings(plan.cells()[0]) == [f"deit_tiny_patch16_224{name}|b1|img={size}|fp32|nchw|timing+attributed"
                                               for size in ("default", "train", "224") for name in ("", ".fb_in1k")]


def test_sizes_that_differ_stay_apart():
    """resnet50: test size 288, training size 224. An explicit 288 stays apart from `test`: a model that
    takes img_size is built for 288 there, while `test` feeds 288 to the model built for 224."""
    plan = SweepPlan(["resnet50"], "cpu", img_sizes=["test", "train", "224", "288"], sizes=registry_sizes)
    assert [(c.img_size, [k for k in plan.spellings(c)[1:] if k.startswith("resnet50|")]) for c in plan.cells()] == [
        ("test", []), ("train", ["resnet50|b2|img=224|fp32|nchw|timing+attributed"]), (288, [])]
    assert plan.merged == 1


def test_an_untagged_name_and_its_default_tag_are_one_model():
    plan = SweepPlan(["resnet18", "resnet18.a1_in1k", "resnet18.tv_in1k"], "cpu", sizes=registry_sizes)
    assert [c.model for c in plan.cells()] == ["resnet18", "resnet18.tv_in1k"]
    assert plan.merged == 1 and plan.model_count() == 2


def test_a_cell_is_also_spelled_with_the_models_other_name():
    """A store swept as `resnet18` holds the cell of `resnet18.a1_in1k` (its default tag) and back, listed
    alone: a sweep of the other name measured it again."""
    untagged = SweepPlan(["resnet18"], "cpu", sizes=registry_sizes)
    tagged = SweepPlan(["resnet18.a1_in1k"], "cpu", sizes=registry_sizes)
    assert untagged.spellings(untagged.cells()[0]) == ["resnet18|b2|img=default|fp32|nchw|timing+attributed",
                                                       "resnet18.a1_in1k|b2|img=default|fp32|nchw|timing+attributed"]
    assert tagged.spellings(tagged.cells()[0]) == list(reversed(untagged.spellings(untagged.cells()[0])))
    other_tag = SweepPlan(["resnet18.tv_in1k"], "cpu", sizes=registry_sizes)  # another config: no other name
    assert other_tag.spellings(other_tag.cells()[0]) == ["resnet18.tv_in1k|b2|img=default|fp32|nchw|timing+attributed"]
    assert untagged.merged == tagged.merged == 0


def test_without_sizes_only_equal_keys_merge():
    plan = SweepPlan(["deit_tiny_patch16_224"], "cpu", img_sizes=NAMED_AND_224)
    assert len(plan) == 3 and plan.merged == 0


def test_a_store_holding_another_spelling_counts_the_merged_cell_as_done(tmp_path):
    """Rows swept before under a spelling the plan now folds into another's cell (deit at --img-size 224,
    resnet18.a1_in1k listed after resnet18) are found, not measured again."""
    doc = measured_here(json.loads(VIT.read_text()))
    with ResultStore(tmp_path / "r.db", write=True) as store:
        for model, size in (("deit_tiny_patch16_224", "224"), ("resnet18.a1_in1k", None)):
            store.add_result(SweepPlan([model], "cuda", img_sizes=[size]).cells()[0], doc)
        plan = SweepPlan(["deit_tiny_patch16_224", "mobilenetv3_small_100", "resnet18", "resnet18.a1_in1k"], "cuda",
                         img_sizes=["test", "224"], sizes=registry_sizes)
        sweep = _Sweep(store, plan, NoExecutor(), DoneOn((), (doc["gpu"]["name"],)), retries=1, retry_failed=False,
                       time_budget_s=None, started=time.monotonic(), progress=False)
    assert [t.cell.key for t in sweep.queue] == ["mobilenetv3_small_100|b64|img=default|bf16|nchw|timing+attributed+memory",
                                                 "resnet18|b64|img=224|bf16|nchw|timing+attributed+memory"]
    assert sweep.summary.skipped == 2


def test_a_store_holding_the_models_other_name_counts_the_cell_as_done(tmp_path):
    """`visprof sweep resnet18 ...`, then `visprof sweep resnet18.a1_in1k ...` on the same store (or the
    other way round): one model, one input, measured once."""
    doc = measured_here(json.loads(VIT.read_text()))
    for stored, asked in (("resnet18", "resnet18.a1_in1k"), ("mobilenetv3_small_100.lamb_in1k", "mobilenetv3_small_100")):
        with ResultStore(tmp_path / f"{stored}.db", write=True) as store:
            store.add_result(SweepPlan([stored], "cuda").cells()[0], doc)
            plan = SweepPlan([asked, "resnet18.tv_in1k"], "cuda", sizes=registry_sizes)
            sweep = _Sweep(store, plan, NoExecutor(), DoneOn((), (doc["gpu"]["name"],)), retries=1,
                           retry_failed=False, time_budget_s=None, started=time.monotonic(), progress=False)
        assert [t.cell.model for t in sweep.queue] == ["resnet18.tv_in1k"], stored
        assert sweep.summary.skipped == 1


def test_a_result_under_another_spelling_wins_over_a_failure_under_the_cells_own(tmp_path):
    """deit measured at --img-size 224, and a failed try (not final) under the key the plan now gives the
    cell, img=default: the cell is done. Taking the failure would run the measured cell again (or, were
    the failure final, count it as failed for good)."""
    doc = measured_here(json.loads(VIT.read_text()))
    plan = SweepPlan(["deit_tiny_patch16_224"], "cuda", img_sizes=["test", "224"], sizes=registry_sizes)
    (cell,) = plan.cells()
    measured = SweepPlan(["deit_tiny_patch16_224"], "cuda", img_sizes=["224"]).cells()[0]
    # the cell's own key (the failure's) is looked up first, the result's spelling after it
    assert plan.spellings(cell)[0] == cell.key != measured.key and measured.key in plan.spellings(cell)
    with ResultStore(tmp_path / "r.db", write=True) as store:
        store.add_result(measured, doc)
        store.add_failure(cell, versions=SoftwareVersions.current(), gpu=doc["gpu"], kind="crash",
                          error_class="WorkerCrashed", message="killed", final=False)
        sweep = _Sweep(store, plan, NoExecutor(), DoneOn((), (doc["gpu"]["name"],)), retries=1, retry_failed=False,
                       time_budget_s=None, started=time.monotonic(), progress=False)
    assert list(sweep.queue) == []
    assert (sweep.summary.skipped, sweep.summary.skipped_failed) == (1, 0)


def test_the_sweep_says_how_many_it_merged(tmp_path, capsys, recorded_cells):
    code, out, err = run_cli(capsys, "sweep", "deit_tiny_patch16_224,mobilenetv3_small_100", "-b", "1",
                             "--img-size", ",".join(NAMED_AND_224), "--store", str(tmp_path / "r.db"), "--device", "cpu")
    assert code == 0, err
    assert [(c.model, c.img_size) for c in recorded_cells] == [("deit_tiny_patch16_224", "test"),
                                                               ("mobilenetv3_small_100", "test")]
    assert "[visprof] 2 cells (2 models), 4 more merged into them (the same model and input under other names or " \
           "sizes); 0 already in" in err
    assert "cells: 2 planned (4 more merged into them), 0 already in the store" in out
