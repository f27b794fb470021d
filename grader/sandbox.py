"""The sandbox: the grader's end of a worker process, the only place where submitted code runs.

The worker is a fresh interpreter started with no site-packages, no user site and no script folder on
its path (so a submitted conftest.py, sitecustomize.py, hypothesis.py or pytest.py never loads), a fixed
hash seed and a clean environment, in its own session, inside a scratch folder that holds only a copy of
the module and the worker's own few files. Before it runs anything it gets resource limits (address
space, CPU time, no new processes, file size, open files) and, when the grader is root, another user and
a network namespace of its own with no way out. Its audit hook (grader.audit) adds Python-level refusals.

Each call has a deadline: past it the worker's whole process group is killed and the next call starts a
fresh worker. The worker cannot start a process or thread of its own (RLIMIT_NPROC is 0, enforced by the
kernel for every user but root, and the worker is never root), so killing it leaves nothing behind;
closing the sandbox removes its scratch folder and, as root, what the dedicated worker user left in
the shared temporary folders.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.codec import CodecError, dumps, loads
from grader.errors import KitError
from grader.layout import MODULE_FILE, WORKER_RUNTIME

try:
    import pwd
    import resource
except ImportError:  # not POSIX (Windows): no sandbox; a student's own run calls in-process
    pwd = resource = None
SANDBOX_AVAILABLE = resource is not None

WORKER_USERS = ("optlab-worker", "nobody")
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
SECRET_PATHS = ("tests", "solutions", "grader/exercises.toml")  # of a kit tree: never for the worker's eyes
# The interpreter itself, not a venv's link to it: the worker must not need to pass through the kit's folder.
_INTERPRETER = os.path.realpath(sys.executable)
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); import json; from grader.worker import serve; "
    "serve(json.loads(sys.argv[2]))"
)


@dataclass(frozen=True)
class Limits:
    """Bounds on one worker. Seconds are wall-clock unless named cpu."""

    call_seconds: float = 3.0  # CPU time of the worker per call (a loaded machine does not count)
    import_seconds: float = 10.0  # CPU time of the worker to import the module
    wall_factor: float = 4.0  # and at most this many times those budgets in wall-clock time
    run_seconds: float = 300.0  # all calls of one sandbox together
    memory_bytes: int = 1 << 30
    cpu_seconds: int = 300
    file_bytes: int = 16 << 20
    open_files: int = 64
    output_bytes: int = 1 << 20  # what is kept of the worker's stdout+stderr
    message_bytes: int = 64 << 20


class Sandbox:
    """Runs calls in a worker process for one submission module.

    `serve_request` answers the requests the worker sends during a call (the reference's answers,
    callbacks). `send` is the Link the Student calls through.
    """

    def __init__(
        self,
        module_source: str,
        exercise_of: dict[str, int],
        isolate: bool,
        serve_request: Callable[[dict], dict],
        limits: Limits | None = None,
        broken: dict[str, str] | None = None,
    ):
        self.limits = limits or Limits()
        self.serve_request = serve_request
        self.user = _worker_user()
        if self.user is not None:
            _check_reachable(Path(tempfile.gettempdir()))
        self.home = Path(tempfile.mkdtemp(prefix="optlab-sandbox-"))
        self.work = self.home / "work"
        self.runtime = self.home / "runtime"
        self._prepare(module_source)
        self._config = {
            "module": str(self.work / MODULE_FILE),
            "scratch": str(self.work),
            "read_roots": _read_roots(self.runtime),
            "exercise_of": exercise_of,
            "isolate": isolate,
            "broken": broken or {},
        }
        self._process: subprocess.Popen | None = None
        self._start_failure: dict | None = None  # a module that did not import once is not tried again
        self._spent = 0.0
        self.restarts = 0
        self.log: list[str] = []

    # -- the Link -------------------------------------------------------------------------------------

    def send(self, message: dict) -> dict:
        """Deliver one call, serve the worker's requests until it answers; enforce the deadline."""
        if self._spent >= self.limits.run_seconds:
            return _timeout_answer(f"the grading time limit ({self.limits.run_seconds:.0f} s) was reached")
        started = time.monotonic()
        try:
            if self._process is None and (failure := self._start_failure or self._start()) is not None:
                self._start_failure = failure
                return failure
            deadline = self._deadline(self.limits.call_seconds)
            self._post(message)
            while True:
                answer = self._receive(deadline)
                if answer is None:
                    name, why = message.get("function", "the call"), deadline.overrun()
                    self._kill(f"{name} timed out")
                    return _timeout_answer(f"{name}() did not return: {why}")
                if answer.get("op") in ("return", "raise"):
                    return answer
                self._post(self.serve_request(answer))
        except _WorkerDied as died:
            self._kill(str(died))
            return {"op": "raise", "type": "SubmissionError", "message": str(died), "where": ""}
        finally:
            self._spent += time.monotonic() - started

    def close(self) -> None:
        """Kill everything the submission started and remove what it wrote."""
        self._kill("closing")
        if os.geteuid() == 0 and self.user is not None and self.user.pw_name != "nobody":
            _sweep_files(self.user.pw_uid)
        shutil.rmtree(self.home, ignore_errors=True)

    def output(self) -> str:
        """What the worker printed (capped), for the instructor's log."""
        path = self.home / "output.txt"
        try:
            with open(path, "rb") as handle:
                return handle.read(self.limits.output_bytes).decode("utf-8", "replace")
        except OSError:
            return ""

    # -- the worker process ---------------------------------------------------------------------------

    def _prepare(self, module_source: str) -> None:
        self.work.mkdir()
        self.runtime.mkdir()
        (self.runtime / "grader").mkdir()
        here = Path(__file__).parent
        for name in WORKER_RUNTIME:
            source = "" if name == "__init__" else (here / f"{name}.py").read_text(encoding="utf-8")
            (self.runtime / "grader" / f"{name}.py").write_text(source, encoding="utf-8")
        (self.work / MODULE_FILE).write_text(module_source, encoding="utf-8")
        os.chmod(self.home, 0o711)
        if self.user is not None:
            for path in (self.work, self.work / MODULE_FILE):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
            os.chmod(self.work, 0o700)

    def _start(self) -> dict | None:
        to_worker, from_grader = os.pipe()
        from_worker, to_grader = os.pipe()
        config = dict(self._config, read_fd=to_worker, write_fd=to_grader)
        output = open(self.home / "output.txt", "ab")
        try:
            self._process = subprocess.Popen(
                [_INTERPRETER, "-P", "-s", "-S", "-c", _BOOT, str(self.runtime), json.dumps(config)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(to_worker, to_grader),
                cwd=self.work,
                env=_worker_environment(self.work),
                start_new_session=True,
                preexec_fn=_Confine(self.limits, self.user),
            )
        except (OSError, subprocess.SubprocessError) as error:  # the machine's fault, not the submission's
            os.close(from_worker)
            os.close(from_grader)
            raise SandboxError(f"the worker process could not be started and confined: {error}") from None
        finally:
            os.close(to_worker)
            os.close(to_grader)
            output.close()
        self._reader = os.fdopen(from_worker, "rb", buffering=0)
        self._writer = os.fdopen(from_grader, "wb", buffering=0)
        self._selector = selectors.DefaultSelector()  # one per worker: most calls take well under 1 ms
        self._selector.register(self._reader, selectors.EVENT_READ)
        self._buffer = b""
        self.restarts += 1
        deadline = self._deadline(self.limits.import_seconds)
        try:
            ready = self._receive(deadline)
        except _WorkerDied as died:
            self._kill("died at start")
            return {
                "op": "raise",
                "type": "SubmissionError",
                "message": f"while importing the module: {died}",
                "where": "",
            }
        if ready is None:
            why = deadline.overrun()
            self._kill("import timed out")
            return _timeout_answer(f"the module did not finish importing: {why}")
        if ready.get("op") != "ready":
            self._kill("bad hello")
            return {
                "op": "raise",
                "type": "SubmissionError",
                "message": "the worker did not start",
                "where": "",
            }
        return None

    def _post(self, message: dict) -> None:
        try:
            self._writer.write(dumps(message).encode("utf-8") + b"\n")
        except (BrokenPipeError, OSError):
            raise _WorkerDied(self._death_reason()) from None

    def _deadline(self, cpu_seconds: float) -> _Deadline:
        wall = min(cpu_seconds * self.limits.wall_factor, self.limits.run_seconds - self._spent)
        return _Deadline(self._process.pid if self._process else None, cpu_seconds, wall)

    def _receive(self, deadline: _Deadline) -> dict | None:
        """The next message, or None once the deadline has passed."""
        while b"\n" not in self._buffer:
            if deadline.passed():
                return None
            if not self._selector.select(deadline.poll_seconds()):
                continue
            chunk = os.read(self._reader.fileno(), 1 << 20)
            if not chunk:
                raise _WorkerDied(self._death_reason())
            self._buffer += chunk
            if len(self._buffer) > self.limits.message_bytes:
                raise _WorkerDied("the answer was larger than the grader accepts")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = loads(line.decode("utf-8", "replace"))
        except CodecError:
            raise _WorkerDied("the worker sent something that is not a message") from None
        if type(message) is not dict:
            raise _WorkerDied("the worker sent something that is not a message")
        return message

    def _death_reason(self) -> str:
        try:
            code = self._process.wait(timeout=2) if self._process is not None else None
        except subprocess.TimeoutExpired:
            return "the submission's process stopped answering (it closed the grader's pipe)"
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            hint = {
                "SIGKILL": " (out of memory or time?)",
                "SIGXCPU": " (CPU time limit)",
                "SIGXFSZ": " (file too large)",
            }
            return f"the submission's process was killed by {name}{hint.get(name, '')}"
        return f"the submission's process ended (exit code {code}) during the call"

    def _kill(self, why: str) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        self.log.append(why)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for handle in (self._selector, self._reader, self._writer):
            try:
                handle.close()
            except OSError:
                pass


class _Deadline:
    """A call's deadline: the worker's own CPU time (so a loaded machine does not fail honest code),
    bounded by a wall-clock limit (for code that sleeps or blocks instead of computing)."""

    POLL = 0.05  # how often the CPU time is read; most calls end before the first reading

    def __init__(self, pid: int | None, cpu_seconds: float, wall_seconds: float):
        self.pid, self.cpu_seconds, self.wall_seconds = pid, cpu_seconds, wall_seconds
        self.started = time.monotonic()
        self.wall_end = self.started + wall_seconds
        self.next_reading = self.started + self.POLL
        self.cpu_start: float | None = None

    def passed(self) -> bool:
        now = time.monotonic()
        if now >= self.wall_end:
            return True
        if now < self.next_reading:
            return False
        self.next_reading = now + self.POLL
        return self.cpu_used() >= self.cpu_seconds

    def cpu_used(self) -> float:
        """The worker's CPU time since the call began; until the first reading, all the time that passed
        counts as CPU time (an upper bound, so the budget is never exceeded unnoticed)."""
        now = _cpu_time(self.pid)
        if self.cpu_start is None:
            self.cpu_start = now - (time.monotonic() - self.started)
        return now - self.cpu_start

    def poll_seconds(self) -> float:
        return max(0.0, min(self.POLL, self.wall_end - time.monotonic()))

    def overrun(self) -> str:
        if self.cpu_used() >= self.cpu_seconds:
            return f"it used {self.cpu_seconds:g} s of CPU time (an endless loop?)"
        return f"it was still running after {self.wall_seconds:g} s"


def _cpu_time(pid: int | None) -> float:
    """User + system CPU seconds of process `pid` so far (0 where it cannot be read)."""
    if pid is None:
        return 0.0
    try:
        fields = open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _WorkerDied(Exception):
    """The worker ended, or broke the protocol, during a call."""


class _Confine:
    """What the worker process does to itself between fork and exec (runs in the child)."""

    def __init__(self, limits: Limits, user: pwd.struct_passwd | None):
        self.limits, self.user = limits, user
        self.unshare = _unshare_function() if user is not None else None
        self.die_with_parent = _parent_death_function()

    def __call__(self) -> None:
        if self.unshare is not None:
            try:
                self.unshare()  # a network namespace of its own: only a loopback that is down
            except OSError:  # a container without CAP_SYS_ADMIN (Docker, Gradescope)
                pass  # there, the audit hook alone refuses sockets
        limits = self.limits
        for which, value in (
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_CPU, limits.cpu_seconds),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_CORE, 0),
        ):
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                if self.user is not None:  # grading as root: every limit holds, or no worker runs
                    raise
                # a student's own machine (macOS refuses RLIMIT_AS): the call deadlines still hold
        if self.user is not None:
            os.setgroups([])
            os.setgid(self.user.pw_gid)
            os.setuid(self.user.pw_uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no new process or thread, ever
        if self.die_with_parent is not None:
            self.die_with_parent()  # after setuid, which clears it: a killed grader takes its worker along


def _unshare_function() -> Callable[[], None] | None:
    """unshare(CLONE_NEWNET), prepared in the parent (no imports in the child); None if unavailable."""
    clone_newnet = 0x40000000
    if hasattr(os, "unshare"):
        return lambda: os.unshare(clone_newnet)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        unshare = libc.unshare
    except (OSError, AttributeError):
        return None

    def call() -> None:
        if unshare(clone_newnet) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET) failed")

    return call


class SandboxError(KitError):
    """The sandbox cannot be set up on this machine (not a problem of the submission)."""


def _check_reachable(folder: Path) -> None:
    """As root: the worker user must be able to pass through every folder above its scratch folder."""
    for step in (folder, *folder.parents):
        if not os.stat(step).st_mode & stat.S_IXOTH:
            raise SandboxError(
                f"the worker user cannot reach {folder}: {step} is closed to others "
                "(point TMPDIR at a folder others may pass through, such as /tmp)"
            )


def protect_kit(root: Path) -> None:
    """As root: take every permission of others away from the kit's tests, solutions and manifest.

    The worker runs as another user; the operating system, not only the audit hook, must keep it out.
    """
    for name in SECRET_PATHS:
        path = root / name
        if path.exists():
            os.chmod(path, os.stat(path).st_mode & ~0o007)


def _parent_death_function() -> Callable[[], None] | None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL), prepared in the parent; None where there is no prctl (not Linux)."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def _worker_user() -> pwd.struct_passwd | None:
    """The unprivileged user the worker runs as, when the grader is root; None otherwise."""
    if os.geteuid() != 0:
        return None
    for name in WORKER_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("the grader runs as root but there is no unprivileged user (optlab-worker or nobody)")


def _worker_environment(work: Path) -> dict[str, str]:
    return {
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "LC_ALL": "C.UTF-8",
    }


def _read_roots(runtime: Path) -> list[str]:
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], str(runtime), "/dev/null", "/dev/urandom"}
    roots |= {p for p in sys.path if p.endswith((".zip", "lib-dynload"))}
    return sorted(roots)


def _sweep_files(uid: int) -> None:
    """Remove what the worker user left in the shared temporary folders."""
    for top in SHARED_TMP:
        if not os.path.isdir(top):
            continue
        for entry in os.scandir(top):
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _timeout_answer(message: str) -> dict:
    return {"op": "raise", "type": "SubmissionError", "message": message, "where": "", "timed_out": True}
