"""The Ray path, on a real local Ray (CPUs only) running CPU profiles through the same sweep
code as the local workers: a fresh process per cell, Ray's retries for a worker that dies,
results written by the driver alone."""
import json
import os
from pathlib import Path

import pytest

from visprof.base.child_env import pythonpath_with_visprof
from visprof.base.hardware import cpu_device_id, cpu_identity
from visprof.sweep import open_store, run_sweep

ray = pytest.importorskip("ray")  # in the test extra; CI installs it

FAKE_MODELS = str(Path(__file__).resolve().parents[1] / "helpers" / "sweep_fake_models.py")


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    # Ray's workers inherit the environment: they must import this very visprof. Ray also puts
    # the driver's working directory first on their path: not the checkout, which CI installs.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", pythonpath_with_visprof(os.environ.get("PYTHONPATH")))
        patch.chdir(tmp_path_factory.mktemp("ray-cwd"))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        yield
        ray.shutdown()


def test_a_sweep_on_ray_records_results_failures_and_retries(local_ray, tmp_path):
    store_path = tmp_path / "ray.db"
    summary = run_sweep(["visprof_fake_tiny", "visprof_fake_oom", "visprof_fake_exits"], store=store_path,
                        ray="auto", batch_sizes=[16], imports=[FAKE_MODELS],
                        profile_options={"iterations": 3, "warmup": 1}, timeout_s=120, retries=1, progress=False)
    print("\n" + summary.render())
    assert summary.executor.startswith("Ray (auto): 0 GPUs, 2 CPUs")
    assert summary.done == 2 and summary.failed == {"WorkerCrashed": 1}
    with open_store(store_path) as store:
        rows = {r["model"]: r for r in store.rows()}
        (failure,) = store.failures()
        results = list(store.results())
    assert set(rows) == {"visprof_fake_tiny", "visprof_fake_oom"}
    this_cpu = cpu_device_id(cpu_identity())  # the Ray workers run on this machine's CPU
    assert all(r["gpu_uuid"] == this_cpu and r["measurement"] == "cpu" for r in rows.values())
    assert rows["visprof_fake_oom"]["batch_size"] == 8  # the OOM decay runs inside the Ray task too
    assert json.loads(rows["visprof_fake_oom"]["batch_sizes_tried"]) == [16, 12, 8]
    assert {r.model.name for r in results} == set(rows)
    # os._exit killed the Ray worker twice: Ray retried once (retries=1), then the cell failed for good
    assert (failure["model"], failure["kind"], failure["attempts"], failure["final"]) == ("visprof_fake_exits", "crash", 2, 1)
    assert "WorkerCrashedError" in failure["message"]

    again = run_sweep(["visprof_fake_tiny", "visprof_fake_oom", "visprof_fake_exits"], store=store_path, ray="auto",
                      batch_sizes=[16], imports=[FAKE_MODELS], profile_options={"iterations": 3, "warmup": 1},
                      progress=False)
    assert (again.skipped, again.done, again.failed_total) == (3, 0, 0)


def test_a_checkout_in_the_working_directory_that_ray_would_import_is_refused(tmp_path, monkeypatch):
    from visprof.base.errors import BadInputError

    (tmp_path / "visprof").mkdir()
    (tmp_path / "visprof" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInputError, match=rf"^ray: Ray's workers would import the visprof sources in {tmp_path} "
                                            r"\(the working directory"):
        run_sweep(["visprof_fake_tiny"], store=tmp_path / "r.db", ray="auto", imports=[FAKE_MODELS], progress=False)
