"""Options named in the caller's terms (visprof/base/spelling.py): Python's keywords outside the
CLI, the CLI's flags inside ``command_line()``; and the errors whose remedies use them."""
from __future__ import annotations

import pickle

import pytest

from visprof.base import errors
from visprof.base.options import passes_for
from visprof.base.spelling import command_line, either, on_command_line, option, options


@pytest.mark.parametrize("args, kwargs, python, cli", [
    (("batch_size", 8), {}, "batch_size=8", "--batch-size 8"),
    (("device", "cpu"), {}, "device='cpu'", "--device cpu"),
    (("passes", ("timing", "attributed")), {}, "passes=['timing', 'attributed']", "--passes timing,attributed"),
    (("passes", ("timing",)), {}, "passes=['timing']", "--passes timing"),
    (("retry_failed", True), {}, "retry_failed=True", "--retry-failed"),
    (("img_size",), {}, "img_size", "--img-size"),
    (("time_budget_s",), {"flag": "--time-budget"}, "time_budget_s", "--time-budget"),
    (("fmt", "timm"), {"flag": "--format"}, "fmt='timm'", "--format timm"),
    (("model_list",), {"metavar": "FILE"}, "model_list=FILE", "--model-list FILE"),
    (("all_models", True), {"flag": "--all"}, "all_models=True", "--all"),
])
def test_an_option_is_a_keyword_in_python_and_a_flag_on_the_command_line(args, kwargs, python, cli):
    assert option(*args, **kwargs) == python
    with command_line():
        assert option(*args, **kwargs) == cli


def test_several_options_and_free_phrases():
    assert options(grad_mode="no_grad", autocast="whole-loop") == "grad_mode='no_grad', autocast='whole-loop'"
    assert either("gpu_table(extra=FILE)", "--gpus FILE") == "gpu_table(extra=FILE)"
    with command_line():
        assert options(grad_mode="no_grad", autocast="whole-loop") == "--grad-mode no_grad --autocast whole-loop"
        assert either("gpu_table(extra=FILE)", "--gpus FILE") == "--gpus FILE"


def test_the_command_line_switch_nests_and_is_put_back_however_the_block_ends():
    assert not on_command_line()
    with pytest.raises(RuntimeError):
        with command_line():
            assert on_command_line()
            with command_line(False):  # a worker of a Python driver inside a CLI process's test
                assert not on_command_line()
            assert on_command_line()
            raise RuntimeError
    assert not on_command_line()


def test_errors_name_python_keywords_outside_the_cli_and_flags_inside():
    """The remedies of the errors base/ makes: each once from Python, once from the CLI."""
    def made():
        try:
            passes_for("timing,memory", "cpu")
        except errors.BadInputError as exc:
            memory_on_cpu = str(exc)
        return [str(errors.NoGPUError("no driver")),
                str(errors.OutOfMemoryError(512, 8, "cpu", searched=True, estimated=True)),
                str(errors.OutOfMemoryError(512, None, "cuda:0", searched=True)),
                str(errors.OutOfMemoryError(512, None, "cuda:0")),
                str(errors.CuptiUnavailableError()),
                memory_on_cpu]

    python = made()
    with command_line():
        cli = made()
    assert [m.partition("; ")[2] for m in python] == [
        "run on a GPU machine, or pass device='cpu' for the CPU path",
        "the largest batch that fits is about 8 (batch_size=8), estimated from the memory one sample needs",
        "not even batch size 1 fits (try bf16/fp16 or a smaller img_size)",
        "try a smaller batch_size",
        "run visprof outside it, or skip the attributed pass with passes=['timing', 'memory']",
        "on the CPU, run passes=['timing']",
    ]
    assert [m.partition("; ")[2] for m in cli] == [
        "run on a GPU machine, or pass --device cpu for the CPU path",
        "the largest batch that fits is about 8 (--batch-size 8), estimated from the memory one sample needs",
        "not even batch size 1 fits (try bf16/fp16 or a smaller --img-size)",
        "try a smaller --batch-size",
        "run visprof outside it, or skip the attributed pass with --passes timing,memory",
        "on the CPU, run --passes timing",
    ]
    assert not any("--" in m for m in python)


def test_an_error_keeps_the_words_it_was_made_with_through_pickle():
    """The memory pass's subprocess once sent its failure back pickled; a sweep stores its text:
    the remedy is fixed when the error is made, in the terms of whoever made it."""
    error = errors.OutOfMemoryError(512, 8, "cpu", searched=True, estimated=True)
    with command_line():
        cli_error = errors.OutOfMemoryError(512, 8, "cpu", searched=True, estimated=True)
        back = pickle.loads(pickle.dumps(error))
    assert str(back) == str(error) and "(batch_size=8)" in str(back) and back.max_batch_size == 8
    back = pickle.loads(pickle.dumps(cli_error))
    assert str(back) == str(cli_error) and "(--batch-size 8)" in str(back)
    assert errors.exit_code_for(back) == errors.EXIT_OUT_OF_MEMORY
