"""The worker's confinement, done by the worker's process to itself between fork and exec.

The worker's confinement, done by the worker's process to itself between fork and exec (`Confine`, the
sandbox's preexec_fn): namespaces, the memory cgroup, the mount view, rlimits, the worker's uid, the
parent-death signal, Landlock and seccomp, in that order. Everything it needs is prepared in the grader.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from grader.sandbox import cgroup, isolation, landlock, mounts, seccomp
from grader.sandbox.libc import c_library
from grader.sandbox.limits import Limits

try:
    import resource
except ImportError:  # not POSIX (Windows): no sandbox, but still a worker process with the deadlines
    resource = None  # type: ignore[assignment]  # the module or None: SANDBOX_AVAILABLE tells which
SANDBOX_AVAILABLE = resource is not None


class Confine:
    """What the worker process does to itself between fork and exec (runs in the child; everything it
    needs was prepared in the parent). Order matters: namespaces, the memory cgroup (joined before the
    mount view makes its files read-only), the mount view and rlimits need root's rights, so they come
    before setuid; Landlock and seccomp come last, once nothing else needs a file or a refused call."""

    def __init__(
        self,
        limits: Limits,
        layers: isolation.Layers,
        lease: isolation.UidLease | None,
        ruleset: landlock.Ruleset | None,
        memory: cgroup.MemoryLimit | None = None,
        work: Path | None = None,
    ):
        self.limits, self.lease, self.ruleset = limits, lease, ruleset
        self.memory = memory
        self.seccomp = seccomp.worker_filter() if layers.seccomp else None
        self.unshare = isolation.unshare_function() if layers.namespaces else None
        self.view = mounts.WorkerView(work, isolation.SHARED_WRITABLE) if layers.mounts and work else None
        self.die_with_parent = _parent_death_function()

    def __call__(self) -> None:
        if self.unshare is not None:
            self.unshare()  # network and IPC namespaces of its own: a loopback that is down, no shared IPC
        if self.memory is not None:
            self.memory.join()
        if self.view is not None:
            self.view()  # a mount namespace of its own: /tmp and the like its scratch, /proc empty
        limits = self.limits
        for which, value in (
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_DATA, limits.memory_bytes),
            (resource.RLIMIT_CPU, limits.cpu_seconds),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_CORE, 1),  # 1, not 0: no core even where core_pattern pipes (seccomp.py)
        ):
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                if self.lease is not None:  # grading as root: every limit holds, or no worker runs
                    raise
                # a student's own machine (macOS refuses RLIMIT_AS): the call deadlines still hold
        if self.lease is not None:
            os.setgroups([])
            os.setgid(self.lease.uid)
            os.setuid(self.lease.uid)
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no new process or thread, ever
        if self.die_with_parent is not None:
            self.die_with_parent()  # after setuid, which clears it: a killed grader takes its worker along
        if self.ruleset is not None:
            self.ruleset.enforce()
        if self.seccomp is not None:
            self.seccomp.install()  # the last step: no socket, memfd, shared memory, io_uring, ptrace...


def _parent_death_function() -> Callable[[], None] | None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL), prepared in the parent; None where there is no prctl (not Linux)."""
    library = c_library()
    if library is None:
        return None
    prctl = library.prctl
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
