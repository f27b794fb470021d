"""A call's deadline in a worker's CPU time, bounded by wall-clock time; another process's CPU time.

A call's deadline in a worker's CPU time, bounded by wall-clock time, and how the grader reads another
process's CPU time (its CPU clock, else /proc). Every time limit of a sandbox is a `Deadline`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable


class Deadline:
    """A call's deadline: the worker's own CPU time (so a loaded machine does not fail honest code),
    bounded by a wall-clock limit (for code that sleeps or blocks instead of computing). The CPU time is
    read from the worker's CPU clock (a microsecond: at every answer) or, where that clock cannot be
    read, from /proc (every POLL seconds while the grader waits, and at every answer)."""

    POLL = 0.05  # how often the CPU time is read while waiting
    quota: Callable[[int | None], str | None] | None = None  # the worker's disk quota: how it broke it
    breach: str | None = None

    def __init__(
        self,
        pid: int | None,
        cpus: dict[str, float],
        walls: dict[str, float],
        since: float | None = None,
        clock: Callable[[], float] | None = None,
        processes: int = 1,
    ):
        """`cpus` and `walls`: the CPU and wall-clock bounds that apply, by whose time they are (a
        protocol.TIME_SCOPES); `since`: where given, the wall time counts from then and the CPU time from
        the process's start; `clock`: where given, the CPU time is that clock's from now (a sandbox's
        whole cost: its `processes` may compute at once), else the worker's own (`pid`)."""
        self.pid, self.clock, self.processes = pid, clock, processes
        self.cpu_scope = min(cpus, key=cpus.__getitem__)
        self.cpu_seconds = max(0.0, cpus[self.cpu_scope])
        self.wall_scope = min(walls, key=walls.__getitem__)
        self.wall_seconds = max(0.0, walls[self.wall_scope])
        self.started = time.monotonic() if since is None else since
        self.wall_end = self.started + self.wall_seconds
        self.next_reading = time.monotonic() + self.POLL
        self.cpu_start: float | None = None if since is None else 0.0
        if clock is not None and CPU_READABLE:
            self.cpu_start = clock()  # read now: with two processes no wall time bounds it from above

    def passed(self) -> bool:
        now = time.monotonic()
        if now >= self.wall_end:
            return True
        if now < self.next_reading:
            return False
        self.next_reading = now + self.POLL
        if self.quota is not None and (breach := self.quota(self.pid)) is not None:
            self.breach = breach
            return True
        return self.cpu_used() >= self.cpu_seconds

    def cpu_used(self) -> float:
        """The CPU time since the call began; for the worker's own clock, until the first reading all the
        time that passed counts as CPU time (an upper bound, so the budget is never exceeded unnoticed),
        not read when the call starts: a worker still polling its pipe runs on another CPU, whose clock
        costs more to read."""
        if not CPU_READABLE:  # no CPU clock of another process (Windows): its wall time stands in
            return time.monotonic() - self.started
        if self.clock is not None:
            return self.clock() - (self.cpu_start or 0.0)
        now = cpu_time(self.pid)
        if self.cpu_start is None:
            self.cpu_start = now - (time.monotonic() - self.started)
        return now - self.cpu_start

    def cpu_exceeded(self) -> bool:
        """Whether the CPU time is used up (read now, not at the last poll). A worker has one thread
        (RLIMIT_NPROC is 0): the CPU time of `processes` cannot run ahead of that many times the wall
        clock, so a call shorter than that is not read at all (reading the clock of a process that has
        just run, perhaps still on another CPU, costs a small call's round trip up to half again)."""
        if (time.monotonic() - self.started) * self.processes < self.cpu_seconds:
            return False
        return self.cpu_used() >= self.cpu_seconds

    def poll_seconds(self) -> float:
        return max(0.0, min(self.POLL, self.wall_end - time.monotonic()))

    def scope(self) -> str | None:
        """Whose time ran out: the call's, its exercise's, or the run's (CPU time, or the wall-clock
        backstop); None where no time ran out (the disk quota was passed)."""
        if self.breach is not None:
            return None
        return self.cpu_scope if self.cpu_used() >= self.cpu_seconds else self.wall_scope

    def overrun(self) -> str:
        if self.breach is not None:
            return self.breach
        if self.cpu_used() >= self.cpu_seconds:
            if self.cpu_scope == "run":
                return f"the grading time limit was reached ({self.cpu_seconds:.3g} s of CPU time left)"
            why = " (an endless loop?)" if self.cpu_scope == "call" else ", its exercise's last in this run"
            return f"it used {self.cpu_seconds:.3g} s of CPU time{why}"
        whose = {"call": "", "exercise": " (its exercise's call time in this run)", "run": " (the run's)"}
        return f"it was still running after {self.wall_seconds:.3g} s{whose[self.wall_scope]}"


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: [0] state, [1] ppid, [11] utime, [12] stime,
    [19] start time; None where the process is gone (or there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_time(pid: int | None) -> float:
    """User + system CPU seconds of process `pid` so far (0 where it cannot be read): from its CPU clock
    (Linux: clockid ((~pid) << 3) | CPUCLOCK_SCHED, about a microsecond, to the nanosecond), else from
    /proc (ten times slower, to the clock tick)."""
    if pid is None:
        return 0.0
    if _PROCESS_CLOCKS:
        try:
            return time.clock_gettime(((~pid) << 3) | 2)
        except (OSError, OverflowError):
            pass
    fields = proc_stat(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_PROCESS_CLOCKS = sys.platform.startswith("linux") and hasattr(time, "clock_gettime")
CPU_READABLE = _PROCESS_CLOCKS or os.path.isdir("/proc")  # macOS has neither: the wall time then counts
