"""This machine's pool: `grader grade` children, `jobs` at a time, each of one submission.

Each child runs in a process group of its own, with its wall-clock bound; it is stopped with SIGINT, then
SIGKILL to the group and to every process that was below it. SIGTERM stops the batch as Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.batch.folders import (
    cap_log,
    read_results,
    record_grading,
    submission_folder,
)
from grader.batch.outcomes import (
    GRACE_SECONDS,
    GRADE_LOG,
    POLL_SECONDS,
    BatchOptions,
    Graded,
    Outcome,
)
from grader.batch.roster import Entry
from grader.grading.grade import GRADING_FAILED
from grader.grading.intake import private_copy
from grader.sandbox.deadlines import proc_stat
from grader.sandbox.isolation import remove_tree
from grader.sandbox.sandbox import GRADINGS_AT_ONCE

GRADER = (sys.executable, "-m", "grader")  # the command that grades one submission (tests replace it)


def grade_here(
    root: Path, todo: list[tuple[Entry, str]], options: BatchOptions, done: Callable[[Outcome], None]
) -> None:
    """The engine of this machine: `options.jobs` children at once, each `grader grade` of one entry."""
    _grade_all(root, todo, options, done)


def grade_command(root: Path, submission: Path, out: Path, options: BatchOptions) -> list[str]:
    """The child's command: `grader grade` of one submission into `out`."""
    paths = [str(p.resolve()) for p in (root, submission, out)]
    command = [*GRADER, "--root", paths[0], "grade", paths[1], "-o", paths[2]]
    for exercise in options.exercises:
        command += ["--exercise", str(exercise)]
    if options.call_timeout is not None:
        command += ["--call-timeout", str(options.call_timeout)]
    return command


@dataclass
class _Job:
    entry: Entry
    key: str
    folder: Path
    process: subprocess.Popen
    started: float
    deadline: float
    private: Path  # the child's own folder (only this user may open it): its copy of the submission
    stopping: float | None = None  # when SIGINT was sent
    timed_out: bool = False
    tree: tuple[tuple[int, int, int], ...] = ()  # the processes below it when it was stopped

    @property
    def new_results(self) -> Path:
        return self.private / "results.new.json"

    def remove_private(self) -> None:
        remove_tree(self.private)


def _grade_all(
    root: Path, todo: list[tuple[Entry, str]], options: BatchOptions, done: Callable[[Outcome], None]
) -> list[Outcome]:
    waiting = deque(todo)
    running: list[_Job] = []
    outcomes: list[Outcome] = []
    with stoppable():
        try:
            while waiting or running:
                while waiting and len(running) < options.jobs:
                    entry, key = waiting.popleft()
                    try:
                        running.append(_start(root, entry, key, options))
                    except OSError as error:  # its folder or grade.log cannot be made (a full disk)
                        outcome = _unstarted(entry, key, error, options)
                        outcomes.append(outcome)
                        done(outcome)
                for job in [j for j in running if _tend(j, options)]:
                    running.remove(job)
                    outcome = _finish(job, options)
                    outcomes.append(outcome)
                    done(outcome)
                time.sleep(POLL_SECONDS)
        finally:
            _stop_all(running)
    return outcomes


def _unstarted(entry: Entry, key: str, error: OSError, options: BatchOptions) -> Outcome:
    """The outcome of a grading whose child could not be started: crashed, and why."""
    where = f"{error.filename}: " if error.filename else ""
    why = f"its grading could not be started: {where}{error.strerror or error}"
    graded = Graded(None, None, False, 0.0, failure=why)
    return record_grading(entry, key, submission_folder(options.results_dir, entry), graded, options)


def grade_one(
    root: Path, entry: Entry, options: BatchOptions, cancelled: Callable[[], bool]
) -> tuple[Graded, bytes]:
    """Grade `entry` by one child, as the pool does, in its folder under `options.results_dir`; stopped
    (as a hang is) as soon as `cancelled()` says so. How it ended, and what it printed (capped)."""
    job = _start(root, entry, "", options)
    checked = time.monotonic()
    try:
        while not _tend(job, options):
            time.sleep(POLL_SECONDS)
            if time.monotonic() - checked > 1.0:  # cancelled() may ask another process
                checked = time.monotonic()
                if cancelled():
                    break
    finally:
        _stop([job])
    graded = _ended(job)
    return graded, (job.folder / GRADE_LOG).read_bytes()


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """While grading, SIGTERM stops the batch as Ctrl-C does, and SIGINT does even where it was ignored
    (`nohup grader batch ... &`): no child outlives the batch, and children start with both at their
    defaults, so that their pytest can be interrupted."""
    stops = (signal.SIGINT, signal.SIGTERM)
    try:
        previous = {which: signal.signal(which, _interrupted) for which in stops}
    except ValueError:  # not the main thread: signals stay as they are
        yield
        return
    try:
        yield
    finally:
        for which, handler in previous.items():
            signal.signal(which, handler)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _start(root: Path, entry: Entry, key: str, options: BatchOptions) -> _Job:
    """Start the child that grades `entry`. It is handed a private copy of the submission and writes its
    results.json beside it: its command line (which /proc shows every user, where no hidepid hides it)
    names nothing a worker uid could read, neither the batch's source nor the results folder."""
    folder = submission_folder(options.results_dir, entry)
    folder.mkdir(parents=True, exist_ok=True)
    copy = private_copy(entry.path)
    try:
        with open(folder / GRADE_LOG, "wb") as log:
            process = subprocess.Popen(
                grade_command(root, copy, copy.parent / "results.new.json", options),
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed as one, and no terminal's Ctrl-C
                env=dict(os.environ, **{GRADINGS_AT_ONCE: str(options.jobs)}),
            )
    except BaseException:
        remove_tree(copy.parent)
        raise
    now = time.monotonic()
    return _Job(entry, key, folder, process, now, now + options.timeout, copy.parent)


def _tend(job: _Job, options: BatchOptions) -> bool:
    """Whether `job` has ended; past its deadline it is stopped (SIGINT, then SIGKILL)."""
    if job.process.poll() is not None:
        return True
    now = time.monotonic()
    if job.stopping is None and now > job.deadline:
        job.timed_out = True
        _interrupt(job)
    elif job.stopping is not None and now > job.stopping + GRACE_SECONDS:
        _kill(job)
    return False


def _stop_all(running: list[_Job]) -> None:
    """Stop every child (a second Ctrl-C meanwhile is ignored), and wait for them."""
    if not running:
        return
    previous = {which: signal.signal(which, signal.SIG_IGN) for which in (signal.SIGINT, signal.SIGTERM)}
    try:
        _stop(running)
        for job in running:
            job.remove_private()
    finally:
        for which, handler in previous.items():
            signal.signal(which, handler)


def _stop(jobs: list[_Job]) -> None:
    """Stop the children still running (SIGINT, then SIGKILL after the grace period), and wait for them."""
    running = [j for j in jobs if j.process.poll() is None]
    for job in running:
        _interrupt(job)
    deadline = time.monotonic() + GRACE_SECONDS
    while any(j.process.poll() is None for j in running) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    for job in running:
        _kill(job)
        job.process.wait()


def _interrupt(job: _Job) -> None:
    """SIGINT to the child's test run (its pytest then closes the sandbox and kills the worker), or to the
    child itself when it has none; every process below the child is remembered, to be killed later: a
    worker runs in a session of its own, outside the child's process group."""
    job.stopping = time.monotonic()
    job.tree = processes_below(job.process.pid)
    children = [pid for pid, parent, _ in job.tree if parent == job.process.pid]
    for pid in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGINT)
    if not children:
        _signal(job, signal.SIGINT)


def _kill(job: _Job) -> None:
    """SIGKILL to the child's process group and to every process that was below it."""
    _signal(job, signal.SIGKILL)
    for pid, _, started in job.tree:
        if _start_time(pid) == started:  # the same process, not a new one with its id
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _signal(job: _Job, which: signal.Signals) -> None:
    """Signal the child's process group, while the child is unreaped (so its id is not reused)."""
    if job.process.returncode is not None:
        return
    try:
        os.killpg(job.process.pid, which)
    except (ProcessLookupError, PermissionError):
        pass


def processes_below(pid: int) -> tuple[tuple[int, int, int], ...]:
    """(pid, parent pid, start time) of every process below `pid`, from /proc."""
    below: dict[int, list[tuple[int, int, int]]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = proc_stat(int(entry.name))
        if fields is not None:
            parent = int(fields[1])
            below.setdefault(parent, []).append((int(entry.name), parent, int(fields[19])))
    found, todo = [], [pid]
    while todo:
        for process in below.get(todo.pop(), []):
            found.append(process)
            todo.append(process[0])
    return tuple(found)


def _start_time(pid: int) -> int | None:
    fields = proc_stat(pid)
    return int(fields[19]) if fields is not None else None


def _finish(job: _Job, options: BatchOptions) -> Outcome:
    return record_grading(job.entry, job.key, job.folder, _ended(job), options)


def _ended(job: _Job) -> Graded:
    """How an ended (or stopped) child went; what it left behind is killed, its log capped."""
    seconds = time.monotonic() - job.started
    _kill(job)  # what a stopped child left behind (a worker whose pytest was killed before it closed it)
    cap_log(job.folder / GRADE_LOG)
    code = job.process.returncode
    # a grading that failed says why in its results.json (which says it is no score): read for the reason
    readable = code in (0, GRADING_FAILED) and not job.timed_out
    document = read_results(job.new_results) if readable else None
    if code == GRADING_FAILED and not (document or {}).get("extra_data", {}).get("grading_failed"):
        document = None
    job.remove_private()
    return Graded(document, code, job.timed_out, seconds)
