"""`grader batch`: grade every submission of a roster, in parallel, each by `grader grade` in a child
process of its own (its own sandbox: a crash or a hang costs that submission alone), resumably.

Each submission gets a folder in the results folder: `results.json` (as `grader grade` wrote it, or one
that says why grading failed), `grade.log` (what the child printed, capped) and `batch.json` (how it went,
and the grading key); a regrade keeps every results.json it replaces in the folder's `history/`, under
the time it was written (grader.history: never rotated out), the newest one for the regrade preview. The
key is a hash of the submission's files, the kit's version, the inventory, manifest and reference, and
the options that change a grade (--exercise, --call-timeout): a run skips a submission whose folder holds
a completed grading under the same key, unless forced. A grading that timed out or crashed is tried
again on the next run.

A change of points alone (the manifest's scoring keys, grader.manifest.SCORING_KEYS: the suites, the
reference, the submission and everything else the same, which the run key says) runs nothing: the kept
results.json is scored again from the checks its entries carry (grader.rescore). A dry run
(`BatchOptions.dry_run`) grades what must be graded in a scratch folder, re-scores in memory, and
leaves the results folder as it was.

A grading crashed when its child did not end with a results.json of a grading: killed, an error, or a
results.json that says the grading failed (the test run's report missing, empty or cut short: a full
disk; `grader grade` exits with GRADING_FAILED then). It is never a completed zero: the batch grades it
once more at the end of the run, and a second crash is reported as crashed, without points. A results
folder that cannot be written (results.json, batch.json) is a crash too, with the reason, and the row
is kept.

A child that runs past the wall-clock bound, and every child when the batch is interrupted (Ctrl-C, or
SIGTERM), is stopped: SIGINT to its pytest (which then closes the sandbox), then after a grace period
SIGKILL to its process group and to every process that was below it (a worker has a session of its own).

Where the children run is the batch's engine, a parameter of `run_batch`: this machine's pool
(`grade_here`), or a Dask cluster's workers with `--cluster` (grader.cluster's `on_cluster`, which runs one
child per task with `grade_one` and hands back a `Graded`); deciding what to grade, and recording how each
grading went (`record_grading`), are the same for both. The dependency runs one way: grader.cluster uses
this module, never the reverse.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Protocol

from grader import __version__
from grader.deadlines import proc_stat
from grader.grading import GRADING_FAILED, SUBMISSION_SECONDS, kit_manifest, only_exercises
from grader.history import keep, newest
from grader.inventory import INVENTORY, load_inventory
from grader.isolation import private_copy, remove_tree
from grader.layout import MANIFEST, MODULE_FILE, REFERENCE
from grader.manifest import SCORING_KEYS
from grader.rescore import rescored
from grader.results import unscored_document, write_results
from grader.roster import Entry, content_hash
from grader.sandbox import GRADINGS_AT_ONCE
from grader.scoring import points_text
from grader.untrusted import printable

if TYPE_CHECKING:  # rich is imported only where a progress bar is drawn
    from rich.progress import Progress as RichProgress

GRACE_SECONDS = 3.0  # from SIGINT to SIGKILL
POLL_SECONDS = 0.05
# In each submission's folder:
RESULTS, HISTORY = "results.json", "history"  # history/results.<when written>.json: what a regrade replaced
GRADE_LOG, BATCH_RECORD = "grade.log", "batch.json"
LOG_BYTES = 256 * 1024
GRADER = (sys.executable, "-m", "grader")  # the command that grades one submission (tests replace it)

Status = Literal["completed", "ungraded", "timed out", "crashed", "interrupted"]
COMPLETED: Final = "completed"
UNGRADED: Final = "ungraded"  # no module to grade
TIMED_OUT: Final = "timed out"
CRASHED: Final = "crashed"
INTERRUPTED: Final = "interrupted"  # not graded: the batch was stopped first
KEPT: tuple[Status, ...] = (COMPLETED, UNGRADED)  # outcomes a later run keeps; the others are tried again


@dataclass(frozen=True)
class BatchOptions:
    """How a batch grades."""

    results_dir: Path
    jobs: int = 1
    force: bool = False
    call_timeout: float | None = None
    exercises: tuple[int, ...] = ()
    timeout: float = SUBMISSION_SECONDS
    dry_run: bool = False  # grade in a scratch folder, write nothing into results_dir


@dataclass(frozen=True)
class Outcome:
    """How grading one submission went."""

    entry: Entry
    status: Status
    reason: str  # why, for every status but completed
    document: dict  # its results.json
    seconds: float  # wall-clock time of its child
    skipped: bool = False  # graded by an earlier run
    attempts: int = 1  # gradings this run: 2 where the first crashed
    rescored: bool = False  # scored again from its kept results.json (points changed alone): nothing ran

    @property
    def grading_status(self) -> str:
        """The status as grades.csv writes it: "completed", "crashed: <reason>", ..."""
        if self.status == COMPLETED:
            return self.status
        again = " (graded twice, crashed both times)" if self.status == CRASHED and self.attempts > 1 else ""
        return f"{self.status}: {self.reason}{again}"

    @property
    def failed(self) -> bool:
        return self.status != COMPLETED


@dataclass(frozen=True)
class Graded:
    """How one `grader grade` child ended, wherever it ran: its results.json (None: none readable)."""

    document: dict | None
    returncode: int | None
    timed_out: bool
    seconds: float
    failure: str = ""  # why it failed, where the child's exit cannot tell (its worker was lost, ...)
    worker: str = ""  # the cluster worker that graded it ("": this machine)


class BatchInterrupted(KeyboardInterrupt):
    """A batch stopped by Ctrl-C or SIGTERM: `outcomes` holds one per entry, in order, those it did not
    finish with status "interrupted" (every child stopped, what finished kept on disk)."""

    def __init__(self, outcomes: list[Outcome], why: str = "") -> None:
        super().__init__(why)
        self.outcomes = outcomes

    @property
    def finished(self) -> int:
        return sum(o.status != INTERRUPTED for o in self.outcomes)


Engine = Callable[[Path, list[tuple[Entry, str]], BatchOptions, Callable[[Outcome], None]], None]
"""A way of grading: grade `todo` (entries with their grading keys) with the kit at `root` under
`options`, telling `done` each outcome as `record_grading` recorded it; Ctrl-C stops what runs."""


class Progress(Protocol):
    """Told about a batch as it goes."""

    def start(self, total: int) -> None: ...

    def done(self, outcome: Outcome) -> None: ...

    def stop(self) -> None: ...


def kit_of(root: Path) -> dict:
    """Which kit grades at `root`: its version and the hashes of its inventory, manifest and reference."""
    hashes = {name: _file_hash(root / path) for name, path in _KIT_FILES.items()}
    return {"kit_version": __version__, **hashes}


def kit_identity(root: Path, options: BatchOptions) -> dict:
    """Everything but the submission that a grading key depends on."""
    return {
        **kit_of(root),
        "exercises": sorted(options.exercises),
        "call_timeout": options.call_timeout,
    }


def run_identity(root: Path, options: BatchOptions) -> dict:
    """Everything but the submission that running the suites depends on: the kit identity with the
    manifest read without its scoring keys (points alone change no check's outcome)."""
    return {**kit_identity(root, options), "manifest": _running_manifest_hash(root / MANIFEST)}


def _running_manifest_hash(path: Path) -> str | None:
    """A hash of the manifest without its scoring keys (grader.manifest.SCORING_KEYS) nor its comments."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    exercises = data.get("exercise", [])
    if isinstance(exercises, list):
        data["exercise"] = [
            {k: v for k, v in e.items() if k not in SCORING_KEYS} if isinstance(e, dict) else e
            for e in exercises
        ]
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def grading_key(entry: Entry, kit: dict) -> str:
    """The key a grading of `entry` is kept under: its content hash with the kit's identity."""
    text = json.dumps({"submission": content_hash(entry.path), **kit}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_TAGGED = re.compile(r"-[0-9a-f]{8}(?:[0-9a-f]{8})?$")  # how submission_folder tags a name it changed
FOLDER_NAME_CHARS = 100  # of a submission's name, in its folder's: with the tag, well within NAME_MAX


def submission_folder(results_dir: Path, entry: Entry) -> Path:
    """Where `entry`'s results.json, grade.log and batch.json go: its name, where that is a plain one
    (ASCII letters, digits and ._@+-), else its name made plain and cut, tagged with 16 hex digits of
    its hash; a plain name that ends as a tag does is tagged too, so that no two entries share a folder
    (issue 23: "a b.py" and a file named "a_b.py-5d4acf84" wrote the same folder, and the tag's 8
    digits could be found for any name by brute force)."""
    name = re.sub(r"[^A-Za-z0-9_.@+-]", "_", entry.file).lstrip(".")[:FOLDER_NAME_CHARS] or "submission"
    if name != entry.file or _TAGGED.search(name):
        name += "-" + hashlib.sha256(entry.file.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return results_dir / name


def kept_outcome(entry: Entry, folder: Path, key: str) -> Outcome | None:
    """The outcome an earlier run kept for `entry` under `key`, or None."""
    try:
        record = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8"))
        document = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("key") != key or record.get("status") not in KEPT:
        return None
    reason, seconds = record.get("reason", ""), record.get("seconds", 0.0)
    return Outcome(entry, record["status"], reason, document, seconds, skipped=True)


def run_batch(
    root: Path,
    entries: Sequence[Entry],
    options: BatchOptions,
    progress: Progress | None = None,
    engine: Engine | None = None,
) -> list[Outcome]:
    """Grade `entries` with the kit at `root`, by `engine` (default: this machine's pool, `grade_here`);
    one outcome per entry, in their order. On
    KeyboardInterrupt every child is stopped, what finished is kept on disk, and BatchInterrupted (a
    KeyboardInterrupt) carries the outcomes so far."""
    kit, running = kit_identity(root, options), run_identity(root, options)
    kept: dict[str, Outcome] = {}
    todo: list[tuple[Entry, str]] = []
    run_keys: dict[str, str] = {}
    scoring = _Scoring(root, options)
    for entry in entries:
        key, run_key = grading_key(entry, kit), grading_key(entry, running)
        run_keys[entry.file] = run_key
        folder = submission_folder(options.results_dir, entry)
        earlier = None if options.force else kept_outcome(entry, folder, key)
        if earlier is None and not options.force:
            earlier = _rescore(entry, folder, key, run_key, scoring, options)
        if earlier is not None:
            kept[entry.file] = earlier
        else:
            todo.append((entry, key))
    if progress is not None:
        progress.start(len(todo))
    graded: list[Outcome] = []
    keys = {entry.file: key for entry, key in todo}  # entries not yet graded again
    again: list[tuple[Entry, str]] = []  # crashed once: graded again once the rest is done

    def finished(outcome: Outcome) -> None:
        file = outcome.entry.file
        if outcome.status == CRASHED and file in keys:
            again.append((outcome.entry, keys.pop(file)))
            graded.append(outcome)  # kept as it is should the batch be stopped before the second try
            return
        if file not in keys:
            outcome = dataclasses.replace(outcome, attempts=2)
            if not options.dry_run:
                _record_attempts(submission_folder(options.results_dir, outcome.entry), 2)
        graded.append(outcome)
        if outcome.status in KEPT and not options.dry_run:  # points alone may change: re-scored from it
            _note_record(submission_folder(options.results_dir, outcome.entry), run_key=run_keys[file])
        if progress is not None:
            progress.done(outcome)

    grade = engine if engine is not None else grade_here
    try:
        with _where_graded(options) as here:
            grade(root, todo, here, finished)
            if again:
                grade(root, list(again), here, finished)
    except KeyboardInterrupt as stop:
        done = {**kept, **{o.entry.file: o for o in graded}}
        reason = "the batch was interrupted before it was graded: run grader batch again"
        left = {e.file: Outcome(e, INTERRUPTED, reason, {}, 0.0) for e in entries if e.file not in done}
        raise BatchInterrupted([{**done, **left}[e.file] for e in entries], str(stop)) from None
    finally:
        if progress is not None:
            progress.stop()
    done = {**kept, **{o.entry.file: o for o in graded}}
    return [done[e.file] for e in entries]


@contextlib.contextmanager
def _where_graded(options: BatchOptions) -> Iterator[BatchOptions]:
    """The options the engine grades with: a dry run's gradings go to a scratch folder, removed after."""
    if not options.dry_run:
        yield options
        return
    with tempfile.TemporaryDirectory(prefix="optlab-dry-run-") as scratch:
        yield dataclasses.replace(options, results_dir=Path(scratch))


class _Scoring:
    """The manifest and inventory a re-scoring scores with (read once, when first needed)."""

    def __init__(self, root: Path, options: BatchOptions) -> None:
        self.root, self.options = root, options
        self._read: tuple | None = None

    def read(self) -> tuple:
        if self._read is None:
            manifest, inventory = kit_manifest(self.root), load_inventory(self.root)
            if self.options.exercises:
                manifest, inventory = only_exercises(manifest, inventory, self.options.exercises)
            self._read = (manifest, inventory)
        return self._read


def _rescore(
    entry: Entry, folder: Path, key: str, run_key: str, scoring: _Scoring, options: BatchOptions
) -> Outcome | None:
    """The outcome of `entry` scored again from its kept results.json, where only points changed since
    it was graded (its batch.json's run key is `run_key`): written back (the replaced one kept in its
    history) unless a dry run; None where it must be graded again."""
    try:
        record = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8"))
        document = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("run_key") != run_key or record.get("status") not in KEPT:
        return None
    status, reason = record["status"], record.get("reason", "")
    if status == COMPLETED:
        manifest, inventory = scoring.read()
        again = rescored(document, manifest, inventory)
        if again is None:
            return None
        document = again
    outcome = Outcome(entry, status, reason, document, record.get("seconds", 0.0), rescored=True)
    if options.dry_run:
        return outcome
    try:
        if status == COMPLETED:  # an ungraded one's results.json says the same under any points
            keep(folder / RESULTS, folder / HISTORY, move=True)
            write_results(document, folder / RESULTS)
            now = f"{points_text(document.get('score', 0))} / {points_text(_possible(document))}"
            how = "scored again from its kept results.json (points changed, nothing ran)"
            _log(folder, f"{how}: score {now}, in {folder / RESULTS}")
        _write_json(folder / BATCH_RECORD, {**record, "key": key, "rescored": True})
    except OSError:
        return None  # graded again, and recorded as any grading is
    return outcome


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


# -- the children -----------------------------------------------------------------------------------


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
    job.tree = _descendants(job.process.pid)
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


def _descendants(pid: int) -> tuple[tuple[int, int, int], ...]:
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


# -- outcomes ---------------------------------------------------------------------------------------


def _finish(job: _Job, options: BatchOptions) -> Outcome:
    return record_grading(job.entry, job.key, job.folder, _ended(job), options)


def _ended(job: _Job) -> Graded:
    """How an ended (or stopped) child went; what it left behind is killed, its log capped."""
    seconds = time.monotonic() - job.started
    _kill(job)  # what a stopped child left behind (a worker whose pytest was killed before it closed it)
    _cap_log(job.folder / GRADE_LOG)
    code = job.process.returncode
    # a grading that failed says why in its results.json (which says it is no score): read for the reason
    readable = code in (0, GRADING_FAILED) and not job.timed_out
    document = read_results(job.new_results) if readable else None
    if code == GRADING_FAILED and not (document or {}).get("extra_data", {}).get("grading_failed"):
        document = None
    job.remove_private()
    return Graded(document, code, job.timed_out, seconds)


def record_grading(entry: Entry, key: str, folder: Path, graded: Graded, options: BatchOptions) -> Outcome:
    """Write how grading `entry` went into its folder (results.json, batch.json; its grade.log is there
    already), as a later run reads it back (`kept_outcome`), and return its outcome. The results.json
    of a completed grading that it replaces is kept in the folder's history/, for the regrade preview.
    A folder that cannot be written makes the outcome crashed, with the reason (the row is kept)."""
    status, reason, document = _judged(entry, folder, graded, options)
    record = {"key": key, "status": status, "reason": reason, "seconds": round(graded.seconds, 3)}
    if graded.worker:
        record["worker"] = graded.worker
    try:
        _keep_previous(folder)
        write_results(document, folder / RESULTS)
        _write_json(folder / BATCH_RECORD, {**record, "file": entry.file})
        _log(folder, f"results.json written to {folder / RESULTS} ({status})")
    except OSError as error:
        with contextlib.suppress(OSError):  # no record: a later run grades it again
            (folder / BATCH_RECORD).unlink(missing_ok=True)
        status, reason = CRASHED, f"its results could not be written in {folder}: {error.strerror or error}"
        document = unscored_document(f"Grading {status}: {reason}.", execution_time=graded.seconds)
    return Outcome(entry, status, reason, document, graded.seconds)


def _judged(entry: Entry, folder: Path, graded: Graded, options: BatchOptions) -> tuple[Status, str, dict]:
    """The status of a grading, why (but for completed), and the results.json to keep."""
    document = graded.document
    failed = (document or {}).get("extra_data", {}).get("grading_failed")
    if document is not None and not failed:
        ungraded = document.get("extra_data", {}).get("ungraded")
        return (UNGRADED, ta_reason(entry, document), document) if ungraded else (COMPLETED, "", document)
    status: Status
    if graded.timed_out:
        status = TIMED_OUT
        reason = graded.failure or f"grading took longer than {options.timeout:g} s and was stopped"
    else:
        status = CRASHED
        reason = (
            f"the grading failed: {failed}"
            if failed
            else graded.failure or _crash_reason(graded.returncode, folder / GRADE_LOG)
        )
    return status, reason, unscored_document(f"Grading {status}: {reason}.", execution_time=graded.seconds)


def _keep_previous(folder: Path) -> None:
    """The results.json about to be replaced, kept in the folder's history where it holds a completed (or
    ungraded) grading; a failed one is simply replaced, keeping the last real one for the preview."""
    try:
        status = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    (folder / BATCH_RECORD).unlink(missing_ok=True)  # until the new one is written: no stale record
    if status in KEPT:
        keep(folder / RESULTS, folder / HISTORY, move=True)


def previous_results(folder: Path) -> Path | None:
    """The results.json a regrade in `folder` replaced last (the newest in its history), or None."""
    return newest(folder / HISTORY, Path(RESULTS).stem, Path(RESULTS).suffix)


def _possible(document: dict) -> float:
    return float(document.get("extra_data", {}).get("points_possible") or 0)


def _log(folder: Path, line: str) -> None:
    """A line of the batch's own at the end of grade.log, so the log ends on what is true now (the
    grading's last line names its private copy, removed since; a rescore changes the score)."""
    with contextlib.suppress(OSError), open(folder / GRADE_LOG, "a", encoding="utf-8") as log:
        log.write(f"grader batch: {line}\n")


def _record_attempts(folder: Path, attempts: int) -> None:
    """Note in batch.json how many gradings this run made (best effort: it changes no status)."""
    _note_record(folder, attempts=attempts)


def _note_record(folder: Path, **notes: object) -> None:
    """Add `notes` to batch.json (best effort: a record without them is graded again, never misread)."""
    with contextlib.suppress(OSError, ValueError):
        record = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8"))
        _write_json(folder / BATCH_RECORD, {**record, **notes})


def ta_reason(entry: Entry, document: dict) -> str:
    """Why a submission could not be graded, told to the TA: which files it holds and what to rename,
    from the data its results.json carries (the student's own message otherwise)."""
    extra = document.get("extra_data", {})
    kind, files = extra.get("ungraded_kind"), extra.get("ungraded_files") or []
    listed = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
    rerun = "then run grader batch again"
    if kind == "several modules":
        return (f"{entry.file} holds several .py files that could be the module ({listed}): rename the one "
                f"to grade to {MODULE_FILE} (or remove the others), {rerun}")  # fmt: skip
    if kind == "no module":
        return f"{entry.file} holds no .py file that could be the module ({listed}): {rerun} once it does"
    return str(extra.get("ungraded", ""))


def read_results(path: Path) -> dict | None:
    """A results.json document at `path`, or None where there is none (missing, not JSON, no score)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and "score" in document else None


def _crash_reason(code: int | None, log: Path) -> str:
    if code is not None and code < 0:
        how = f"the grader was killed by {signal.Signals(-code).name}"
    elif code == 0:
        how = "the grader wrote no readable results.json"
    elif code == 120:  # Python's exit when it cannot flush its output at exit
        how = "the grader could not write its output (grade.log: is the disk full?)"
    else:
        how = f"the grader exited with code {code}"
    last = _last_line(log)
    return f"{how} ({last})" if last else how


def _last_line(log: Path) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""  # shown escaped wherever it is shown (grader.untrusted.printable)


def _cap_log(log: Path) -> None:
    """Keep the first LOG_BYTES of a child's output."""
    try:
        if log.stat().st_size > LOG_BYTES:
            with open(log, "r+b") as handle:
                handle.truncate(LOG_BYTES)
                handle.seek(0, os.SEEK_END)
                handle.write(b"\n... (cut)\n")
    except OSError:
        pass


def _write_json(path: Path, data: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, path)


_KIT_FILES = {"inventory": INVENTORY, "manifest": MANIFEST, "reference": REFERENCE}


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


# -- the progress bar -------------------------------------------------------------------------------


class BarProgress:
    """A rich progress bar on stderr (done, failed, time left); on a non-terminal, one line each."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.failed = 0
        self.count = 0
        self.total = 0
        self._bar: RichProgress | None = None

    def start(self, total: int) -> None:
        self.total = total
        if not self.console.is_terminal or total == 0:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._task = self._bar.add_task("grading", total=total, failed=0)
        self._bar.start()

    def done(self, outcome: Outcome) -> None:
        self.count += 1
        self.failed += outcome.failed
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
        else:
            score = points_text(outcome.document.get("score", 0)) if outcome.status != CRASHED else "no score"
            line = f"[{self.count}/{self.total}] {outcome.entry.file}: {score} ({outcome.grading_status})"
            print(printable(line, lines=False), file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
