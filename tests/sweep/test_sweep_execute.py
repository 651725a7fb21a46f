"""One cell in-process, as a worker runs it: the OOM decay (timm's decay_batch_step) and
errors turned into outcomes."""
from pathlib import Path

from visprof.sweep.execute import execute_cell
from visprof.sweep.plan import SweepPlan
from visprof.sweep.selection import import_modules

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")


def cell(model: str, batch: int):
    import_modules([FAKE_MODELS])
    return SweepPlan([model], "cpu", batch_sizes=[batch], options={"iterations": 2, "warmup": 0}).cells()[0]


def test_out_of_memory_decays_the_batch_as_timm_does():
    outcome = execute_cell(cell("visprof_fake_oom", 32), "cpu")
    assert outcome["status"] == "ok"
    assert outcome["batch_sizes_tried"] == [32, 24, 16, 12, 8]  # timm.utils.decay_batch_step
    assert outcome["result"]["model"]["batch_size"] == 8
    assert outcome["wall_s"] > 0


def test_a_model_that_never_fits_is_an_oom_failure():
    outcome = execute_cell(cell("visprof_fake_never_fits", 4), "cpu")
    assert (outcome["status"], outcome["kind"], outcome["error_class"]) == ("failed", "oom", "OutOfMemoryError")
    assert outcome["batch_sizes_tried"] == [4, 3, 2, 1]
    assert "every batch size tried (4, 3, 2, 1)" in outcome["message"]


def test_an_error_is_an_outcome_with_its_class_and_traceback():
    outcome = execute_cell(cell("visprof_fake_raises", 4), "cpu")
    assert (outcome["status"], outcome["kind"], outcome["error_class"]) == ("failed", "error", "ModelForwardError")
    assert "refuses to run" in outcome["message"] and "sweep_fake_models.py" in outcome["detail"]
    assert outcome["batch_sizes_tried"] == [4]  # not an OOM: no decay


def test_out_of_memory_is_recognized_through_the_causes_only():
    import torch

    from visprof.base.errors import ModelForwardError, OutOfMemoryError
    from visprof.sweep.execute import is_oom_error

    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    wrapped = ModelForwardError("m", (2, 3, 8, 8), oom)
    assert is_oom_error(oom) and is_oom_error(wrapped) and is_oom_error(OutOfMemoryError(64))
    assert not is_oom_error(ValueError("shapes do not match"))
    try:  # an OOM handled on the way, then another error raised "from None": not an OOM
        try:
            raise oom
        except RuntimeError:
            raise ValueError("something else") from None
    except ValueError as error:
        assert not is_oom_error(error)
