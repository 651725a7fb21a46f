"""Where a sweep runs: the executor (a local worker per GPU, CPU workers, or a Ray cluster), the
devices whose stored rows count as done (``DoneOn``), and the options that pick them (``--device``,
``--gpus``, ``--workers``, ``--ray``), refused where they contradict each other.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from visprof.base.errors import BadInputError, DeviceNotFoundError, NoGPUError
from visprof.base.spelling import option

__all__ = ["DEFAULT_TIMEOUT_S", "DoneOn", "executor_for", "parse_gpus"]

# Seconds a cell may take (every pass, every batch tried) before its worker is killed. A GPU
# cell takes seconds; a CPU cell of a large model can take minutes on a small machine.
DEFAULT_TIMEOUT_S = {"cuda": 300.0, "cpu": 1800.0}


def parse_gpus(gpus: str | Sequence[int] | None) -> str | list[int]:
    """``"all"``/None -> "all"; ``"0,1"`` or [0, 1] -> [0, 1]."""
    if gpus is None or (isinstance(gpus, str) and gpus.strip().lower() == "all"):
        return "all"
    items = gpus.split(",") if isinstance(gpus, str) else list(gpus)
    indices = []
    for item in items:
        text = str(item).strip().lower().removeprefix("cuda:")
        if not text.isdigit():
            raise BadInputError(f"{option('gpus')} takes 'all' or GPU indices such as 0,1; got {gpus!r}")
        indices.append(int(text))
    if not indices:
        raise BadInputError(f"{option('gpus')} takes 'all' or GPU indices such as 0,1; got {gpus!r}")
    return list(dict.fromkeys(indices))


def executor_for(device, gpus, workers, ray, imports, timeout_s, retries, fresh_process, echo):
    """(executor, device kind "cuda"/"cpu", the devices whose rows count as done, or None: any).
    The devices are a ``DoneOn``: GPU uuids (or CPU ids) and the names of the sweep's GPUs."""
    executor, kind, devices = _make_executor(device, gpus, workers, ray, imports, retries, fresh_process, echo)
    executor.timeout_s = timeout_s if timeout_s is not None else DEFAULT_TIMEOUT_S[kind]
    return executor, kind, devices


def _make_executor(device, gpus, workers, ray, imports, retries, fresh_process, echo):
    choice = (device or "auto").strip().lower()
    if choice not in ("auto", "cuda", "gpu", "cpu"):
        raise BadInputError(f"{option('device')} for a sweep is auto, cuda or cpu (pick GPUs with {option('gpus')}), "
                            f"got {device!r}")
    _check_where(choice, gpus, workers, ray)
    if ray is not None:
        from visprof.sweep.ray_exec import RayExecutor

        probe = RayExecutor(ray, device_kind="cpu", imports=imports, retries=retries)
        resources = probe.connect()
        has_gpus = resources.get("GPU", 0) >= 1
        if choice in ("cuda", "gpu") and not has_gpus:
            probe.close()
            raise NoGPUError(f"the Ray cluster at {ray!r} has no GPUs")
        probe.device_kind = "cuda" if has_gpus and choice != "cpu" else "cpu"
        return probe, probe.device_kind, None
    from visprof.sweep.local import LocalExecutor, cpu_slots, gpu_slots

    if choice == "cpu":
        slots, kind, devices = cpu_slots(workers or 1), "cpu", _done_on_this_cpu()
    else:
        indices = _gpu_indices(parse_gpus(gpus), explicit=choice != "auto")
        if indices is None:
            slots, kind, devices = cpu_slots(workers or 1), "cpu", _done_on_this_cpu()
        else:
            if workers is not None:
                raise BadInputError(f"{option('workers')} is for CPU sweeps; a GPU sweep runs one worker per GPU "
                                    f"(choose them with {option('gpus')})")
            slots, kind, devices = gpu_slots(indices), "cuda", _done_on_gpus(indices)
    return LocalExecutor(slots, imports=imports, fresh_process=fresh_process, echo_stderr=echo), kind, devices


def _check_where(choice: str, gpus, workers, ray) -> None:
    """Options that say where to run and contradict each other are refused, not half obeyed."""
    picked_gpus = gpus is not None and gpus != "all"
    if choice == "cpu" and picked_gpus:
        raise BadInputError(f"{option('gpus', gpus)} picks GPUs, and {option('device', 'cpu')} runs on the CPU: "
                            "give one of them")
    if ray is not None and (picked_gpus or workers is not None):
        raise BadInputError(f"{option('ray')} places each cell on the cluster itself: leave out "
                            f"{option('gpus' if picked_gpus else 'workers')}")


def _gpu_indices(gpus: str | list[int], explicit: bool) -> list[int] | None:
    """The GPUs to use, or None for the CPU (no GPU here, and none was asked for)."""
    from visprof.base import hardware

    cuda = hardware.torch_cuda()
    count = cuda.device_count() if cuda is not None else 0
    if count == 0:
        if explicit or gpus != "all":
            raise NoGPUError(hardware.no_gpu_reason())
        return None
    if gpus == "all":
        return list(range(count))
    missing = [i for i in gpus if i >= count]
    if missing:
        raise DeviceNotFoundError(f"cuda:{missing[0]}", hardware.visible_device_names())
    return gpus


@dataclass(frozen=True)
class DoneOn:
    """Where a stored row counts as done for this sweep: on one of ``uuids`` (GPU uuids, or
    CPU ids, ``hardware.cpu_device_id``), or on a GPU named as one of ``gpu_names``: a lent or cloud machine comes with
    other cards of the same model, and a store carried there resumes rather than starts over
    (on the H200 machines this project borrows, every call had new GPU uuids)."""
    uuids: tuple[str, ...]
    gpu_names: tuple[str, ...] = ()


def _done_on_this_cpu() -> DoneOn:
    """This machine's CPU, and the CPU rows that name none (made before visprof recorded the
    CPU: where they ran is unknown, so they count as they did then). A store's rows from
    another CPU are not this one's: a sweep measures them here too."""
    from visprof.base.hardware import cpu_device_id, cpu_identity

    return DoneOn((cpu_device_id(cpu_identity()), "cpu"))


def _done_on_gpus(indices: list[int]) -> DoneOn:
    from visprof.base import hardware
    from visprof.store.flatten import normalize_gpu_uuid

    identities = [hardware.gpu_identity(i) for i in indices]
    return DoneOn(tuple(normalize_gpu_uuid(g) for g in identities),
                  tuple(sorted({g["name"] for g in identities if g and g.get("name")})))
