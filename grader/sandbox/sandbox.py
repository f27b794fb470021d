"""The sandbox: the grader's end of a worker process, the only place where submitted code runs.

The worker is a fresh interpreter started with no site-packages, no user site and no script folder on its
path (so a submitted conftest.py, sitecustomize.py, hypothesis.py or pytest.py never loads), a fixed hash
seed and a clean environment, in its own session, inside a scratch folder that holds only a copy of the
module and the worker's runtime. The operating system confines it, with every layer this machine has
(grader.sandbox.isolation; the worker applies them to itself between fork and exec,
grader.sandbox.confinement): as root, a uid of its own (leased for the sandbox's life; no other worker shares
it) and network and IPC namespaces of its own; where the machine allows mounts, a scratch tmpfs of the disk
quota and a view of the filesystem of its own (grader.sandbox.mounts: read-only but its scratch, which is also
its /tmp, /dev/shm and the like; /proc showing only its own processes); Landlock (reading only the
interpreter, its stdlib and the runtime, writing only its scratch folder, no TCP, signals and abstract sockets
scoped to itself); rlimits (address space, data, CPU, no process or thread, file size, open files); as root
where the machine allows it, a memory cgroup of its own, which also counts memfd, shared memory and tmpfs
pages; a seccomp filter (no socket of any family, no memfd, SysV or POSIX IPC, io_uring, ptrace or namespace);
the parent-death signal. Its disk use is watched by the grader (a statvfs of the tmpfs, or a walk) while it
waits for the worker and at each answer: past its quota the worker is ended, and the next starts on an empty
disk. The audit hook (grader.runtime.audit) is a tripwire inside the worker, not a boundary.

Each call has a deadline (grader.sandbox.deadlines), each exercise a budget in this sandbox, and the sandbox
one for all it costs, all in CPU time (the workers' own from their start, the reference worker's on their
behalf, the grader's work for their calls), each bounded in wall-clock time only as a backstop for code
that sleeps: past one, the worker's process group is killed and the next call starts a fresh worker; each
worker's RLIMIT_CPU is what is left of the sandbox's budget (`cpu_spent`, `cpu_left`). The deadline fires
whatever the grader is doing for the call: reading queued messages (it is checked before each one),
writing (every write is non-blocking, and waits only until the deadline), or serving the worker's
requests; the worker's CPU time is read from its own CPU clock at every answer that comes after its budget
in wall time too, so an answer that comes after the bound is refused however busy the grader was. What a
call may ask of the grader is bounded as well: at most `Limits.callbacks` requests, of at most
`Limits.callback_bytes` in all. When grading, a second worker runs the reference
(grader.sandbox.reference_worker) and answers the first one's reference requests directly, along the call
graph of the open call. Closing the sandbox kills what is left of its uid and removes what that uid wrote
anywhere it could write.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from grader.layout import MODULE, MODULE_FILE
from grader.runtime.protocol import IMPORT_TIMED_OUT, SPIN_SECONDS, failure_answer
from grader.sandbox import cgroup, isolation, landlock
from grader.sandbox.confinement import SANDBOX_AVAILABLE, Confine
from grader.sandbox.deadlines import CPU_READABLE, Deadline, cpu_time
from grader.sandbox.limits import Limits
from grader.sandbox.scratch import SandboxError, Scratch
from grader.sandbox.worker_pipe import WorkerDied, WorkerPipe

# What a student's own run lacks where there is no sandbox (a worker is then a plain process)
NO_SANDBOX = (
    "no sandbox on this system (no POSIX rlimits): your module runs in a process of its own, with the "
    "time limits, but without memory or disk limits or any isolation from your files"
)


GRADINGS_AT_ONCE = "OPTLAB_GRADINGS_AT_ONCE"  # set by a batch for its children: how many run side by side


def poll_seconds() -> float:
    """How long each side of a pipe polls for the other's message before it sleeps (protocol.SPIN_SECONDS):
    only where this grading has two CPUs to itself (those it may run on, within its cgroup's quota,
    shared among the gradings a batch runs at once). Polling pays only with a CPU to spare; on a full
    machine it takes the CPU the other processes need (a batch at -j 2 on 2 CPUs: 23.5 submissions a
    minute without it, 18 with it)."""
    try:
        gradings = max(1, int(os.environ.get(GRADINGS_AT_ONCE, "1")))
    except ValueError:
        gradings = 1
    return SPIN_SECONDS if usable_cpus() / gradings >= 2 else 0.0


def usable_cpus(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> float:
    """The CPUs this process may use: its affinity, bounded by its cgroup's CPU quota (`cpu_max`, cgroup
    v2: "QUOTA PERIOD" in microseconds, or "max PERIOD") where one is set."""
    cpus = float(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, int(quota) / int(period))
    except (OSError, ValueError):
        pass
    return cpus


# The interpreter itself, not a venv's link to it: the worker must not need to pass through the kit's folder.
_INTERPRETER = os.path.realpath(sys.executable)
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); import json; from grader.runtime.worker import serve; "
    "serve(json.loads(sys.argv[2]))"
)


class Reference(Protocol):
    """What a sandbox asks of the reference's worker that answers its worker (reference_worker.py)."""

    cpu_left: Callable[[], float] | None

    def pair(self) -> tuple[int, int]: ...
    def spawn(self) -> None: ...
    def open_call(self, function: str) -> dict | None: ...
    def close_call(self) -> None: ...
    def ended(self) -> bool: ...
    def cpu_spent(self) -> float: ...
    def end(self) -> None: ...
    def close(self) -> None: ...


class Sandbox:
    """Runs calls in a worker process for one submission module.

    `serve_request` answers the requests the worker sends during a call (callbacks); `reference`, where
    given, answers its reference requests directly. `send` is the Link the Student calls through.
    """

    def __init__(
        self,
        module_source: str,
        exercise_of: dict[str, int],
        isolate: bool,
        serve_request: Callable[[dict], dict],
        limits: Limits | None = None,
        broken: dict[str, str] | None = None,
        reference: Reference | None = None,
    ):
        self.limits = limits or Limits()
        self.serve_request = serve_request
        self.reference = reference  # answers this worker's reference requests, from a process of its own
        if reference is not None:
            reference.cpu_left = self.cpu_left  # its workers' RLIMIT_CPU: what is left of this budget
        self.exercise_of = exercise_of
        self.layers = isolation.machine_layers()
        # no sandbox here (Windows): a plain worker process, over its stdin and stdout, read by a thread
        self._plain = not SANDBOX_AVAILABLE
        self.scratch = Scratch(module_source, self.layers, self.limits, self._plain)
        self.home, self.work, self.runtime = self.scratch.home, self.scratch.work, self.scratch.runtime
        # built once the scratch tmpfs (if any) is mounted: its write rule is the tmpfs's own root
        self._ruleset = landlock.worker_ruleset(self.work, self.runtime) if self.layers.landlock else None
        self._memory = self._memory_limit()
        self._oom_kills = 0  # the cgroup's OOM kills when the running worker started
        self._quota = self.scratch.quota()
        self._poll = poll_seconds()
        self._config = {
            "module": str(self.work / MODULE_FILE),
            "module_name": MODULE,
            "scratch": str(self.work),
            "read_roots": self.scratch.read_roots(),
            "exercise_of": exercise_of,
            "isolate": isolate,
            "broken": broken or {},
            "audit_hook": self.layers.audit_hook,
            "poll_seconds": self._poll,
        }
        self._process: subprocess.Popen | None = None
        self._pipe: WorkerPipe | None = None
        self._ready = False  # the running worker has imported the module and said so
        self._spawned = 0.0
        self._inherited: tuple[int, ...] = ()  # descriptors every start's worker inherits (kept open here)
        self._start_failure: dict | None = None
        self._spent = 0.0  # wall-clock seconds of all calls (the backstop)
        self._spent_by: dict[int, float] = {}  # exercise -> wall-clock seconds of its calls (the backstop)
        self._cpu_by: dict[int, float] = {}  # exercise -> CPU seconds of its calls (what decides)
        self._cpu_ended = 0.0  # CPU seconds of this sandbox's workers that have ended (their rusage)
        self._cpu_grader = 0.0  # CPU seconds of the grader's work on the answers (`settled`)
        self._rlimit_cpu = self.limits.cpu_seconds  # the running worker's RLIMIT_CPU (`_spawn_limits`)
        self._serving_since: float | None = None  # the grader's thread's CPU clock when the open call began
        self._budget_spent = False  # a worker was ended by the kernel at the CPU time left to the sandbox
        # the last call's exercise, when it ended (wall clock, the grader's thread's CPU clock)
        self._answered: tuple[int | None, float, float] | None = None
        self.restarts = 0
        self.log: list[str] = []

    @property
    def worker_pid(self) -> int | None:
        """The process id of the running worker, if one runs."""
        return self._process.pid if self._process is not None else None

    @property
    def lease(self) -> isolation.UidLease | None:
        """The uid this sandbox's workers run as (as root), until it closes."""
        return self.scratch.lease

    # -- the Link -------------------------------------------------------------------------------------

    def send(self, message: dict) -> dict:
        """Deliver one call, serve the worker's requests until it answers; enforce the deadlines."""
        exercise = self.exercise_of.get(str(message.get("function")))
        if self._ready and not self.running():  # it ended between calls (its CPU time spent?): reaped
            self._kill("it ended between calls")
        if (out_of_time := self._out_of_time(exercise)) is not None:
            return out_of_time
        started = calling = time.monotonic()
        cpu_calling: float | None = None
        self._serving_since = time.thread_time()  # the grader's work for the call (requests it serves)
        reference = self.reference if message.get("reference") else None  # the call may ask it
        try:
            if reference is not None and self._process is not None and reference.ended():
                self._kill("the reference's worker ended")  # its pipes were this worker's: both start afresh
            failure = self.start()
            calling = time.monotonic()  # a worker's start (its import) is the run's time, not the exercise's
            if failure is not None:
                return failure
            if reference is not None and (failure := reference.open_call(str(message["function"]))):
                return failure
            calling = time.monotonic()
            deadline = self._deadline(self.limits.call_seconds, exercise)
            cpu_calling = deadline.cpu_start
            if not self.pipe.post(message, deadline):
                return self._timed_out(message, deadline)
            requests = request_bytes = 0
            while True:
                answer = self.pipe.receive(deadline)
                if answer is None:
                    return self._timed_out(message, deadline)
                if answer.get("op") in ("return", "raise"):
                    if deadline.cpu_exceeded():  # however busy the grader was while the worker computed
                        return self._timed_out(message, deadline)
                    if reference is not None and answer.get("reference_ended") is True:
                        self._kill("the reference's worker ended")  # its pipes were this worker's
                    return self._within_quota(message, answer)
                requests, request_bytes = requests + 1, request_bytes + self.pipe.last_size
                if requests > self.limits.callbacks or request_bytes > self.limits.callback_bytes:
                    return self._too_many_requests(message)
                if not self.pipe.post(self._serve(answer), deadline):
                    return self._timed_out(message, deadline)
        except WorkerDied as died:
            self._kill(str(died))
            return failure_answer(str(died))
        finally:
            if reference is not None:
                reference.close_call()
            now = time.monotonic()
            self._spent += now - started
            if exercise is not None:
                self._spent_by[exercise] = self._spent_by.get(exercise, 0.0) + now - calling
                if cpu_calling is not None:  # the call reached its worker: its CPU and the reference's
                    self._charge(exercise, self.cpu_spent() - cpu_calling)
            self._cpu_grader += time.thread_time() - self._serving_since
            self._serving_since = None
            self._answered = (exercise, now, time.thread_time())

    def settled(self) -> None:
        """The grader is done with the last call's answer (decoded, its changes written back): that work
        was done for the submission and counts as the call's time, its exercise's and the run's. A
        worker could otherwise send answers that cost it a millisecond each (4 MB of empty lists,
        encoded once) and the grader a second each to decode, on no one's time."""
        if self._answered is None:
            return
        (exercise, ended, cpu), self._answered = self._answered, None
        spent, cpu = time.monotonic() - ended, time.thread_time() - cpu
        self._spent += spent
        self._cpu_grader += cpu
        if exercise is not None:
            self._spent_by[exercise] = self._spent_by.get(exercise, 0.0) + spent
            self._charge(exercise, cpu)

    def _charge(self, exercise: int, cpu: float) -> None:
        self._cpu_by[exercise] = self._cpu_by.get(exercise, 0.0) + max(0.0, cpu)

    def cpu_spent(self) -> float:
        """CPU seconds this sandbox has cost so far: every worker it started (from its start: its import,
        its calls and whatever it did between them), the reference worker's on its behalf, and the
        grader's work for its calls (the requests it served, the answers it decoded)."""
        live = cpu_time(self._process.pid) if self._process is not None and CPU_READABLE else 0.0
        reference = self.reference.cpu_spent() if self.reference is not None else 0.0
        serving = time.thread_time() - self._serving_since if self._serving_since is not None else 0.0
        return self._cpu_ended + live + reference + self._cpu_grader + serving

    def cpu_left(self) -> float:
        """CPU seconds left of the sandbox's budget (`Limits.run_seconds`)."""
        return self.limits.run_seconds - self.cpu_spent()

    def _timed_out(self, message: dict, deadline: Deadline) -> dict:
        """End the worker whose call ran past `deadline`; the call's answer says whose time ran out."""
        name, why, scope = message.get("function", "the call"), deadline.overrun(), deadline.scope()
        self._kill(f"{name} timed out")
        return failure_answer(f"{name}() did not return: {why}", timed_out=scope)

    def _too_many_requests(self, message: dict) -> dict:
        """End the worker whose call asked the grader for more than a call may (callbacks)."""
        name, limits = message.get("function", "the call"), self.limits
        self._kill(f"{name} asked too much of the grader")
        bound = f"{limits.callbacks} callbacks or {limits.callback_bytes >> 20} MB of them"
        return failure_answer(f"{name}() asked the grader for more than {bound} in one call")

    def _out_of_time(self, exercise: int | None) -> dict | None:
        """The answer for a call that may not start: the run's or its exercise's time is used up (its CPU
        time, or, for code that sleeps, backstop_factor times that in wall-clock time)."""
        limits = self.limits
        spent = self._budget_spent or self.cpu_left() <= 0
        if spent or self._spent >= limits.run_seconds * limits.backstop_factor:
            why = f"the grading time limit ({limits.run_seconds:g} s of CPU time in this suite) was reached"
            return failure_answer(why, timed_out="run")
        if exercise is not None and (
            self._cpu_by.get(exercise, 0.0) >= limits.exercise_seconds
            or self._spent_by.get(exercise, 0.0) >= limits.exercise_seconds * limits.backstop_factor
        ):
            why = f"exercise {exercise} used its {limits.exercise_seconds:g} s of CPU time in this run"
            return failure_answer(why, timed_out="exercise")
        return None

    def _within_quota(self, message: dict, answer: dict) -> dict:
        """`answer`, or, where the worker passed its disk quota during the call (and returned before the
        watchdog saw it), the quota's failure: the worker is ended, and the next starts on an empty disk."""
        if (breach := self._quota.breach(self._process.pid if self._process else None)) is None:
            return answer
        self._kill("disk quota")
        return failure_answer(f"{message.get('function', 'the call')}() was ended: {breach}")

    def _serve(self, request: dict) -> dict:
        """The grader's answer to the worker's request; a request the grader cannot serve ends the worker
        (an answer out of step with the worker's questions would answer the wrong question later)."""
        try:
            return self.serve_request(request)
        except Exception as error:  # noqa: BLE001 - whatever went wrong, the protocol must not go on
            raise WorkerDied(f"the grader could not serve the submission's request: {error}") from None

    def _memory_limit(self) -> cgroup.MemoryLimit | None:
        """The worker's memory cgroup, where this machine gives one."""
        if not self.layers.cgroup:
            return None
        try:
            return cgroup.MemoryLimit(self.limits.memory_bytes)
        except OSError as error:
            raise SandboxError(f"the worker's memory cgroup could not be made: {error}") from None

    def close(self) -> None:
        """Kill everything the submission started and remove what it wrote."""
        self._kill("closing")
        if self.reference is not None:
            self.reference.close()
        if self._memory is not None:
            self._memory.close()
        if self._ruleset is not None:
            self._ruleset.close()
        self.scratch.remove()

    def output(self) -> str:
        """What the worker printed (capped), for the instructor's log."""
        path = self.home / "output.txt"
        try:
            with open(path, "rb") as handle:
                return handle.read(self.limits.output_bytes).decode("utf-8", "replace")
        except OSError:
            return ""

    # -- the worker process ---------------------------------------------------------------------------

    def spawn(self) -> None:
        """Start the worker's process, if none runs, without waiting for it to import the module (`start`
        waits): its start then overlaps with the grader's own work."""
        if self._process is None and self._start_failure is None:
            self._spawn()

    def start(self) -> dict | None:
        """Start the worker, if none runs, and wait until it has imported the module (a call starts it
        when none runs); a failure answer where it cannot start (a module that did not import once is
        not tried again)."""
        if self._start_failure is None and not self._ready:
            self.spawn()
            self._start_failure = self._await_ready()
        return self._start_failure

    def running(self) -> bool:
        """Whether the worker process is started and has not ended."""
        return self._process is not None and self._reap(self._process, 0.0) is None

    def _ended_at_budget(self, code: int) -> bool:
        """Whether a worker that ended with `code`, not killed by the grader, was ended by the kernel at
        its RLIMIT_CPU where that was what was left of the sandbox's budget (the kernel's count runs
        ahead of the process's CPU clock: it ends a worker at about 0.8 of its limit, so the limit, not
        the clock, says so). Not an out-of-memory kill."""
        by_limit = code in (-signal.SIGKILL, -signal.SIGXCPU) and self._rlimit_cpu < self.limits.cpu_seconds
        oom = self._memory is not None and self._memory.oom_kills() > self._oom_kills
        return by_limit and not oom

    def _reap(self, process: subprocess.Popen, timeout: float, killed: bool = False) -> int | None:
        """`process`'s exit code once it has ended (waiting at most `timeout` s), else None; its CPU time
        (its rusage, read as it is reaped) is charged to this sandbox (`killed`: by the grader)."""
        # os.wait4 builds its rusage with the resource module: without it (not POSIX), no CPU to read
        if process.returncode is not None or not hasattr(os, "wait4") or not SANDBOX_AVAILABLE:
            try:
                return process.wait(timeout=timeout) if timeout else process.poll()
            except subprocess.TimeoutExpired:
                return None
        end = time.monotonic() + timeout
        while True:
            try:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its CPU time is lost to the count
                return process.poll()
            if pid:
                process.returncode = os.waitstatus_to_exitcode(status)
                self._cpu_ended += usage.ru_utime + usage.ru_stime
                if not killed and self._ended_at_budget(process.returncode):
                    self._budget_spent = True
                return process.returncode
            if time.monotonic() >= end:
                return None
            time.sleep(0.002)

    def _peer(self) -> tuple[dict, tuple[int, ...]]:
        """What this start's worker needs to reach the other worker of its grading, if any: entries of its
        config and the file descriptors it inherits (whose copies here are closed once it has them)."""
        if self.reference is None:
            return {}, ()
        fds = self.reference.pair()
        return {"reference_fds": fds}, fds

    def _spawn_limits(self) -> Limits:
        """The limits of the worker about to start: its RLIMIT_CPU no more than the CPU time left to the
        sandbox, so that a worker burning CPU between calls (an interval timer's handler), which no call's
        deadline reads, is killed by the kernel once the grading's budget is spent."""
        left = math.ceil(max(1.0, self.cpu_left())) + 1  # the kernel's count runs ahead of the clock
        self._rlimit_cpu = min(self.limits.cpu_seconds, left)
        return replace(self.limits, cpu_seconds=self._rlimit_cpu)

    def _spawn(self) -> None:
        if self._quota.breached:  # the worker ended at its quota: the next one starts with an empty disk
            self._quota.reset()
            self.scratch.start_afresh()
        if self._plain:
            self._spawn_plain()
            return
        to_worker, from_grader = os.pipe()
        from_worker, to_grader = os.pipe()
        peer_config, peer_fds = self._peer()
        config = dict(self._config, read_fd=to_worker, write_fd=to_grader, **peer_config)
        # what the submission prints: for the instructor's log, not for other users of the machine
        output = os.open(self.home / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            self._process = subprocess.Popen(
                [_INTERPRETER, "-P", "-s", "-S", "-u", "-c", _BOOT, str(self.runtime), json.dumps(config)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(to_worker, to_grader, *peer_fds, *self._inherited),
                cwd=self.work,
                env=_worker_environment(self.work),
                start_new_session=True,
                preexec_fn=Confine(
                    self._spawn_limits(), self.layers, self.lease, self._ruleset, self._memory, self.work
                ),
            )
        except (OSError, subprocess.SubprocessError) as error:  # the machine's fault, not the submission's
            os.close(from_worker)
            os.close(from_grader)
            raise SandboxError(f"the worker process could not be started and confined: {error}") from None
        finally:
            for fd in (to_worker, to_grader, *peer_fds, output):
                os.close(fd)
        reader, writer = os.fdopen(from_worker, "rb", buffering=0), os.fdopen(from_grader, "wb", buffering=0)
        self._pipe = WorkerPipe(reader, writer, self.limits.message_bytes, self._poll, self._death_reason)
        self.restarts += 1
        self._spawned = time.monotonic()
        self._oom_kills = self._memory.oom_kills() if self._memory is not None else 0
        if self.reference is not None:
            self.reference.spawn()  # the reference's worker starts beside this one

    def _spawn_plain(self) -> None:
        """Start a worker where there is no sandbox: a process of its own whose stdin and stdout are the
        pipes (the worker moves them aside and prints to the output file), read here by a thread."""
        if self.reference is not None:
            raise SandboxError("grading with the reference needs the sandbox (a POSIX system)")
        config = dict(self._config, read_fd=0, write_fd=1, stdio=True)
        output = os.open(self.home / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            self._process = subprocess.Popen(
                [_INTERPRETER, "-P", "-s", "-S", "-u", "-c", _BOOT, str(self.runtime), json.dumps(config)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=output,
                cwd=self.work,
                env=_worker_environment(self.work),
                start_new_session=os.name == "posix",  # a process group of its own, where there are any
            )
        except (OSError, subprocess.SubprocessError) as error:
            raise SandboxError(f"the worker process could not be started: {error}") from None
        finally:
            os.close(output)
        assert self._process.stdin is not None and self._process.stdout is not None
        reader, writer = self._process.stdout, self._process.stdin  # buffered: read by a thread
        self._pipe = WorkerPipe(
            reader, writer, self.limits.message_bytes, 0.0, self._death_reason, plain=True
        )
        self.restarts += 1
        self._spawned = time.monotonic()

    def _await_ready(self) -> dict | None:
        """Wait for the spawned worker's hello; a failure answer if it does not come. The import's CPU
        time counts from the worker's own start, its wall time from its spawn: the same bounds whether or
        not the grader waited all along."""
        deadline = self._deadline(self.limits.import_seconds, since=self._spawned)
        where = ""  # the line of the module the import was at, as the worker last reported it
        try:
            ready = self.pipe.receive(deadline, waiting_only=True)
            # one report per second of CPU time: more than the import may take is no honest worker's (and
            # messages already waiting are read without a look at the deadline)
            reports = int(self.limits.import_seconds) + 2
            while ready is not None and ready.get("op") == "importing" and reports > 0:
                where, reports = str(ready.get("where", ""))[:200], reports - 1
                ready = self.pipe.receive(deadline, waiting_only=True)
        except WorkerDied as died:
            self._kill("died at start")
            return failure_answer(f"while importing the module: {died}")
        # a hello read late (the worker started ahead) still counts only if the import kept to its CPU time
        if ready is None or deadline.cpu_used() >= deadline.cpu_seconds:
            why = deadline.overrun()
            self._kill("import timed out")
            # no exercise's own timeout: the module never imported, so every call fails with this anyway
            return failure_answer(f"{IMPORT_TIMED_OUT}{why}{where}", timed_out="run")
        if ready.get("op") != "ready":
            self._kill("bad hello")
            return failure_answer("the worker did not start")
        self._ready = True
        return None

    def _deadline(
        self, cpu_seconds: float, exercise: int | None = None, since: float | None = None
    ) -> Deadline:
        """A call's deadline, or with `since` (a monotonic time) one that counts the worker's CPU time from
        its start and the wall time from `since`."""
        limits, pid = self.limits, self._process.pid if self._process else None
        walls = {
            "call": cpu_seconds * limits.wall_factor,
            "run": limits.run_seconds * limits.backstop_factor - self._spent,
        }
        if since is not None:  # the import: the worker's own CPU time from its start (a module that never
            # imports loses every point: its wall-clock bound is a backstop, as generous as a suite's)
            walls["call"] = cpu_seconds * limits.backstop_factor
            deadline = Deadline(pid, {"call": cpu_seconds}, walls, since)
        else:  # a call: the sandbox's CPU time (the reference's on its behalf too) from now
            cpus = {"call": cpu_seconds, "run": self.cpu_left()}
            if exercise is not None:
                cpus["exercise"] = limits.exercise_seconds - self._cpu_by.get(exercise, 0.0)
                walls["exercise"] = limits.exercise_seconds * limits.backstop_factor - self._spent_by.get(
                    exercise, 0.0
                )
            deadline = Deadline(
                pid, cpus, walls, clock=self.cpu_spent, processes=1 + (self.reference is not None)
            )
        deadline.quota = self._quota.breach  # the disk quota is watched while the grader waits
        return deadline

    def _death_reason(self) -> str:
        code = self._reap(self._process, 2.0) if self._process is not None else None
        if self._process is not None and code is None:
            return "the submission's process stopped answering (it closed the grader's pipe)"
        if self._budget_spent:
            return "the grading time limit was reached (its suite's CPU time is spent)"
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if name == "SIGKILL" and self._memory is not None and self._memory.oom_kills() > self._oom_kills:
                self._oom_kills = self._memory.oom_kills()
                limit = self._memory.limit_bytes >> 20
                return f"the submission's process was killed: it used its {limit} MB of memory"
            hint = {
                "SIGKILL": " (out of memory or time?)",
                "SIGXCPU": " (CPU time limit)",
                "SIGXFSZ": " (file too large)",
            }
            return f"the submission's process was killed by {name}{hint.get(name, '')}"
        return f"the submission's process ended (exit code {code}) during the call"

    def _kill(self, why: str) -> None:
        if self.reference is not None:
            self.reference.end()  # it answered this worker alone
        process, self._process = self._process, None
        self._ready = False
        if process is None:
            return
        self.log.append(why)
        try:
            if process.returncode is not None:
                pass  # reaped (its death was read): its pid, and its group's id, may be another's by now
            elif hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)
            else:  # Windows: the worker alone (it has no process group)
                process.kill()
        except (ProcessLookupError, PermissionError):
            pass
        self._reap(process, 10.0, killed=True)
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    @property
    def pipe(self) -> WorkerPipe:
        """The running worker's pipes (a call reaches them only once its worker has started)."""
        assert self._pipe is not None
        return self._pipe


def _worker_environment(work: Path) -> dict[str, str]:
    return {
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "LC_ALL": "C.UTF-8",
        # Windows: an interpreter cannot start without it
        **({"SYSTEMROOT": os.environ["SYSTEMROOT"]} if "SYSTEMROOT" in os.environ else {}),
    }
