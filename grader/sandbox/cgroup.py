"""Linux memory cgroups: each worker's memory limit, counting every page it makes resident.

Linux memory cgroups for the grading worker: one job, give each worker a memory limit that counts every
page it makes resident, which the address-space limit (RLIMIT_AS) does not: memfd and shared memory
filled and unmapped, tmpfs files, kernel memory (cgroup v1 counts it in the same limit, v2 always).

Where the grader is root and this process's memory cgroup may have children (cgroup v1's memory
hierarchy, as on most bare machines and VMs before systemd's unified mode; or cgroup v2 with the memory
controller enabled for children), each sandbox makes a cgroup of its own beneath the grader's, limited
to the worker's memory and to no swap, and removes it at close. The worker joins it between fork and
exec, by writing "0" (itself) to a cgroup.procs descriptor the grader opened. Past the limit the
kernel's OOM killer ends the worker (the grader says so). Docker (Gradescope) usually mounts the
hierarchy read-only: there, no cgroup, and the seccomp filter (grader.sandbox.seccomp) refuses memfd and SysV
shared memory instead.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from functools import lru_cache
from pathlib import Path

PREFIX = "optlab-"  # a sandbox's cgroup: optlab-<pid namespace>.<grader pid>-<n>, beneath the grader's own
_LIMIT_FILE = {1: "memory.limit_in_bytes", 2: "memory.max"}
_counter = itertools.count()


def own_memory_cgroup(
    cgroups: Path = Path("/proc/self/cgroup"), mounts: Path = Path("/proc/self/mountinfo")
) -> tuple[int, Path] | None:
    """(version, folder) of this process's memory cgroup; None where there is none (not Linux, no
    memory controller mounted here)."""
    try:
        membership = cgroups.read_text().splitlines()
        mountinfo = mounts.read_text().splitlines()
    except OSError:
        return None
    paths = {}  # version -> this process's path in the hierarchy
    for line in membership:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            paths[2] = path
        elif "memory" in controllers.split(","):
            paths[1] = path
    for line in mountinfo:
        fields, _, tail = line.partition(" - ")
        parts, kind = fields.split(), tail.split()
        if len(parts) < 5 or len(kind) < 3:
            continue
        root, point = parts[3], parts[4]
        if kind[0] == "cgroup" and "memory" in kind[2].split(",") and 1 in paths:
            version = 1
        elif kind[0] == "cgroup2" and 2 in paths and 1 not in paths:
            version = 2
        else:
            continue
        inner = os.path.relpath(paths[version], root) if paths[version].startswith(root) else None
        if inner is None or inner.startswith(".."):
            continue  # a mount of another part of the hierarchy
        folder = Path(point) / inner
        if version == 1 or "memory" in _read(folder / "cgroup.controllers").split():
            return version, folder.resolve()
    return None


def _grader_name() -> str:
    """This grader's name among the cgroups: its pid, qualified by its PID namespace (graders in two
    containers on one host share the hierarchy, and their pids repeat)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{namespace}.{os.getpid()}"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@lru_cache(maxsize=1)
def version() -> int:
    """The version of the memory cgroups a worker gets here (1 or 2); 0 where the grader cannot make one
    (not root, no memory controller, a read-only hierarchy, v2 without the controller for children)."""
    found = own_memory_cgroup() if os.geteuid() == 0 else None
    if found is None:
        return 0
    kind, folder = found
    probe = folder / f"{PREFIX}probe-{_grader_name()}"
    try:
        probe.mkdir()
    except OSError:
        return 0
    made = kind if (probe / _LIMIT_FILE[kind]).exists() else 0
    remove_stale(folder)  # the probe too
    return made


def remove_stale(folder: Path) -> None:
    """Remove this process's probe, and the empty cgroups of graders of this PID namespace that ended
    (killed before they could close their sandboxes). A grader in another PID namespace cannot be seen
    from here, alive or not: its cgroups are left to it."""
    namespace = _grader_name().split(".")[0]
    for entry in folder.glob(PREFIX + "*-*"):
        owner_namespace, _, owner = entry.name[len(PREFIX) :].split("-")[0].partition(".")
        probe = entry.name == f"{PREFIX}probe-{_grader_name()}"
        ended = owner_namespace == namespace and owner.isdigit() and not Path(f"/proc/{owner}").exists()
        if probe or ended:
            try:
                entry.rmdir()
            except OSError:
                pass


class MemoryLimit:
    """A memory cgroup of the grader's for one sandbox's worker (made at once, removed by `close`)."""

    def __init__(self, limit_bytes: int):
        found = own_memory_cgroup()
        if found is None or version() == 0:
            raise OSError("no memory cgroup can be made here")
        self.version, parent = found
        self.folder = parent / f"{PREFIX}{_grader_name()}-{next(_counter)}"
        self.folder.mkdir()
        try:
            self._write(_LIMIT_FILE[self.version], limit_bytes)
            if self.version == 1:  # memory + swap, where the kernel counts swap; and no swapping at all
                self._write("memory.memsw.limit_in_bytes", limit_bytes, needed=False)
                self._write("memory.swappiness", 0, needed=False)
            else:
                self._write("memory.swap.max", 0, needed=False)
            self._procs = os.open(self.folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except BaseException:
            self.folder.rmdir()
            raise
        self.limit_bytes = limit_bytes

    def _write(self, name: str, value: int, needed: bool = True) -> None:
        try:
            (self.folder / name).write_text(str(value))
        except OSError:
            if needed or (self.folder / name).exists():
                raise

    def join(self) -> None:
        """Move the calling process into the cgroup (run in the forked child, before setuid)."""
        os.write(self._procs, b"0")

    def oom_kills(self) -> int:
        """How many of this cgroup's processes the kernel killed for its memory so far."""
        events = _read(self.folder / ("memory.oom_control" if self.version == 1 else "memory.events"))
        for line in events.splitlines():
            name, _, count = line.partition(" ")
            if name == "oom_kill" and count.strip().isdigit():
                return int(count)
        return 0

    def close(self) -> None:
        """Kill what is left in the cgroup and remove it (the worker's pages go with it)."""
        if self._procs < 0:
            return
        os.close(self._procs)
        self._procs = -1
        for _ in range(50):
            for pid in _read(self.folder / "cgroup.procs").split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)  # a killed process leaves its cgroup a moment after it dies
