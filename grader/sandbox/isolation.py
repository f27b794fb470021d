"""The operating system's layers around a worker, and the state they keep between workers.

What this machine allows (`machine_layers`: a uid per worker as root, Landlock, network and IPC
namespaces, the mount layer of grader.sandbox.mounts, rlimits, a seccomp filter, a memory cgroup per worker,
the audit hook); a numeric uid of its own for each concurrent worker (`UidLease`, shared by every grader
process on the machine through lock files); removing everything a worker uid left behind (`sweep_uid`);
a kit those uids cannot read (`protect_kit`); and nothing in /proc that tells a worker where the
submissions are (`hide_command_line`, `private_copy`). grader.sandbox.sandbox applies them.

The audit hook is listed as a layer but is no boundary: it lives in the interpreter it watches.
`OPTLAB_LAYERS_OFF` (comma-separated: landlock, namespaces, mounts, audit_hook, seccomp, cgroup) switches
layers off, for the kit's own tests of each fallback only.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.errors import KitError
from grader.sandbox import cgroup, landlock, mounts, seccomp
from grader.sandbox.libc import c_library
from grader.sandbox.mounts import remove_tree

LAYERS_OFF = "OPTLAB_LAYERS_OFF"
SWITCHABLE = ("landlock", "namespaces", "mounts", "audit_hook", "seccomp", "cgroup")
# Numeric uids (and gids) for workers: no passwd entry needed; far from the system's and people's ranges,
# below nobody (65534) and within the 65,536 uids a user namespace maps by default. A site that maps uids
# differently, or wants another range, sets WORKER_UIDS_VARIABLE to "FIRST-LAST".
WORKER_UIDS_VARIABLE = "OPTLAB_WORKER_UIDS"
DEFAULT_WORKER_UIDS = range(64100, 65500)
# root's own: one lock file per uid in use; shared by every grader of the machine (a container may share
# the host's by a bind mount: its gradings then never even draw a uid in use on the host)
LEASES_VARIABLE = "OPTLAB_UID_LEASES"
DEFAULT_LEASES = Path("/run/optlab-kit/worker-uids")
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
NAMESPACE_FLAGS = CLONE_NEWNET | CLONE_NEWIPC  # a loopback that is down; SysV IPC and mqueues of its own
SYSVIPC = {"shm": "shmctl", "sem": "semctl", "msg": "msgctl"}  # /proc/sysvipc/<kind> -> libc remover


class IsolationError(KitError):
    """The machine cannot provide a layer it claims (no free worker uid, a lease folder not root's)."""


@dataclass(frozen=True)
class Layers:
    """The layers a worker gets on this machine; `landlock` is the Landlock ABI (0: none)."""

    uid: bool  # as root: a distinct unprivileged uid per concurrent worker, the kit unreadable by it
    landlock: int
    namespaces: bool
    rlimits: bool
    audit_hook: bool
    seccomp: bool = False  # no socket, memfd, shared memory or io_uring (grader.sandbox.seccomp)
    cgroup: int = 0  # the version of the memory cgroup each worker gets (0: none; grader.sandbox.cgroup)
    # as root with CAP_SYS_ADMIN (grader.sandbox.mounts): a scratch tmpfs of the disk quota, the
    # world-writable folders the worker's own, /proc showing only its own processes; a switch of its own (not
    # tied to `namespaces`) so that each can be tried without the other
    mounts: bool = False

    @property
    def contained(self) -> bool:
        """Whether an OS layer keeps hostile code away from files and other workers."""
        return self.uid or self.landlock > 0

    def as_data(self) -> dict:
        return dict(asdict(self), contained=self.contained)

    def summary(self) -> str:
        """One line naming the active layers, and a second that warns where hostile code is not contained."""
        names = [
            name
            for name, on in (
                ("a uid per worker", self.uid),
                (f"Landlock ABI {self.landlock}", self.landlock),
                ("network and IPC namespaces", self.namespaces),
                ("a mount namespace (scratch tmpfs, private /tmp, an empty /proc)", self.mounts),
                ("rlimits", self.rlimits),
                ("seccomp filter", self.seccomp),
                (f"memory cgroup v{self.cgroup}", self.cgroup),
                ("audit hook (tripwire)", self.audit_hook),
            )
            if on
        ]
        line = "isolation: " + (", ".join(names) or "none")
        if not self.contained:
            line += (
                "\nWARNING: no OS layer holds here (not root, no Landlock): hostile code is not contained; "
                "grade untrusted submissions as root on Linux (the Docker image, Gradescope)"
            )
        return line


def switched_off() -> frozenset[str]:
    """Layers the kit's tests switched off through OPTLAB_LAYERS_OFF."""
    names = {n.strip() for n in os.environ.get(LAYERS_OFF, "").split(",") if n.strip()}
    unknown = names - set(SWITCHABLE)
    if unknown:
        known = ", ".join(SWITCHABLE)
        raise IsolationError(f"{LAYERS_OFF} names unknown layers {sorted(unknown)}: use {known}")
    return frozenset(names)


# A machine with no layer at all (Windows: no rlimits, uids, Landlock or the like): the worker is a plain
# process with the call deadlines (grader.sandbox.sandbox), and not even the audit hook, whose rules are POSIX
# paths.
NO_LAYERS = Layers(uid=False, landlock=0, namespaces=False, rlimits=False, audit_hook=False)


def machine_layers() -> Layers:
    """The layers this machine gives a worker now (the switch is read each time; the probes once)."""
    if os.name != "posix" or not _has_rlimits():
        return NO_LAYERS
    off = switched_off()
    root = os.geteuid() == 0
    return Layers(
        uid=root,
        landlock=0 if "landlock" in off else _landlock_abi(),
        namespaces=root and "namespaces" not in off and namespaces_allowed(),
        rlimits=_has_rlimits(),
        audit_hook="audit_hook" not in off,
        seccomp="seccomp" not in off and seccomp.available(),
        cgroup=0 if "cgroup" in off else cgroup.version(),
        mounts=root and "mounts" not in off and mounts.mounts_allowed(SHARED_WRITABLE),
    )


@functools.cache
def _landlock_abi() -> int:
    return landlock.abi_version()


def _has_rlimits() -> bool:
    try:
        import resource  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def namespaces_allowed() -> bool:
    """Whether unshare(NAMESPACE_FLAGS) works here (root without CAP_SYS_ADMIN, as in Docker, cannot)."""
    unshare = unshare_function()
    if unshare is None:
        return False
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            unshare()
        except OSError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def unshare_function():
    """unshare(NAMESPACE_FLAGS) through libc (Python's os.unshare is 3.12+), prepared in the parent so the
    forked child imports nothing; raises OSError. None where libc has no unshare (not Linux)."""
    call = getattr(c_library(), "unshare", None)
    if call is None:
        return None

    def unshare() -> None:
        if call(NAMESPACE_FLAGS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET | CLONE_NEWIPC) failed")

    return unshare


class UidLease:
    """A worker uid held by this process until `release`: no other worker of a grader on this file system
    runs under it meanwhile, whichever lease folder each names (the lease is locked in its own folder and
    in the machine's, DEFAULT_LEASES, where the two differ: issue 33, where kits with lease folders of
    their own drew one uid and one swept the other's live sandbox). Graders that share no file system (a
    host and its containers, two containers) draw from a wide range at a random place, pass over every
    uid a process they can see already runs under, and kill no process they did not start (a worker
    cannot start another: RLIMIT_NPROC is 0, so killing its process group ends all of it): a uid drawn
    twice costs neither grading anything. Whatever the uid left behind in files and IPC is swept at
    lease and release, where no process of it is left."""

    def __init__(self) -> None:
        folders = lease_folders()
        uids = worker_uids()
        busy = _process_uids()
        start = int.from_bytes(os.urandom(4), "big") % len(uids)
        for uid in (uids[(start + step) % len(uids)] for step in range(len(uids))):
            if uid in busy:
                continue
            handles = _lock_all(folders, uid)
            if handles is None:
                continue
            self.uid = uid
            self._handles = handles
            sweep_uid(uid)
            return
        raise IsolationError(
            f"all {len(uids)} worker uids are in use: grade fewer submissions at once (-j), or give "
            f"{WORKER_UIDS_VARIABLE} a wider range"
        )

    def release(self) -> None:
        if not self._handles:
            return
        sweep_uid(self.uid)
        for handle in self._handles:
            os.close(handle)  # closing drops the lock
        self._handles = []


def _lock_all(folders: list[Path], uid: int) -> list[int] | None:
    """`uid`'s lease file locked in every one of `folders` (their descriptors), or None where any is
    held already (nothing is kept locked then)."""
    import fcntl  # POSIX only, as leases are (root on Linux): not where the student handout runs

    handles: list[int] = []
    for folder in folders:
        handle = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        handles.append(handle)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            for held in handles:
                os.close(held)
            return None
    return handles


def lease_folders() -> list[Path]:
    """Where a lease is locked: the lease folder (`leases_folder`), and the machine's own where that is
    another and can be kept (a read-only /run has none: the named folder alone then)."""
    named = leases_folder()
    machine = DEFAULT_LEASES
    if named.resolve() == machine.resolve():
        return [named]
    try:
        return [named, _root_only_folder(machine)]
    except (OSError, IsolationError):
        return [named]


def worker_uids() -> range:
    """The uids workers run under: WORKER_UIDS_VARIABLE's "FIRST-LAST", else DEFAULT_WORKER_UIDS."""
    text = os.environ.get(WORKER_UIDS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_WORKER_UIDS
    try:
        first, last = (int(part) for part in text.split("-"))
    except ValueError:
        first = last = -1
    if not 0 < first <= last < 2**32 - 1:
        raise IsolationError(
            f"{WORKER_UIDS_VARIABLE}={text!r} is not a range of uids: write FIRST-LAST, such as 64100-65499"
        )
    return range(first, last + 1)


def leases_folder() -> Path:
    """The folder of lease files (LEASES_VARIABLE, else DEFAULT_LEASES), made root's alone."""
    return _root_only_folder(Path(os.environ.get(LEASES_VARIABLE) or DEFAULT_LEASES))


def _root_only_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = os.stat(folder, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        raise IsolationError(f"{folder} must be a folder of root's that only root may open: remove it")
    return folder


def sweep_uid(uid: int, stale_mounts: bool = True) -> None:
    """Remove what `uid` owns in the shared writable folders (at any depth) and in SysV IPC, and
    (`stale_mounts`: where no sandbox of this process holds the uid) a scratch tmpfs of its left
    mounted, so nothing a worker wrote outlives its grading; nothing where a process runs under `uid`
    (another grader's worker, which this one did not start and must not disturb)."""
    if uid in _process_uids():
        return
    if stale_mounts:
        mounts.unmount_stale(uid)
    for top in SHARED_WRITABLE:
        if os.path.isdir(top):
            _remove_owned(top, uid)
    remove_sysv_ipc(uid)


def _process_uids() -> set[int]:
    """The uids of the processes this grader can see (/proc: its PID namespace and those below it)."""
    uids = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                uids.add(entry.stat().st_uid)
    return uids


def _remove_owned(folder: str, uid: int) -> None:
    """Remove the entries of `folder` that `uid` owns; descend into folders others own but anyone may
    write into (a /tmp/shared of 1777), where `uid` may have left files too."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid:
                if stat.S_ISDIR(info.st_mode):
                    remove_tree(entry.path)
                else:
                    os.unlink(entry.path)
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH:
                _remove_owned(entry.path, uid)
        except OSError:
            continue


def remove_sysv_ipc(uid: int) -> None:
    """Remove the SysV shared memory, semaphores and message queues `uid` owns (outside an IPC namespace
    of its own, they would outlive the worker, and the uid's next worker could read them). Root with
    CAP_SYS_ADMIN removes them itself; a container's root has no CAP_SYS_ADMIN (IPC_RMID gives EPERM), so
    a short child under `uid` removes the rest as their owner. Any still there is an IsolationError."""
    import subprocess
    import sys

    def owned() -> list[tuple[str, int]]:
        found = []
        for kind in SYSVIPC:
            try:
                lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                going = kind == "shm" and int(fields[2], 8) & 0o1000  # SHM_DEST: gone at last detach
                if int(fields[_owner_column(kind)]) == uid and not going:
                    found.append((kind, int(fields[1])))
        return found

    left = owned()
    if not left:
        return
    remove = (  # shmctl(id, IPC_RMID, 0), semctl(id, 0, IPC_RMID), msgctl(id, IPC_RMID, 0)
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for item in sys.argv[1:]:\n"
        "    remover, ident = item.split(':')\n"
        "    getattr(libc, remover)(int(ident), 0, None)\n"
    )
    libc = c_library()
    for kind, ident in left if libc is not None else ():
        getattr(libc, SYSVIPC[kind])(ident, 0, None)
    left = owned()
    if left and os.geteuid() == 0:
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", remove, *(f"{SYSVIPC[k]}:{i}" for k, i in left)],
            user=uid, group=uid, extra_groups=[], cwd="/", env={}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False,
        )  # fmt: skip
        left = owned()
    if left:
        raise IsolationError(
            f"worker uid {uid}'s SysV IPC ({', '.join(f'{k} {i}' for k, i in left)}) could not be "
            "removed: remove it with ipcrm, or grade where root may (CAP_SYS_ADMIN or CAP_SETUID)"
        )


def _owner_column(kind: str) -> int:
    # /proc/sysvipc columns: shm: key shmid perms size cpid lpid nattch uid ...; sem: key semid perms nsems
    # uid ...; msg: key msqid perms cbytes qnum lspid lrpid uid ...
    return {"shm": 7, "sem": 4, "msg": 7}[kind]


def protect_kit(root: Path, package: Path) -> Callable[[], None]:
    """As root: make the kit unreadable by the worker uids while it grades; returns what gives the kit
    back the modes it had, to call once the grading's workers are gone. The checkout keeps only the
    search bit for others (paths through it still resolve); every entry in it (examples, .git, dist,
    tests, solutions) and the installed grader package, if it lives elsewhere, lose every permission of
    others. Virtual environments keep theirs: an interpreter may live there, and they hold no secret
    but the package.

    Gradings of one kit at once (a batch's children) share the closed modes: each holds the record of the
    modes it found (KIT_MODES, in the kit's private cache folder) locked shared while it grades; the
    first records them; the last to end (the one that gets the record exclusively) restores them, so the
    checkout is left as readable as it was (a later run as another user can read it). Recording and
    restoring take turns under a lock of the cache folder. A grader killed before it ended leaves the
    kit closed until the next grading of it ends. Where the record cannot be kept (a read-only kit), the
    kit stays closed, as before."""
    targets = [root, *(e for e in root.iterdir() if not e.name.startswith(".venv"))]
    if root not in package.resolve().parents:
        targets.append(package)
    key = str(root.resolve())
    if key in _HELD:  # this process protects the kit already (flock is per open file: not twice)
        _HELD[key][1] += 1
        _close_to_others(root, targets)
        return functools.partial(_release_kit, key)
    opened = _open_modes_record(root)
    if opened is None:
        _close_to_others(root, targets)
        return lambda: None
    import fcntl  # POSIX only: imported where used

    turn, record = opened
    try:
        fcntl.flock(turn, fcntl.LOCK_EX)  # while no other grading records or restores the modes
        fcntl.flock(record, fcntl.LOCK_SH)  # held until this grading ends
        if not _read_modes(record):  # the first grading of the kit now: the modes as they were
            _write_modes(record, {str(p): m for p in targets if (m := _mode(p)) is not None})
        _close_to_others(root, targets)
    except BaseException:
        os.close(record)
        raise
    finally:
        os.close(turn)
    _HELD[key] = [record, 1]
    return functools.partial(_release_kit, key)


_HELD: dict[str, list[int]] = {}  # kit root -> [its modes record, protections of this process]


def _release_kit(key: str) -> None:
    """One protection of this process ended; the last one restores the kit (where no other grader holds
    it). Called twice, the second call does nothing."""
    held = _HELD.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[key]
        _restore_kit(Path(key), held[0])


KIT_MODES = "kit-modes.json"  # in the kit's BYTECODE_CACHE folder (root's, private)


def _close_to_others(root: Path, targets: list[Path]) -> None:
    for path in targets:
        if path == root:
            _chmod(root, lambda mode: (mode & ~0o007) | 0o001)
        else:
            _chmod(path, lambda mode: mode & ~0o007)


def _restore_kit(root: Path, record: int) -> None:
    """Give the kit back its recorded modes, where no other grading of it holds the record (each one
    that still grades holds it shared; the last to end restores)."""
    import fcntl

    try:
        fcntl.flock(record, fcntl.LOCK_UN)
        opened = _open_modes_record(root)
        if opened is None:
            return
        turn, again = opened
        os.close(again)
        try:
            fcntl.flock(turn, fcntl.LOCK_EX)
            try:
                fcntl.flock(record, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # another grading holds it: the last one restores
                return
            for path, mode in _read_modes(record).items():
                with contextlib.suppress(OSError):
                    if _mode(Path(path)) is not None:
                        os.chmod(path, mode)
            _write_modes(record, {})
        finally:
            os.close(turn)
    finally:
        os.close(record)


def _open_modes_record(root: Path) -> tuple[int, int] | None:
    """The kit's cache folder (whose lock takes turns) and its record of the kit's modes (made, private),
    opened; None where they cannot be."""
    from grader.layout import BYTECODE_CACHE

    folder = root / BYTECODE_CACHE
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():
            return None
        cloexec = getattr(os, "O_CLOEXEC", 0)
        turn = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | cloexec)
    except OSError:
        return None
    try:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | cloexec
        return turn, os.open(folder / KIT_MODES, flags, 0o600)
    except OSError:
        os.close(turn)
        return None


def _read_modes(record: int) -> dict[str, int]:
    import json

    os.lseek(record, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(record, 65536):
        chunks.append(chunk)
    try:
        modes = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {}
    return {str(k): int(v) for k, v in modes.items()} if isinstance(modes, dict) else {}


def _write_modes(record: int, modes: dict[str, int]) -> None:
    import json

    data = json.dumps(modes).encode("utf-8")
    os.ftruncate(record, 0)
    os.lseek(record, 0, os.SEEK_SET)
    while data:
        data = data[os.write(record, data) :]
    os.fsync(record)


def _mode(path: Path) -> int | None:
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except OSError:
        return None
    return None if stat.S_ISLNK(mode) else stat.S_IMODE(mode)


def _chmod(path: Path, change) -> None:
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
        if not stat.S_ISLNK(mode):
            os.chmod(path, change(stat.S_IMODE(mode)))
    except OSError as error:
        if error.errno != errno.ENOENT:
            raise


def hide_command_line(shown: str) -> None:
    """Overwrite this process's command line, as /proc shows it to every user, with `shown`: a grader's
    arguments (a batch folder, a submission's path) must not tell a worker where the submissions are.
    The kernel shows the memory of the original argv (arg_start to arg_end, fields 48 and 49 of
    /proc/self/stat); Python works on its own copy, so nothing reads that memory after start."""
    try:
        text = Path("/proc/self/stat").read_bytes().decode("ascii", "replace")
        fields = text.rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])
    except (OSError, IndexError, ValueError):
        return
    if not 0 < start < end:
        return
    title = shown.encode("utf-8")[: end - start - 1]  # the last byte stays NUL: no setproctitle overflow
    ctypes.memset(start, 0, end - start)
    ctypes.memmove(start, title, len(title))


def readable_by_others(path: Path) -> bool:
    """Whether any user may open `path`: every folder above it passable by others, and it readable."""
    path = path.resolve()
    try:
        passable = all(os.stat(step).st_mode & stat.S_IXOTH for step in path.parents)
        return passable and bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return False


def exposed_source_warning(source: Path, layers: Layers) -> str | None:
    """A warning where the uid layer alone stands between the workers and a batch's source that others
    may read: a worker that learns or guesses its path (from a wrapper's command line in /proc, such
    as sudo's or timeout's) could read every other submission."""
    if not layers.uid or layers.landlock or layers.mounts or not readable_by_others(source):
        return None
    return (
        f"WARNING: {source} is readable by every user, and this machine has neither Landlock nor mount "
        "namespaces to keep the workers out of it: make it private first (chmod -R o-rwx), or grade "
        "where either layer holds"
    )
