"""``run_sweep``: models x configurations x GPUs into one resumable results store.

    from visprof.sweep import run_sweep
    summary = run_sweep(["resnet50", "vit_*"], store="results.db", batch_sizes=[64], limit=20)
    print(summary.render())

The driver selects models, plans the cells, skips those the store already holds (same
configuration, same visprof/torch/timm/CUDA, measured on one of the sweep's GPUs or on a GPU
of the same name: a store carried to another machine with the same GPU model resumes there
instead of measuring everything again), runs the rest on local worker
processes (one per GPU) or as Ray tasks, and writes every outcome to the store as it
arrives: the driver alone writes, one transaction per row. Crashed and timed-out cells are
tried again (``retries``) on a fresh worker; errors of the model and out-of-memory at every
batch size are final. The same call again resumes.
"""
from __future__ import annotations

import collections
import os
import shlex
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from visprof.base.errors import VisprofWarning
from visprof.base.output_paths import check_output_path
from visprof.base.spelling import either, option
from visprof.sweep.options import check_numbers, check_profile_options
from visprof.sweep.placement import DoneOn, executor_for
from visprof.sweep.plan import SweepPlan
from visprof.sweep.progress_bar import SweepProgress
from visprof.sweep.selection import ModelList, import_modules, registry_sizes, select_models
from visprof.store.result_store import NotAStoreYet, ResultStore
from visprof.store.sqlite_guard import held_by_a_writer
from visprof.sweep.summary import SweepSummary
from visprof.sweep.tasks import Task
from visprof.store.versions import SoftwareVersions

__all__ = ["run_sweep"]

def run_sweep(
    models: Iterable[str] | str | None = None,
    *,
    store: str | os.PathLike,
    model_list: str | os.PathLike | ModelList | None = None,
    all_models: bool = False,
    exclude: Iterable[str] | str | None = None,
    limit: int | None = None,
    batch_sizes: Sequence[int] = (),
    img_sizes: Sequence[Any] = (),
    precisions: Sequence[str] = (),
    channels_last: Sequence[bool] = (),
    passes: Sequence[str] | str | None = None,
    profile_options: Mapping[str, Any] | None = None,
    device: str | None = None,
    gpus: str | Sequence[int] | None = "all",
    workers: int | None = None,
    ray: str | None = None,
    imports: Sequence[str] = (),
    timeout_s: float | None = None,
    retries: int = 1,
    retry_failed: bool = False,
    fresh_process: bool = False,
    time_budget_s: float | None = None,
    dry_run: bool = False,
    progress: bool = True,
    echo_worker_output: bool = False,
    argv: str | None = None,
    started_at: float | None = None,
) -> SweepSummary:
    """Runs a sweep into ``store`` and returns its summary (see the module docstring).

    ``device``: None/"auto" (every GPU of ``gpus``, else the CPU), "cuda" or "cpu".
    ``passes``: None runs every pass the device can (on the CPU not the memory pass, which
    needs a GPU: asking a CPU sweep for it is a BadInputError, before any cell runs).
    ``workers``: CPU worker processes (default 1: parallel CPU timings disturb each other).
    ``ray``: "auto" (a running cluster), "local" (start one here) or a cluster address.
    ``imports``: modules (names or .py paths) imported in the driver and every worker first,
    e.g. ones that register models with timm. ``time_budget_s``: stop starting cells in time
    to return within this many seconds; the store resumes from there. ``dry_run``: plan only; the
    summary (status "dry run") lists the cells a run would measure (``to_run``) and estimates its
    time from the store's earlier cells; no store is created and no worker started. ``started_at``: the
    ``time.monotonic()`` the budget and the summary's elapsed time count from (default: this
    call; the CLI gives its own start, so that torch's imports count as the user's clock does).
    On Ctrl-C the workers are killed, the run is marked interrupted, and KeyboardInterrupt
    propagates; once the run had begun, it carries the run's summary (status "interrupted") as
    its ``sweep_summary`` attribute.
    """
    started = time.monotonic() if started_at is None else min(float(started_at), time.monotonic())
    check_numbers(timeout_s, retries, time_budget_s, workers)
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    options = check_profile_options(profile_options or {})
    # a bad path fails before minutes of work; a dry run only reads the store, where there is one, and
    # refuses what the run would (a damaged store, a folder that is not there)
    if not dry_run:
        ResultStore.check_path(store, write=True)
    elif Path(store).exists():
        ResultStore.check_path(store, write=False)
    else:
        check_output_path(Path(store), option("store"))
    executor = writer = None
    try:
        import_modules(imports)
        names = select_models(models, model_list=model_list, all_models=all_models, exclude=exclude, limit=limit)
        executor, device_kind, devices = executor_for(device, gpus, workers, ray, imports, timeout_s, retries,
                                                      fresh_process, echo_worker_output)
        plan = SweepPlan(names, device_kind, batch_sizes, img_sizes, precisions, channels_last, passes, options,
                         sizes=registry_sizes)
        for note in plan.notes():  # said once, before the cells, rather than only in each cell's result
            warnings.warn(note, VisprofWarning, stacklevel=2)
        if dry_run:
            return _dry_run(store, plan, executor, devices, retry_failed)
        # Created (and locked against a second sweep) only once the sweep is known to be sound.
        writer = ResultStore(store, write=True)
        sweep = _Sweep(writer, plan, executor, devices, retries, retry_failed, time_budget_s, started, progress)
        return sweep.run(argv or _default_argv())
    finally:
        if executor is not None and hasattr(executor, "close"):
            executor.close()
        if writer is not None:
            writer.close()


def _default_argv() -> str:
    # shell-quoted, so that a run's recorded command can be pasted back: joined with spaces,
    # `--models "vit_*" "my model.pt"` was stored as `--models vit_* my model.pt`
    return shlex.join(sys.argv) if sys.argv and sys.argv[0] else "run_sweep()"


class _Sweep:
    """The driver's state: the queue, the retry policy, the time budget, the store writes."""

    def __init__(self, store: ResultStore, plan: SweepPlan, executor, devices, retries: int, retry_failed: bool,
                 time_budget_s: float | None, started: float, progress: bool):
        self.store = store
        self.plan = plan
        self.executor = executor
        self.retries = retries
        self.t0 = started
        self.versions = SoftwareVersions.current()
        self.hard_deadline = started + time_budget_s if time_budget_s is not None else None
        self.stopping = False
        self.run_id: int | None = None
        self.show_progress = progress
        self.progress: SweepProgress | None = None
        self.walls: collections.deque[float] = collections.deque(maxlen=20)
        self.summary = SweepSummary(planned=len(plan), merged=plan.merged, executor=executor.description,
                                    store=str(store.path))
        # one configuration a model: the slowest cells are named by their model alone
        self.one_config = len(plan) == plan.model_count()
        self.in_flight = 0
        # id(task) -> (task, when it started, the worker it went to: "cuda:1", "cpu#0", "ray")
        self.running: dict[int, tuple[Task, float, str]] = {}
        # Ray reruns a task whose worker died itself; locally the sweep requeues it.
        self.requeue_crashes = not getattr(executor, "retries_crashes", False)

        self.queue, self.summary.skipped, self.summary.skipped_failed = _queue(
            plan, _done_cells(store, self.versions, devices), retry_failed)

    # --- the run ----------------------------------------------------------------------
    def run(self, argv: str) -> SweepSummary:
        self.run_id = self.store.start_run(argv, self.executor.description, len(self.plan), self.summary.skipped)
        status = "error"
        with SweepProgress(len(self.queue), enabled=self.show_progress) as self.progress:
            self.progress.note(f"{len(self.plan)} cells ({self.plan.model_count()} models)"
                               + (f", {self.plan.merged} more merged into them (the same model and input under "
                                  "other names or sizes)" if self.plan.merged else "") + "; "
                               f"{self.summary.skipped} already in {self.store.path}"
                               + (f" ({self.summary.skipped_failed} failed earlier; "
                                  f"{option('retry_failed', True)} tries them)"
                                  if self.summary.skipped_failed else "") + "; "
                               f"{len(self.queue)} to run on {self.executor.description}; {self.versions}")
            try:
                if self.queue:
                    self.executor.run(self)
                # Cells still queued, or abandoned in flight at the hard deadline, were not run.
                status = "time budget" if self.queue or self.in_flight else "complete"
                self._say_abandoned()
                if status == "time budget" and not self.stopping and not self.running:
                    self._say_budget_spent()
            except KeyboardInterrupt as interrupt:
                status = "interrupted"
                interrupt.sweep_summary = self.summary  # filled in below: the CLI still writes its --json
                raise
            finally:
                # Here, not after a normal return: an interrupted sweep's summary is written too (--json).
                self.summary.slowest.sort(key=lambda kv: -kv[1])
                self.summary.remaining = len(self.queue) + self.in_flight
                self.summary.status = status
                self.summary.elapsed_s = time.monotonic() - self.t0
                self.store.end_run(self.run_id, status, self.summary.done, self.summary.failed_total,
                                   self.summary.elapsed_s, self.summary.startup_s)
                if status in ("interrupted", "time budget"):
                    again = either("call run_sweep again with the same arguments", "run the same command again")
                    self.progress.note(f"{status}: {self.summary.done + self.summary.failed_total} cells finished "
                                       f"this run, {self.summary.remaining} left; finished cells are kept in "
                                       f"{self.store.path}: {again} to resume")
        return self.summary

    # --- TaskSource -------------------------------------------------------------------
    def has_work(self) -> bool:
        return bool(self.queue) and not self.stopping

    def pending(self) -> int:
        return 0 if self.stopping else len(self.queue)

    def _say_abandoned(self) -> None:
        """Cells running when the budget ran out are dropped unrecorded, and the same command runs
        them first again: one longer than the budget stopped every run there, with no word of it."""
        now = time.monotonic()
        for task, began, _ in self.running.values():
            self.progress.note(f"time budget: {task.cell.model} {task.cell.config_text} was still running after "
                               f"{now - began:.0f} s and was stopped, unrecorded; the same "
                               f"{either('run_sweep call', 'command')} starts it first again, so give a "
                               f"{option('time_budget_s', flag='--time-budget')} longer than it needs")

    def _say_budget_spent(self) -> None:
        """The budget ran out with no cell declined or stopped for it (next_task and _say_abandoned
        say those): spent before the workers were up, it went unexplained ("0 measured, 3 not run")."""
        spent = time.monotonic() - self.t0
        before = ("before a worker was ready (torch's imports count, in the driver and in each worker)"
                  if self.summary.startup_s is None else f"{spent - self.summary.startup_s:.0f} s after the first "
                  f"worker was ready ({self.summary.startup_s:.1f} s in)")
        self.progress.note(f"time budget: spent after {spent:.1f} s, {before}; give a longer "
                           f"{option('time_budget_s', flag='--time-budget')}")

    def next_task(self) -> Task | None:
        if not self.queue or self.stopping:
            return None
        if self.hard_deadline is not None:
            remaining = self.hard_deadline - time.monotonic()
            estimate = 1.5 * max(self.walls) if self.walls else 0.0
            if remaining <= estimate:
                self.stopping = True
                self.progress.note(f"time budget: {_seconds(remaining)} left, a cell takes up to "
                                   f"{_seconds(max(self.walls, default=0))}; starting no more cells")
                return None
        self.in_flight += 1
        return self.queue.popleft()

    def started(self, task: Task, where: str) -> None:
        self.running[id(task)] = (task, time.monotonic(), where)

    def worker_ready(self, where: str, facts: dict[str, Any]) -> None:
        if self.summary.startup_s is None:
            self.summary.startup_s = time.monotonic() - self.t0
            self.progress.restart_clock()
        gpu = facts.get("gpu") or {}
        cpu = (facts.get("cpu") or {}).get("name")
        what = f"{gpu.get('name')} ({gpu.get('uuid')})" if gpu else f"CPU ({cpu})" if cpu else "CPU"
        self.progress.note(f"worker {where} ready in {facts.get('startup_s', 0):.1f} s: {what}, pid {facts.get('pid')}")

    def finished(self, task: Task, outcome: dict[str, Any], facts: dict[str, Any] | None) -> None:
        self.in_flight -= 1
        _, _, slot = self.running.pop(id(task), (None, None, "ray"))
        cell = task.cell
        where = _where(slot, facts)
        label = f"{cell.model} {cell.config_text}"
        wall = outcome.get("wall_s")
        if outcome.get("status") == "ok":
            self.store.add_result(cell, outcome["result"], run_id=self.run_id,
                                  batch_sizes_tried=outcome.get("batch_sizes_tried", ()), wall_s=wall,
                                  attempts=task.earlier + task.attempt, host=(facts or {}).get("host"))
            self.summary.done += 1
            if wall is not None:
                self.walls.append(wall)
                self.summary.cell_wall_s.append(wall)
                self.summary.slowest.append((cell.model if self.one_config else cell.key, wall))
            self.progress.cell(label, where, wall)
            return
        kind = outcome.get("kind", "error")
        attempts_here = int(outcome.get("attempts", 1))
        total = task.attempt - 1 + attempts_here
        final = kind in ("error", "oom") or not self.requeue_crashes or total >= 1 + self.retries
        versions = SoftwareVersions.from_dict(facts["versions"]) if facts else self.versions
        gpu = (facts or {}).get("gpu")
        if gpu is None and self.plan.device_kind == "cuda":
            gpu = {"name": None, "uuid": "unknown"}  # a Ray task that died before saying where it ran
        self.store.add_failure(cell, versions=versions, gpu=gpu, kind=kind, error_class=outcome.get("error_class", "Error"),
                               message=outcome.get("message", ""), detail=outcome.get("detail", ""),
                               batch_sizes_tried=outcome.get("batch_sizes_tried", ()), attempts=attempts_here,
                               final=final, run_id=self.run_id, host=(facts or {}).get("host"),
                               cpu=(facts or {}).get("cpu"))
        error_class = outcome.get("error_class", "Error")
        if final:
            self.summary.failed[error_class] = self.summary.failed.get(error_class, 0) + 1
            self.summary.failures.append({"cell": cell.key, "error_class": error_class,
                                          "message": outcome.get("message", "")})
        else:
            self.queue.append(Task(cell, total + 1, task.earlier))
        self.progress.cell(label, where, wall, error_class, retry=not final)


def _done_cells(store: ResultStore, versions: SoftwareVersions, devices: DoneOn | None) -> dict[str, Any]:
    """{cell key: state} of what ``store`` holds that counts as done for this sweep's devices."""
    if devices is None:
        return store.cell_states(versions, None)
    return store.cell_states(versions, devices.uuids, devices.gpu_names)


def _queue(plan: SweepPlan, states: Mapping[str, Any], retry_failed: bool) -> tuple[collections.deque[Task], int, int]:
    """The tasks to run (a failure not yet final is tried again, counting its attempts; with
    ``retry_failed`` a final one too, afresh), how many cells the store already holds, and how many
    of those failed for good."""
    queue: collections.deque[Task] = collections.deque()
    skipped = skipped_failed = 0
    for cell in plan.cells():
        state = _stored_state(states, plan.spellings(cell))
        if state is None:
            queue.append(Task(cell, 1))
        elif state.status == "failed" and not state.final:  # an interrupted run's retry: its count goes on
            queue.append(Task(cell, state.attempts + 1))
        elif state.status == "failed" and retry_failed:
            # A fresh budget (1 + retries tries in this run): counting on from the earlier runs, a
            # crash was final at its first try. The store's attempts still add up across runs.
            queue.append(Task(cell, 1, earlier=state.attempts))
        else:
            skipped += 1
            skipped_failed += state.status == "failed"
    return queue, skipped, skipped_failed


def _dry_run(store: str | os.PathLike, plan: SweepPlan, executor, devices: DoneOn | None,
             retry_failed: bool) -> SweepSummary:
    """What a run would measure and skip, read from the store if there is one (opened to read:
    a dry run creates nothing), with its time estimated from the store's cells."""
    states: dict[str, Any] = {}
    walls: list[float] = []
    try:
        held = ResultStore(store) if os.path.exists(store) else None
    except NotAStoreYet:  # an empty file (`touch s.db`): the run makes it the store, with nothing done
        held = None
    if held is not None:
        with held:
            held.check_intact()  # damage the run would refuse the store for, before any cell
            if held_by_a_writer(Path(store)):
                warnings.warn(f"another sweep is writing to {store} now: this plan reads the store as it stands, and "
                              "the run would be refused until that sweep ends", VisprofWarning, stacklevel=3)
            states = _done_cells(held, SoftwareVersions.current(), devices)
            walls = [float(row["wall_s"]) for row in held.rows() if row.get("wall_s")]
    queue, skipped, skipped_failed = _queue(plan, states, retry_failed)
    summary = SweepSummary(planned=len(plan), merged=plan.merged, skipped=skipped, skipped_failed=skipped_failed,
                           remaining=len(queue), status="dry run", executor=executor.description, store=str(store))
    summary.to_run = [task.cell.key + (f" (attempt {task.attempt})" if task.attempt > 1 else "") for task in queue]
    workers = len(getattr(executor, "slots", ())) or None  # a Ray cluster's share is not known before it runs
    if walls and queue and workers:
        summary.estimate_s = statistics.median(walls) * len(queue) / workers
        summary.estimate_basis = (f"the store's median of {statistics.median(walls):.1f} s a cell, on {workers} worker(s) "
                                  "(worker start-up not counted)")
    return summary


def _stored_state(states: Mapping[str, Any], keys: Sequence[str]):
    """A cell's state in the store under any of its spellings (a store swept with ``--img-size 224``
    holds the cell a sweep with ``--img-size test,224`` now keys as ``img=default``); a result wins
    over a failure, as it does in ``cell_states``."""
    found = [states[key] for key in keys if key in states]
    return next((state for state in found if state.status == "ok"), found[0] if found else None)


def _seconds(value: float) -> str:
    """Whole seconds, or tenths below 10 s ("1 s left, a cell takes up to 1 s" read as nonsense)."""
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def _where(slot: str, facts: dict[str, Any] | None) -> str:
    """Where a cell ran, for its progress line: a local worker by its slot ("cuda:1", "cpu#0"; the
    "worker ... ready" line names its GPU), as two workers on one CPU, or two GPUs of one name,
    had read the same; a Ray task by its GPU's name, as its slot says only "ray"."""
    if slot != "ray":
        return slot
    if not facts:
        return "?"
    gpu = facts.get("gpu")
    return f"{gpu.get('name')}" if gpu else "cpu"
