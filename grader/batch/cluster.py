"""`grader batch --cluster ADDRESS`: the batch's gradings run on a Dask scheduler's workers.

Its one job is transport. A task carries a submission's bytes to a worker whose kit is this kit (same
version, inventory, manifest and reference: each worker is asked before it gets a task) and grades it there
exactly as the local pool does (`grader.batch.grade_one`: `grader grade` in a child process, in its
sandbox, in a scratch folder); the worker hands back how the child ended, its results.json and what it
printed, and the client alone writes files (`grader.batch.record_grading`), each as it arrives, so resume,
grades.csv and the report are the local path's. Student code never runs in a Dask worker's own process.

Faults: a worker lost mid-grading has its task run again on another worker by the scheduler, up to its
`distributed.scheduler.allowed-failures` (3 by default), then it is recorded as crashed; a task that
raises is retried TASK_RETRIES times; a result not back within the client's bound is recorded as timed out;
with no worker of this kit left for NO_WORKER_SECONDS the batch stops as an interrupted one does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.batch.children import grade_one, stoppable
from grader.batch.folders import record_grading, submission_folder
from grader.batch.keys import kit_of
from grader.batch.outcomes import GRADE_LOG, BatchOptions, Engine, Graded, Outcome
from grader.batch.roster import Entry
from grader.errors import KitError
from grader.grading.intake import FILE, as_read
from grader.layout import MANIFEST, find_root
from grader.sandbox.isolation import machine_layers

if TYPE_CHECKING:
    from dask.typing import Key
    from distributed import Client, Future

CONNECT_SECONDS = 20.0  # to reach the scheduler
NO_WORKER_SECONDS = 60.0  # a batch with no worker of its kit for this long stops
REFRESH_SECONDS = 5.0  # how often workers that joined are asked for their kit
ASK_SECONDS = 15.0  # for a worker to say its kit; one silent is asked again at the next refresh
POLL_SECONDS = 0.2
TASK_RETRIES = 1  # a task that raised (not a failed grading: that is an outcome) runs once more
RESULT_MARGIN = 120.0  # the client's bound on a task: twice the batch's --timeout and this
QUEUED = 2  # tasks sent per worker thread: one grading, one waiting, so no thread idles between two
INSTALL = "pip install -e '.[cluster]' in a checkout of the same commit, or the image built from it"
KIT_KEYS = ("kit_version", "inventory", "manifest", "reference")  # what a worker's kit must match


class ClusterError(KitError):
    """The cluster cannot grade this batch (no Dask, no scheduler, no worker of this kit): one line."""


@dataclass(frozen=True)
class Parcel:
    """A submission's bytes, as a task carries them: its entry's name, and its files by path inside it
    ("" for a lone file)."""

    file: str
    name: str  # the file or folder name it had (intake reads the suffix: .py, .zip, .ipynb)
    files: dict[str, bytes]


@dataclass(frozen=True)
class Returned:
    """What a worker hands back: how the child ended (and on which worker), and what it printed."""

    graded: Graded
    log: bytes


# -- on the worker ----------------------------------------------------------------------------------


def worker_kit() -> dict:
    """Which kit this worker grades with (`kit_of` its kit tree), and its machine's isolation layers."""
    root = installed_root()
    kit: dict[str, Any] = kit_of(root) if root is not None else {"kit_version": None}
    return {**kit, "layers": machine_layers().summary()}


def installed_root() -> Path | None:
    """The kit tree the worker's `grader` package belongs to (an editable install, the image's
    /opt/optlab); None for a package installed without its tree."""
    import grader

    root = find_root(Path(grader.__file__).resolve().parent)
    return root if (root / MANIFEST).is_file() else None


def grade_on_worker(parcel: Parcel, options: BatchOptions) -> Returned:
    """The task: unpack the submission in a scratch folder and grade it by `grader grade` in a child."""
    from distributed import get_worker

    root = installed_root()
    if root is None:
        raise ClusterError(f"this worker's grader has no kit tree: {INSTALL}")
    worker = get_worker()
    key = worker.get_current_task()
    with tempfile.TemporaryDirectory(prefix="optlab-cluster-") as scratch:
        submission = unpack(parcel, Path(scratch) / "submission")
        # as many gradings side by side as the worker has threads (grader.sandbox.sandbox.poll_seconds)
        here = dataclasses.replace(
            options, results_dir=Path(scratch) / "results", jobs=max(1, worker.state.nthreads)
        )
        graded, log = grade_one(root, Entry(parcel.file, submission), here, lambda: _released(key))
    return Returned(dataclasses.replace(graded, worker=worker.address), log)


def _released(key: Key) -> bool:
    """Whether the client no longer wants the task `key` (cancelled, or its client gone)."""
    from distributed import get_worker

    with contextlib.suppress(Exception):  # the worker's state is read, never changed
        task = get_worker().state.tasks.get(key)
        return task is None or task.state in ("cancelled", "released", "forgotten")
    return False


def pack(entry: Entry) -> Parcel:
    """What intake reads of the entry's files (grader.grading.intake's `as_read`: the module's bytes, the
    other files by name, empty), in a parcel: what its grading key covers, whatever else the entry holds."""
    files = {name: data for kind, name, data in as_read(entry.path) if kind == FILE}
    return Parcel(entry.file, entry.path.name, files)


def unpack(parcel: Parcel, into: Path) -> Path:
    """Write the parcel's files under `into`; the submission's path (a file or a folder)."""
    into.mkdir(parents=True)
    target = into / Path(parcel.name).name
    if set(parcel.files) == {""}:
        target.write_bytes(parcel.files[""])
        return target
    target.mkdir()
    for relative, data in parcel.files.items():
        path = target / relative
        if ".." in Path(relative).parts or Path(relative).is_absolute() or not relative:
            raise ClusterError(f"a parcel path outside its submission: {relative!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return target


# -- on the client ----------------------------------------------------------------------------------


def connect(address: str) -> Client:
    """A client of the scheduler at `address`, reached within CONNECT_SECONDS."""
    try:
        from distributed import Client
        from distributed.comm.addressing import get_address_host_port
    except ImportError:
        raise ClusterError(
            "grader batch --cluster needs Dask: install the kit's cluster extra (pip install '.[cluster]')"
        ) from None
    _quiet()
    try:  # a malformed address is refused here: a Client half made of one hangs as it is collected
        get_address_host_port(address)
    except ValueError as error:
        raise ClusterError(
            f"{address}: not a scheduler's address ({error}): give it as tcp://HOST:PORT"
        ) from None
    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        raise ClusterError(
            f"no Dask scheduler reached at {address} within {CONNECT_SECONDS:g} s ({_one_line(error)}): "
            "start one (dask scheduler) or give its address as tcp://HOST:PORT"
        ) from None


def on_cluster(address: str) -> Engine:
    """The batch's engine (grader.batch.Engine) that grades on the workers of the scheduler at `address`."""

    def grade(
        root: Path, todo: list[tuple[Entry, str]], options: BatchOptions, done: Callable[[Outcome], None]
    ) -> None:
        grade_on_cluster(address, root, todo, options, done)

    return grade


def grade_on_cluster(
    address: str,
    root: Path,
    todo: list[tuple[Entry, str]],
    options: BatchOptions,
    done: Callable[[Outcome], None],
) -> None:
    """Grade `todo` (entries with their grading keys) on the workers of the scheduler at `address` that
    have this kit; `done` is told each outcome as it is recorded. Ctrl-C cancels what runs."""
    client = connect(address)
    try:
        with stoppable():
            _Dispatch(client, address, root, todo, options, done).run()
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=10)


@dataclass
class _Task:
    entry: Entry
    key: str
    workers: frozenset[str]
    deadline: float


class _Dispatch:
    """Submissions to the workers of this kit, QUEUED per thread (a task waits at most one grading before
    it starts: within the client's bound); outcomes recorded as they come back."""

    def __init__(
        self,
        client: Client,
        address: str,
        root: Path,
        todo: list[tuple[Entry, str]],
        options: BatchOptions,
        done: Callable[[Outcome], None],
    ) -> None:
        self.client, self.address, self.options, self.done = client, address, options, done
        self.kit = {k: v for k, v in kit_of(root).items() if k in KIT_KEYS}
        self.waiting = deque(todo)
        self.running: dict[Future, _Task] = {}
        self.kits: dict[str, dict | None] = {}  # each worker's kit, asked once
        self.bound = 2 * options.timeout + RESULT_MARGIN

    def run(self) -> None:
        matching = self._refresh()
        if not matching:
            raise ClusterError(self._none_matching())
        print(f"grader: grading on {self.address}: {_workers_text(self.kits, matching)}", flush=True)
        refreshed, alone_since = time.monotonic(), None
        try:
            while self.waiting or self.running:
                if time.monotonic() - refreshed > REFRESH_SECONDS:
                    matching, refreshed = self._refresh(), time.monotonic()
                if not matching:
                    alone_since = alone_since or time.monotonic()
                    if time.monotonic() - alone_since > NO_WORKER_SECONDS:
                        # stopped as Ctrl-C stops it: grades.csv for what finished, the rest on a later run
                        raise KeyboardInterrupt(f"no worker with this kit left for {NO_WORKER_SECONDS:g} s")
                else:
                    alone_since = None
                    self._resubmit_stranded(matching)
                    self._submit(matching)
                self._collect()
        finally:
            if self.running:
                with contextlib.suppress(Exception):
                    self.client.cancel(list(self.running), force=True)

    def _refresh(self) -> dict[str, int]:
        """The workers of this kit now, with their threads; a worker new to the batch is asked its kit,
        and one with another kit is named once, with what to install."""
        try:
            workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        except (OSError, TimeoutError) as error:  # the scheduler lost: stopped as Ctrl-C stops a batch
            lost = f"lost the Dask scheduler at {self.address}: {_one_line(error)}"
            raise KeyboardInterrupt(lost) from None
        new = [address for address in workers if address not in self.kits]
        for address, answer in self._ask(new).items():
            self.kits[address] = answer if isinstance(answer, dict) else None
            if not self._matches(address):
                print(f"grader: {self._mismatch(address, answer)}", file=sys.stderr, flush=True)
        return {a: int(w.get("nthreads", 1)) for a, w in workers.items() if self._matches(a)}

    def _ask(self, addresses: list[str]) -> dict[str, object]:
        """Each worker's kit (or why it cannot tell), asked by a task of its own, so that a worker that
        never answers costs ASK_SECONDS (and is left out until it answers), not a hang."""
        asked = {
            address: self.client.submit(
                worker_kit,
                key=f"kit-{uuid.uuid4().hex}",
                pure=False,
                workers=[address],
                allow_other_workers=False,
            )  # fmt: skip
            for address in addresses
        }
        deadline = time.monotonic() + ASK_SECONDS
        while any(f.status == "pending" for f in asked.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        answers: dict[str, object] = {}
        for address, future in asked.items():
            if future.status == "finished":
                answers[address] = future.result()
            elif future.status == "error":
                answers[address] = future.exception()
            else:
                self.client.cancel([future], force=True)
        return answers

    def _matches(self, address: str) -> bool:
        kit = self.kits.get(address)
        return kit is not None and all(kit.get(k) == v for k, v in self.kit.items())

    def _mismatch(self, address: str, answer: object) -> str:
        ours = _kit_text(self.kit)
        if not isinstance(answer, dict):
            has = f"cannot tell its kit ({_one_line(answer)})"
        elif answer.get("kit_version") is None:
            has = "has grader without a kit tree"
        else:
            has = f"has another kit ({_kit_text(answer)})"
        return f"worker {address} {has} and gets no submission: install kit {ours} there ({INSTALL})"

    def _none_matching(self) -> str:
        if not self.kits:
            return (f"the Dask scheduler at {self.address} has no workers: start some "
                    f"(dask worker {self.address}) and run grader batch again")  # fmt: skip
        return (f"no worker of the Dask scheduler at {self.address} has this kit "
                f"({_kit_text(self.kit)}): install it on them ({INSTALL})")  # fmt: skip

    def _submit(self, matching: dict[str, int]) -> None:
        while self.waiting and len(self.running) < QUEUED * sum(matching.values()):
            entry, key = self.waiting.popleft()
            self._send(entry, key, matching)

    def _send(self, entry: Entry, key: str, matching: dict[str, int]) -> None:
        future = self.client.submit(
            grade_on_worker, pack(entry), self.options,
            key=f"grade-{uuid.uuid4().hex}", pure=False, retries=TASK_RETRIES,
            workers=sorted(matching), allow_other_workers=False,  # only workers of this kit
        )  # fmt: skip
        deadline = time.monotonic() + self.bound
        self.running[future] = _Task(entry, key, frozenset(matching), deadline)

    def _resubmit_stranded(self, matching: dict[str, int]) -> None:
        """A task whose every allowed worker is gone would wait forever: it is sent again to those left."""
        for future, task in list(self.running.items()):
            if future.status == "pending" and not task.workers & set(matching):
                self.client.cancel([future], force=True)
                del self.running[future]
                self._send(task.entry, task.key, matching)

    def _collect(self) -> None:
        time.sleep(POLL_SECONDS)  # futures change state in the client's own thread meanwhile
        now = time.monotonic()
        for future, task in list(self.running.items()):
            if future.status == "pending" and now < task.deadline:
                continue
            del self.running[future]
            self._record(future, task)

    def _record(self, future: Future, task: _Task) -> None:
        folder = submission_folder(self.options.results_dir, task.entry)
        folder.mkdir(parents=True, exist_ok=True)
        graded, log = self._returned(future, task)
        with open(folder / GRADE_LOG, "wb") as handle:
            handle.write(log)
        self.done(record_grading(task.entry, task.key, folder, graded, self.options))

    def _returned(self, future: Future, task: _Task) -> tuple[Graded, bytes]:
        from distributed import KilledWorker

        spent = self.bound - (task.deadline - time.monotonic())
        if future.status == "pending":  # past the client's bound
            self.client.cancel([future], force=True)
            why = f"no result came back from the cluster within {self.bound:g} s"
            return Graded(None, None, True, spent, why), b""
        try:
            returned = future.result()
        except KilledWorker:
            why = "the Dask workers grading it were lost too many times (the scheduler's allowed-failures)"
            return Graded(None, None, False, spent, why), b""
        except Exception as error:  # the task raised on its worker, past its retries
            return Graded(None, None, False, spent, f"the Dask task failed: {_one_line(error)}"), b""
        return returned.graded, returned.log


def _workers_text(kits: dict[str, dict | None], matching: dict[str, int]) -> str:
    threads = sum(matching.values())
    layers = sorted({str((kits.get(a) or {}).get("layers", "")).splitlines()[0] for a in matching} - {""})
    text = f"{len(matching)} worker(s) with this kit, {threads} grading(s) at once"
    return text + "".join(f"\n  workers' {line}" for line in layers)


def _kit_text(kit: dict) -> str:
    inventory = str(kit.get("inventory") or "none")[:12]
    return f"version {kit.get('kit_version')}, inventory {inventory}"


def _one_line(error: object) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:300]


def _quiet() -> None:
    """Dask's own log lines (reconnects, a worker lost) stay out of the TA's terminal: outcomes say it."""
    for name in ("distributed", "distributed.client", "distributed.worker", "distributed.scheduler"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
