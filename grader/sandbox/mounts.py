"""The mount layer and the scratch quota: a worker's disk and what of the filesystem it sees.

Where the machine allows mounts (root with CAP_SYS_ADMIN: a laptop as root, CI; not Docker's default):
- the worker's scratch folder is a tmpfs of its own, limited in bytes and inodes (`mount_scratch`,
  mounted by the grader on the sandbox's fresh `work` folder before the Landlock ruleset is built, so
  that the ruleset's write rule is the tmpfs's own root; removed by `unmount_scratch`, and a grader
  killed mid-grading leaves its tmpfs to the next lease of the uid, `unmount_stale`);
- in a mount namespace of the worker's own (`WorkerView`, run in the forked child, propagation made
  private first so nothing reaches the grader's view): the world-writable folders (/tmp, /var/tmp,
  /dev/shm, /run/lock, /dev/mqueue) are the scratch tmpfs itself, and /proc is an empty read-only
  folder (nothing of the grader's command lines, nor of its own pages: issue 33). The worker drops root
  right after, so it can neither unmount nor mount anything.

Everywhere (`ScratchQuota`, which the call's deadline asks while the grader waits, and the sandbox when
a call returns): the grader measures what the worker holds on disk and ends it at its quota with a
message saying so. On a tmpfs that is one statvfs (at every check: a worker that filled it and returned
is ended too); elsewhere a walk (at most every QUOTA_SECONDS) of the scratch folder, the files the
worker holds open after unlinking them, and, where neither Landlock nor the mount layer keeps it there,
what its uid owns in the world-writable folders; every walk stops as soon as the quota is passed, so
its cost is bounded by the quota. What a worker may write past the quota before the grader sees it is
bounded by the tmpfs (none), or by what it writes between two walks. A worker in a user namespace of
its own (where neither Landlock nor seccomp refuse one, it may mount a tmpfs of any size there) is
ended at the first check, whatever it wrote.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from grader.sandbox.libc import c_library

CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
MNT_DETACH = 2
# mount_setattr(2), Linux 5.12+: the same number on x86_64 and arm64 (the generic table)
SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}.get(os.uname().machine if hasattr(os, "uname") else "")
AT_RECURSIVE, MOUNT_ATTR_RDONLY = 0x8000, 0x1
SANDBOXES = Path("/run/optlab-kit/sandboxes")  # root's; the sandboxes' homes, with the mount layer
QUOTA_SECONDS = 0.05  # at most how often the grader walks a worker's disk (a tmpfs: at every check)
# and at least how often: a slow walk (a worker that nests folders as the walk goes down them) must not
# space the readings out while it writes (the walk stops at the quota; the grader's time waiting for
# the worker is the call's own, bounded by its deadline)
QUOTA_MAX_SECONDS = 0.5
# and the walk takes at most a tenth of the grader's time (4,000 files: about 40 ms)
SCRATCH_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC


def _mount(libc: ctypes.CDLL, source: bytes | None, target: bytes, fstype: bytes | None, flags: int,
           data: bytes | None) -> None:  # fmt: skip
    if libc.mount(source, target, fstype, ctypes.c_ulong(flags), data) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount of {target.decode(errors='replace')} failed: {os.strerror(code)}")


@functools.cache
def mounts_allowed(writable: tuple[str, ...]) -> bool:
    """Whether this process may give a worker its view (`WorkerView`, covering `writable`) on a scratch
    tmpfs, and make the sandboxes' folder: tried once in a forked child, in a mount namespace of its
    own, so nothing is mounted here."""
    libc = c_library()
    if libc is None or os.geteuid() != 0 or not hasattr(os, "fork"):
        return False
    try:
        sandboxes()
    except OSError:  # a read-only /run: the sandboxes stay in TMPDIR, without the mount layer
        return False
    target = tempfile.mkdtemp(prefix="optlab-mount-probe-", dir=SANDBOXES)  # where scratch folders go
    try:
        view = WorkerView(Path(target), writable)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                if libc.unshare(CLONE_NEWNS) != 0:
                    os._exit(1)
                _mount(libc, None, b"/", None, MS_REC | MS_PRIVATE, None)
                _mount(libc, b"tmpfs", target.encode(), b"tmpfs", SCRATCH_FLAGS, b"size=64k,nr_inodes=16")
                view()  # everything a worker's start does
            except OSError:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0
    finally:
        os.rmdir(target)


def sandboxes() -> Path:
    """Where sandboxes' homes go with the mount layer: a folder of root's that others may only pass
    through, in no world-writable folder (the worker's view covers those with its scratch)."""
    SANDBOXES.mkdir(parents=True, exist_ok=True, mode=0o711)
    info = os.stat(SANDBOXES, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise OSError(f"{SANDBOXES} must be a folder of root's that only root may write: remove it")
    os.chmod(SANDBOXES, 0o711)
    parent = os.stat(SANDBOXES.parent).st_mode
    if not parent & stat.S_IXOTH:  # made under a strict umask: the worker must pass through
        os.chmod(SANDBOXES.parent, stat.S_IMODE(parent) | stat.S_IXOTH)
    return SANDBOXES


def mount_scratch(work: Path, uid: int, size_bytes: int, files: int) -> None:
    """Mount a tmpfs of `size_bytes` and `files` inodes on the empty folder `work`, owned by `uid`
    (mode 700); OSError where the machine refuses."""
    libc = c_library()
    if libc is None:
        raise OSError("no libc: no mounts")
    options = f"size={size_bytes},nr_inodes={files},mode=0700,uid={uid},gid={uid}"
    _mount(libc, b"tmpfs", os.fsencode(work), b"tmpfs", SCRATCH_FLAGS, options.encode())


def unmount_scratch(work: Path) -> None:
    """Detach the scratch tmpfs at `work` (its memory is freed once no process holds a file of it)."""
    libc = c_library()
    if libc is not None:
        libc.umount2(os.fsencode(work), MNT_DETACH)


def hold_home(home: Path) -> int:
    """Mark the sandbox folder `home` as this grader's own for as long as the descriptor returned stays
    open (an exclusive flock on the folder: the kernel drops it when the grader ends, however it ends).
    Taken before the scratch tmpfs is mounted in it, so that no grader ever finds a tmpfs of a live
    sandbox unheld; the caller closes the descriptor once the folder is gone."""
    import fcntl  # POSIX only, as mounts are

    handle = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _abandoned(home: Path) -> bool:
    """Whether no grader holds the sandbox folder `home` (`hold_home`): its grader ended without closing
    it. A folder another grader holds, whichever lease folder or PID namespace it uses, is never stale."""
    import fcntl

    try:
        handle = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(handle)  # the probe's lock goes with it
    return True


def unmount_stale(uid: int) -> None:
    """Detach every scratch tmpfs of `uid` still mounted whose sandbox no grader holds (its grader was
    killed before it closed), and remove the sandbox folder it was in. A sandbox a live grader holds is
    never touched, even where that grader's worker runs under the same uid (another kit's lease folder,
    another PID namespace)."""
    libc = c_library()
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        try:
            mount_point = fields[4]
            after = fields[fields.index("-") + 1 :]  # fstype, source, super options
        except (IndexError, ValueError):
            continue
        options = after[2].split(",") if len(after) >= 3 else []
        if after[:1] == ["tmpfs"] and f"uid={uid}" in options and "optlab-sandbox-" in mount_point:
            path = Path(mount_point.encode().decode("unicode_escape"))  # mountinfo escapes spaces as \040
            if not _abandoned(path.parent):
                continue
            if libc is not None and libc.umount2(os.fsencode(path), MNT_DETACH) == 0:
                if path.parent.parent == SANDBOXES:
                    remove_tree(path.parent)


def _mask_proc(libc: ctypes.CDLL) -> None:
    """An empty, read-only folder on /proc: nothing of any process, the worker's own included. A proc
    with hidepid (before issue 33) hid the others, but the worker's own /proc/self is a probe of the page
    cache every grading shares (pagemap's present bits after a fault-around, smaps' resident pages, the
    fault counts in stat, the bytes io read from disk), and Python needs none of it."""
    _mount(libc, b"none", b"/proc", b"tmpfs", MS_RDONLY | SCRATCH_FLAGS, b"size=4k,nr_inodes=1,mode=0555")


class WorkerView:
    """What the worker's process does in the forked child, as root, before it drops root: a mount
    namespace of its own in which every world-writable folder is its scratch tmpfs and /proc is empty.
    Everything it needs is prepared here, in the grader."""

    def __init__(self, scratch: Path, writable: Iterable[str]):
        libc = c_library()
        if libc is None:
            raise OSError("no libc: no mounts")
        self.libc = libc
        self.scratch = os.fsencode(scratch)
        self.covered = [os.fsencode(p) for p in writable if os.path.isdir(p) and not os.path.islink(p)]
        self.read_only = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
        self.writable = _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)

    def __call__(self) -> None:
        libc = self.libc
        if libc.unshare(CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
        _mount(libc, None, b"/", None, MS_REC | MS_PRIVATE, None)  # nothing below reaches the grader
        # every mount read-only but the scratch tmpfs: no file or folder writable by others anywhere
        # (where the kernel has mount_setattr; elsewhere the world-writable folders below are covered)
        if self._set(b"/", AT_RECURSIVE, self.read_only):
            self._set(self.scratch, 0, self.writable)
        for folder in self.covered:
            _mount(libc, self.scratch, folder, None, MS_BIND, None)
        _mask_proc(libc)

    def _set(self, path: bytes, flags: int, attr: _MountAttr) -> bool:
        """mount_setattr(path, flags, attr); False where the kernel has none (before Linux 5.12)."""
        if SYS_MOUNT_SETATTR is None:
            return False
        size = ctypes.sizeof(attr)
        if self.libc.syscall(SYS_MOUNT_SETATTR, -100, path, flags, ctypes.byref(attr), size) == 0:
            return True  # -100: AT_FDCWD
        code = ctypes.get_errno()
        if code in (errno.ENOSYS, errno.EINVAL):
            return False
        raise OSError(code, f"mount_setattr of {path.decode(errors='replace')} failed: {os.strerror(code)}")


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("attr_set", "attr_clr", "propagation", "userns_fd")]


# -- the quota the grader measures ------------------------------------------------------------------


class ScratchQuota:
    """A worker's disk quota, measured by the grader: `breach(pid)` says how the worker passed it (None
    while it holds; a walk of the disk is made at most every QUOTA_SECONDS, None meanwhile)."""

    def __init__(self, scratch: Path, max_bytes: int, max_files: int, mounted: bool,
                 shared_uid: int | None, shared: Iterable[str] = ()):  # fmt: skip
        """`mounted`: `scratch` is a tmpfs of exactly the quota; `shared_uid`: also count what this uid
        owns in the `shared` world-writable folders (where no layer keeps the worker out of them)."""
        self.scratch, self.max_bytes, self.max_files = scratch, max_bytes, max_files
        self.mounted, self.shared_uid, self.shared = mounted, shared_uid, tuple(shared)
        self.next_reading = 0.0
        self.breached = False
        self.user_namespace = _user_namespace(os.getpid())  # the workers' own: the grader's

    def breach(self, pid: int | None) -> str | None:
        if pid is not None and _user_namespace(pid) not in (None, self.user_namespace):
            # unshare(CLONE_NEWUSER | CLONE_NEWNS) where neither Landlock nor seccomp refuse it: a tmpfs
            # of its own, of any size, where no quota of ours holds (one readlink: at every check)
            self.breached = True
            return "it made a user namespace of its own (where it could mount a file system of any size)"
        if not self.mounted:
            now = time.monotonic()
            if now < self.next_reading:
                return None
        used_bytes, used_files = self.usage(pid)
        if not self.mounted:  # a walk of thousands of files takes tens of ms: a tenth of the time, at most
            self.next_reading = now + min(QUOTA_MAX_SECONDS, max(QUOTA_SECONDS, 9 * (time.monotonic() - now)))
        if used_bytes < self.max_bytes and used_files < self.max_files:
            return None
        self.breached = True
        if used_bytes >= self.max_bytes:
            what = f"{self.max_bytes / (1 << 20):g} MB"
        else:
            what = f"{self.max_files} files"
        return f"it wrote {what} or more on disk (the quota of its scratch folder)"

    def usage(self, pid: int | None) -> tuple[int, int]:
        """Bytes and files (inodes) the worker holds; past the quota, counting stops."""
        if self.mounted:  # a tmpfs of exactly the quota: full is at the quota
            info = os.statvfs(self.scratch)
            used = (info.f_blocks - info.f_bfree) * info.f_frsize if info.f_bavail else self.max_bytes
            return used, info.f_files - info.f_ffree
        tally = _Tally(self.max_bytes, self.max_files)
        tally.walk(str(self.scratch))
        if pid is not None:
            tally.open_unlinked(pid)
        if self.shared_uid is not None:
            for top in self.shared:
                tally.owned(top, self.shared_uid)
        return tally.bytes, tally.files

    def reset(self) -> None:
        """Empty the scratch folder (after a breach, before the next worker starts)."""
        for entry in os.scandir(self.scratch):
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
        self.breached = False


def _user_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/user")
    except OSError:
        return None


class _Tally:
    """Bytes (allocated blocks) and inodes counted until either passes its cap."""

    def __init__(self, max_bytes: int, max_files: int):
        self.max_bytes, self.max_files = max_bytes, max_files
        self.bytes = self.files = 0
        self.seen: set[tuple[int, int]] = set()

    def full(self) -> bool:
        return self.bytes >= self.max_bytes or self.files >= self.max_files

    def add(self, info: os.stat_result) -> None:
        if (info.st_dev, info.st_ino) in self.seen:
            return
        self.seen.add((info.st_dev, info.st_ino))
        self.files += 1
        self.bytes += info.st_blocks * 512

    def walk(self, folder: str) -> None:
        """Count what `folder` holds, however deep: each folder entered by name from its parent and left
        by "..", one descriptor at a time (a path past PATH_MAX, 2,000 folders down, cannot be opened:
        what lies below it would go uncounted)."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        try:
            fd = os.open(folder, flags)
        except OSError:
            return
        entered: list[list[str]] = []  # for each folder entered, its parent's folders still to count
        try:
            folders = self._count(fd)
            while not self.full():
                if folders:
                    try:
                        child = os.open(folders.pop(), flags, dir_fd=fd)
                    except OSError:
                        continue
                    os.close(fd)
                    fd = child
                    entered.append(folders)
                    folders = self._count(fd)
                elif entered:
                    parent = os.open("..", flags, dir_fd=fd)
                    os.close(fd)
                    fd = parent
                    folders = entered.pop()
                else:
                    return
        except OSError:
            return
        finally:
            os.close(fd)

    def _count(self, fd: int) -> list[str]:
        """Count the entries of the folder open as `fd`; the names of its folders."""
        folders = []
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                self.add(info)
                if stat.S_ISDIR(info.st_mode):
                    folders.append(entry.name)
                if self.full():
                    break
        return folders

    def open_unlinked(self, pid: int) -> None:
        """Files the worker holds open after removing them: on disk, in no folder."""
        try:
            fds = list(os.scandir(f"/proc/{pid}/fd"))
        except OSError:
            return
        for fd in fds:
            try:
                info = os.stat(fd.path)  # follows the descriptor to its file, removed or not
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 0:
                self.add(info)

    def owned(self, folder: str, uid: int) -> None:
        """What `uid` owns in a world-writable `folder`, at any depth (as isolation.sweep_uid removes)."""
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if self.full():
                return
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid == uid:
                self.add(info)
                if stat.S_ISDIR(info.st_mode):
                    self.walk(entry.path)
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH:
                self.owned(entry.path, uid)


def remove_tree(path: str | Path) -> None:
    """Remove a folder and all it holds, however deep, following no link, ignoring what cannot be
    removed. shutil.rmtree recurses once per level: a worker's scratch nested deeper than Python's
    recursion limit made it raise RecursionError, ignore_errors or not. Here one descriptor at a time,
    each folder entered by name from its parent (paths that deep are longer than the kernel takes)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    entered: list[tuple[str, list[str]]] = []  # each folder entered: its name, its parent's still to do
    try:
        folders = _empty_of_files(fd)
        while True:
            if folders:
                name = folders.pop()
                with contextlib.suppress(OSError):
                    fd, parent = os.open(name, flags, dir_fd=fd), fd
                    os.close(parent)
                    entered.append((name, folders))
                    folders = _empty_of_files(fd)
                continue
            if not entered:
                break
            fd, emptied = os.open("..", flags, dir_fd=fd), fd
            os.close(emptied)
            name, folders = entered.pop()
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)
    except OSError:
        return
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _empty_of_files(fd: int) -> list[str]:
    """Unlink what the folder open as `fd` holds but folders; their names."""
    folders = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.name, dir_fd=fd)
    return folders
