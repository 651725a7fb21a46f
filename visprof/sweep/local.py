"""The local executor: one worker process per GPU (or per CPU slot), driven from one loop.

The driver starts ``python -m visprof.sweep.worker`` per slot, feeds each idle worker the
next cell, and waits on all of their pipes at once. It enforces the per-cell timeout (kill
the worker, report a timeout, start a new one), notices a worker that died (a segfault, an
``os._exit``, the OOM killer) and replaces it, and replaces every worker after each cell
with ``fresh_process``. Workers run in their own session, so a Ctrl-C at the terminal reaches
the driver alone, which then kills them.
"""
from __future__ import annotations

import collections
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from visprof.base.child_env import child_env, module_command
from visprof.base.errors import VisprofError
from visprof.base.spelling import on_command_line
from visprof.sweep.execute import DETAIL_CHARS
from visprof.sweep.selection import import_roots
from visprof.sweep.tasks import Task, TaskSource
from visprof.sweep.worker import LineDecoder, encode_message

__all__ = ["Slot", "LocalExecutor", "WorkerStartError", "gpu_slots", "cpu_slots"]

START_TIMEOUT_S = 900.0  # imports on a loaded machine, plus a first compile of the ATen observer
MAX_START_FAILURES = 3  # in a row, per slot, before the sweep gives up on it
EXIT_GRACE_S = 10.0  # a retiring worker's time to exit on its own before it is killed
STDERR_LINES = 60


class WorkerStartError(VisprofError):
    """No worker could be started (an --import that fails, a broken GPU, ...)."""


@dataclass(frozen=True)
class Slot:
    """Where a worker runs: ``label`` for people, ``device`` inside the worker, its env."""

    label: str  # "cuda:1" (the driver's numbering) or "cpu" / "cpu#2"
    device: str  # "cuda:0" (pinned) or "cpu"
    env: tuple[tuple[str, str], ...] = ()


def gpu_slots(indices: Sequence[int]) -> list[Slot]:
    """One slot per GPU index (the driver's numbering), pinned with CUDA_VISIBLE_DEVICES.

    An index is translated through the driver's own CUDA_VISIBLE_DEVICES, so the worker
    sees exactly the GPU the driver calls ``cuda:index``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    entries = [e.strip() for e in visible.split(",")] if visible is not None else None
    slots = []
    for index in indices:
        pinned = entries[index] if entries is not None else str(index)
        slots.append(Slot(f"cuda:{index}", "cuda:0", (("CUDA_VISIBLE_DEVICES", pinned),)))
    return slots


def cpu_slots(count: int) -> list[Slot]:
    # Hide GPUs: a CPU sweep on a GPU machine must not create CUDA contexts.
    return [Slot("cpu" if count == 1 else f"cpu#{i}", "cpu", (("CUDA_VISIBLE_DEVICES", ""),)) for i in range(count)]


@dataclass
class _Worker:
    slot: Slot
    proc: subprocess.Popen
    started_at: float
    decoder: LineDecoder = field(default_factory=LineDecoder)
    stderr: collections.deque = field(default_factory=lambda: collections.deque(maxlen=STDERR_LINES))
    facts: dict[str, Any] | None = None  # from its "ready" message
    task: Task | None = None
    task_id: int = 0
    deadline: float = 0.0
    cells_run: int = 0
    stderr_thread: threading.Thread | None = None
    stderr_lines: int = 0  # every line read from its stderr, kept or not
    task_stderr_from: int = 0  # stderr_lines when its task was sent: a failure's detail starts there
    stderr_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def ready(self) -> bool:
        return self.facts is not None

    def add_stderr(self, line: str) -> None:
        with self.stderr_lock:
            self.stderr.append(line)
            self.stderr_lines += 1

    def stderr_tail(self, since: int = 0) -> str:
        """The last of its stderr, from line ``since`` on (a reused worker's earlier cells wrote
        the lines before its task's: a crash's detail must not offer them as the cause)."""
        with self.stderr_lock:
            kept = list(self.stderr)[max(0, since - (self.stderr_lines - len(self.stderr))):]
        return "".join(kept)[-DETAIL_CHARS:]

    def task_stderr(self) -> str:
        return self.stderr_tail(self.task_stderr_from)


class LocalExecutor:
    """Runs tasks on local worker processes; see the module docstring."""

    def __init__(self, slots: Sequence[Slot], *, imports: Sequence[str] = (), timeout_s: float = 300.0,
                 fresh_process: bool = False, echo_stderr: bool = False):
        if not slots:
            raise ValueError("no slots to run workers on")
        self.slots = list(slots)
        self.imports = list(imports)
        self.import_roots = import_roots(self.imports)  # the driver has imported them (run_sweep)
        self.timeout_s = timeout_s
        self.fresh_process = fresh_process
        self.echo_stderr = echo_stderr
        self.description = f"{len(self.slots)} local worker{'s' * (len(self.slots) != 1)} ({', '.join(s.label for s in self.slots)})"
        self._workers: dict[Slot, _Worker] = {}
        self._retiring: list[tuple[_Worker, float]] = []
        self._start_failures: dict[Slot, int] = collections.Counter()
        self._dropped: set[Slot] = set()
        self._selector: selectors.BaseSelector | None = None
        self._next_id = 0

    # --- the loop ---------------------------------------------------------------------
    def run(self, source: TaskSource) -> None:
        """Runs tasks from ``source`` until it has none left and none is in flight, or until
        ``source.hard_deadline`` passes (in-flight tasks are then abandoned, unrecorded).
        Workers are gone when this returns or raises (Ctrl-C included)."""
        self._selector = selectors.DefaultSelector()
        try:
            while True:
                self._start_needed(source)
                self._dispatch(source)
                busy = [w for w in self._workers.values() if w.task is not None]
                if not busy and not source.has_work():
                    return
                if not self._workers and len(self._dropped) == len(self.slots):
                    raise WorkerStartError("no worker is left to run the remaining cells")
                now = time.monotonic()
                if source.hard_deadline is not None and now >= source.hard_deadline:
                    return  # finally: workers killed; their cells stay unrecorded, to rerun
                self._wait(source, now)
                self._check_timeouts(source)
                self._reap_retiring()
        finally:
            self._shutdown()

    def _start_needed(self, source: TaskSource) -> None:
        """A worker for each free slot, as long as queued tasks outnumber idle workers."""
        idle = sum(1 for w in self._workers.values() if w.task is None)
        for slot in self.slots:
            if idle >= source.pending():
                return
            if slot not in self._workers and slot not in self._dropped:
                self._start(slot)
                idle += 1

    def _dispatch(self, source: TaskSource) -> None:
        for worker in list(self._workers.values()):
            if not worker.ready or worker.task is not None:
                continue
            task = source.next_task()
            if task is None:
                return
            self._next_id += 1
            worker.task, worker.task_id = task, self._next_id
            worker.deadline = time.monotonic() + self.timeout_s
            with worker.stderr_lock:
                worker.task_stderr_from = worker.stderr_lines
            source.started(task, worker.slot.label)
            try:
                worker.proc.stdin.write(encode_message({"type": "run", "id": worker.task_id, "cell": task.cell.to_dict()}))
                worker.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # it died meanwhile: its EOF on stdout reports the crash

    def _wait(self, source: TaskSource, now: float) -> None:
        deadlines = [w.deadline for w in self._workers.values() if w.task is not None]
        deadlines += [w.started_at + START_TIMEOUT_S for w in self._workers.values() if not w.ready]
        if source.hard_deadline is not None:
            deadlines.append(source.hard_deadline)
        wait = min([d - now for d in deadlines] + [1.0])
        for key, _ in self._selector.select(timeout=max(wait, 0.0)):
            worker: _Worker = key.data
            try:
                data = os.read(key.fd, 1 << 20)
            except OSError:
                data = b""
            if not data:
                self._on_exit(worker, source)
                continue
            for message in worker.decoder.feed(data):
                self._on_message(worker, message, source)

    def _on_message(self, worker: _Worker, message: dict[str, Any], source: TaskSource) -> None:
        kind = message.get("type")
        if kind == "ready":
            worker.facts = message["facts"]
            self._start_failures[worker.slot] = 0
            source.worker_ready(worker.slot.label, worker.facts)
        elif kind == "fatal":
            self._retire(worker, kill=True)
            raise WorkerStartError(f"a sweep worker could not start: {message.get('message')}")
        elif kind == "done" and worker.task is not None and message.get("id") == worker.task_id:
            task, worker.task = worker.task, None
            worker.cells_run += 1
            source.finished(task, message["outcome"], worker.facts)
            if self.fresh_process:
                self._replace(worker, kill=False)

    def _on_exit(self, worker: _Worker, source: TaskSource) -> None:
        """The worker's stdout closed: it died (or exited when it should not have)."""
        code = _wait_exit(worker.proc)
        if worker.stderr_thread is not None:  # its last lines (faulthandler's stack) first
            worker.stderr_thread.join(timeout=2.0)
        how = _describe_exit(code)
        if worker.task is not None:
            task, worker.task = worker.task, None
            source.finished(task, {
                "status": "failed", "kind": "crash", "error_class": "WorkerCrashed",
                "message": f"the worker process {how} while running the cell",
                "detail": worker.task_stderr(), "batch_sizes_tried": [], "wall_s": None,
            }, worker.facts)
            self._replace(worker, kill=True)
            return
        if not worker.ready:
            self._start_failures[worker.slot] += 1
            tail = worker.stderr_tail().strip().splitlines()[-1:] or [""]
            if self._start_failures[worker.slot] >= MAX_START_FAILURES:
                self._drop(worker)
                if len(self._dropped) == len(self.slots):
                    raise WorkerStartError(f"a sweep worker on {worker.slot.label} {how} before it was ready, "
                                           f"{MAX_START_FAILURES} times: {tail[0]}")
                return
        self._replace(worker, kill=True)

    def _check_timeouts(self, source: TaskSource) -> None:
        now = time.monotonic()
        for worker in list(self._workers.values()):
            if worker.task is not None and now >= worker.deadline:
                task, worker.task = worker.task, None
                self._kill(worker)
                source.finished(task, {
                    "status": "failed", "kind": "timeout", "error_class": "CellTimeout",
                    "message": f"no result after {self.timeout_s:g} s; the worker was killed",
                    "detail": worker.task_stderr(), "batch_sizes_tried": [], "wall_s": self.timeout_s,
                }, worker.facts)
                self._replace(worker, kill=True)
            elif not worker.ready and now >= worker.started_at + START_TIMEOUT_S:
                self._drop(worker)
                if len(self._dropped) < len(self.slots):
                    continue
                raise WorkerStartError(f"a sweep worker on {worker.slot.label} was not ready after "
                                       f"{START_TIMEOUT_S:g} s: {worker.stderr_tail()[-300:]}")

    # --- processes --------------------------------------------------------------------
    def _start(self, slot: Slot) -> None:
        command = module_command("visprof.sweep.worker", "--device", slot.device, "--parent-pid", str(os.getpid()))
        for module in self.imports:
            command += ["--import", module]
        if on_command_line():  # the worker's messages name options as the driver's do
            command.append("--command-line")
        env = child_env({**os.environ, **dict(slot.env), "PYTHONUNBUFFERED": "1"})
        if self.import_roots:  # where the driver found the --import modules, which the worker's path lacks
            env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *self.import_roots]).strip(os.pathsep)
        # Workers share the host's cores: each takes its part for torch's CPU threads (model
        # building, host ops), unless the user set it. With every worker spinning up all cores,
        # two H200 workers each took 2.6x longer outside the passes (bench/results/h200x2-sweep-1).
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // len(self.slots))))
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=True, bufsize=0)
        worker = _Worker(slot, proc, time.monotonic())
        worker.stderr_thread = threading.Thread(target=self._pump_stderr, args=(worker,), daemon=True,
                                                name=f"visprof-worker-stderr-{slot.label}")
        worker.stderr_thread.start()
        self._workers[slot] = worker
        self._selector.register(proc.stdout, selectors.EVENT_READ, worker)

    def _pump_stderr(self, worker: _Worker) -> None:
        for raw in iter(worker.proc.stderr.readline, b""):
            line = raw.decode(errors="replace")
            worker.add_stderr(line)
            if self.echo_stderr:
                sys.stderr.write(f"[{worker.slot.label}] {line}")

    def _replace(self, worker: _Worker, kill: bool) -> None:
        """Ends ``worker``; the loop starts a new one on its slot if work is left."""
        self._retire(worker, kill)

    def _drop(self, worker: _Worker) -> None:
        """Ends ``worker`` and gives up its slot."""
        self._dropped.add(worker.slot)
        self._retire(worker, kill=True)

    def _retire(self, worker: _Worker, kill: bool) -> None:
        if self._workers.get(worker.slot) is worker:
            del self._workers[worker.slot]
        try:
            self._selector.unregister(worker.proc.stdout)
        except (KeyError, ValueError):
            pass
        if kill:
            self._kill(worker)
            _close(worker.proc)
        else:  # idle: closing stdin ends its loop; killed later if it lingers
            try:
                worker.proc.stdin.close()
            except OSError:
                pass
            self._retiring.append((worker, time.monotonic() + EXIT_GRACE_S))

    def _reap_retiring(self) -> None:
        keep = []
        for worker, deadline in self._retiring:
            if worker.proc.poll() is not None:
                _close(worker.proc)
            elif time.monotonic() >= deadline:
                self._kill(worker)
                _close(worker.proc)
            else:
                keep.append((worker, deadline))
        self._retiring = keep

    @staticmethod
    def _kill(worker: _Worker) -> None:
        """SIGKILL to the worker's whole session (its own children, e.g. a memory pass, too)."""
        try:
            os.killpg(worker.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _wait_exit(worker.proc)

    def _shutdown(self) -> None:
        for worker in list(self._workers.values()) + [w for w, _ in self._retiring]:
            self._kill(worker)
            _close(worker.proc)
        self._workers.clear()
        self._retiring.clear()
        if self._selector is not None:
            self._selector.close()
            self._selector = None


def _wait_exit(proc: subprocess.Popen) -> int | None:
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return proc.wait()


def _close(proc: subprocess.Popen) -> None:
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}" + (" (a crash in native code)" if name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT") else "")
    return f"exited with code {code}"
