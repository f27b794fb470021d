"""No way out and no memory beyond the limit (issue 23, items 4 and 5): a worker, its audit hook off, tries
to send hidden inputs out through every kind of socket, to hold 2 GB through memfd and SysV shared
memory, and to start io_uring. Each attack runs with the layers switched off one at a time: each
configuration names the layers that must hold it (skipped where none of them exists on this machine),
so every guarantee is shown to hold from each layer alone: the seccomp filter (grader.sandbox.seccomp),
network namespaces, Landlock (TCP from ABI 4, abstract sockets from ABI 6), the memory cgroup
(grader.sandbox.cgroup).

On the kit before the seccomp filter and the cgroup (issue 23's figures, measured with these tests):
UDP with the namespaces off, a pathname unix socket and, with namespaces and Landlock off, TCP and an
abstract socket each carried all the worker's bytes out (15,936); with a 256 MB limit, memfds held
912 MB (as many as the open-files limit allows, each grown to the file-size limit) and SysV shared
memory 2,048 MB (all the attack asked for); io_uring started; a socket pair was made.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import socket
import sysconfig
import tempfile
import types
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.runtime.protocol import SubmissionError
from grader.runtime.worker import load_module
from grader.sandbox import cgroup, isolation, seccomp
from grader.sandbox.sandbox import Limits
from grader.sandbox.student import sandboxed_student
from tests.kit.channels import CHANNELS
from tests.kit.test_kit_isolation import REFERENCE, open_student

PAYLOAD = 1000  # bytes a worker sends at each of its 16 tries: a hidden input's worth
TRIES = 16
MEMORY = Limits(memory_bytes=256 << 20, call_seconds=20.0)
WANTED_MB = 2048


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(REFERENCE, "seccomp_test_reference")


@pytest.fixture
def layers_off(monkeypatch):
    """Switch layers off for this test (the audit hook always: a submission can), and skip unless one of
    the layers named to hold the attack exists here then (Landlock from ABI `landlock_abi`)."""

    def switch(off: str, holders: str, landlock_abi: int = 1) -> isolation.Layers:
        monkeypatch.setenv(isolation.LAYERS_OFF, ",".join(["audit_hook", *[n for n in off.split(",") if n]]))
        layers = isolation.machine_layers()
        present = {
            "seccomp": layers.seccomp,
            "namespaces": layers.namespaces,
            "landlock": layers.landlock >= landlock_abi,
            "cgroup": layers.cgroup > 0,
        }
        if not any(present[name] for name in holders.split("+")):
            pytest.skip(f"none of {holders} exists here with {off or 'nothing'} off")
        return layers

    return switch


def attempt(ref, body: str, limits: Limits | None = None) -> object:
    """What softmax with `body` answers, or the exception the grader raised for it."""
    student, _ = open_student(ref, body, limits)
    try:
        return student.softmax([0.0])
    except (OSError, SubmissionError) as error:
        return error
    finally:
        student.close()


def refused_by(result: object, layers: isolation.Layers) -> None:
    """The attack's call raised an OSError; EPERM (the filter's answer) where the seccomp filter is on."""
    assert isinstance(result, OSError), f"the attack went through: {result!r}"
    if layers.seccomp:
        assert f"[Errno {errno.EPERM}]" in str(result), result


SEND = f"""
import socket
s = socket.socket(socket.%s, socket.%s)
s.connect(%r)
sent = 0
for _ in range({TRIES}):
    sent += s.send(b"hidden input" * {PAYLOAD // 12})
s.close()
return [float(sent)]
"""


def drained(listener: socket.socket) -> int:
    """The bytes that reached the test's listener (a stream listener's connections read to their end)."""
    received = 0
    while select.select([listener], [], [], 0.5)[0]:
        if listener.type == socket.SOCK_DGRAM:
            received += len(listener.recv(1 << 16))
            continue
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(5)
            while chunk := connection.recv(1 << 16):
                received += len(chunk)
    return received


@contextlib.contextmanager
def listening(family: int, kind: int, address: object) -> Iterator[socket.socket]:
    listener = socket.socket(family, kind)
    try:
        listener.bind(address)
        if kind == socket.SOCK_STREAM:
            listener.listen(4)
        yield listener
    finally:
        listener.close()


# -- no way out --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "off, holders", [("", "seccomp+namespaces"), ("seccomp", "namespaces"), ("namespaces", "seccomp")]
)
def test_no_udp_datagram_leaves_the_worker(ref, layers_off, off, holders):
    """Before: with the namespaces off (Docker's default), 15,936 bytes out of 15,936."""
    layers = layers_off(off, holders)
    with listening(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)) as listener:
        body = SEND % ("AF_INET", "SOCK_DGRAM", listener.getsockname())
        result = attempt(ref, body)
        received = drained(listener)
    assert received == 0
    refused_by(result, layers)


BOTH = "seccomp+namespaces+landlock"
TCP_AND_ABSTRACT = [
    ("", BOTH),
    ("seccomp", "namespaces+landlock"),
    ("seccomp,namespaces", "landlock"),
    ("seccomp,landlock", "namespaces"),
    ("namespaces,landlock", "seccomp"),
]


@pytest.mark.parametrize("off, holders", TCP_AND_ABSTRACT)
def test_no_tcp_connection_leaves_the_worker(ref, layers_off, off, holders):
    """Before: with namespaces and Landlock off (or Landlock below ABI 4), 15,936 bytes out of 15,936."""
    layers = layers_off(off, holders, landlock_abi=4)
    with listening(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)) as listener:
        result = attempt(ref, SEND % ("AF_INET", "SOCK_STREAM", listener.getsockname()))
        received = drained(listener)
    assert received == 0
    refused_by(result, layers)


@pytest.mark.parametrize("off, holders", TCP_AND_ABSTRACT)
def test_no_abstract_unix_socket_leaves_the_worker(ref, layers_off, off, holders):
    """Before: with namespaces and Landlock off (or Landlock below ABI 6), 15,936 bytes out of 15,936."""
    layers = layers_off(off, holders, landlock_abi=6)
    address = f"\0optlab-seccomp-{uuid.uuid4().hex}"
    with listening(socket.AF_UNIX, socket.SOCK_STREAM, address) as listener:
        result = attempt(ref, SEND % ("AF_UNIX", "SOCK_STREAM", address))
        received = drained(listener)
    assert received == 0
    refused_by(result, layers)


@pytest.fixture
def world_writable() -> Iterator[str]:
    """A folder anyone may write into, in /tmp (as a machine's /tmp/shared of mode 1777 would be)."""
    folder = tempfile.mkdtemp(prefix="optlab-seccomp-")
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("off", ["", "namespaces,landlock"], ids=["every-layer", "seccomp-alone"])
def test_no_pathname_unix_socket_leaves_the_worker(ref, layers_off, world_writable, off):
    """Landlock (to ABI 7) and the namespaces do not cover a socket file: only the filter holds here.
    Before: with every layer on, 15,936 bytes out of 15,936."""
    layers = layers_off(off, "seccomp")
    path = os.path.join(world_writable, "listener")
    with listening(socket.AF_UNIX, socket.SOCK_STREAM, path) as listener:
        os.chmod(path, 0o777)  # anyone may connect: a refusal is the sandbox's, not the mode's
        result = attempt(ref, SEND % ("AF_UNIX", "SOCK_STREAM", path))
        received = drained(listener)
    assert received == 0
    refused_by(result, layers)


def test_a_socket_pair_is_refused_too(ref, layers_off):
    """No socket of any family, even one connected only to the worker itself."""
    layers_off("", "seccomp")
    result = attempt(ref, "import socket\nsocket.socketpair()\nreturn [1.0]")
    assert isinstance(result, PermissionError), result


def test_io_uring_is_refused(ref, layers_off):
    """io_uring's operations (socket, connect, openat...) would run in the kernel's workers, where the
    filter does not see them. Before: io_uring_setup gave the worker a ring."""
    layers_off("", "seccomp")
    body = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.syscall(425, 8, ctypes.create_string_buffer(120))  # io_uring_setup(8, &params)\n"
        "if fd < 0:\n"
        "    raise OSError(ctypes.get_errno(), 'io_uring_setup')\n"
        "return [float(fd)]"
    )
    assert isinstance(attempt(ref, body), PermissionError)


# -- no other process touched ------------------------------------------------------------------------------

# The worker, its hook off, tries each call on its grader (its parent) with the values it has already, so
# that nothing changes where the call goes through; then the same calls on itself, which must work.
ON_THE_GRADER = """
import resource, signal
grader, through = os.getppid(), []
core = resource.RLIMIT_CORE
for name, attempt in (
    ("kill", lambda: os.kill(grader, 0)),
    ("prlimit", lambda: resource.prlimit(grader, core, resource.prlimit(grader, core))),
    ("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, grader, os.getpriority(os.PRIO_PROCESS, grader))),
    ("sched_setaffinity", lambda: os.sched_setaffinity(grader, os.sched_getaffinity(grader))),
):
    try:
        attempt()
        through.append(name)
    except OSError:
        pass
files = resource.RLIMIT_NOFILE
resource.setrlimit(files, resource.getrlimit(files))
os.nice(0)
os.sched_setaffinity(0, os.sched_getaffinity(0))
signal.setitimer(signal.ITIMER_REAL, 0)
return through
"""
# Run as another user in a copy of the kit (without tests/kit): argv[1] the submission, argv[2] the exercises.
NOT_ROOT_ATTEMPT = """
import json, sys
from pathlib import Path
from grader.sandbox.student import sandboxed_student
from grader.runtime.worker import load_module

ref = load_module(Path("solutions/optimization_toolkit.py"), "not_root_reference")
student, _ = sandboxed_student(sys.argv[1], ref, ref, json.loads(sys.argv[2]))
try:
    print(json.dumps(student.softmax([0.0])))
finally:
    student.close()
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
@pytest.mark.parametrize("off", ["audit_hook", "audit_hook,landlock"], ids=["landlock", "seccomp-alone"])
def test_a_worker_not_root_cannot_signal_renice_pin_or_limit_its_grader(off):
    """Grading not as root (a TA's laptop, Slurm), the worker runs as the grader's own user: no uid keeps
    it from the grader, a batch's other gradings or the user's other processes, and Landlock scopes
    signals only from ABI 6 and never prlimit, setpriority or the scheduler. Before, with Landlock ABI 7,
    prlimit, setpriority and sched_setaffinity on the grader went through (a worker set its grader's CPU
    limit to 1 s, and a sweep of the pids around its own lowered the open-files limit of its grader and
    the reference's worker to 3); without Landlock, kill too (the grader killed). Now each is refused, and
    the same calls on the worker itself still work."""
    import json
    import subprocess
    import sys

    from tests.kit.test_kit_isolation import EXERCISES, NOBODY, copy_kit_for

    if not seccomp.available():
        pytest.skip("no seccomp filter here")
    tmp_path = Path(tempfile.mkdtemp(prefix="optlab-not-root-"))
    kit = copy_kit_for(NOBODY, tmp_path)
    body = "\n".join("    " + line for line in ON_THE_GRADER.strip().splitlines())
    submission = REFERENCE.read_text() + f"\n\ndef softmax(xs):\n    import os\n{body}\n"

    def become_nobody() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path), isolation.LAYERS_OFF: off}
    try:
        done = subprocess.run(
            [sys.executable, "-c", NOT_ROOT_ATTEMPT, submission, json.dumps(EXERCISES)], cwd=kit, env=env,
            preexec_fn=become_nobody, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], "went through on the grader"


def test_a_worker_dumps_no_core_and_cannot_make_itself_dump_one(ref, layers_off):
    """A crash dumps no core: the worker's core-file size is 1, which the kernel takes as "no dump"
    even where core_pattern pipes to a program (apport, systemd-coredump), to which a size of 0 is no
    limit at all: the whole process, up to its address-space limit, went to a helper running as root,
    outside every quota. Before, the limit was 0, and the worker could set it again. Now it is 1, and
    the filter refuses setting it (reading it still works)."""
    layers_off("", "seccomp")
    body = (
        "import resource\n"
        "limit = resource.getrlimit(resource.RLIMIT_CORE)\n"
        "try:\n"
        "    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
        "    lowered = 1.0\n"
        "except (OSError, ValueError):  # EPERM: Python says 'not allowed to raise maximum limit'\n"
        "    lowered = 0.0\n"
        "return [float(limit[0]), float(limit[1]), lowered]"
    )
    assert attempt(ref, body) == [1.0, 1.0, 0.0]


def test_a_worker_cannot_signal_even_itself(ref, layers_off):
    """The filter refuses every call that sends a signal, whatever its target (the worker's own timers
    still fire: the kernel sends those)."""
    layers_off("", "seccomp")
    body = "import signal\nos.kill(os.getpid(), 0)\nreturn [1.0]"
    assert isinstance(attempt(ref, body), PermissionError)


def test_a_worker_cannot_make_a_descriptor_signal_its_grader(ref, layers_off):
    """fcntl(F_SETOWN) names a descriptor's owner, which the kernel signals when it becomes ready (with
    O_ASYNC; SIGIO kills by default, F_SETSIG picks any signal): past kill's refusal. Before, the filter
    let F_SETOWN name the grader. Now naming any owner is refused, in each of its spellings."""
    layers_off("", "seccomp")
    body = (
        "import fcntl\n"
        "r, w = os.pipe()\n"
        "through = []\n"
        "for cmd, arg in ((fcntl.F_SETOWN, os.getppid()), (fcntl.F_SETOWN, os.getpid()), (15, 0)):\n"
        "    try:\n"
        "        fcntl.fcntl(r, cmd, arg)\n"
        "        through.append(float(cmd))\n"
        "    except OSError:\n"
        "        pass\n"
        "fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK)  # others work\n"
        "return through"
    )
    assert attempt(ref, body) == []


def test_a_process_under_the_filter_signals_nobody_through_a_descriptor():
    """The whole route, as the grader's own user (the uid layer off: grading not as root): a process under
    the filter makes a pipe's owner its parent, asks for SIGUSR1 (F_SETSIG), sets O_ASYNC and writes.
    Before, the parent got SIGUSR1 twice (SIGKILL would have done as well); now none."""
    import fcntl
    import signal

    filter_ = seccomp.worker_filter()
    if filter_ is None:
        pytest.skip("no seccomp filter here")
    got: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: got.append(number))
    try:
        parent, (r, w) = os.getpid(), os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover (the child)
            try:
                filter_.install()
                with contextlib.suppress(OSError):
                    fcntl.fcntl(r, fcntl.F_SETOWN, parent)
                with contextlib.suppress(OSError):
                    fcntl.fcntl(r, 10, signal.SIGUSR1)  # F_SETSIG
                fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
                os.write(w, b"ready")
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        select.select([], [], [], 0.2)  # a signal the kernel queued is handled by now
        os.close(r)
        os.close(w)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert got == []


def test_a_worker_cannot_clear_its_parent_death_signal(ref, layers_off):
    """The worker dies with its grader (PR_SET_PDEATHSIG, set before exec). Before, prctl cleared it
    (it returned 0): a worker whose grader was killed mid-call lived on, sleeping, past every bound but
    its CPU limit. Now the filter refuses it and the signal stays SIGKILL."""
    layers_off("", "seccomp")
    body = (
        "import ctypes, signal\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "cleared = libc.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG, 0\n"
        "now = ctypes.c_int()\n"
        "libc.prctl(2, ctypes.byref(now), 0, 0, 0)  # PR_GET_PDEATHSIG\n"
        "return [float(cleared), float(now.value == signal.SIGKILL)]"
    )
    assert attempt(ref, body) == [-1.0, 1.0]


# -- memory beyond the limit -------------------------------------------------------------------------------

# Both fill memory towards 2 GB and say how much they held: the address space never counts it (memfds
# grown to the file-size limit each, as many as the open-files limit allows; segments filled and detached).
MEMFD = f"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
held, size, chunk, fds = 0, 0, 4 << 20, []
while held < {WANTED_MB} << 20:
    if fds and libc.fallocate(fds[-1], 0, ctypes.c_long(size), ctypes.c_long(chunk)) == 0:
        size, held = size + chunk, held + chunk
        continue
    if fds and size == 0:
        break  # a fresh memfd took nothing: memory ran out, not the file size
    try:
        fds.append(os.memfd_create("hoard"))
    except OSError as error:
        if error.errno != errno.EMFILE:
            raise
        break
    size = 0
return [float(held >> 20)]
"""
SYSV_SHM = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
held, chunk = 0, 64 << 20
while held < {WANTED_MB} << 20:
    ident = libc.shmget(0, ctypes.c_size_t(chunk), 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    if ident < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    address = libc.shmat(ident, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        break
    ctypes.memset(address, 1, chunk)
    libc.shmdt(ctypes.c_void_p(address))
    held += chunk
return [float(held >> 20)]
"""
# memfd_secret (Linux 5.14, on by default from 6.5): a memfd whose pages are mapped only through mmap, each
# mapping counted against the locked-memory limit while it lasts; a file's pages stay when it is unmapped.
MEMFD_SECRET = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = libc.mmap.restype = ctypes.c_void_p
int_, long_ = ctypes.c_int, ctypes.c_long
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, int_, int_, int_, long_]
held, chunk = 0, 4 << 20
while held < {WANTED_MB} << 20:
    fd = libc.syscall(ctypes.c_long(447), 0)  # memfd_secret on x86_64 and aarch64
    if fd is None or fd > 1 << 32:
        raise OSError(ctypes.get_errno(), "memfd_secret")
    size = 16 << 20
    while size and libc.ftruncate(fd, ctypes.c_long(size)) != 0:
        size //= 2  # the file-size limit
    for offset in range(0, size, chunk):
        address = libc.mmap(None, chunk, 3, 1, fd, offset)  # PROT_READ|WRITE, MAP_SHARED
        if address in (None, ctypes.c_void_p(-1).value):
            return [float(held >> 20)]
        ctypes.memset(address, 1, chunk)
        libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(chunk))
        held += chunk
return [float(held >> 20)]
"""
MEMORY_CONFIGURATIONS = [("", "seccomp+cgroup"), ("cgroup", "seccomp"), ("seccomp", "cgroup")]


def held_mb(result: object, layers: isolation.Layers) -> float:
    """The MB the attack held: 0 where it was refused or killed (its memory went with it)."""
    if isinstance(result, list):
        return result[0]
    if layers.seccomp:
        assert isinstance(result, PermissionError), result
    else:  # the cgroup's OOM killer ended it
        assert isinstance(result, SubmissionError) and "memory" in str(result), result
    return 0.0


@pytest.mark.parametrize("off, holders", MEMORY_CONFIGURATIONS)
def test_memfd_holds_no_memory_past_the_limit(ref, layers_off, off, holders):
    """Before: 912 MB held by a worker limited to 256 MB."""
    layers = layers_off(off, holders)
    assert held_mb(attempt(ref, MEMFD, MEMORY), layers) <= MEMORY.memory_bytes >> 20


@pytest.mark.parametrize("off, holders", MEMORY_CONFIGURATIONS + [("seccomp,namespaces", "cgroup")])
def test_sysv_shared_memory_holds_no_memory_past_the_limit(ref, layers_off, off, holders):
    """Before: 2,048 MB held by a worker limited to 256 MB (with the namespaces off, in the machine's own
    IPC namespace until the sandbox closed)."""
    layers = layers_off(off, holders)
    assert held_mb(attempt(ref, SYSV_SHM, MEMORY), layers) <= MEMORY.memory_bytes >> 20


@pytest.mark.parametrize("off, holders", MEMORY_CONFIGURATIONS)
def test_memfd_secret_holds_no_memory_past_the_limit(ref, layers_off, off, holders):
    """Before (the filter without memfd_secret, the cgroup off as in Docker): 912 MB held by a worker
    limited to 256 MB (57 files of 16 MB, as many as the open-files limit allows)."""
    if not Path("/sys/module/secretmem/parameters/enable").is_file():
        pytest.skip("this kernel has no memfd_secret")
    layers = layers_off(off, holders)
    assert held_mb(attempt(ref, MEMFD_SECRET, MEMORY), layers) <= MEMORY.memory_bytes >> 20


# -- the filter itself -------------------------------------------------------------------------------------


def run_filter(code: list[tuple[int, int, int, int]], arch: int, nr: int, args: tuple[int, ...] = ()) -> int:
    """What the classic BPF program `code` returns for a call (a tiny interpreter of the four
    instructions grader.sandbox.seccomp uses); `args`: the call's arguments (the rest 0)."""
    data = {seccomp.DATA_NR: nr, seccomp.DATA_ARCH: arch}
    for index, value in enumerate((*args, 0, 0, 0, 0, 0, 0)[:6]):
        data[seccomp.DATA_ARGS + 8 * index] = value & 0xFFFFFFFF
        data[seccomp.DATA_ARGS + 8 * index + 4] = (value >> 32) & 0xFFFFFFFF
    accumulator, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == seccomp.LD_W_ABS:
            accumulator = data[k]
        elif op == seccomp.RET_K:
            return k
        elif op in (seccomp.JEQ_K, seccomp.JGE_K):
            taken = accumulator == k if op == seccomp.JEQ_K else accumulator >= k
            pc += jt if taken else jf
        else:
            raise AssertionError(f"unknown instruction {op:#x}")
        pc += 1


@pytest.mark.parametrize("arch", sorted(seccomp.ARCHES))
def test_the_filter_refuses_its_list_kills_other_architectures_and_allows_the_rest(arch):
    code = seccomp.program(arch)
    native, column = seccomp.AUDIT_ARCH[arch], seccomp.ARCHES[arch]
    refused = {row[column] for row in seccomp.REFUSED.values()}
    conditional = {row[column] for row, _ in seccomp.CHECKED.values()}
    eperm = seccomp.RET_ERRNO | errno.EPERM
    for nr in refused:
        assert run_filter(code, native, nr) == eperm
    for nr in set(range(460)) - refused - conditional:
        assert run_filter(code, native, nr) == seccomp.RET_ALLOW
    other = next(a for name, a in seccomp.AUDIT_ARCH.items() if name != arch)
    for foreign in (other, 0x40000003):  # the other one, and i386 (int 0x80 on x86_64)
        assert run_filter(code, foreign, 39) == seccomp.RET_KILL_PROCESS
    x32 = run_filter(code, native, seccomp.X32_SYSCALL_BIT | 39)
    assert x32 == (eperm if arch == "x86_64" else seccomp.RET_ALLOW)


@pytest.mark.parametrize("arch", sorted(seccomp.ARCHES))
def test_the_filter_allows_the_calls_on_another_process_only_on_the_worker_itself(arch):
    """prlimit64, setpriority, the scheduler and I/O priority calls name their target: 0 (the caller) is
    allowed, any other process refused, whatever the upper 32 bits of a pid (the kernel reads an int);
    the core-file size may be read, never set; prctl is refused only for PR_SET_PDEATHSIG."""
    code = seccomp.program(arch)
    native, column = seccomp.AUDIT_ARCH[arch], seccomp.ARCHES[arch]
    eperm = seccomp.RET_ERRNO | errno.EPERM
    number = {name: row[column] for name, (row, _) in seccomp.CHECKED.items()}
    for name in ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"):
        assert run_filter(code, native, number[name], (0, 7, 0x7FFF0000)) == seccomp.RET_ALLOW, name
        assert run_filter(code, native, number[name], (4242, 7)) == eperm, name
        assert run_filter(code, native, number[name], (1 << 32 | 4242,)) == eperm, name
    setpriority, ioprio_set = number["setpriority"], number["ioprio_set"]
    assert run_filter(code, native, setpriority, (0, 0, 10)) == seccomp.RET_ALLOW  # os.nice(10)
    for which, who in ((0, 4242), (1, 0), (2, 0), (2, 1000)):  # another process, its group, the user
        assert run_filter(code, native, setpriority, (which, who, 10)) == eperm
    assert run_filter(code, native, ioprio_set, (1, 0, 7)) == seccomp.RET_ALLOW
    for which, who in ((1, 4242), (2, 0), (3, 1000)):
        assert run_filter(code, native, ioprio_set, (which, who, 7)) == eperm
    core, prlimit64, setrlimit = seccomp.RLIMIT_CORE, number["prlimit64"], number["setrlimit"]
    assert run_filter(code, native, prlimit64, (0, core, 0, 0x7FFF0000)) == seccomp.RET_ALLOW  # read
    for new in (0x7FFF0000, 1 << 32):  # a new limit, at any address
        assert run_filter(code, native, prlimit64, (0, core, new, 0)) == eperm
    assert run_filter(code, native, setrlimit, (core, 0x7FFF0000)) == eperm
    assert run_filter(code, native, setrlimit, (7, 0x7FFF0000)) == seccomp.RET_ALLOW  # RLIMIT_NOFILE
    prctl = number["prctl"]
    assert run_filter(code, native, prctl, (1, 0)) == eperm  # PR_SET_PDEATHSIG
    assert run_filter(code, native, prctl, (2, 0)) == seccomp.RET_ALLOW  # PR_GET_PDEATHSIG
    assert run_filter(code, native, prctl, (38, 1)) == seccomp.RET_ALLOW  # PR_SET_NO_NEW_PRIVS


def test_the_worker_is_filtered_wherever_the_kernel_can(monkeypatch):
    """The layer is on wherever seccomp is (every Linux kernel from 4.14 on x86_64 and aarch64), root or
    not, and off only by the tests' switch."""
    monkeypatch.delenv(isolation.LAYERS_OFF, raising=False)
    assert isolation.machine_layers().seccomp == seccomp.available()
    if seccomp.machine() is not None:
        assert seccomp.available()
    monkeypatch.setenv(isolation.LAYERS_OFF, "seccomp")
    assert not isolation.machine_layers().seccomp


# -- the memory cgroup itself ------------------------------------------------------------------------------


def test_each_worker_runs_in_a_memory_cgroup_of_its_own_removed_at_close(ref, layers_off):
    layers_off("", "cgroup")
    student, box = open_student(ref, "return [float(os.getpid())]")
    try:
        (pid,) = student.softmax([0.0])
        folder = box._memory.folder
        assert (folder / "cgroup.procs").read_text().split() == [str(int(pid))]
        limit = "memory.limit_in_bytes" if box._memory.version == 1 else "memory.max"
        assert int((folder / limit).read_text()) == box.limits.memory_bytes
        assert folder.parent == cgroup.own_memory_cgroup()[1]  # beneath the grader's own
    finally:
        student.close()
    assert not folder.exists()


@pytest.mark.skipif(cgroup.version() == 0, reason="no memory cgroup can be made here")
def test_a_grader_removes_only_the_stale_cgroups_of_its_own_pid_namespace():
    """CI on ac6aad7: a grader in a PID namespace of its own (a container beside the host) saw the host
    grader's new, still empty cgroup, named after a pid it cannot see, took it for a dead grader's and
    removed it; the host's worker could not join it ("Exception occurred in preexec_fn"). A cgroup's name
    carries its grader's PID namespace, and only this namespace's dead graders' cgroups are removed."""
    parent = cgroup.own_memory_cgroup()[1]
    namespace = os.stat("/proc/self/ns/pid").st_ino
    dead = 2**22 + 1  # above the kernel's pid_max: no process has it
    other = parent / f"{cgroup.PREFIX}{namespace + 1}.{dead}-0"  # another namespace's: not seen, kept
    mine = parent / f"{cgroup.PREFIX}{namespace}.{dead}-0"  # this namespace's, its grader gone: removed
    other.mkdir()
    mine.mkdir()
    try:
        cgroup.remove_stale(parent)
        assert other.exists() and not mine.exists()
    finally:
        for folder in (other, mine):
            if folder.exists():
                folder.rmdir()


CGROUP_ESCAPE = """
from pathlib import Path
parent = Path(%r)
mine = next(  # its own cgroup, the one that lists it (found without /proc: the mount layer empties it)
    child for child in parent.iterdir()
    if child.name.startswith("optlab-") and str(os.getpid()) in (child / "cgroup.procs").read_text().split()
)
errors = []
writes = [(parent / "cgroup.procs", "0"), (mine / "memory.oom_control", "1")]
writes += [(mine / name, "-1") for name in ("memory.limit_in_bytes", "memory.max") if (mine / name).exists()]
for target, data in writes:
    try:
        target.write_text(data)
        errors.append(0.0)
    except OSError as error:
        errors.append(float(error.errno))
try:
    (mine / "child").mkdir()
    errors.append(0.0)
except OSError as error:
    errors.append(float(error.errno))
return errors
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid layer needs root")
def test_a_worker_cannot_leave_its_cgroup_or_raise_its_limit(ref, layers_off):
    """Held (Landlock and namespaces off: the uid layer alone): the worker writes itself into the grader's
    cgroup, raises its own limit, turns its OOM killer off, makes a child cgroup: every one refused
    (EACCES: root owns the files and the worker's uid nothing there; EROFS first where the mount layer
    makes the worker's whole view read-only)."""
    layers_off("landlock,namespaces", "cgroup")
    errors = attempt(ref, CGROUP_ESCAPE % str(cgroup.own_memory_cgroup()[1]))
    refusals = {float(errno.EACCES), float(errno.EROFS)}
    assert isinstance(errors, list) and len(errors) == 4 and set(errors) <= refusals, errors


MOUNTS_V1 = (
    "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory\n"
    "31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:12 - cgroup cgroup rw,cpu\n"
)


@pytest.mark.parametrize(
    "membership, mounts, found",
    [
        ("4:memory:/grading/a\n1:cpu:/\n0::/\n", MOUNTS_V1, (1, "/sys/fs/cgroup/memory/grading/a")),
        ("4:cpu:/\n", MOUNTS_V1, None),  # no memory controller
        # Docker on cgroup v2 (its own cgroup namespace): the container is the root of what it sees
        ("0::/\n", "40 35 0:30 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n", (2, "/sys/fs/cgroup")),
        # a hierarchy mounted from below the process's own cgroup does not hold it
        ("4:memory:/other\n", "30 25 0:26 /grading /mnt/memory rw - cgroup cgroup rw,memory\n", None),
    ],
)
def test_the_grader_finds_its_own_memory_cgroup(tmp_path, monkeypatch, membership, mounts, found):
    (tmp_path / "cgroup").write_text(membership)
    (tmp_path / "mountinfo").write_text(mounts)
    monkeypatch.setattr(cgroup, "_read", lambda path: "cpu memory pids")  # v2's cgroup.controllers
    got = cgroup.own_memory_cgroup(tmp_path / "cgroup", tmp_path / "mountinfo")
    assert (None if got is None else (got[0], str(got[1]))) == found


# -- no channel between gradings (issue 33) ----------------------------------------------------------------

MEDIUM = Path(sysconfig.get_paths()["stdlib"]) / "pydoc_data" / "topics.py"  # a large file nothing imports
MADVISE = {"PAGEOUT": 21, "COLD": 20, "WILLNEED": 3, "POPULATE_READ": 22, "POPULATE_WRITE": 23,
           "COLLAPSE": 25, "MERGEABLE": 12, "REMOVE": 9, "RANDOM": 1, "SEQUENTIAL": 2}  # fmt: skip


def channel_worker(ref):
    """A worker whose softmax runs tests/kit/channels.py's verbs."""
    source = REFERENCE.read_text() + CHANNELS
    return sandboxed_student(source, ref, ref, {"softmax": 8}, limits=Limits(call_seconds=20.0))


@pytest.mark.parametrize("arch", sorted(seccomp.ARCHES))
def test_the_filter_keeps_the_allocators_advice_and_refuses_the_page_caches(arch):
    """madvise: the advice glibc, Python and mimalloc give anonymous memory allowed, the advice that
    evicts, fills, probes or merges file pages refused; preadv2/pwritev2 only without flags (RWF_NOWAIT:
    a probe); prctl's KSM switch refused."""
    code = seccomp.program(arch)
    native, column = seccomp.AUDIT_ARCH[arch], seccomp.ARCHES[arch]
    eperm = seccomp.RET_ERRNO | errno.EPERM
    number = {name: row[column] for name, (row, _) in seccomp.CHECKED.items()}
    for advice in seccomp.MADVISE_ALLOWED:
        assert run_filter(code, native, number["madvise"], (1 << 40, 4096, advice)) == seccomp.RET_ALLOW
    for name, advice in MADVISE.items():
        assert run_filter(code, native, number["madvise"], (1 << 40, 4096, advice)) == eperm, name
    for call in ("preadv2", "pwritev2"):
        assert run_filter(code, native, number[call], (3, 0x1000, 1, 0, 0, 0)) == seccomp.RET_ALLOW
        for flags in (8, 1, 1 << 32):  # RWF_NOWAIT, RWF_HIPRI, garbage above
            assert run_filter(code, native, number[call], (3, 0x1000, 1, 0, 0, flags)) == eperm
    assert run_filter(code, native, number["prctl"], (67, 1)) == eperm  # PR_SET_MEMORY_MERGE
    for name in ("inotify_init1", "inotify_add_watch", "fanotify_init", "fadvise64", "readahead", "mincore",
                 "cachestat", "getrusage", "io_setup", "io_submit", "io_pgetevents"):  # fmt: skip
        assert run_filter(code, native, seccomp.REFUSED[name][column]) == eperm, name


@pytest.mark.skipif(not MEDIUM.is_file(), reason="no pydoc_data in this stdlib")
def test_no_worker_clears_fills_or_probes_the_page_cache(ref, layers_off):
    """Issue 33: a worker cleared a stdlib file's pages (POSIX_FADV_DONTNEED), set one per bit (a
    one-byte read), and a later grading's worker, under another uid, read them back (preadv2 with
    RWF_NOWAIT; the major-fault count of getrusage after touching a mapping; Linux AIO's own RWF_NOWAIT,
    found attacking this filter): benchmarks/bench_channels.py passed 120 of 120 bits each way.
    Now every such call is refused (EPERM), and the allocator's own advice still works. Only the filter
    holds these: no other layer sees them."""
    layers_off("", "seccomp")
    student, _ = channel_worker(ref)
    refused = f"REFUSED {errno.EPERM}"
    try:
        assert student.softmax(["allocate"]) == "ALLOCATED"  # malloc_trim, MADV_DONTNEED, MADV_FREE
        assert student.softmax(["send", str(MEDIUM), "101"]) == refused  # fadvise; the reads themselves work
        for probe in ("nowait", "aio", "faults", "cachestat", "mincore"):
            assert student.softmax([f"probe_{probe}", str(MEDIUM), 3]) == refused, probe
        assert student.softmax(["readahead", str(MEDIUM)]) == refused
        for name, advice in MADVISE.items():
            assert student.softmax(["madvise", str(MEDIUM), advice]) == refused, name
        assert student.softmax(["ksm"]) == refused
    finally:
        student.close()


def test_no_worker_watches_the_files_another_opens(ref, layers_off, tmp_path):
    """Issue 33: a worker holding an inotify IN_OPEN watch on a stdlib folder read the names of the
    files another grading's worker opened there (bench_channels.py: 20 of 20 bits). Now inotify and
    fanotify are refused."""
    layers_off("", "seccomp")
    student, _ = channel_worker(ref)
    refused = f"REFUSED {errno.EPERM}"
    try:
        assert student.softmax(["inotify", str(MEDIUM.parent)]) == refused
        assert student.softmax(["watch", str(MEDIUM.parent)]) == refused
        assert student.softmax(["fanotify"]) == refused
    finally:
        student.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the mount layer needs root")
@pytest.mark.parametrize("off", ["seccomp,mounts", "seccomp,landlock"], ids=["landlock", "mounts"])
def test_no_worker_reads_which_pages_it_holds_from_proc(ref, monkeypatch, off):
    """Touching one page of a file's mapping maps the cached pages around it (fault-around), and
    /proc/self/pagemap's present bits then said which were cached, none of them read: a probe no system
    call filter sees. On main, with Landlock off, the mount layer's hidepid proc showed the worker its
    own /proc/self. Now Landlock (no read of /proc) and the mount layer (an empty /proc) each hold."""
    monkeypatch.setenv(isolation.LAYERS_OFF, f"audit_hook,{off}")
    layers = isolation.machine_layers()
    if not (layers.landlock if "mounts" in off else layers.mounts):
        pytest.skip(f"the layer that must hold with {off} off is not here")
    student, _ = channel_worker(ref)
    try:
        assert student.softmax(["probe_pagemap", str(MEDIUM), 3]).startswith("REFUSED")
    finally:
        student.close()
