"""Model selection (names, patterns, lists, --all, --exclude, --limit, --import) and the
cell plan (the cross product, its canonical keys, the defaults per device)."""
from pathlib import Path

import pytest

from visprof.base.errors import BadInputError, UnknownModelError
from visprof.base.sizes import parse_img_size
from visprof.sweep.plan import Cell, SweepPlan, img_size_text, split_sized
from visprof.sweep.selection import import_modules, read_model_list, select_models

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")


def test_names_and_patterns_expand_in_order_without_repeats():
    import timm

    names = select_models(["resnet18", "vit_tiny_*,resnet18", "resnet18"])
    vits = timm.list_models("vit_tiny_*")
    assert names == ["resnet18", *vits]
    assert len(vits) >= 2


def test_a_pretrained_tag_and_a_hub_prefix_are_kept_as_timm_names():
    assert select_models("timm/resnet18.a1_in1k") == ["resnet18.a1_in1k"]


def test_a_pattern_with_a_tag_matches_pretrained_names():
    """'resnet10t.*' "matched no timm model", though timm has resnet10t.c3_in1k."""
    assert select_models("resnet10t.*") == ["resnet10t.c3_in1k"]
    assert "resnet18.a1_in1k" in select_models("resnet18.*")


def test_an_unknown_name_fails_with_close_matches():
    with pytest.raises(UnknownModelError, match="resnet50"):
        select_models(["resnet5O"])


def test_a_pattern_that_matches_nothing_is_an_error():
    with pytest.raises(BadInputError, match="matches no timm model"):
        select_models(["nosuchfamily_*"])


def test_exclude_without_a_size_leaves_out_every_size_of_the_model():
    """--exclude resnet18 left resnet18@160 in."""
    chosen = ["resnet18", "resnet18@160", "resnet34@160"]
    assert select_models(chosen, exclude="resnet18") == ["resnet34@160"]
    assert select_models(chosen, exclude="resnet18@160") == ["resnet18", "resnet34@160"]
    assert select_models(chosen, exclude="*@160") == ["resnet18"]


def test_exclude_and_limit():
    import timm

    everything = select_models("*convnext*")
    assert everything == timm.list_models("*convnext*")
    kept = select_models("*convnext*", exclude=["*_xxlarge*,*_huge*", "convnextv2_*"])
    assert kept and not any("xxlarge" in n or "huge" in n or n.startswith("convnextv2_") for n in kept)
    assert set(kept) < set(everything)
    assert select_models("*convnext*", limit=3) == everything[:3]
    with pytest.raises(BadInputError, match="leaves none"):
        select_models("resnet18", exclude="resnet*")
    with pytest.raises(BadInputError, match="^limit must be"):
        select_models("resnet18", limit=0)


def test_limit_counts_models_not_their_sizes():
    # --limit 2 of "resnet18@96, resnet18@128, vit_tiny" kept both resnet18 sizes and dropped vit_tiny
    listed = ["resnet18@96", "resnet18@128", "vit_tiny_patch16_224", "resnet34"]
    assert select_models(listed, limit=2) == ["resnet18@96", "resnet18@128", "vit_tiny_patch16_224"]
    assert select_models(listed, limit=1) == ["resnet18@96", "resnet18@128"]
    assert select_models(["resnet18@96", "resnet34", "resnet18@128"], limit=1) == ["resnet18@96", "resnet18@128"]


def test_all_models_is_timms_list():
    import timm

    assert select_models(all_models=True) == timm.list_models()


def test_no_models_is_an_error():
    with pytest.raises(BadInputError, match="no models given"):
        select_models([])


def test_model_list_file_reads_names_patterns_and_comments(tmp_path):
    listing = tmp_path / "models.txt"
    listing.write_text("# chosen for the test\nresnet18\n\n  vit_tiny_patch16_224  # a ViT\nresnet18\n")
    assert read_model_list(listing) == ["resnet18", "vit_tiny_patch16_224", "resnet18"]
    assert select_models(model_list=listing) == ["resnet18", "vit_tiny_patch16_224"]
    assert select_models(["convnext_atto"], model_list=listing) == ["convnext_atto", "resnet18", "vit_tiny_patch16_224"]


def test_a_model_list_saved_with_a_byte_order_mark_reads_its_first_name(tmp_path):
    """Windows Notepad starts a UTF-8 file with a BOM: the first name read '\\ufeffresnet18'."""
    listing = tmp_path / "models.txt"
    listing.write_bytes("resnet18\r\nvit_tiny_patch16_224\r\n".encode("utf-8-sig"))
    assert read_model_list(listing) == ["resnet18", "vit_tiny_patch16_224"]


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.txt", "no such file"),
    (lambda p: p, "is a directory"),
    (lambda p: _write(p / "empty.txt", "# nothing\n\n"), "names no model"),
    (lambda p: _write_bytes(p / "binary.txt", b"\xff\xfe\x00bad"), "cannot read"),
])
def test_model_list_errors_are_one_line(tmp_path, make, message):
    with pytest.raises(BadInputError, match=message):
        read_model_list(make(tmp_path))


def _write(path, text):
    path.write_text(text)
    return path


def _write_bytes(path, data):
    path.write_bytes(data)
    return path


def test_import_registers_user_models_for_selection():
    import_modules([FAKE_MODELS])
    assert "visprof_fake_tiny" in select_models("visprof_fake_*")
    import_modules([FAKE_MODELS])  # a second import of the same file is a no-op


def test_import_errors(tmp_path):
    with pytest.raises(BadInputError, match="no module named"):
        import_modules(["no_such_module_for_visprof"])
    with pytest.raises(BadInputError, match="no such file"):
        import_modules([str(tmp_path / "absent.py")])
    broken = _write(tmp_path / "broken.py", "raise RuntimeError('broken on import')\n")
    with pytest.raises(BadInputError, match="broken on import"):
        import_modules([str(broken)])


def test_plan_crosses_every_list_model_major():
    plan = SweepPlan(["a", "b"], "cuda", batch_sizes=[64, 8], img_sizes=[224, "288x320"], precisions=["bf16", "fp32"],
                     channels_last=[False, True])
    cells = plan.cells()
    assert len(cells) == len(plan) == 2 * 2 * 2 * 2 * 2
    assert [c.model for c in cells[:16]] == ["a"] * 16
    assert len({c.key for c in cells}) == len(cells)
    assert {c.img_size for c in cells} == {224, (288, 320)}


def test_an_entry_with_its_own_size_takes_only_that_size():
    # timm's tables list a model once per image size: resnet50@160 is the published row at 160 px
    plan = SweepPlan(["resnet50@160", "vit_b", "resnet50@384x256"], "cuda", img_sizes=[224, 288])
    cells = plan.cells()
    assert [(c.model, c.img_size) for c in cells] == [("resnet50", 160), ("vit_b", 224), ("vit_b", 288),
                                                       ("resnet50", (384, 256))]
    assert len(plan) == len(cells) == 4
    assert cells[0].key == "resnet50|b64|img=160|bf16|nchw|timing+attributed+memory"  # the store's key, as for --img-size
    assert split_sized("resnet50") == ("resnet50", None) and split_sized("m@test") == ("m", "test")
    assert plan.model_count() == 2  # resnet50 at two sizes is one model


def test_a_sized_entry_and_a_plain_one_naming_the_same_cell_make_it_once():
    """resnet50@224 beside resnet50 with --img-size 224,288: the 224 cell had run twice, the store
    kept one row and the summary counted two."""
    plan = SweepPlan(["resnet50@224", "resnet50"], "cuda", img_sizes=[224, 288])
    assert [(c.model, c.img_size) for c in plan.cells()] == [("resnet50", 224), ("resnet50", 288)]
    assert len(plan) == 2 and plan.model_count() == 1


def test_one_value_where_a_list_is_asked_for_is_that_value():
    """run_sweep(precisions="fp32") said "unknown precision 'f'"; batch_sizes=2 was a TypeError."""
    plan = SweepPlan("m", "cpu", precisions="bf16", batch_sizes=3, img_sizes="64", channels_last=True)
    [cell] = plan.cells()
    assert (cell.model, cell.precision, cell.batch_size, cell.img_size, cell.channels_last) == ("m", "bf16", 3, 64, True)
    with pytest.raises(BadInputError, match="precisions must be a list"):
        SweepPlan(["m"], "cpu", precisions=2.5)


@pytest.mark.parametrize("entry, message", [
    ("@160", "give MODEL@SIZE"), ("resnet50@", "give MODEL@SIZE"), ("resnet50@abc", "'resnet50@abc': image size"),
])
def test_a_bad_sized_entry_is_one_line(entry, message):
    with pytest.raises(BadInputError, match=message):
        split_sized(entry)


def test_sized_entries_are_selected_as_timm_names_with_their_size(tmp_path):
    listed = _write(tmp_path / "rows.txt", "resnet50@160  # a published row\nresnet50@288\nresnet18\n")
    assert select_models(model_list=listed) == ["resnet50@160", "resnet50@288", "resnet18"]
    assert select_models("resnet1*@256")[:2] == ["resnet10t@256", "resnet14t@256"]  # a pattern keeps the size
    with pytest.raises(BadInputError, match="leaves none"):
        select_models("resnet50@160", exclude="resnet50@*")
    with pytest.raises(UnknownModelError):
        select_models("resnet5o@160")


def test_defaults_follow_the_device():
    gpu = SweepPlan(["m"], "cuda").cells()
    cpu = SweepPlan(["m"], "cpu").cells()
    assert [(c.batch_size, c.precision, c.passes) for c in gpu] == [(64, "bf16", ("timing", "attributed", "memory"))]
    # the memory pass needs a GPU: a CPU plan drops it, so its keys never promise it
    assert [(c.batch_size, c.precision, c.passes) for c in cpu] == [(2, "fp32", ("timing", "attributed"))]


def test_keys_are_canonical():
    one = SweepPlan(["m"], "cuda", passes=["memory", "timing"], options={"warmup": 2, "iterations": 10}).cells()[0]
    two = SweepPlan(["m"], "cuda", passes=["timing", "memory"], options={"iterations": 10, "warmup": 2}).cells()[0]
    assert one.key == two.key == "m|b64|img=default|bf16|nchw|timing+memory|iterations=10|warmup=2"
    assert SweepPlan(["m"], "cuda", img_sizes=["224"]).cells()[0].key != SweepPlan(["m"], "cuda").cells()[0].key


def test_restated_defaults_name_the_cell_without_them():
    """--img-size test and -O grad_mode=inference_mode are what a cell runs without them: they made
    new keys, so a store swept without them was swept again, and held each model twice."""
    plain = SweepPlan(["m"], "cuda").cells()
    restated = SweepPlan(["m"], "cuda", img_sizes=["test", None], options={
        "grad_mode": "inference_mode", "autocast": "per-forward", "compile": False, "warmup": None,
        "iterations": None, "attributed_iterations": 5, "top_modules": 15}).cells()
    assert [c.key for c in restated] == [c.key for c in plain] == ["m|b64|img=default|bf16|nchw|timing+attributed+memory"]
    # what differs from a default stays in the key, as do values of another type (compile=0 is refused later)
    other = SweepPlan(["m"], "cuda", img_sizes=["train"], options={"grad_mode": "no_grad", "compile": 0}).cells()[0]
    assert other.key == 'm|b64|img=train|bf16|nchw|timing+attributed+memory|compile=0|grad_mode="no_grad"'


def test_a_choice_typed_in_capitals_names_the_cell_as_in_lower_case():
    """-O grad_mode=NO_GRAD runs no_grad (profile() reads choices in any case), but its cell key kept
    "NO_GRAD": a later sweep with -O grad_mode=no_grad measured the cell again and stored it twice, and
    -O grad_mode=INFERENCE_MODE, the default restated, made a key of its own."""
    from visprof.sweep.options import check_profile_options

    def key(**options):
        return SweepPlan(["m"], "cuda", options=check_profile_options(options)).cells()[0].key

    assert check_profile_options({"grad_mode": "NO_GRAD", "autocast": "Whole-Loop"}) == {
        "grad_mode": "no_grad", "autocast": "whole-loop"}
    assert key(grad_mode="NO_GRAD") == key(grad_mode="no_grad") == (
        'm|b64|img=default|bf16|nchw|timing+attributed+memory|grad_mode="no_grad"')
    assert key(grad_mode="INFERENCE_MODE", autocast="Per-Forward") == key()


def test_the_defaults_a_key_leaves_out_are_profiles_own():
    import inspect

    from visprof.base.options import DEFAULT_AUTOCAST, DEFAULT_GRAD_MODE, PROFILE_OPTION_DEFAULTS
    from visprof.profiler import profile

    signature = inspect.signature(profile).parameters
    resolved = {"grad_mode": DEFAULT_GRAD_MODE, "autocast": DEFAULT_AUTOCAST}  # None in the signature: resolved inside
    for name, value in PROFILE_OPTION_DEFAULTS.items():
        assert resolved.get(name, signature[name].default) == value, name


def test_keys_stored_before_defaults_were_left_out_read_as_todays():
    from visprof.store.cell import canonical_key

    today = "m|b64|img=default|bf16|nchw|timing+attributed+memory|iterations=10"
    assert canonical_key('m|b64|img=test|bf16|nchw|timing+attributed+memory|grad_mode="inference_mode"|iterations=10'
                         '|top_modules=15') == today
    assert canonical_key(today) == today
    # a model named like a size keeps its name; only the size field is read as one
    assert canonical_key("img=test|b2|img=224|fp32|nchw|timing") == "img=test|b2|img=224|fp32|nchw|timing"


def test_cells_round_trip_through_json_dicts():
    import json

    for cell in SweepPlan(["m"], "cuda", img_sizes=[(384, 256), 224, None], options={"compile": True}).cells():
        back = Cell.from_dict(json.loads(json.dumps(cell.to_dict())))
        assert back == cell and back.key == cell.key


def test_profile_kwargs_turn_off_the_batch_search():
    cell = SweepPlan(["m"], "cuda", options={"iterations": 5}).cells()[0]
    kwargs = cell.profile_kwargs(48, "cuda:0")
    assert kwargs["batch_size"] == 48 and kwargs["search_batch"] is False and kwargs["progress"] is False
    assert kwargs["iterations"] == 5 and kwargs["device"] == "cuda:0"


@pytest.mark.parametrize("text, value, shown", [
    (None, None, "default"), ("default", None, "default"), ("224", 224, "224"), (224, 224, "224"),
    ("384x256", (384, 256), "384x256"), ("256x256", 256, "256"), ((320, 320), 320, "320"),
])
def test_image_sizes(text, value, shown):
    assert parse_img_size(text) == value
    assert img_size_text(value) == shown


@pytest.mark.parametrize("bad", ["abc", "4", "224x", "1x2x3", True])
def test_bad_image_sizes(bad):
    with pytest.raises(BadInputError):
        parse_img_size(bad)


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_sizes": [0]}, "batch sizes"),
    ({"batch_sizes": [2.5]}, "batch sizes"),
    ({"precisions": ["fp8"]}, "unknown precision"),
    ({"passes": ["timing", "nope"]}, "unknown pass"),
])
def test_bad_plans(kwargs, message):
    with pytest.raises(BadInputError, match=message):
        SweepPlan(["m"], "cuda", **kwargs)


def test_the_benchmark_model_list_mixes_every_family():
    """bench/sweep_models_300.txt: 300 models timm knows, from 80+ families (timm modules)."""
    from timm.models import get_pretrained_cfg
    from timm.models._registry import _model_to_module

    names = select_models(model_list=Path(__file__).resolve().parents[2] / "bench" / "sweep_models_300.txt")
    assert len(names) == 300
    families = {_model_to_module[name] for name in names}
    assert len(families) >= 80
    assert all(get_pretrained_cfg(name) is not None for name in names)  # a default resolution each

