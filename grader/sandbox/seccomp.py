"""Linux seccomp: a BPF filter built in the grader that refuses the calls a worker has no use for.

Linux seccomp for the grading worker: one job, build in the grader a BPF filter that refuses the system
calls a worker has no use for and that lead out of it or around its limits, and install it in the forked
worker just before exec.

The worker talks to the grader (and the reference's worker) only through inherited pipes and one
inherited page of memory; it needs no socket, no new shared memory and no kernel interface beyond files.
Every other layer depends on the machine (namespaces need CAP_SYS_ADMIN, which Docker withholds;
Landlock refuses TCP only from ABI 4, abstract sockets from ABI 6, and never UDP or pathname sockets; a
cgroup needs a writable hierarchy). This filter needs no privilege (only no_new_privs) and holds for root
and non-root alike, on every kernel since 4.14.

Refused with EPERM (Python raises PermissionError, the call's answer names it; no SIGSYS crash):
- socket, socketpair: every family (inet, inet6, unix pathname and abstract, netlink, packet, vsock...):
  no byte leaves a worker except on its pipes.
- memfd_create, memfd_secret; shmget, shmat (SysV shared memory); msgget, semget (SysV queues and semaphores);
  mq_open (POSIX queues): memory that the address-space limit does not count (a memfd grown with
  fallocate, a segment filled and detached) and, where the worker shares an IPC namespace with others
  (Docker), a channel to another process.
- io_uring_setup/enter/register: its operations (socket, connect, openat...) run in the kernel's
  workers and are not seen by this filter.
- userfaultfd, perf_event_open, bpf: kernel attack surface only (stalling kernel accesses, counters
  across processes, programs in the kernel); no Python program needs them.
- ptrace, process_vm_readv/writev, pidfd_getfd: reading or writing another process's memory or taking
  its descriptors; without the uid layer (a laptop, not root) the grader is another process of the same
  user.
- add_key, request_key, keyctl: the kernel keyrings of a uid outlive the process: a leased worker uid
  would carry data to the next submission graded under it.
- unshare, setns, and the mount calls (mount, umount2, pivot_root, open_tree, move_mount, fsopen,
  fsconfig, fsmount, fspick, mount_setattr): a user namespace would make the worker root of its own
  namespaces (mounts, the kernel's namespaced attack surface); it already is in every namespace it needs.
- kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal: no signal to any process
  (a worker's own timers still fire: the kernel sends those). kcmp, process_madvise, migrate_pages,
  move_pages: another process's memory or descriptors again. Without the uid layer (grading not as
  root: a TA's laptop, Slurm) the grader, a batch's other gradings and every other process of the user
  run as the worker's own user, which Landlock does not keep signals from below ABI 6.
- On another process (only the worker itself, named by 0, may be the target: `CHECKED`): prlimit64,
  setpriority, sched_setaffinity, sched_setscheduler, sched_setparam, sched_setattr and ioprio_set. Landlock
  scopes none of them: without the uid layer a worker lowered its grader's CPU limit to 1 s (the kernel
  killed the grader at its next second of CPU), and could renice or pin a neighbour's worker.
- Setting the core-file size (setrlimit, or prlimit64 with a new limit): the worker's is 1, which the
  kernel takes as "no core dump" whatever core_pattern says; at 0, a core_pattern that pipes to a
  program (apport, systemd-coredump: Ubuntu, Fedora, many Docker hosts) still gets the whole process
  (up to the address-space limit) streamed to a helper running as root, outside every quota.
- prctl(PR_SET_PDEATHSIG): the worker would outlive a grader killed mid-call.
- Naming a descriptor's owner (fcntl F_SETOWN, F_SETOWN_EX; ioctl FIOSETOWN, SIOCSPGRP): with O_ASYNC
  the kernel then signals the owner when the descriptor is ready (SIGIO, whose default kills, or what
  F_SETSIG says): a worker under the filter signalled its grader so, as the grader's own user.
- No channel between gradings (issue 33): inotify_init, inotify_init1, inotify_add_watch, fanotify_init,
  fanotify_mark (a watch on a stdlib folder names the files another grading's worker opens there); and
  nothing that clears, fills or reads the page cache, which every process of the kernel shares (a page
  of a stdlib file nobody else reads is a bit: set by a read, cleared by eviction, read back by a probe,
  by a later grading under another uid, or a neighbouring container): fadvise64 (POSIX_FADV_DONTNEED
  evicts), readahead, mincore and cachestat (which pages are in memory), getrusage (its page-fault and
  block-read counts say whether what was touched was in memory), preadv2 and pwritev2 with any flag
  (RWF_NOWAIT fails on a page that is not in memory), madvise but for the advice allocators use (not
  PAGEOUT or COLD, which evict; WILLNEED, POPULATE_READ/WRITE, COLLAPSE, which fill; RANDOM and
  SEQUENTIAL, which set how much a fault reads around it; MERGEABLE; REMOVE), prctl(PR_SET_MEMORY_MERGE)
  (KSM), Linux AIO (io_setup, io_submit...: an iocb's own RWF_NOWAIT). /proc/self (pagemap's present
  bits after a fault-around, smaps, the fault counts in stat, io's bytes read) is the other probe:
  Landlock and the mount layer keep /proc from the worker (grader.sandbox.mounts); the timing of a read stays
  (benchmarks/bench_channels.py).
- On x86_64, any call of the x32 ABI (numbers from 0x40000000: the same calls under other numbers).
A call of another architecture (i386 through int 0x80, arm32 compat) kills the process: its numbers
differ, the filter knows only the interpreter's own.

Everything is prepared in the parent; the child only calls prctl twice with prepared arguments.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from functools import lru_cache

from grader.sandbox.libc import c_library

# The refused calls by name, and their numbers on each architecture this module knows (x86_64's own
# table; aarch64 uses the generic one).
REFUSED = {
    "socket": (41, 198),
    "socketpair": (53, 199),
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    "shmget": (29, 194),
    "shmat": (30, 196),
    "msgget": (68, 186),
    "semget": (64, 190),
    "mq_open": (240, 180),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "userfaultfd": (323, 282),
    "perf_event_open": (298, 241),
    "bpf": (321, 280),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "kill": (62, 129),
    "tkill": (200, 130),
    "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138),
    "rt_tgsigqueueinfo": (297, 240),
    "pidfd_send_signal": (424, 424),
    "kcmp": (312, 272),
    "process_madvise": (440, 440),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    # no channel between gradings (issue 33): file events another worker causes, and the page cache that
    # every process of the machine shares (which pages of a file are in memory: set by a read, cleared by
    # eviction, read back by a probe); aarch64 has no inotify_init, only inotify_init1 (listed twice)
    "inotify_init": (253, 26),
    "inotify_init1": (294, 26),
    "inotify_add_watch": (254, 27),
    "fanotify_init": (300, 262),
    "fanotify_mark": (301, 263),
    "fadvise64": (221, 223),  # POSIX_FADV_DONTNEED evicts, WILLNEED fills
    "readahead": (187, 213),
    "mincore": (27, 232),  # which pages of a mapping are in memory
    "cachestat": (451, 451),  # which pages of a file are (Linux 6.5+)
    "getrusage": (98, 165),  # page faults and block reads: whether what was touched was in memory
    # Linux AIO: an iocb's own RWF_NOWAIT is the preadv2 probe by another door (issue 33's attack on its
    # own filter: 6 of 6 pages told apart); Python never uses it
    "io_setup": (206, 0),
    "io_destroy": (207, 1),
    "io_getevents": (208, 4),
    "io_submit": (209, 2),
    "io_cancel": (210, 3),
    "io_pgetevents": (333, 292),
}
# Calls allowed or refused by their arguments. Each step compares one 32-bit half (0: low, 1: high) of an
# argument with a value, then goes on to the next step, allows or refuses (EPERM); past the last, allowed.
# A pid of 0 is the caller (a pid_t: the kernel reads the low half alone); setpriority's PRIO_PROCESS is
# 0, ioprio_set's IOPRIO_WHO_PROCESS 1 (PRIO_USER or IOPRIO_WHO_USER would reach every process of the
# user); RLIMIT_CORE is 4 on both architectures; PR_SET_PDEATHSIG is 1.
NEXT, ALLOW, REFUSE = "next", "allow", "refuse"
RLIMIT_CORE = 4
F_SETOWN, F_SETOWN_EX, FIOSETOWN, SIOCSPGRP = 8, 15, 0x8901, 0x8902  # the same on both architectures
Step = tuple[int, int, int, str, str]  # (argument, half, value, if equal, if not)
PR_SET_MEMORY_MERGE = 67
# madvise advice kept: NORMAL, DONTNEED (glibc's free on anonymous memory; on a file mapping it drops the
# mapping's page tables only, never the cache), FREE, DONTFORK, DOFORK, HUGEPAGE, NOHUGEPAGE, DONTDUMP,
# DODUMP, WIPEONFORK, KEEPONFORK, DONTNEED_LOCKED, GUARD_INSTALL, GUARD_REMOVE. Not RANDOM (nor
# SEQUENTIAL): without it a fault reads the pages around it, so a bit set or timed in the page cache
# needs 32 pages of room, not one (benchmarks/bench_channels.py: 120 bits in 184 pages with it)
MADVISE_ALLOWED = (0, 4, 8, 10, 11, 14, 15, 16, 17, 18, 19, 24, 102, 103)


def _allowed(argument: int, values: tuple[int, ...]) -> tuple[Step, ...]:
    """Steps that allow the call where the low half of `argument` is one of `values`, else refuse it."""
    *first, last = values
    return (*((argument, 0, v, ALLOW, NEXT) for v in first), (argument, 0, last, ALLOW, REFUSE))


CHECKED: dict[str, tuple[tuple[int, int], tuple[Step, ...]]] = {
    "prlimit64": (
        (302, 261),
        (  # getrlimit and setrlimit are prlimit64(0, ...) in libc
            (0, 0, 0, NEXT, REFUSE),  # the worker itself only
            (1, 0, RLIMIT_CORE, NEXT, ALLOW),  # any other resource
            (2, 0, 0, NEXT, REFUSE),  # the core size read only: no new limit (NULL)
            (2, 1, 0, ALLOW, REFUSE),
        ),
    ),
    "setrlimit": ((160, 164), ((0, 0, RLIMIT_CORE, REFUSE, ALLOW),)),
    "setpriority": ((141, 140), ((0, 0, 0, NEXT, REFUSE), (1, 0, 0, ALLOW, REFUSE))),  # os.nice: (0, 0)
    "sched_setaffinity": ((203, 122), ((0, 0, 0, ALLOW, REFUSE),)),
    "sched_setscheduler": ((144, 119), ((0, 0, 0, ALLOW, REFUSE),)),
    "sched_setparam": ((142, 118), ((0, 0, 0, ALLOW, REFUSE),)),
    "sched_setattr": ((314, 274), ((0, 0, 0, ALLOW, REFUSE),)),
    "ioprio_set": ((251, 30), ((0, 0, 1, NEXT, REFUSE), (1, 0, 0, ALLOW, REFUSE))),
    # PR_SET_PDEATHSIG; PR_SET_MEMORY_MERGE (67: the process's memory merged with equal pages of other
    # processes by KSM, whose copy-on-write timing tells what a neighbour holds)
    "prctl": ((157, 167), ((0, 0, 1, REFUSE, NEXT), (0, 0, PR_SET_MEMORY_MERGE, REFUSE, ALLOW))),
    # a read or write that does not wait (RWF_NOWAIT) fails where the page is not in memory: a probe of the
    # page cache; every flag is refused (Python passes none unless asked), the calls without flags allowed
    "preadv2": ((327, 286), ((5, 0, 0, NEXT, REFUSE), (5, 1, 0, ALLOW, REFUSE))),
    "pwritev2": ((328, 287), ((5, 0, 0, NEXT, REFUSE), (5, 1, 0, ALLOW, REFUSE))),
    # the advice that allocators and Python use, alone: not the advice that evicts file pages (PAGEOUT,
    # COLD), fills or probes them (WILLNEED, POPULATE_READ, POPULATE_WRITE, COLLAPSE), merges them with
    # other processes' (MERGEABLE) or punches holes (REMOVE)
    "madvise": ((28, 233), _allowed(2, MADVISE_ALLOWED)),
    # F_SETOWN, F_SETOWN_EX (and FIOSETOWN, SIOCSPGRP, their ioctl spellings): a descriptor's owner gets
    # SIGIO, or any signal F_SETSIG names, when it becomes ready; the kernel sends it, past kill's refusal
    "fcntl": ((72, 25), ((1, 0, F_SETOWN, REFUSE, NEXT), (1, 0, F_SETOWN_EX, REFUSE, ALLOW))),
    "ioctl": ((16, 29), ((1, 0, FIOSETOWN, REFUSE, NEXT), (1, 0, SIOCSPGRP, REFUSE, ALLOW))),
}
ARCHES = {"x86_64": 0, "aarch64": 1}  # machine name -> column of REFUSED
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # seccomp_data.arch (linux/audit.h)
SECCOMP_SYSCALL = {"x86_64": 317, "aarch64": 277}
X32_SYSCALL_BIT = 0x40000000

# BPF (linux/filter.h, linux/seccomp.h)
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
DATA_NR, DATA_ARCH = 0, 4  # offsets in struct seccomp_data
DATA_ARGS = 16  # args[6], 8 bytes each; the low 32 bits first (both architectures are little-endian)
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_SECCOMP_GET_ACTION_AVAIL = 2


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def machine() -> str | None:
    """The architecture whose system calls this interpreter makes, if this module knows it."""
    if not sys.platform.startswith("linux") or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    name = os.uname().machine
    return name if name in ARCHES else None


def program(arch: str) -> list[tuple[int, int, int, int]]:
    """The filter for `arch` as BPF instructions (code, jt, jf, k): another architecture is killed, the
    refused calls (and x32's on x86_64) get EPERM, the CHECKED calls what their steps say; the rest is
    allowed.

    Layout (jumps only go forward, at most 255 instructions): the arch check, the number, the refused
    numbers (to REFUSE), the checked numbers (each to its block), ALLOW, the blocks (each step loads one
    half of an argument and compares it; each block ends in ALLOW), REFUSE, KILL."""
    column = ARCHES[arch]
    numbers = sorted({row[column] for row in REFUSED.values()})
    checks: list[tuple[int, int]] = [(JEQ_K, n) for n in numbers]
    if arch == "x86_64":
        checks.insert(0, (JGE_K, X32_SYSCALL_BIT))
    blocks = [(row[column], steps) for row, steps in CHECKED.values()]
    head = 3 + len(checks) + len(blocks)  # the ALLOW after the jumps
    starts, at = [], head + 1
    for _, steps in blocks:
        starts.append(at)
        at += 2 * len(steps) + 1
    refuse, kill = at, at + 1

    def jump(frm: int, to: int) -> int:  # jumps count from the next instruction
        if not 0 <= to - frm - 1 <= 255:
            raise ValueError("the filter is too long for a BPF jump")
        return to - frm - 1

    code = [(LD_W_ABS, 0, 0, DATA_ARCH), (JEQ_K, 0, jump(1, kill), AUDIT_ARCH[arch])]
    code.append((LD_W_ABS, 0, 0, DATA_NR))
    for op, k in checks:
        code.append((op, jump(len(code), refuse), 0, k))
    for (number, _), start in zip(blocks, starts, strict=True):
        code.append((JEQ_K, jump(len(code), start), 0, number))
    code.append((RET_K, 0, 0, RET_ALLOW))
    for (_, steps), start in zip(blocks, starts, strict=True):
        allow = start + 2 * len(steps)  # the block's own ALLOW
        for arg, half, value, if_equal, if_not in steps:
            code.append((LD_W_ABS, 0, 0, DATA_ARGS + 8 * arg + 4 * half))
            here = len(code)
            target = {NEXT: here + 1, ALLOW: allow, REFUSE: refuse}
            code.append((JEQ_K, jump(here, target[if_equal]), jump(here, target[if_not]), value))
        code.append((RET_K, 0, 0, RET_ALLOW))
    code += [(RET_K, 0, 0, RET_ERRNO | errno.EPERM), (RET_K, 0, 0, RET_KILL_PROCESS)]
    assert len(code) == kill + 1
    return code


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether this kernel filters system calls with an EPERM action for this interpreter's architecture
    (seccomp's own question, SECCOMP_GET_ACTION_AVAIL: kernels from 4.14)."""
    arch, libc = machine(), c_library()
    if arch is None or libc is None:
        return False
    action = ctypes.c_uint32(RET_ERRNO)
    number = ctypes.c_long(SECCOMP_SYSCALL[arch])
    question = ctypes.c_long(_SECCOMP_GET_ACTION_AVAIL)
    return libc.syscall(number, question, ctypes.c_long(0), ctypes.byref(action)) == 0


class Filter:
    """The worker's filter, built in the grader, installed by the worker after fork (`install`)."""

    def __init__(self, arch: str):
        libc = c_library()
        if libc is None:
            raise OSError(errno.ENOSYS, "seccomp needs Linux")
        code = program(arch)
        self._code = (_SockFilter * len(code))(*(_SockFilter(*op) for op in code))
        self._fprog = _SockFprog(len(code), self._code)
        self._prctl = libc.prctl
        self._nnp_args = (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), *[ctypes.c_ulong(0)] * 3)
        self._filter_args = (
            ctypes.c_int(_PR_SET_SECCOMP),
            ctypes.c_ulong(_SECCOMP_MODE_FILTER),
            ctypes.byref(self._fprog),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )

    def install(self) -> None:
        """Filter the calling process and every process it execs, for good (run in the forked child)."""
        if self._prctl(*self._nnp_args) != 0 or self._prctl(*self._filter_args) != 0:
            code = ctypes.get_errno()
            raise OSError(code, "the seccomp filter could not be installed: " + os.strerror(code))


@lru_cache(maxsize=1)
def worker_filter() -> Filter | None:
    """The worker's filter (built once: every worker installs the same); None where this machine filters
    no system calls (not Linux, another architecture, a kernel without seccomp filters)."""
    arch = machine()
    if arch is None or not available():
        return None
    return Filter(arch)
