"""Landlock (grader.sandbox.landlock), for real: a child started with the ruleset enforced between fork and
exec reads and writes its scratch folder and the standard library, and is refused everything else the kernel's
ABI can refuse: other files, TCP, abstract unix sockets, signals out of its domain, links and renames
across, truncation. Every ABI from 1 to the kernel's is tried, to check the rights are masked to it."""

from __future__ import annotations

import ast
import ctypes
import errno
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import landlock
from grader.sandbox.landlock import (
    FS_EXECUTE,
    FS_IOCTL_DEV,
    FS_READ_DIR,
    FS_READ_FILE,
    FS_REFER,
    FS_TRUNCATE,
    FS_WRITE_FILE,
    KNOWN_ABI,
    NET_BIND_TCP,
    NET_CONNECT_TCP,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
    abi_version,
    fs_rights,
    net_rights,
    rule_rights,
    scopes,
    worker_ruleset,
)

ABI = abi_version()
needs_landlock = pytest.mark.skipif(ABI == 0, reason="no Landlock in this kernel")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps and ELF: Linux")
INTERPRETER = os.path.realpath(sys.executable)
STDLIB_FILE = os.path.join(sysconfig.get_path("stdlib"), "json", "__init__.py")

# Each probe prints "ok", an errno name, or the exception's type; the child imports only what it tries.
PROBES = r"""
import errno, os, sys
cfg = eval(sys.argv[1])
scratch, outside, ro = cfg["scratch"], cfg["outside"], cfg["read_only"]
out = {}

def probe(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:
        out[name] = type(e).__name__

def tcp():
    import socket
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", cfg["port"]))
    finally:
        s.close()

def tcp_bind():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))

def abstract():
    import socket
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(cfg["abstract"])

def import_json():
    import json
    assert json.loads("[1]") == [1]

def import_native():  # stdlib extension modules with libraries of their own (libz, libssl, libsqlite3)
    import hashlib, sqlite3, zlib
    assert zlib.decompress(zlib.compress(b"x")) == b"x"
    assert sqlite3.connect(":memory:").execute("select 1").fetchone() == (1,)
    assert hashlib.sha256(b"").hexdigest().startswith("e3b0")

probe("read_scratch", lambda: open(scratch + "/in.txt").read())
probe("write_scratch", lambda: open(scratch + "/out.txt", "w").write("written"))
probe("mkdir_scratch", lambda: os.mkdir(scratch + "/made"))
probe("read_passwd", lambda: open("/etc/passwd").read())
probe("read_outside", lambda: open(outside + "/secret.txt").read())
probe("write_outside", lambda: open(outside + "/new.txt", "w").write("x"))
probe("list_root", lambda: os.listdir("/"))
probe("list_outside", lambda: os.listdir(outside))
probe("read_stdlib", lambda: open(cfg["stdlib_file"]).read())
probe("import_json", import_json)
probe("import_native", import_native)
probe("read_read_only", lambda: open(ro + "/data.txt").read())
probe("write_read_only", lambda: open(ro + "/data.txt", "a").write("x"))
probe("devnull", lambda: open(os.devnull, "w").write("x"))
probe("link_within", lambda: os.link(scratch + "/in.txt", scratch + "/sub/in.txt"))
probe("link_in", lambda: os.link(ro + "/data.txt", scratch + "/data.txt"))
probe("rename_out", lambda: os.rename(scratch + "/move.txt", outside + "/move.txt"))
probe("truncate_outside", lambda: os.truncate(ro + "/data.txt", 0))
probe("tcp_connect", tcp)
probe("tcp_bind", tcp_bind)
probe("abstract_unix", abstract)
probe("kill_parent", lambda: os.kill(cfg["parent"], 0))
print(repr(out))
"""


@pytest.fixture()
def world(tmp_path: Path):
    """A scratch folder, a folder outside it, a read-only folder, a TCP listener and an abstract unix
    listener in this (unconfined) process."""
    scratch, outside, ro = tmp_path / "scratch", tmp_path / "outside", tmp_path / "ro"
    for folder in (scratch, scratch / "sub", outside, ro):
        folder.mkdir()
    (scratch / "in.txt").write_text("scratch data")
    (scratch / "move.txt").write_text("stays")
    (outside / "secret.txt").write_text("secret")
    (ro / "data.txt").write_text("read only data")
    tcp = socket.create_server(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX)
    name = f"\0optlab-landlock-test-{os.getpid()}-{id(tmp_path)}"
    abstract.bind(name)
    abstract.listen()
    try:
        yield {
            "scratch": str(scratch),
            "outside": str(outside),
            "read_only": str(ro),
            "port": tcp.getsockname()[1],
            "abstract": name,
            "parent": os.getpid(),
            "stdlib_file": STDLIB_FILE,
        }
    finally:
        tcp.close()
        abstract.close()


def run_probes(cfg: dict, preexec, **popen) -> dict[str, str]:
    process = subprocess.run(
        [INTERPRETER, "-S", "-c", PROBES, repr(cfg)],
        preexec_fn=preexec,
        capture_output=True,
        text=True,
        timeout=60,
        env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"},
        cwd=cfg["scratch"],
        **popen,
    )
    assert process.returncode == 0, process.stderr
    return ast.literal_eval(process.stdout.strip().splitlines()[-1])


# -- the rights, per ABI (no kernel needed) -------------------------------------------------------------


@pytest.mark.parametrize("abi", range(0, KNOWN_ABI + 2))
def test_the_rights_are_masked_to_the_abi(abi):
    fs = fs_rights(abi)
    assert bool(fs & FS_READ_FILE) == (abi >= 1)
    assert bool(fs & FS_REFER) == (abi >= 2)
    assert bool(fs & FS_TRUNCATE) == (abi >= 3)
    assert bool(fs & FS_IOCTL_DEV) == (abi >= 5)
    assert fs < 1 << 16  # no bit this module does not know (ABI 9's RESOLVE_UNIX is 1 << 16)
    assert net_rights(abi) == (NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0)
    assert scopes(abi) == (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    assert landlock.attr_size(abi) == {True: 24, False: 16 if abi >= 4 else 8}[abi >= 6]


@pytest.mark.parametrize("abi", range(1, KNOWN_ABI + 1))
def test_a_rule_on_a_file_carries_only_file_rights(abi):
    on_file = rule_rights(fs_rights(abi), abi, is_dir=False)
    file_rights = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE
    file_rights |= (FS_TRUNCATE if abi >= 3 else 0) | (FS_IOCTL_DEV if abi >= 5 else 0)
    assert on_file == file_rights
    assert rule_rights(fs_rights(abi), abi, is_dir=True) == fs_rights(abi)
    assert rule_rights(FS_READ_FILE | FS_READ_DIR, abi, is_dir=False) == FS_READ_FILE
    assert rule_rights(FS_REFER | FS_TRUNCATE, 1, is_dir=True) == 0


@linux_only
def test_abi_version_is_the_kernels_and_zero_without_landlock(monkeypatch):
    raw = ctypes.CDLL(None, use_errno=True).syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    assert ABI == max(raw, 0)  # computed independently: ABI 0 only where the kernel has none
    landlock.abi_version.cache_clear()

    def no_syscall(*args):
        raise OSError(errno.ENOSYS, "no such syscall")

    monkeypatch.setattr(landlock, "_syscall", no_syscall)
    try:
        assert landlock.abi_version() == 0
        assert landlock.worker_ruleset(Path("/tmp"), Path("/tmp")) is None
    finally:
        landlock.abi_version.cache_clear()


# -- the ruleset in the grader ---------------------------------------------------------------------------


@linux_only
def test_the_interpreter_paths_hold_the_binary_libc_and_the_stdlib_but_no_site_packages():
    paths = landlock.interpreter_paths()
    assert INTERPRETER in paths
    assert any(os.path.basename(p).startswith("libc.so") for p in paths), paths
    assert any(os.path.basename(p).startswith("ld-linux") for p in paths), paths
    assert sysconfig.get_path("stdlib") in paths
    assert not any("-packages" in p for p in paths)
    if sys.prefix != sys.base_prefix:  # a venv: nothing of it (its platstdlib holds site-packages)
        assert not any(p.startswith(sys.prefix + os.sep) for p in paths)


@linux_only
def test_the_libraries_of_stdlib_extension_modules_are_found_from_their_elf_headers():
    dynload = [p for p in sys.path if p.endswith("lib-dynload")]
    zlib = [e.path for d in dynload for e in os.scandir(d) if e.name.startswith("zlib.")]
    if not zlib:
        pytest.skip("zlib is built into this interpreter")
    needed, _ = landlock.elf_needs(zlib[0])
    assert any(name.startswith("libz.so") for name in needed), needed
    assert landlock.elf_needs(STDLIB_FILE) == ([], [])  # not an ELF file
    found = landlock.needed_libraries(dynload, [])  # found without the grader's own mappings
    assert any(os.path.basename(p).startswith("libz.so") for p in found), found
    assert any(os.path.basename(p).startswith("libc.so") for p in found), found


@needs_landlock
def test_paths_that_do_not_exist_are_skipped(tmp_path):
    with worker_ruleset(tmp_path, tmp_path) as base:
        count = base.rules
        assert count >= 4  # interpreter, libc, stdlib, scratch ... at least
    missing = [str(tmp_path / "missing"), str(tmp_path / "missing" / "deeper"), "/no/such/path"]
    with worker_ruleset(tmp_path, tmp_path / "no-runtime", read_only=missing) as ruleset:
        assert ruleset.rules == count - 1  # the runtime folder is missing too
        assert not ruleset.add_path(tmp_path / "missing", FS_READ_FILE)
        assert ruleset.rules == count - 1


@needs_landlock
@pytest.mark.parametrize("abi", range(1, min(ABI, KNOWN_ABI) + 1))
def test_a_file_rule_with_every_right_is_masked_not_refused(tmp_path, abi):
    (tmp_path / "file").write_text("x")
    with landlock.Ruleset(abi, fs_rights(abi), net_rights(abi), scopes(abi)) as ruleset:
        assert ruleset.add_path(tmp_path / "file", fs_rights(abi))  # EINVAL from the kernel otherwise
        assert ruleset.add_path(tmp_path, fs_rights(abi))
        assert ruleset.rules == 2 and ruleset.abi == abi


@needs_landlock
def test_close_is_idempotent_and_a_closed_ruleset_starts_no_child(tmp_path):
    ruleset = worker_ruleset(tmp_path, tmp_path)
    fd = ruleset._fd
    assert not os.get_inheritable(fd)
    ruleset.close()
    with pytest.raises(OSError) as closed:
        os.fstat(fd)
    assert closed.value.errno == errno.EBADF
    ruleset.close()
    with pytest.raises(subprocess.SubprocessError):
        subprocess.run([INTERPRETER, "-S", "-c", "pass"], preexec_fn=ruleset.enforce, timeout=30)


# -- enforced in a child, for real ----------------------------------------------------------------------


def expected(abi: int) -> dict[str, str]:
    """What the probes get under a ruleset of this ABI (the kernel's own errors)."""
    return {
        "read_scratch": "ok",
        "write_scratch": "ok",
        "mkdir_scratch": "ok",
        "read_passwd": "EACCES",
        "read_outside": "EACCES",
        "write_outside": "EACCES",
        "list_root": "EACCES",
        "list_outside": "EACCES",
        "read_stdlib": "ok",
        "import_json": "ok",
        "import_native": "ok",
        "read_read_only": "ok",
        "write_read_only": "EACCES",
        "devnull": "ok",
        # ABI 1 handles no REFER: the kernel then refuses every link or rename into another folder
        "link_within": "ok" if abi >= 2 else "EXDEV",
        "link_in": "EXDEV",  # the read-only folder has no REFER
        "rename_out": "EACCES",  # the folder outside has no MAKE_REG: refused before REFER counts
        # before ABI 3 truncate(2) is not Landlock's to refuse: a known gap of old kernels
        "truncate_outside": "EACCES" if abi >= 3 else "ok",
        "tcp_connect": "EACCES" if abi >= 4 else "ok",
        "tcp_bind": "EACCES" if abi >= 4 else "ok",
        "abstract_unix": "EPERM" if abi >= 6 else "ok",
        "kill_parent": "EPERM" if abi >= 6 else "ok",
    }


def test_without_landlock_the_probes_reach_everything(world):
    got = run_probes(world, None)
    assert got["read_passwd"] == got["read_outside"] == got["tcp_connect"] == got["kill_parent"] == "ok"
    assert got["abstract_unix"] == got["link_in"] == got["truncate_outside"] == "ok"


@needs_landlock
def test_the_worker_ruleset_confines_the_child(world):
    runtime = Path(world["outside"]).parent / "runtime"  # absent: skipped
    with worker_ruleset(Path(world["scratch"]), runtime, read_only=[world["read_only"]]) as ruleset:
        assert ruleset.abi == min(ABI, KNOWN_ABI)
        got = run_probes(world, ruleset.enforce)
    assert got == expected(ruleset.abi)
    assert Path(world["scratch"], "out.txt").read_text() == "written"
    assert Path(world["scratch"], "move.txt").read_text() == "stays"
    assert Path(world["outside"], "secret.txt").read_text() == "secret"
    assert Path(world["read_only"], "data.txt").read_text() == "read only data"
    assert not Path(world["outside"], "new.txt").exists()


@needs_landlock
@pytest.mark.parametrize("abi", range(1, min(ABI, KNOWN_ABI) + 1))
def test_every_abi_refuses_what_it_knows(world, abi):
    scratch = Path(world["scratch"])
    ruleset = landlock.ruleset_for_abi(abi, scratch, scratch, [world["read_only"]])
    try:
        got = run_probes(world, ruleset.enforce)
    finally:
        ruleset.close()
    assert got == expected(abi)


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="setuid to another user needs root")
def test_as_the_sandbox_confines_a_root_grader(tmp_path):
    """The sandbox's own preexec (namespaces, rlimits, a leased worker uid, NPROC 0, then enforce)."""
    from grader.sandbox import isolation
    from grader.sandbox.confinement import Confine
    from grader.sandbox.sandbox import Limits

    lease = isolation.UidLease()

    home = Path(tempfile.mkdtemp(prefix="optlab-landlock-"))  # under /tmp: the other user can reach it
    try:
        os.chmod(home, 0o755)
        scratch, ro = home / "scratch", home / "ro"
        for folder in (scratch, scratch / "sub", ro):
            folder.mkdir()
            os.chmod(folder, 0o777)
        for path, text in ((scratch / "in.txt", "scratch data"), (ro / "data.txt", "read only data")):
            path.write_text(text)
            os.chmod(path, 0o666)  # the user may write them: a refusal is Landlock's, not the mode's
        with worker_ruleset(scratch, home / "runtime", read_only=[str(ro)]) as ruleset:
            preexec = Confine(Limits(), isolation.machine_layers(), lease, ruleset)

            cfg = {
                "scratch": str(scratch),
                "outside": str(home),
                "read_only": str(ro),
                "port": 9,
                "abstract": "\0optlab-none",
                "parent": os.getpid(),
                "stdlib_file": STDLIB_FILE,
            }
            got = run_probes(cfg, preexec, close_fds=True, start_new_session=True)
        assert os.stat(scratch / "out.txt").st_uid == lease.uid
        assert stat.S_IMODE(os.stat("/etc/passwd").st_mode) & 0o004  # others may read it: Landlock refuses
        want = expected(ruleset.abi)
        for name in ("read_scratch", "write_scratch", "read_stdlib", "import_json", "read_read_only"):
            assert got[name] == "ok", (name, got)
        for name in ("read_passwd", "list_root", "write_read_only", "truncate_outside"):
            assert got[name] == want[name], (name, got)
        assert got["read_passwd"] == "EACCES"
        assert (ro / "data.txt").read_text() == "read only data"
    finally:
        shutil.rmtree(home, ignore_errors=True)
        lease.release()


@needs_landlock
def test_a_signal_from_the_confined_child_does_not_reach_the_grader(world):
    if min(ABI, KNOWN_ABI) < 6:
        pytest.skip("signal scoping needs ABI 6")
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append(1))
    try:
        with worker_ruleset(Path(world["scratch"]), Path(world["scratch"])) as ruleset:
            kill = f"os.kill({os.getpid()}, signal.SIGUSR1)"
            code = f"import os, signal\ntry:\n {kill}\nexcept OSError as e:\n print(e.errno)"
            done = subprocess.run(
                [INTERPRETER, "-S", "-c", code],
                preexec_fn=ruleset.enforce,
                capture_output=True,
                text=True,
                timeout=30,
            )
        assert done.stdout.strip() == str(errno.EPERM)
        assert received == []
    finally:
        signal.signal(signal.SIGUSR1, previous)
