"""Linux Landlock: a ruleset built in the grader that confines the worker's files, TCP and signals.

Linux Landlock for the grading worker: one job, build in the grader a ruleset that confines the worker's
files, TCP, abstract unix sockets and signals, and enforce it in the forked worker just before exec.

Landlock is a kernel layer beneath the worker's other limits (another user, rlimits, the audit hook); it
holds for root and non-root alike and needs no privilege. The ruleset is built in the parent (paths
opened, rights masked to the kernel's ABI, rules added); the child only calls prctl(PR_SET_NO_NEW_PRIVS)
and landlock_restrict_self on the inherited ruleset fd, with arguments prepared in the parent.

Why our own ctypes module and not a binding from PyPI (read in full, see docs/landlock.md):
- `landlock` (1.0.0.dev5, alpha, last release 2025-05): handles filesystem rights only (its ruleset
  struct has no handled_access_net or scoped), so no TCP (ABI 4) and no scopes (ABI 6).
- `landlockpy` (0.2.0, 2026-09, 0BSD, no dependencies): covers ABI 1..11 with net and scopes and is well
  made, but it is young, would be a new pinned dependency of every grading image (Gradescope, Otter), and
  its restrict() builds IntFlag values and goes through its Python wrappers in the child.
  Both are thin ctypes wrappers over the same three syscalls; ours is about as long as the part of
  landlockpy we would use, does exactly two prepared libc calls after fork, and splits file from
  directory rights (the kernel rejects directory rights on a file rule with EINVAL), which
  landlockpy leaves to the caller.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat
import struct
import sys
import sysconfig
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from grader.sandbox.libc import c_library

# The landlock syscalls come from the generic table: the same numbers on x86_64 and aarch64 (and every
# other architecture that has them).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
KNOWN_ABI = 7  # the newest ABI whose rights this module knows; a newer kernel still accepts these

# Filesystem rights (linux/landlock.h), with the ABI that introduced each.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
# The only rights a rule on a file (not a directory) may carry.
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_READ_ONLY = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE


def fs_rights(abi: int) -> int:
    """Every filesystem right the given ABI knows (0 for ABI 0)."""
    if abi < 1:
        return 0
    rights = _FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def net_rights(abi: int) -> int:
    """The network rights the given ABI knows: TCP bind and connect from ABI 4."""
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0


def scopes(abi: int) -> int:
    """The scopes the given ABI knows: abstract unix sockets and signals from ABI 6."""
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


def rule_rights(wanted: int, abi: int, is_dir: bool) -> int:
    """`wanted` masked to the ABI, and to the file rights for a rule on a file."""
    rights = wanted & fs_rights(abi)
    return rights if is_dir else rights & _FILE_RIGHTS


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


def attr_size(abi: int) -> int:
    """The struct's size as the ABI knows it (an older kernel takes a longer one only if the rest is 0)."""
    return 24 if abi >= 6 else 16 if abi >= 4 else 8


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _layout_ = "ms"  # the layout _pack_ implies; said explicitly for Python 3.14, ignored before
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args: object) -> int:
    """libc's syscall(2); every integer is passed as a C long (the call is variadic). OSError on -1."""
    libc = c_library()
    if libc is None:
        raise OSError(errno.ENOSYS, "Landlock needs Linux")
    ctypes.set_errno(0)
    wide = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = libc.syscall(ctypes.c_long(number), *wide)
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


@lru_cache(maxsize=1)
def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, no syscall, disabled)."""
    try:
        return max(0, _syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))
    except OSError:  # ENOSYS (no syscall), EOPNOTSUPP (built in but not enabled at boot)
        return 0


class Ruleset:
    """A Landlock ruleset built in the grader, enforced by the worker after fork (see `enforce`)."""

    def __init__(self, abi: int, handled_fs: int, handled_net: int, scoped: int):
        self.abi = abi
        self.rules = 0
        attr = _RulesetAttr(handled_fs, handled_net, scoped)
        self._fd = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), attr_size(abi), 0)
        os.set_inheritable(self._fd, False)  # the kernel sets O_CLOEXEC already; say it, never pass it on
        libc = c_library()
        if libc is None:  # unreachable: the ruleset's syscall above needs libc
            raise OSError(errno.ENOSYS, "Landlock needs Linux")
        # Everything enforce() passes, made here: the child only calls.
        self._prctl, self._restrict = libc.prctl, libc.syscall
        self._nnp_args = (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), *[ctypes.c_ulong(0)] * 3)
        self._restrict_args = (ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_long(self._fd), ctypes.c_long(0))

    def add_path(self, path: str | os.PathLike[str], wanted: int) -> bool:
        """Allow `wanted` (masked to the ABI and the kind of file) beneath `path`; False if it is absent."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return False
        try:
            rights = rule_rights(wanted, self.abi, stat.S_ISDIR(os.fstat(fd).st_mode))
            if not rights:
                return False
            attr = _PathBeneathAttr(rights, fd)
            _syscall(_SYS_ADD_RULE, self._fd, _RULE_PATH_BENEATH, ctypes.byref(attr), 0)
        finally:
            os.close(fd)
        self.rules += 1
        return True

    def enforce(self) -> None:
        """Confine the calling process for good (run in the forked child, the last step before exec).

        The fd number was inherited across fork: preexec runs before close_fds and exec.
        """
        if self._fd < 0:
            raise OSError(errno.EBADF, "the Landlock ruleset was closed")
        if self._prctl(*self._nnp_args) != 0 or self._restrict(*self._restrict_args) != 0:
            code = ctypes.get_errno()
            raise OSError(code, "Landlock could not be enforced: " + os.strerror(code))

    def close(self) -> None:
        """Close the ruleset's fd in the grader (after the worker started); calling it again does nothing."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> Ruleset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            self.close()


def worker_ruleset(scratch: Path, runtime: Path, read_only: Iterable[str] = ()) -> Ruleset | None:
    """The worker's ruleset, built in the grader; None where the kernel has no Landlock.

    Read (files, directories) and execute beneath the interpreter's standard library, its binary and
    shared libraries, `runtime`, /dev/urandom and `read_only`; read and write /dev/null; every right
    beneath `scratch`; nothing elsewhere. TCP bind and connect refused (ABI 4); abstract unix sockets
    and signals outside the worker's domain refused (ABI 6). OSError if the kernel refuses a rule.
    """
    abi = abi_version()
    if abi == 0:
        return None
    return ruleset_for_abi(min(abi, KNOWN_ABI), scratch, runtime, read_only)


def ruleset_for_abi(abi: int, scratch: Path, runtime: Path, read_only: Iterable[str]) -> Ruleset:
    """`worker_ruleset` for a given ABI (at most the kernel's): the tests try every ABI."""
    ruleset = Ruleset(abi, fs_rights(abi), net_rights(abi), scopes(abi))
    try:
        for path in (*interpreter_paths(), str(runtime), "/dev/urandom", *read_only):
            ruleset.add_path(path, _READ_ONLY)
        ruleset.add_path("/dev/null", FS_READ_FILE | FS_WRITE_FILE)  # open(os.devnull, "w") is common
        ruleset.add_path(scratch, fs_rights(abi))
    except BaseException:
        ruleset.close()
        raise
    return ruleset


@lru_cache(maxsize=1)
def interpreter_paths() -> tuple[str, ...]:
    """What the bare interpreter (-S, no site-packages) reads to start and import the standard library.

    The stdlib paths are the base interpreter's, not a venv's (whose platstdlib holds site-packages).
    Shared libraries and locale data come from the files this process has mapped: the ones the same
    interpreter binary needs (libpython if shared, libc, libm, ld-linux, ...), extension modules of
    installed packages left out. To those come the libraries every stdlib extension module needs
    (libz, libssl, libffi, ...), found from their ELF headers: so what a submission may import does not
    depend on what the grader happened to import first.
    """
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix, "installed_base": sys.base_prefix}
    paths = {sysconfig.get_path(name, vars=base) for name in ("stdlib", "platstdlib")}
    dynload = {p for p in sys.path if p.endswith("lib-dynload")}
    paths |= dynload | {p for p in sys.path if p.endswith(".zip")}
    paths.add(os.path.realpath(sys.executable))
    mapped = _mapped_files()
    paths |= mapped
    paths |= needed_libraries(dynload, mapped)
    # One rule per tree: a path beneath another one already listed needs none of its own.
    return tuple(sorted(p for p in paths if not any(p.startswith(q + os.sep) for q in paths)))


_SHARED = re.compile(r"\.so(\.[0-9.]+)?$|/locale/|/gconv/")


def _mapped_files() -> set[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return set()
    venv = sys.prefix if sys.prefix != sys.base_prefix else None
    found = set()
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/") or fields[5].endswith(" (deleted)"):
            continue
        path = fields[5]
        if not _SHARED.search(path) or "-packages/" in path or (venv and path.startswith(venv + os.sep)):
            continue
        found.add(path)
    return found


def needed_libraries(dynload: Iterable[str], mapped: Iterable[str]) -> set[str]:
    """The shared libraries the extension modules in `dynload` need, transitively (DT_NEEDED), looked for
    where the loader would find them: their RUNPATH, the folders of the libraries mapped here, the
    interpreter's LIBDIR and the system's."""
    folders = [os.path.dirname(p) for p in sorted(mapped) if ".so" in os.path.basename(p)]
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    folders += [sysconfig.get_config_var("LIBDIR") or "", f"/lib/{multiarch}", f"/usr/lib/{multiarch}"]
    folders += ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    todo = [e.path for d in dynload if os.path.isdir(d) for e in os.scandir(d) if e.name.endswith(".so")]
    seen, found = set(todo), set()
    while todo:
        needed, runpath = elf_needs(todo.pop())
        for name in needed:
            for folder in (*runpath, *folders):
                candidate = os.path.join(folder, name)
                if folder and os.path.isfile(candidate):
                    real = os.path.realpath(candidate)
                    found.add(real)
                    if real not in seen:
                        seen.add(real)
                        todo.append(real)
                    break
    return found


_DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 1, 5, 15, 29


def elf_needs(path: str) -> tuple[list[str], list[str]]:
    """(DT_NEEDED names, RPATH/RUNPATH folders) of a 64-bit little-endian ELF file; empty if it is not one
    (the kernels this module serves, x86_64 and aarch64, are both)."""
    try:
        with open(path, "rb") as elf:
            head = elf.read(64)
            if head[:6] != b"\x7fELF\x02\x01":
                return [], []
            (phoff,) = struct.unpack_from("<Q", head, 32)  # e_phoff
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            elf.seek(phoff)
            table = elf.read(phentsize * phnum)
            loads, dynamic = [], None
            for i in range(phnum):
                kind, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                if kind == 1:  # PT_LOAD: to turn the addresses in the dynamic section into file offsets
                    loads.append((vaddr, offset, filesz))
                elif kind == 2:  # PT_DYNAMIC
                    dynamic = (offset, filesz)
            if dynamic is None:
                return [], []
            elf.seek(dynamic[0])
            raw = elf.read(dynamic[1])
            entries = [struct.unpack_from("<qQ", raw, i) for i in range(0, len(raw) - 15, 16)]
            strtab = next((v for tag, v in entries if tag == _DT_STRTAB), None)
            base = next((o + strtab - v for v, o, n in loads if v <= (strtab or -1) < v + n), None)
            if base is None:
                return [], []

            def string(at: int) -> str:
                elf.seek(base + at)
                return elf.read(4096).split(b"\0", 1)[0].decode("utf-8", "replace")

            needed = [string(v) for tag, v in entries if tag == _DT_NEEDED]
            runpath = [
                f for tag, v in entries if tag in (_DT_RPATH, _DT_RUNPATH) for f in string(v).split(":")
            ]
    except (OSError, struct.error):
        return [], []
    origin = os.path.dirname(path)
    return needed, [f.replace("$ORIGIN", origin) for f in runpath if "$" not in f.replace("$ORIGIN", "")]
