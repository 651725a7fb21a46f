"""User mistakes of `visprof sweep` that used to run (or fail without saying where): each is
one line, exit code 2, before the store is made; the requests next to them still run.

- `--passes memory` on a sweep that runs on the CPU: was a timing-only cell, exit 0.
- `--channels-last --memory-format nchw`: was resolved silently (an NHWC cell ran too).
- `--model-list FILE` whose lines are not model names: was `unknown model '{'`, no file named;
  a line of names separated by tabs was refused where commas were read.
- `-O iterations=3 --iterations 5`: the flag won without a word. `-O batch_size=8` was refused
  without naming the sweep's own option; `-O autocast=whole-loop` at fp32 made cells of their own,
  where `visprof profile` says it does nothing there.

The accepted requests run through the real CLI entry with the worker loop replaced by one
that records the cells it is given (``recorded_cells``, conftest.py): no model is built, so a "GPU"
can be faked on a CPU machine.
"""
from __future__ import annotations

import pytest

from visprof.base.errors import BadInputError
from cli_in_process import one_error_line, run_cli
from visprof.sweep.plan import SweepPlan

MEMORY_REFUSED = "the memory pass needs a GPU"


@pytest.fixture
def fake_gpus(monkeypatch):
    """Two visible "GPUs", as far as the sweep's choice of devices can tell."""
    from visprof.base import hardware

    class FakeCuda:
        @staticmethod
        def device_count():
            return 2

    monkeypatch.setattr(hardware, "torch_cuda", lambda: FakeCuda)
    monkeypatch.setattr(hardware, "gpu_identity", lambda index=0: {"name": "Fake GPU", "uuid": f"GPU-fake-{index}"})


def no_gpu_here():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the sweep runs there")


# --- 1. the memory pass on a CPU sweep ------------------------------------------------------------

@pytest.mark.parametrize("args, others", [
    (["--passes", "memory"], "--passes timing,attributed"),
    (["--passes", "timing,memory"], "--passes timing"),
    (["--passes", "memory,attributed", "--device", "cpu"], "--passes attributed"),
    (["--passes", "timing,attributed,memory", "--device", "cpu", "--workers", "2"], "--passes timing,attributed"),
])
def test_a_cpu_sweep_refuses_the_memory_pass_before_any_cell(tmp_path, capsys, recorded_cells, args, others):
    if "--device" not in args:
        no_gpu_here()  # without --device cpu, only a machine without a GPU sweeps on the CPU
    store = tmp_path / "sw.db"
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(store), *args)
    line = one_error_line(err)
    assert code == 2
    assert "this sweep runs on the CPU (--device cpu, or no GPU visible), and " + MEMORY_REFUSED in line
    assert line.endswith(others)
    assert recorded_cells == [] and not store.exists()


def test_the_refusal_is_the_one_visprof_profile_gives(capsys):
    no_gpu_here()
    code, _, err = run_cli(capsys, "profile", "resnet18", "--passes", "memory")
    assert code == 2 and MEMORY_REFUSED in one_error_line(err)


def test_a_cpu_sweep_without_passes_still_runs_all_it_can(tmp_path, capsys, recorded_cells):
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "sw.db"), "--device", "cpu", "-q")
    assert code == 0, err
    assert [c.key for c in recorded_cells] == ["resnet18|b2|img=default|fp32|nchw|timing+attributed"]


@pytest.mark.parametrize("args, passes", [
    (["--passes", "memory"], ("memory",)),
    (["--passes", "timing,memory", "--gpus", "1"], ("timing", "memory")),
    (["--device", "cuda"], ("timing", "attributed", "memory")),
])
def test_a_gpu_sweep_still_takes_the_memory_pass(tmp_path, capsys, fake_gpus, recorded_cells, args, passes):
    code, out, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "sw.db"), "-q", *args)
    assert code == 0, err
    assert [c.passes for c in recorded_cells] == [passes]
    assert "local worker" in out and "cuda:" in out


def test_the_plan_refuses_the_memory_pass_on_the_cpu_only():
    with pytest.raises(BadInputError, match=MEMORY_REFUSED):
        SweepPlan(["m"], "cpu", passes=["memory"])
    assert SweepPlan(["m"], "cuda", passes=["memory"]).passes == ("memory",)
    assert SweepPlan(["m"], "cpu").passes == ("timing", "attributed")
    assert SweepPlan(["m"], "cuda").passes == ("timing", "attributed", "memory")


# --- 2. --channels-last against --memory-format -------------------------------------------------

@pytest.mark.parametrize("formats", ["nchw", "nchw,channels_last", "contiguous"])
def test_channels_last_and_a_memory_format_with_nchw_contradict(tmp_path, capsys, recorded_cells, formats):
    store = tmp_path / "sw.db"
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(store), "--device", "cpu",
                           "--channels-last", "--memory-format", formats)
    line = one_error_line(err)
    assert code == 2
    assert "--channels-last" in line and "--memory-format nchw" in line and "give one of them" in line
    assert recorded_cells == [] and not store.exists()


@pytest.mark.parametrize("args, layouts", [
    (["--channels-last"], [True]),
    (["--channels-last", "--memory-format", "channels_last"], [True]),  # the same thing twice: no contradiction
    (["--memory-format", "nchw,nhwc"], [False, True]),
    (["--memory-format", "nchw"], [False]),
])
def test_memory_formats_that_agree_are_swept(tmp_path, capsys, recorded_cells, args, layouts):
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "sw.db"), "--device", "cpu",
                           "-q", *args)
    assert code == 0, err
    assert [c.channels_last for c in recorded_cells] == layouts


# --- 3. a model list whose lines are not model names ----------------------------------------------

@pytest.mark.parametrize("name, text, message", [
    ("r.json", '{\n  "models": ["resnet18"]\n}\n', "line 1: '{' is not a timm model name"),
    ("r.json", '["resnet18", "resnet50"]\n', """line 1: '["resnet18"' is not a timm model name"""),
    ("r.csv", "model,infer_img_size\nresnet18,224\n", "line 1: unknown model 'model'"),
    # whitespace separates names on a line (as commas do): a sentence fails on its first word that is none
    ("m.txt", "# mine\nresnet18\n\nresnet50 and vit_tiny_patch16_224\n", "line 4: unknown model 'and'"),
    ("m.txt", "resnet18\nresnet5o  # typo\n", "line 2: unknown model 'resnet5o'; did you mean: resnet50"),
    ("m.txt", "resnet18\n\nnosuchfamily_*\n", "line 3: model pattern 'nosuchfamily_*' matches no timm model"),
    ("m.txt", "resnet18\nresnet50@abc\n", "line 2: model entry 'resnet50@abc'"),
])
def test_a_model_list_line_that_is_no_model_names_the_file_and_line(tmp_path, capsys, recorded_cells, name, text,
                                                                    message):
    listing = tmp_path / name
    listing.write_text(text)
    store = tmp_path / "sw.db"
    code, _, err = run_cli(capsys, "sweep", "--model-list", str(listing), "--store", str(store), "--device", "cpu")
    line = one_error_line(err)
    assert code == 2
    assert f"--model-list {listing} {message}" in line
    assert recorded_cells == [] and not store.exists()


def test_the_documented_model_list_formats_are_still_read(tmp_path, capsys, recorded_cells):
    listing = tmp_path / "models.txt"
    listing.write_text("# timm's benchmark.py format: one name a line\n"
                       "resnet18\n"
                       "\n"
                       "   resnet50@160   # a model at its own size\n"
                       # not resnet18's default tag (a1_in1k), which is resnet18's cell (test_sweep_same_cells.py)
                       "timm/resnet18.tv_in1k, hf-hub:timm/convnext_atto.d2_in1k\n"
                       "vit_tiny_patch16_2*@384x256\n"
                       "RESNET18\n")
    code, _, err = run_cli(capsys, "sweep", "--model-list", str(listing), "--store", str(tmp_path / "sw.db"),
                           "--device", "cpu", "-q", "--passes", "timing")
    assert code == 0, err
    assert [(c.model, c.img_size) for c in recorded_cells] == [
        ("resnet18", None), ("resnet50", 160), ("resnet18.tv_in1k", None), ("convnext_atto.d2_in1k", None),
        ("vit_tiny_patch16_224", (384, 256)),
    ]


def test_names_on_a_line_may_be_separated_by_tabs_or_spaces(tmp_path, capsys, recorded_cells):
    """A tab-separated line was refused ("is not a timm model name") where a comma-separated one was read."""
    listing = tmp_path / "models.txt"
    listing.write_text("resnet18\tmobilenetv3_small_100\nresnet34  resnet50 \t, vit_tiny_patch16_224\n")
    code, _, err = run_cli(capsys, "sweep", "--model-list", str(listing), "--store", str(tmp_path / "sw.db"),
                           "--device", "cpu", "-q")
    assert code == 0, err
    assert [c.model for c in recorded_cells] == ["resnet18", "mobilenetv3_small_100", "resnet34", "resnet50",
                                                 "vit_tiny_patch16_224"]


def test_a_name_on_the_command_line_is_not_blamed_on_the_list(tmp_path, capsys):
    listing = tmp_path / "models.txt"
    listing.write_text("resnet18\n")
    code, _, err = run_cli(capsys, "sweep", "resnet5o", "--model-list", str(listing),
                           "--store", str(tmp_path / "sw.db"), "--device", "cpu")
    line = one_error_line(err)
    assert code == 2 and "unknown model 'resnet5o'" in line and "--model-list" not in line


def test_the_model_list_reader_keeps_its_result(tmp_path):
    from visprof.sweep.selection import read_model_list

    listing = tmp_path / "models.txt"
    listing.write_text("# c\nresnet18, vit_*@384\n\nresnet50  # x\n")
    assert read_model_list(listing) == ["resnet18", "vit_*@384", "resnet50"]


def test_a_model_list_given_as_a_pipe_is_read_once(tmp_path, capsys, recorded_cells):
    """`--model-list <(grep vit_ models.txt)`: the shell hands over a pipe, whose text a second read
    finds gone; the CLI read it to check it, then the sweep found it empty ("names no model")."""
    import os
    import threading

    fifo = tmp_path / "models.fifo"
    os.mkfifo(fifo)

    def shell():  # the text for the first reader, end-of-file for any later one (as a drained pipe gives)
        fifo.write_text("resnet18\nvit_tiny_patch16_224\n")
        while True:
            fifo.write_text("")

    threading.Thread(target=shell, daemon=True).start()
    code, _, err = run_cli(capsys, "sweep", "--model-list", str(fifo), "--store", str(tmp_path / "sw.db"),
                           "--device", "cpu", "-q", "--passes", "timing")
    assert code == 0, err
    assert [c.model for c in recorded_cells] == ["resnet18", "vit_tiny_patch16_224"]


# --- 4. profile options: -O beside the sweep's own flags, its own options, options that do nothing ----------

def test_a_profile_option_given_alike_by_o_and_by_its_flag_is_taken_once(tmp_path, capsys, recorded_cells):
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "sw.db"), "--device", "cpu", "-q",
                           "-O", "iterations=5", "--iterations", "5", "--compile", "-O", "compile=true")
    assert code == 0, err
    assert [c.key for c in recorded_cells] == ["resnet18|b2|img=default|fp32|nchw|timing+attributed|compile=true|"
                                               "iterations=5"]


def test_run_sweep_names_its_own_keyword_for_a_profile_option_it_sets(tmp_path):
    from visprof.sweep import run_sweep

    with pytest.raises(BadInputError, match="^profile option 'batch_size' is set by the sweep itself: use the sweep's "
                                            "own batch_sizes$"):
        run_sweep("resnet18", store=tmp_path / "r.db", device="cpu", profile_options={"batch_size": 1})
    assert not (tmp_path / "r.db").exists()


def test_an_autocast_that_does_nothing_at_fp32_is_said_as_profile_says_it(tmp_path, capsys, recorded_cells):
    """-O autocast=whole-loop at fp32 made cells (keys, rows) of their own without a word; `visprof profile`
    notes it in its result. The sweep warns, once per precision it does nothing at, before any cell."""
    from visprof.base.options import idle_autocast_note

    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "sw.db"), "--device", "cpu", "-q",
                           "--precision", "fp32,bf16,tf32", "-O", "autocast=whole-loop")
    assert code == 0, err
    warned = [line for line in err.splitlines() if line.startswith("visprof: warning:")]
    assert warned == [f"visprof: warning: {idle_autocast_note('whole-loop', p)}" for p in ("fp32", "tf32")]
    assert warned[0] == ("visprof: warning: autocast=whole-loop does nothing at fp32: the model runs in fp32 without "
                         "autocast")
    assert len(recorded_cells) == 3


def test_no_warning_where_the_autocast_applies(tmp_path, capsys, recorded_cells):
    code, _, err = run_cli(capsys, "sweep", "resnet18", "--store", str(tmp_path / "sw.db"), "--device", "cpu", "-q",
                           "--precision", "bf16", "-O", "autocast=whole-loop")
    assert code == 0 and "warning" not in err


def test_an_unknown_profile_option_is_answered_with_only_the_options_a_sweep_takes(tmp_path):
    """The refusal listed on_trace, which the sweep then refuses too (a function cannot reach its workers):
    every option it offers must be one the sweep passes on."""
    from visprof.sweep import run_sweep

    with pytest.raises(BadInputError, match="^unknown profile option 'nonsense'; a sweep passes on ") as refused:
        run_sweep("resnet18", store=tmp_path / "r.db", device="cpu", profile_options={"nonsense": 1})
    offered = str(refused.value).split("passes on ", 1)[1].split(", ")
    assert "on_trace" not in offered and "iterations" in offered
    for key in offered:  # each is taken with a plain value of its kind, none is refused as unknown
        try:
            run_sweep("resnet18", store=tmp_path / "r.db", device="cpu", profile_options={key: "nonsense-value"})
        except BadInputError as error:
            assert "unknown profile option" not in str(error) and "Python function" not in str(error), error
        else:
            raise AssertionError(f"{key}='nonsense-value' was taken")
    assert not (tmp_path / "r.db").exists()
