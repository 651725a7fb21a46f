"""The Ray executor: each cell a Ray task in a fresh worker process, anywhere in a cluster.

    visprof sweep 'vit_*' --store results.db --ray auto        # a running cluster (ray start)
    visprof sweep 'vit_*' --store results.db --ray local       # a private one on this machine
    visprof sweep 'vit_*' --store results.db --ray ray://head:10001

Each cell is ``ray.remote(num_gpus=1 (0 for CPU cells), max_calls=1)``: a fresh process per
cell, as timm's bulk runner does, and Ray reruns a task whose worker or node died
(``max_retries``). Results come back to the driver, which alone writes the store; each row
records the GPU that measured it, so a cluster of mixed GPUs fills one store. visprof (and
every ``--import`` module) must be importable on every node. ``pip install "visprof[ray]"``.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Sequence

from visprof.base.child_env import VISPROF_PATH, shadowing_checkout
from visprof.base.errors import BadInputError
from visprof.base.spelling import command_line, on_command_line, option
from visprof.sweep.tasks import Task, TaskSource

__all__ = ["RayExecutor", "import_ray"]


def import_ray():
    try:
        import ray
    except ImportError:
        raise BadInputError(f'{option("ray")} needs Ray: pip install "visprof[ray]"') from None
    return ray


def _run_cell_task(cell: dict[str, Any], imports: Sequence[str], timeout_s: float,
                   flags: bool = False) -> dict[str, Any]:
    """The body of one Ray task (runs in the Ray worker process); its messages name options as
    the driver's do (``flags``: as the CLI's flags)."""
    with command_line(flags):
        return _run_cell(cell, imports, timeout_s)


def _run_cell(cell: dict[str, Any], imports: Sequence[str], timeout_s: float) -> dict[str, Any]:
    import ray

    from visprof.sweep.execute import execute_cell, worker_facts
    from visprof.sweep.plan import Cell
    from visprof.sweep.selection import import_modules

    import_modules(imports)
    device = "cuda:0" if ray.get_gpu_ids() else "cpu"  # Ray pins the task's GPU with CUDA_VISIBLE_DEVICES
    facts = worker_facts(device)
    box: dict[str, Any] = {}

    def run() -> None:
        box["outcome"] = execute_cell(Cell.from_dict(cell), device)

    # The cell runs on a thread so that a hang ends as a timeout; the process (max_calls=1)
    # exits after this task either way, taking the stuck thread with it.
    thread = threading.Thread(target=run, name="visprof-cell", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        box["outcome"] = {"status": "failed", "kind": "timeout", "error_class": "CellTimeout",
                          "message": f"no result after {timeout_s:g} s; the Ray worker was ended",
                          "detail": "", "batch_sizes_tried": [], "wall_s": timeout_s}
    return {"outcome": box["outcome"], "facts": facts}


class RayExecutor:
    retries_crashes = True  # Ray reruns a task whose worker or node died (max_retries)

    def __init__(self, address: str, *, device_kind: str, imports: Sequence[str] = (), timeout_s: float = 300.0,
                 retries: int = 1):
        self.address = address
        self.device_kind = device_kind
        self.imports = list(imports)
        self.timeout_s = timeout_s
        self.retries = retries
        self._ray = None
        self._started_ray = False
        self.description = f"Ray ({address})"

    # --- the cluster ------------------------------------------------------------------
    def connect(self) -> dict[str, float]:
        """Joins (or starts) the cluster; returns its resources (``{"CPU": .., "GPU": ..}``)."""
        shadow = shadowing_checkout()
        if shadow is not None:
            raise BadInputError(f"{option('ray')}: Ray's workers would import the visprof sources in {shadow} (the "
                                f"working directory, which Ray puts first on their path) rather than this visprof "
                                f"({VISPROF_PATH}); run the sweep from another directory")
        ray = self._ray = import_ray()
        if not ray.is_initialized():
            import logging

            kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING,
                                      "configure_logging": True}
            try:
                if self.address == "local":
                    ray.init(include_dashboard=False, **kwargs)
                else:
                    ray.init(address=self.address, **kwargs)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise BadInputError(f"{option('ray', self.address)}: cannot reach a Ray cluster: {exc}") from None
            self._started_ray = True
        resources = ray.cluster_resources()
        self.description = (f"Ray ({self.address}): {int(resources.get('GPU', 0))} GPUs, "
                            f"{int(resources.get('CPU', 0))} CPUs")
        return resources

    def close(self) -> None:
        if self._started_ray and self._ray is not None:
            self._ray.shutdown()
            self._started_ray = False

    def slots(self) -> int:
        resources = self._ray.cluster_resources()
        return max(int(resources.get("GPU" if self.device_kind == "cuda" else "CPU", 0)), 1)

    # --- the loop ---------------------------------------------------------------------
    def run(self, source: TaskSource) -> None:
        ray = self._ray
        if ray is None:
            self.connect()
            ray = self._ray
        remote = ray.remote(num_gpus=1 if self.device_kind == "cuda" else 0, num_cpus=1, max_calls=1,
                            max_retries=self.retries, retry_exceptions=False)(_run_cell_task)
        window = 2 * self.slots()  # enough queued to keep every slot busy; the rest waits here
        in_flight: dict[Any, Task] = {}
        try:
            while True:
                while len(in_flight) < window:
                    task = source.next_task()
                    if task is None:
                        break
                    ref = remote.remote(task.cell.to_dict(), self.imports, self.timeout_s, on_command_line())
                    in_flight[ref] = task
                    source.started(task, "ray")
                if not in_flight:
                    if not source.has_work():
                        return
                    continue
                now = time.monotonic()
                if source.hard_deadline is not None and now >= source.hard_deadline:
                    return  # finally: cancelled; their cells stay unrecorded, to rerun
                wait = 1.0 if source.hard_deadline is None else max(min(1.0, source.hard_deadline - now), 0.0)
                done, _ = ray.wait(list(in_flight), num_returns=1, timeout=wait)
                for ref in done:
                    task = in_flight.pop(ref)
                    try:
                        reply = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # the worker or node died, after every retry
                        reply = {"facts": None, "outcome": {
                            "status": "failed", "kind": "crash", "error_class": "WorkerCrashed",
                            "message": f"the Ray task failed {self.retries + 1} time(s) ({type(exc).__name__}): "
                                       f"{_first_line(exc)}",
                            "detail": str(exc)[-4000:], "batch_sizes_tried": [], "wall_s": None,
                            "attempts": self.retries + 1}}
                    source.finished(task, reply["outcome"], reply["facts"])
        finally:
            for ref in in_flight:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - already finished, or the cluster is gone
                    pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
