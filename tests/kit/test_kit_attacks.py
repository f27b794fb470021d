"""The attacker's corpus (issue 12): what a student who wants points tries once the audit hook is gone.

Every attack first switches the worker's audit hook off for real, from inside the submission
(`HOOK_OFF`: grader.runtime.audit's Confinement is reached through sys.modules and gc; its `_check` is patched
away and every instance marked busy, so the hook returns at once), because Python's audit hooks are no
sandbox and the Grading rules must hold without it. `test_the_attacker_can_switch_the_hook_off` shows
that this works, so that every other attack here is one against the operating-system layers alone.

Each test asserts a guarantee of the Grading rules: at most the honest score, no secret in what comes
back, another worker unharmed, nothing left behind, grader-side work bounded (by a generous alarm, not
a wall-clock assertion). Each attack succeeded against the kit before issue 12's layers (when the
audit hook was the only boundary); each test is the proof that its hole is closed.

Two kinds of attack: through `grade` (the whole pipeline, cut to a few exercises, as test_kit_hostile),
and, for the lower-level ones, through `sandboxed_student` (one or two Sandboxes held by the test;
`softmax` called with a string is the attack's command channel, its return value the exfiltration
channel, exactly what a visible check would print).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import types
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.assignment.manifest import Budget
from grader.expect import call, expect_close
from grader.grading.grade import grade, kit_manifest
from grader.pytest_plugin import _EchoOutput
from grader.runtime.protocol import CallTimedOut, SubmissionError
from grader.runtime.worker import load_module
from grader.sandbox.deadlines import cpu_time, proc_stat
from grader.sandbox.isolation import LAYERS_OFF, protect_kit
from grader.sandbox.sandbox import Limits
from grader.sandbox.student import sandboxed_student
from tests.kit.conftest import KIT
from tests.kit.gradescope_schema import problems

REFERENCE_PATH = KIT / "solutions" / "optimization_toolkit.py"
REFERENCE = REFERENCE_PATH.read_text()
STUB = (KIT / "student" / "optimization_toolkit.py").read_text()
FULL_EXAMPLE = KIT / "examples" / "submissions" / "ada_full.py"
EXERCISES = [8, 12]  # softmax (attacked) and group_advantages (honest where the reference is appended)
HONEST = 4.0  # exercise 12's points
EXERCISE_OF = {"softmax": 8, "add_score": 9, "group_advantages": 12, "exact_kl": 16, "autoresearch": 19}
LIMITS = Limits(call_seconds=1.0, import_seconds=5.0)  # a call's wall bound: 4 s
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="the worker runs as another user only when the grader is root")

# Switches the audit hook off from inside the worker: the hook object lives in the interpreter it guards.
HOOK_OFF = """

import gc as _gc
import sys as _sys


def _switch_the_hook_off():
    audit = _sys.modules.get("grader.runtime.audit")
    if audit is not None:
        audit.Confinement._check = lambda self, event, args: None
    for obj in _gc.get_objects():
        if type(obj).__name__ == "Confinement":
            obj._busy = True  # the hook's own re-entrancy guard: it now returns at once


_switch_the_hook_off()
"""

# The command channel of the low-level attacks: softmax("verb:argument") runs ATTACKS[verb](argument).
COMMANDS = """

import os as _os

_ATTACKS = {}


def _attack(fn):
    _ATTACKS[fn.__name__] = fn
    return fn


def _honest_softmax(xs):
    m = max(xs)
    es = [math.exp(x - m) for x in xs]
    return [e / sum(es) for e in es]


def softmax(xs):
    if isinstance(xs, str):
        verb, _, argument = xs.partition(":")
        try:
            return _ATTACKS[verb](argument)
        except Exception as error:  # an attack the sandbox stopped: the call still answers
            return f"REFUSED:{type(error).__name__}: {error}"
    return _honest_softmax(xs)


@_attack
def read_past_the_hook(path):
    # Works with the hook on (issue 12 item 4): the hook resolves a relative path from the cwd, the
    # kernel from dir_fd. From a cwd six folders deep in the scratch folder, "../../../x" is in the
    # scratch folder for the hook; from the scratch folder itself (three deep) it is "/x" for the kernel.
    scratch = _os.getcwd()
    deep = _os.path.join(scratch, "a", "b", "c", "d", "e", "f")
    _os.makedirs(deep, exist_ok=True)
    folder = _os.open(scratch, _os.O_RDONLY)
    _os.chdir(deep)
    try:
        ups = "../" * scratch.count("/")
        fd = _os.open(ups + path.lstrip("/"), _os.O_RDONLY, dir_fd=folder)
        return "READ:" + _os.read(fd, 4096).decode("utf-8", "replace")
    except OSError as error:
        return f"DENIED:{error}"
    finally:
        _os.chdir(scratch)


@_attack
def read(path):
    try:
        with open(path, "rb") as handle:
            return "READ:" + handle.read(4096).decode("utf-8", "replace")
    except OSError as error:
        return f"DENIED:{error}"
"""


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(REFERENCE_PATH, "attacks_reference")


@pytest.fixture(scope="module", autouse=True)
def protected_kit() -> Iterator[None]:
    """What every grading as root does (the pytest plugin): the kit's secrets closed to others while it
    grades, its modes given back after."""
    restore = protect_kit(KIT, KIT / "grader") if ROOT else (lambda: None)
    yield
    restore()


@contextlib.contextmanager
def worker(ref, tail: str, limits: Limits = LIMITS, source: str = REFERENCE, hook_off: bool = True):
    """One sandboxed submission (the reference, the hook switched off, the command channel, `tail`)."""
    student, box = sandboxed_student(
        source + (HOOK_OFF if hook_off else "") + COMMANDS + textwrap.dedent(tail),
        ref,
        ref,
        EXERCISE_OF,
        limits=limits,
    )
    try:
        yield student, box
    finally:
        student.close()


class BoundExceeded(Exception):
    """The grader did not get its answer within the test's generous bound."""


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Interrupt the grader (this process) after `seconds`: grader-side work must be bounded. The
    interruption may be swallowed (a reference that runs in the grader turns any exception into the
    call's error), so the overrun is also recorded and checked when the block ends."""
    overran = []

    def expired(signum, frame):
        overran.append(True)
        raise BoundExceeded(f"the grader was still busy after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if overran:
        raise BoundExceeded(f"the grader was still busy after {seconds} s")


@pytest.fixture
def sandboxes() -> Iterator[Path]:
    """TMPDIR for a grading: in /tmp, which the worker user may pass through."""
    folder = Path(tempfile.mkdtemp(prefix="optlab-attacks-"))
    os.chmod(folder, 0o711)
    yield folder
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def grade_source(tmp_path: Path, source: str, exercises=EXERCISES, **options) -> dict:
    submission = tmp_path / "submission"
    submission.mkdir(parents=True, exist_ok=True)
    (submission / "optimization_toolkit.py").write_text(source)
    return grade_submission(tmp_path, submission, exercises, **options)


def grade_submission(tmp_path: Path, submission: Path, exercises=EXERCISES, **options) -> dict:
    out = tmp_path / "results" / "results.json"
    options.setdefault("call_timeout", 2)
    graded = grade(KIT, submission, out, exercises=exercises, **options)
    assert problems(out) == []
    return graded.document


def entries(document: dict) -> dict[str, dict]:
    return {t["name"]: t for t in document["tests"]}


def everything_shown(document: dict) -> str:
    return document.get("output", "") + "\n".join(t.get("output", "") for t in document["tests"])


# -- 0. the precondition: the hook is no boundary ---------------------------------------------------------


def test_the_attacker_can_switch_the_hook_off(ref):
    """With HOOK_OFF, what the hook refuses (native code, a write outside the scratch folder's rules)
    runs: every other attack here is one against the operating system's layers alone."""
    tail = """
    @_attack
    def native(argument):
        import ctypes

        return ctypes.sizeof(ctypes.c_int)
    """
    with worker(ref, tail) as (student, _):
        assert student.softmax("native:") == 4


# -- 1. files -------------------------------------------------------------------------------------------


def _git_object_file() -> Path | None:
    common = Path(subprocess.run(
        ["git", "-C", str(KIT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True, text=True, check=False,
    ).stdout.strip() or KIT / ".git")  # fmt: skip
    for folder in (common / "objects" / "pack", common / "objects"):
        found = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        if found:
            return found[0]
    return None


def _installed_manifest() -> Path:
    import grader

    return Path(grader.__file__).parent / "exercises.toml"


def _venv_manifest() -> Path | None:
    """The manifest of the grader package the interpreter has installed (site-packages, or the folder an
    editable install maps it to): protect_kit closes the kit tree it grades with, not this copy."""
    import re
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    if (site / "grader" / "exercises.toml").is_file():
        return site / "grader" / "exercises.toml"
    for finder in site.glob("__editable__*optlab*finder.py"):
        if found := re.search(r"'grader': '([^']+)'", finder.read_text()):
            return Path(found[1]) / "exercises.toml"
    return None


SECRET_FILES = {
    "examples/ full solution": lambda: FULL_EXAMPLE,
    ".git object": _git_object_file,
    "git HEAD of the checkout": lambda: KIT / ".git",
    "solutions/ reference": lambda: REFERENCE_PATH,
    "tests/hidden": lambda: KIT / "tests" / "hidden" / "test_ex08_softmax.py",
    "the kit's own grader/exercises.toml": _installed_manifest,
    "the installed package's grader/exercises.toml": _venv_manifest,
    "a kit module outside the worker runtime": lambda: KIT / "grader" / "grading" / "grade.py",
    "/etc/passwd": lambda: Path("/etc/passwd"),
    "the grader's /proc/<ppid>/cmdline": lambda: Path(f"/proc/{os.getpid()}/cmdline"),
    "the grader's /proc/<ppid>/environ": lambda: Path(f"/proc/{os.getpid()}/environ"),
}


@as_root
@pytest.mark.parametrize("name", list(SECRET_FILES))
def test_the_worker_reads_no_file_of_the_kit_or_the_system(ref, name):
    """The worker, hook off, opens a secret file and returns its first bytes as its answer."""
    path = SECRET_FILES[name]()
    if path is None:
        pytest.skip("no such file here")
    with worker(ref, "") as (student, _):
        got = student.softmax(f"read:{path}")
    assert not got.startswith("READ:"), f"{path} leaked: {got[5:80]!r}"


def test_the_hook_alone_keeps_no_file_from_the_worker(ref):
    """Not even the hook's own job holds against a submission that leaves it on: os.open with dir_fd
    (the scratch folder) and a relative path, from a cwd deeper in the scratch folder."""
    with worker(ref, "", hook_off=False) as (student, _):
        assert student.softmax("read:/etc/passwd").startswith("DENIED:")  # the hook is on
        got = student.softmax(f"read_past_the_hook:{FULL_EXAMPLE}")
    assert not got.startswith("READ:"), f"{FULL_EXAMPLE} leaked: {got[5:80]!r}"


def test_the_stub_does_not_score_with_a_solution_found_on_disk(tmp_path, sandboxes, monkeypatch):
    """The stub, plus: hook off, exec a full solution lying in the kit (examples/ or solutions/)."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    steal = f"""
    for _path in ({str(REFERENCE_PATH)!r}, {str(FULL_EXAMPLE)!r}):
        try:
            exec(compile(open(_path).read(), "stolen", "exec"), globals())
            break
        except OSError:
            pass
    """
    document = grade_source(tmp_path, STUB + HOOK_OFF + textwrap.dedent(steal))
    assert document["score"] == 0


def test_a_file_of_the_kit_is_not_exfiltrated_through_the_visible_output(tmp_path, sandboxes, monkeypatch):
    """softmax raises an exception whose message is the text of a kit file: the visible entry shows it."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    secret = next(line for line in FULL_EXAMPLE.read_text().splitlines() if "def softmax" in line)
    leak = f"""
    def softmax(xs):
        text = open({str(FULL_EXAMPLE)!r}).read()
        start = text.index("def softmax")
        raise ValueError("LEAK " + text[start:start + 300])
    """
    document = grade_source(tmp_path, REFERENCE + HOOK_OFF + textwrap.dedent(leak))
    assert secret not in everything_shown(document)


# -- 2. one user for every worker ---------------------------------------------------------------------------

SECRET_OF_B = "B-SECRET-" + uuid.uuid4().hex
NEIGHBOUR = """

@_attack
def same_user(pid):
    mine = {line for line in open("/proc/self/status") if line.startswith("Uid:")}
    theirs = {line for line in open(f"/proc/{pid}/status") if line.startswith("Uid:")}
    return "SAME" if mine == theirs else "OTHER"


@_attack
def kill(pid):
    try:
        _os.kill(int(pid), 9)  # a real attacker kills every pid of /proc with its own uid
        return "KILLED"
    except OSError as error:
        return f"REFUSED:{error}"


@_attack
def rewrite(pid):
    config = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[-2]
    module = __import__("json").loads(config)["module"]
    try:
        with open(module, "a") as handle:
            handle.write("\\ndef softmax(xs):\\n    return [1.0] * len(xs)\\n")
    except OSError as error:
        return f"REFUSED:{error}"
    try:
        _os.kill(int(pid), 9)  # its next call restarts it from the rewritten module
    except OSError:
        pass
    return "REWRITTEN"


@_attack
def steal_source(pid):
    config = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")[-2]
    module = __import__("json").loads(config)["module"]
    try:
        return "READ:" + open(module).read()[-200:]
    except OSError as error:
        return f"DENIED:{error}"


@_attack
def memory(pid):
    found = []
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                if "r" not in perms or "[vvar" in line or "[vsyscall" in line:
                    continue
                start, end = (int(x, 16) for x in span.split("-"))
                try:
                    mem.seek(start)
                    chunk = mem.read(min(end - start, 64 << 20))
                except (OSError, OverflowError, ValueError):
                    continue
                at = chunk.find(b"B-SECRET-")
                if at >= 0:
                    found.append(chunk[at:at + 41].decode("ascii", "replace"))
                    break
    except OSError as error:
        return f"DENIED:{error}"
    return "READ:" + ",".join(found)
"""


@contextlib.contextmanager
def two_workers(ref) -> Iterator[tuple]:
    """Two submissions graded at the same time: A attacks, B is honest and holds a secret."""
    with worker(ref, NEIGHBOUR) as (a, box_a), worker(ref, f"\nMY_SECRET = {SECRET_OF_B!r}\n") as (b, box_b):
        assert a.softmax([0.0, 0.0]) == b.softmax([0.0, 0.0]) == [0.5, 0.5]  # both running
        yield a, b, box_b, box_b.worker_pid


@as_root
def test_concurrent_workers_run_as_different_users(ref):
    with two_workers(ref) as (a, _, _, pid):
        assert a.softmax(f"same_user:{pid}") != "SAME"


@as_root
def test_a_worker_cannot_kill_another(ref):
    with two_workers(ref) as (a, b, box_b, pid):
        answer = a.softmax(f"kill:{pid}")
        assert b.softmax([0.0, 0.0]) == [0.5, 0.5], answer
        assert box_b.restarts == 1, f"B was restarted: {box_b.log}"


@as_root
def test_a_worker_cannot_rewrite_another_workers_module(ref):
    with two_workers(ref) as (a, b, _, pid):
        a.softmax(f"rewrite:{pid}")
        with contextlib.suppress(SubmissionError):
            b.softmax([0.0])  # B's call in flight when it was killed
        assert b.softmax([0.0, 0.0]) == [0.5, 0.5]


@as_root
def test_a_worker_cannot_read_another_workers_submission(ref):
    with two_workers(ref) as (a, _, _, pid):
        assert SECRET_OF_B not in a.softmax(f"steal_source:{pid}")


@as_root
def test_a_worker_cannot_read_another_workers_memory(ref):
    with two_workers(ref) as (a, _, _, pid):
        assert SECRET_OF_B not in a.softmax(f"memory:{pid}")


# -- 3. persistence -----------------------------------------------------------------------------------------

MARK = "persisted-" + uuid.uuid4().hex
PLANTS = """

MARK = "%MARK%"
# Plain files: where they go, what the later worker reads back.
_PLACES = {
    "tmp-sub": "/tmp/optlab-attack-" + MARK + "/sub/dir/loot",
    "var-tmp": "/var/tmp/optlab-attack-" + MARK,
    "dev-shm": "/dev/shm/optlab-attack-" + MARK,
    "run-lock": "/run/lock/optlab-attack-" + MARK,
}


@_attack
def plant(where):
    if where == "sysv-shm":
        return _sysv(create=True)
    if where == "posix-mq":
        return _mq(create=True)
    path = _PLACES[where]
    try:
        _os.makedirs(_os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(MARK)
        return "PLANTED"
    except OSError as error:
        return f"REFUSED:{error}"


@_attack
def harvest(where):
    if where == "sysv-shm":
        return _sysv(create=False)
    if where == "posix-mq":
        return _mq(create=False)
    try:
        return "READ:" + open(_PLACES[where]).read()
    except OSError as error:
        return f"DENIED:{error}"


def _sysv(create):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key = 0x0B7A0000 + (int(MARK[-6:], 16) & 0xFFFF)
    ident = libc.shmget(key, 4096, (0o1000 | 0o666) if create else 0)  # IPC_CREAT
    if ident < 0:
        return f"DENIED:shmget errno {ctypes.get_errno()}"
    address = libc.shmat(ident, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return f"DENIED:shmat errno {ctypes.get_errno()}"
    if create:
        ctypes.memmove(address, MARK.encode(), len(MARK))
        return "PLANTED"
    return "READ:" + ctypes.string_at(address, len(MARK)).decode("ascii", "replace")


def _mq(create):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    name = ("/optlab-attack-" + MARK[-12:]).encode()
    flags = (0o100 | 0o2) if create else 0  # O_CREAT | O_RDWR, or O_RDONLY
    mqd = libc.mq_open(name, flags, 0o666, None)
    if mqd < 0:
        return f"DENIED:mq_open errno {ctypes.get_errno()}"
    if create:
        libc.mq_send(mqd, MARK.encode(), len(MARK), 0)
        return "PLANTED"
    buffer = ctypes.create_string_buffer(16384)
    size = libc.mq_receive(mqd, buffer, 16384, None)
    return "READ:" + buffer.raw[: max(size, 0)].decode("ascii", "replace")
""".replace("%MARK%", MARK)


def _remove_leftovers() -> None:
    """As root, after the test: whatever the attack left (it must not pile up on the machine)."""
    import ctypes
    import shutil

    for top in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        path = f"{top}/optlab-attack-{MARK}"
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
    libc = ctypes.CDLL(None, use_errno=True)
    ident = libc.shmget(0x0B7A0000 + (int(MARK[-6:], 16) & 0xFFFF), 0, 0)
    if ident >= 0:
        libc.shmctl(ident, 0, None)  # IPC_RMID
    libc.mq_unlink(("/optlab-attack-" + MARK[-12:]).encode())


PERSISTENCE = ("tmp-sub", "var-tmp", "dev-shm", "run-lock", "sysv-shm", "posix-mq")


@as_root
@pytest.mark.parametrize("where", PERSISTENCE)
def test_nothing_a_worker_writes_outlives_its_grading(ref, where):
    """One grading plants a mark; a later grading (a new sandbox) looks for it."""
    try:
        with worker(ref, PLANTS) as (student, _):
            planted = student.softmax(f"plant:{where}")
        with worker(ref, PLANTS) as (student, _):
            harvested = student.softmax(f"harvest:{where}")
        assert not (harvested.startswith("READ:") and MARK in harvested), (
            f"planted: {planted}; read back: {harvested}"
        )
    finally:
        _remove_leftovers()


# -- 7. unbounded work in the grader ------------------------------------------------------------------------

GRADER_WORK = """

import random as _random


def _raw_answer(text):
    # The worker's own end of the pipe, reached with gc: any bytes at all can be sent to the grader.
    link = next(o for o in _gc.get_objects() if type(o).__name__ == "PipeLink")
    link._writer.write(text.encode() + b"\\n")
    import time

    time.sleep(60)  # never answers for real: the grader must already be done with the message


@_attack
def long_reference(iters):
    # Another exercise's function, answered by the reference in the grader's process: argument chosen.
    return str(autoresearch(int(iters), _random.Random(0)))[:50]


@_attack
def long_list_request(n):
    # exact_kl (another exercise) on two lists of n ints, the request written by hand (cheap for the
    # worker): the grader parses, decodes and runs the reference on all of it.
    link = next(o for o in _gc.get_objects() if type(o).__name__ == "PipeLink")
    ones = ",".join(["1"] * int(n)).encode()
    head = b'{"op":"reference","function":"exact_kl","args":[['
    link._writer.write(head + ones + b"],[" + ones + b']],"kwargs":{}}\\n')
    link.receive()
    return "SENT"


@_attack
def colliding_set(n):
    step = 2**61 - 1  # every k * step hashes to 0: a set of them is quadratic to build
    _raw_answer('{"op":"return","value":{"$set":[' + ",".join(str(k * step) for k in range(int(n))) + ']}}')


@_attack
def colliding_request(n):
    # A reference request whose argument is a dict of colliding keys, written by hand (building the dict
    # in the worker would be quadratic there too); the grader decodes it into a dict.
    step = 2**61 - 1
    link = next(o for o in _gc.get_objects() if type(o).__name__ == "PipeLink")
    pairs = ",".join(f"[{k * step},0]" for k in range(int(n)))
    link._writer.write(
        b'{"op":"reference","function":"group_advantages","args":[{"$dict":['
        + pairs.encode()
        + b']}],"kwargs":{}}\\n'
    )
    link.receive()
    return "SENT"


@_attack
def deep_answer(depth):
    n = int(depth)
    _raw_answer('{"op":"return","value":' + "[" * n + "]" * n + "}")


@_attack
def many_lists(megabytes):
    n = int(megabytes) * (1 << 20) // 3
    _raw_answer('{"op":"return","value":[' + ",".join(["[]"] * n) + "]}")


@_attack
def huge_answer(megabytes):
    return "x" * (int(megabytes) << 20)
"""


def test_a_reference_request_cannot_keep_the_grader_busy(ref):
    """softmax asks for autoresearch(10**7, ...): the reference runs it in the grader's own process."""
    with worker(ref, GRADER_WORK) as (student, _), bounded(8):
        with contextlib.suppress(SubmissionError):
            student.softmax(f"long_reference:{10**7}")


def test_a_huge_reference_request_cannot_keep_the_grader_busy(ref):
    """softmax asks the reference for exact_kl of two lists of 10**7 elements (40 MB of request). Holds
    today only because receiving 40 MB is slow (see the 100 MB answer below) and the call's deadline
    cuts it; once receiving is fast, parsing, decoding and the reference must be bounded too."""
    with worker(ref, GRADER_WORK) as (student, _), bounded(8):
        with contextlib.suppress(SubmissionError):
            student.softmax(f"long_list_request:{10**7}")


def test_hash_colliding_set_members_cannot_keep_the_grader_busy(ref):
    """An answer of 200 000 ints that all hash to 0: decoding it into a set is quadratic."""
    with worker(ref, GRADER_WORK) as (student, _), bounded(8):
        with contextlib.suppress(SubmissionError):
            student.softmax("colliding_set:200000")


def test_hash_colliding_dict_keys_in_a_request_cannot_keep_the_grader_busy(ref):
    """A reference request whose argument is a dict of 200 000 colliding keys: the grader builds it."""
    with worker(ref, GRADER_WORK) as (student, _), bounded(8):
        with contextlib.suppress(SubmissionError):
            student.softmax("colliding_request:200000")


def test_deep_nesting_in_an_answer_is_refused_at_once(ref):
    with worker(ref, GRADER_WORK) as (student, _), bounded(8):
        with pytest.raises(Exception):  # noqa: B017,PT011 - anything but an answer
            student.softmax("deep_answer:100000")


def test_a_100_mb_answer_is_refused_at_little_cost(ref):
    """The worker (given all the time it wants) answers 100 MB: the grader must refuse it past its message
    cap without working for long."""
    with worker(ref, GRADER_WORK, limits=Limits(call_seconds=30.0)) as (student, _), bounded(8):
        with pytest.raises(SubmissionError, match="larger than the grader accepts"):
            student.softmax("huge_answer:100")


MEMORY_PROBE = """
import resource, sys, textwrap
sys.path.insert(0, {kit!r})
from pathlib import Path
from grader.sandbox.sandbox import Limits
from grader.sandbox.student import sandboxed_student
from grader.runtime.worker import load_module
ref = load_module(Path({reference!r}), "r")
student, box = sandboxed_student({source!r}, ref, ref, {exercises!r}, limits=Limits(call_seconds=30.0))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    student.softmax("many_lists:20")
except BaseException as error:
    print(type(error).__name__, str(error)[:200], file=sys.stderr)
finally:
    student.close()
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_a_message_of_many_small_values_does_not_cost_the_grader_much_memory(tmp_path):
    """The grader (a child Python, its address space capped at 2 GiB so the machine is safe) receives
    a 20 MB answer of empty lists: its peak memory must stay within a few times the message cap."""
    source = REFERENCE + HOOK_OFF + COMMANDS + GRADER_WORK
    script = MEMORY_PROBE.format(
        kit=str(KIT), reference=str(REFERENCE_PATH), source=source, exercises=EXERCISE_OF
    )
    cap = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    done = subprocess.run(
        [sys.executable, "-c", cap + script], capture_output=True, text=True, timeout=120, cwd=KIT
    )
    grown = int(done.stdout.split()[-1]) if done.stdout.split() else 10**6
    assert grown < 400, f"the grader grew by {grown} MB ({done.stderr[-300:]})"


# -- 6 and 7 again: the reference's worker, asked directly --------------------------------------------------

# The worker's pipes to the reference's worker are in its own memory: any request at all can be sent down
# them, at any time. add_score's reference calls softmax, so a call to add_score may ask softmax.
REFERENCE_WORKER = """

def _reference_pipes():
    return next(o for o in _gc.get_objects() if type(o).__name__ == "_ReferencePipes")


def _ask(function, args):
    answer = _reference_pipes().send({"op": "reference", "function": function, "args": args, "kwargs": {}})
    return f"{answer.get('op')}:{answer.get('type', '')}"


@_attack
def ask(function):
    return _ask(function, [[0.0, 0.0]])


@_attack
def garbage(_):
    pipes = _reference_pipes()
    pipes._writer.write(b"[[[[ not a message\\n")
    return str(pipes._line())


@_attack
def reach(pid):
    # the reference's worker by its pid: stop it, read its memory, its descriptors (the shared byte), its maps
    import signal

    reached = []
    for what, act in (
        ("signal", lambda: _os.kill(int(pid), signal.SIGSTOP)),
        ("mem", lambda: open(f"/proc/{pid}/mem", "rb").read(1)),
        ("fd", lambda: _os.listdir(f"/proc/{pid}/fd")),
        ("maps", lambda: open(f"/proc/{pid}/maps").read(1)),
    ):
        try:
            act()
            reached.append(what)
        except OSError:
            pass
    return reached


@_attack
def oversize(_):
    # a request longer than the reference's worker reads (4 MB): it ends without reading on
    pipes = _reference_pipes()
    try:
        ones = b"1," * (3 << 20) + b"1"
        pipes._writer.write(b'{"op":"reference","function":"softmax","args":[[' + ones + b']]}\\n')
    except OSError:
        pass
    return str(pipes._line())


def add_score(g, policy, s, t, y, w):
    if not isinstance(w, str):
        return _reference_add_score(g, policy, s, t, y, w)
    verb, _, function = w.partition(":")
    if verb == "ask":
        return _ask(function, [[0.0, 0.0]])
    if verb == "garbage_then_ask":
        _reference_pipes()._writer.write(b"[[[[ not a message\\n")
        return _ask("softmax", [[0.0, 0.0]])
    # keep the reference's worker busy for good, at almost no CPU time of this worker's own
    pipes = _reference_pipes()
    ones = ",".join(["1"] * 100000)
    request = '{"op":"reference","function":"softmax","args":[[' + ones + ']],"kwargs":{}}'
    while True:
        pipes._writer.write(request.encode() + b"\\n")
        pipes._line()
"""


@pytest.fixture
def asking(ref):
    """The reference's worker started by an honest call that may ask it (add_score asks softmax)."""
    tail = "\n\n_reference_add_score = add_score\n" + REFERENCE_WORKER
    with worker(ref, tail) as (student, box):
        g = [[[0.0] * 3 for _ in range(2)] for _ in range(3)]
        student.add_score(g, ref.TabPolicy(), 0, 0, 1, 1.0)
        assert box.reference.sandbox is not None and box.reference.sandbox.running()
        yield student, box


def test_the_reference_answers_along_the_open_calls_graph_alone(ref, asking):
    student, _ = asking
    g = [[[0.0] * 3 for _ in range(2)] for _ in range(3)]
    assert student.add_score(g, ref.TabPolicy(), 0, 0, 1, "ask:softmax") == "return:"
    assert student.add_score(g, ref.TabPolicy(), 0, 0, 1, "ask:exact_kl") == "raise:LookupError"
    assert student.add_score(g, ref.TabPolicy(), 0, 0, 1, "ask:add_score") == "raise:LookupError"


def test_the_reference_answers_nothing_between_the_calls_that_may_ask_it(asking):
    student, _ = asking
    assert student.softmax("ask:softmax") == "raise:LookupError"  # softmax's call asks no reference


@pytest.mark.parametrize("attack", ["garbage", "oversize"])
def test_a_message_the_reference_cannot_read_ends_it_and_the_next_call_starts_afresh(ref, asking, attack):
    student, box = asking
    first = box.reference.sandbox.worker_pid
    assert student.softmax(f"{attack}:") == "b''"  # the reference's worker ended: its pipe closed
    policy, data = ref.TabPolicy(), [(0, (1, 2))]
    # The next call that may ask finds it ended (or, if it is still ending, fails and says so)...
    with contextlib.suppress(SubmissionError):
        student.sft_grad(policy, data)
    # ...and the one after has a new submission worker and a new reference worker.
    assert student.sft_grad(policy, data) == ref.sft_grad(policy, data)
    assert box.reference.sandbox.worker_pid != first


def test_the_submission_cannot_reach_the_reference_workers_process(ref, asking):
    student, box = asking
    answering = box.reference.sandbox.worker_pid
    assert student.softmax(f"reach:{answering}") == []
    policy, data = ref.TabPolicy(), [(0, (1, 2))]
    assert student.sft_grad(policy, data) == ref.sft_grad(policy, data)  # not stopped: it still answers


def test_a_reference_that_ended_during_a_call_is_started_afresh_with_its_worker(ref, asking):
    """The worker's runtime saw the reference's worker end: its answer says so, and the grader ends the
    submission worker at once; the next call gets both afresh."""
    student, box = asking
    g = [[[0.0] * 3 for _ in range(2)] for _ in range(3)]
    assert student.add_score(g, ref.TabPolicy(), 0, 0, 1, "garbage_then_ask:") == "raise:SubmissionError"
    assert not box.running() and box.reference.sandbox is None
    policy, data = ref.TabPolicy(), [(0, (1, 2))]
    assert student.sft_grad(policy, data) == ref.sft_grad(policy, data)


def test_a_reference_kept_busy_costs_the_call_its_deadline_and_no_more(ref, asking):
    student, box = asking
    first = box.reference.sandbox.worker_pid
    g = [[[0.0] * 3 for _ in range(2)] for _ in range(3)]
    with bounded(4 * LIMITS.call_seconds + 4), pytest.raises(CallTimedOut):
        student.add_score(g, ref.TabPolicy(), 0, 0, 1, "busy:")
    with contextlib.suppress(ProcessLookupError):  # ended with its submission worker
        os.kill(first, 0)
        pytest.fail("the busy reference worker outlived its call")
    policy, data = ref.TabPolicy(), [(0, (1, 2))]
    assert student.sft_grad(policy, data) == ref.sft_grad(policy, data)


# -- 12. issue 23: deadlines that always fire, and the grader's work for a call bounded ---------------------

DEADLINES = """

import random as _random
import time as _time


def _grader_link():
    return next(o for o in _gc.get_objects() if type(o).__name__ == "PipeLink")


@_attack
def flood(how):
    # A thousand requests (34 KB: one write), then this call's own answer queued behind them. The grader
    # answers each (about 100 bytes): once 64 KB of its answers wait unread, its write() blocks.
    burn, _, then = how.partition(",")
    link = _grader_link()
    stream = b'{"op":"reference","function":"x"}\\n' * 1000
    stream += b'{"op":"return","value":"ACCEPTED","mutated":{}}\\n'
    while stream:
        stream = stream[_os.write(link._writer.fileno(), stream):]
    until = _time.process_time() + float(burn or 0)
    while _time.process_time() < until:  # CPU time spent while the grader is blocked
        pass
    if then == "read":  # unblock the grader: it finds this call's answer queued, the pipe never empty
        answers = 0
        while answers < 1000:
            answers += _os.read(link._read_fd, 1 << 16).count(b"\\n")
    _time.sleep(60)  # never answers for real


@_attack
def nested(size):
    # an answer of about 2 MB, nested 40 deep: formatting it whole costs the grader seconds per check
    depth, _, width = size.partition(",")
    value = list(range(int(width)))
    for _ in range(int(depth)):
        value = [value, 0]
    return value


def autoresearch(iters, rng, proposer=None, guard=True):
    files = {"train.py": "x" * 100_000}  # each callback hands the test's proposer 100 KB
    for _ in range(int(iters)):
        proposer(files, rng)
    return "DONE"


def demo(what):
    # demo's reference calls autoresearch: ask the reference's worker for a long one, never read the answer
    state = _random.Random(0).getstate()
    rng = {"$random": [state[0], list(state[1]), state[2]]}
    pipes = next(o for o in _gc.get_objects() if type(o).__name__ == "_ReferencePipes")
    pipes.post({"op": "reference", "function": "autoresearch", "args": [10**6, rng], "kwargs": {}})
    _time.sleep(0.5)  # the reference's worker reads it while the call is open, and starts
    return "POSTED"


def sft_grad(policy, data):
    # sft_grad's reference calls add_score(g, policy, ...), which calls policy.probs(s, t): a policy whose
    # attribute `probs` names another lab function makes the reference run it on inputs chosen here
    pipes = next(o for o in _gc.get_objects() if type(o).__name__ == "_ReferencePipes")
    shadowed = {"S": 1, "T": 1, "V": 1, "theta": [[[0.0]]], "probs": {"$function": data}}
    policy = {"$object": "TabPolicy", "state": {"$dict": [[k, v] for k, v in shadowed.items()]}}
    args = [[[[0.0]]], policy, [1.0], [1.0], 0, 1.0]
    answer = pipes.send({"op": "reference", "function": "add_score", "args": args, "kwargs": {}})
    return f"{answer.get('type')}: {answer.get('message')}"
"""

EXERCISE_OF_23 = dict(EXERCISE_OF, sft_grad=13)


def _grader_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def deadlines_worker(ref, limits: Limits = LIMITS):
    student, box = sandboxed_student(
        REFERENCE + HOOK_OFF + COMMANDS + DEADLINES, ref, ref, EXERCISE_OF_23, limits=limits
    )
    try:
        yield student, box
    finally:
        student.close()


def test_a_worker_that_never_reads_its_answers_is_ended_at_its_deadline(ref):
    """On main the grader blocked in write() for good (216 s of one grading, cut only by the batch's
    timeout; every later check scored 0): every write now has the call's deadline."""
    with deadlines_worker(ref) as (student, box), bounded(60):
        cpu = _grader_cpu()
        with pytest.raises(CallTimedOut, match="still running after 4 s"):
            student.softmax("flood:0,")
        assert not box.running() and box.log[-1] == "softmax timed out"
        assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])  # the rest scores
        assert _grader_cpu() - cpu < 10  # main: 110 s of the grader's CPU


def test_a_grading_whose_softmax_never_reads_its_answers_scores_the_honest_rest(
    tmp_path, sandboxes, monkeypatch
):
    """The whole pipeline: every softmax call floods the grader. On main the grading hung until its run
    bound (an honest-rest score of 0); now softmax's first call times out at its deadline, its other
    checks fail at once, and exercise 12 (honest) earns its points."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    flooding = "\n\ndef softmax(xs):\n    return _ATTACKS['flood']('0,')\n"
    document = grade_source(tmp_path, REFERENCE + HOOK_OFF + COMMANDS + DEADLINES + flooding, run_seconds=150)
    by_name = entries(document)
    for suite in ("visible", "hidden"):
        assert by_name[f"12 group advantages: {suite} checks"]["status"] == "passed"
        assert by_name[f"8 softmax: {suite} checks"]["score"] == 0
    assert "did not return" in everything_shown(document)


def test_a_call_over_its_cpu_time_is_refused_though_the_grader_never_found_its_pipe_empty(ref):
    """2.5 s of CPU time (the bound: 1 s) spent while the grader was blocked writing, then the answer
    queued behind the requests: on main it was accepted (the CPU time was read only on an empty pipe)."""
    with deadlines_worker(ref) as (student, box), bounded(60):
        with pytest.raises(CallTimedOut, match="1 s of CPU time"):
            student.softmax("flood:2.5,read")
        assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])


def test_a_call_may_ask_the_grader_for_only_so_many_callbacks(ref):
    """3000 callbacks of 100 KB each to the test's proposer, which records what it is given (as the
    suites' scripted proposer does): on main the grader kept all of it (2,171 MB of RSS for the issue's
    attacker). A call's callbacks are bounded in number and in bytes."""
    seen: list[dict] = []

    def proposer(files, rng):
        seen.append(files)
        return files, "nothing"

    with deadlines_worker(ref, Limits(call_seconds=30.0)) as (student, box), bounded(120):
        with pytest.raises(SubmissionError, match="callbacks"):
            student.autoresearch(3000, random.Random(0), proposer)
        assert len(seen) <= box.limits.callbacks
        assert sum(len(files["train.py"]) for files in seen) <= box.limits.callback_bytes
        assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])


def test_a_huge_wrong_answer_is_cut_before_it_is_formatted(ref):
    """A 2 MB answer nested 40 deep fails a check: on main pretty-printing it took the grader seconds of
    CPU per check (192 s for 28 checks of the issue's attacker); cut first, it takes milliseconds."""
    with deadlines_worker(ref, Limits(call_seconds=30.0)) as (student, _):
        got = student.softmax("nested:40,300000")
    cpu = _grader_cpu()
    with pytest.raises(AssertionError) as failed:
        expect_close(got, [0.5, 0.5], call("softmax", got))
    assert _grader_cpu() - cpu < 1.0
    assert len(str(failed.value)) < 4000


def _running(pid: int) -> float | None:
    """The CPU time of process `pid`, None once it has ended."""
    fields = proc_stat(pid)
    return None if fields is None or fields[0] == "Z" else cpu_time(pid)


def test_a_reference_request_left_unread_stops_computing_when_its_call_ends(ref):
    """The submission asks the reference's worker for autoresearch(10**6) and returns without reading
    the answer: on main the reference's worker computed on after the call (44 s of CPU for the issue's
    attacker). It now stops when its call ends."""
    with deadlines_worker(ref) as (student, box):
        assert student.demo("leave") == "POSTED"
        answering = box.reference.sandbox.worker_pid
        at_return = _running(answering) or 0.0
        time.sleep(3)  # not a bound: what a reference still computing would gain meanwhile
        after = _running(answering)
        assert after is None or after - at_return < 0.3, f"{after - at_return:.2f} s after its call"


@pytest.mark.parametrize(
    ("function", "refused"),
    [
        ("exact_kl", "not on the open call's graph"),
        ("add_score", "may not name its class's attribute 'probs'"),
    ],
)
def test_the_reference_runs_no_function_an_argument_names_off_the_call_graph(ref, function, refused):
    """sft_grad's reference calls add_score, which calls policy.probs: a policy whose `probs` attribute
    named exact_kl ran exact_kl on main (then failed on its float: TypeError). A function off the open
    call's graph is refused, and so is an attribute that hides a method (add_score is on the graph)."""
    with deadlines_worker(ref) as (student, _):
        answer = student.sft_grad(ref.TabPolicy(), function)
    assert answer.startswith("CodecError") and refused in answer, answer


WIDE = """

_WIDE = [[]] * 1_300_000  # 4 MB of JSON, about a second of the grader's CPU to decode
_codec = _sys.modules["grader.runtime.codec"].Codec
_encode, _encoded = _codec.encode, []


def _encode_wide_once(self, value, depth=0):
    if value is not _WIDE:
        return _encode(self, value, depth)
    if not _encoded:
        _encoded.append(_encode(self, value, depth))
    return _encoded[0]


_codec.encode = _encode_wide_once


@_attack
def wide(argument):
    return _WIDE


@_attack
def nest(arguments):
    # folders one inside the other in the worker's scratch, deeper than Python recurses (and past
    # PATH_MAX from the scratch folder: 2,048 levels of "d/"); then megabytes in files at the bottom
    depth, megabytes = (int(n) for n in arguments.split(","))
    start = _os.getcwd()
    for _ in range(depth):
        _os.mkdir("d")
        _os.chdir("d")
    for number in range(megabytes):
        with open(f"f{number}", "wb") as handle:
            handle.write(b"x" * (1 << 20))
    _os.chdir(start)
    return [1.0]


@_attack
def trickle(size):
    # `size` bytes of an answer at once, then two more every 50 ms, never the newline that ends it
    import time

    fd = next(o for o in _gc.get_objects() if type(o).__name__ == "PipeLink")._writer.fileno()
    _os.write(fd, b'{"op":"return","value":[' + b"0," * (int(size) // 2))
    while True:
        _os.write(fd, b"0,")
        time.sleep(0.05)
"""


def test_the_graders_work_on_an_answer_counts_against_its_exercises_time(ref):
    """Every softmax answer is 1.3 M empty lists, encoded once in the worker: 0.55 s of call time each
    (sending 4 MB, parsing it), then 1.1 s of the grader's CPU to decode it, which was on no one's time:
    in the merged round 3, 4 calls fitted in an exercise bounded to 2 s of call time, for 4.0 s of the
    grader's CPU against 2.2 s charged (grader grade of exercise 8: 25 s of CPU instead of 1 s, within
    its two suites' 20 s each only because their checks make few calls). The decoding now counts as
    the call's: the grader's work for the calls is within the time the sandbox charged. The link is the
    one the suites' plugin gives the Student (it echoes the worker's output)."""
    # the exercise's 2 s are CPU time; its calls' wall-clock bound, wide enough for a loaded machine
    limits = Limits(call_seconds=3.0, import_seconds=5.0, exercise_seconds=2.0, wall_factor=30.0)
    with worker(ref, WIDE, limits=limits) as (student, box), bounded(240):
        student.link = _EchoOutput(box)
        assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])  # started
        charged, cpu = box._spent, _grader_cpu()
        with pytest.raises(CallTimedOut, match="exercise"):
            for _ in range(12):
                assert len(student.softmax("wide:")) == 1_300_000
        assert _grader_cpu() - cpu <= box._spent - charged + 0.5  # freeing each answer: outside
        assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])  # not its time


@pytest.mark.parametrize("size", [0, 3_900_000])
def test_an_answer_that_never_ends_is_cut_at_the_calls_deadline(ref, size):
    """Held: half an answer (nothing, or 3.9 MB: just under the message bound), then a trickle that never
    sends the newline. The grader waits no longer than the call's wall bound (4 s), reads each byte once,
    and the next call starts afresh."""
    with worker(ref, WIDE) as (student, box), bounded(60):
        cpu = _grader_cpu()
        with pytest.raises(CallTimedOut, match="still running after 4 s"):
            student.softmax(f"trickle:{size}")
        assert _grader_cpu() - cpu < 2.0 and box.log[-1] == "softmax timed out"
        assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])


def test_a_scratch_folder_nested_deeper_than_python_recurses_is_removed_at_close(ref, monkeypatch):
    """The worker nests 3,000 folders in its scratch. In the merged round 3 closing the sandbox raised
    RecursionError (shutil.rmtree, ignore_errors or not) and left its folder behind (for each sandbox of
    each grading; grader grade went on, a check lost). The mount layer is off: its tmpfs would go whole."""
    monkeypatch.setenv(LAYERS_OFF, _with_off("mounts"))
    source = REFERENCE + HOOK_OFF + COMMANDS + textwrap.dedent(WIDE)
    limits = Limits(call_seconds=20.0, import_seconds=5.0)
    student, box = sandboxed_student(source, ref, ref, EXERCISE_OF, limits=limits)
    with bounded(120):
        try:
            assert student.softmax("nest:3000,0") == [1.0]
        finally:
            student.close()  # the worker is killed first: nothing adds to the tree while it goes
    assert not box.home.exists()


def test_files_below_a_path_longer_than_path_max_count_against_the_disk_quota(ref, monkeypatch):
    """Without the mount layer (Docker's default) the grader walks the scratch folder for its quota. The
    walk opened folders by path: 2,100 folders down a path is longer than PATH_MAX and could not be
    opened, so 100 MB written there were never counted (the call, and the next, returned). Now each
    folder is entered from its parent: the worker is ended at its quota."""
    monkeypatch.setenv(LAYERS_OFF, _with_off("mounts"))
    source = REFERENCE + HOOK_OFF + COMMANDS + textwrap.dedent(WIDE)
    limits = Limits(call_seconds=20.0, import_seconds=5.0, file_bytes=2 << 20)
    student, box = sandboxed_student(source, ref, ref, EXERCISE_OF, limits=limits)
    with bounded(120):
        try:
            with pytest.raises(SubmissionError, match="quota of its scratch folder"):
                student.softmax("nest:2100,100")  # ended here, or if it returned between two walks,
                time.sleep(2)  # (a walk is made at most every QUOTA_SECONDS, a tenth of the time)
                student.group_advantages([1.0, 0.0])  # at the next call's answer
            assert student.group_advantages([1.0, 0.0]) == ref.group_advantages([1.0, 0.0])
        finally:
            student.close()


def _with_off(layer: str) -> str:
    """OPTLAB_LAYERS_OFF with `layer` added to what the run already switched off."""
    return ",".join(filter(None, (os.environ.get(LAYERS_OFF, ""), layer)))


# -- 8. one run budget -----------------------------------------------------------------------

SLOW = """

def softmax(xs):
    import time

    time.sleep(0.9)  # just under the call's wall bound (0.25 s of CPU x 4)
    return _honest_softmax(xs)
"""


def test_a_slow_exercise_does_not_time_out_the_others_in_a_sandbox(ref):
    """Sandbox level: a correct softmax that sleeps just under the bound, three times, then exact_kl:
    softmax's exercise spends its own budget; the run's is larger than one exercise's."""
    limits = Limits(call_seconds=0.25, import_seconds=5.0, exercise_seconds=1.5, run_seconds=4.0)
    with worker(ref, SLOW, limits=limits) as (student, _):
        for _ in range(3):
            with contextlib.suppress(SubmissionError):
                student.softmax([0.0, 0.0])
        assert student.exact_kl([0.5, 0.5], [0.5, 0.5]) == 0.0


def test_a_slow_exercise_costs_only_its_own_points(tmp_path, sandboxes, monkeypatch):
    """grade: softmax correct but sleeping just under the per-call bound in every call; group_advantages
    correct. Exercise 8 spends its own budget (20 s of calls per suite), and the run's bound (60 s)
    leaves exercise 12's checks time to run and pass in both suites."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    slow = """

    def softmax(xs):
        import time

        time.sleep(0.35)  # --call-timeout 0.1: the wall bound is 0.4 s
        m = max(xs)
        es = [math.exp(x - m) for x in xs]
        return [e / sum(es) for e in es]
    """
    document = grade_source(tmp_path, REFERENCE + textwrap.dedent(slow), call_timeout=0.1, run_seconds=60.0)
    by_name = entries(document)
    assert by_name["12 group advantages: visible checks"]["status"] == "passed"
    assert by_name["12 group advantages: hidden checks"]["status"] == "passed"


# -- 9. protocol desync -----------------------------------------------------------------------

DESYNC = """

STALE = []


@_attack
def long_int(argument):
    _sys.set_int_max_str_digits(0)
    try:
        group_advantages([10**5000])  # a request the grader cannot decode (int too long to convert)
    except Exception:  # the grader's next call arrives as the answer to this request
        pass
    return _honest_softmax([1.0, 2.0, 3.0])


@_attack
def deep_request(argument):
    link = next(o for o in _gc.get_objects() if type(o).__name__ == "PipeLink")
    n = 10000
    # the request written by hand: the worker's own codec would refuse the depth
    link._writer.write(
        b'{"op":"reference","function":"exact_kl","args":['
        + b"[" * n
        + b"]" * n
        + b',[]],"kwargs":{}}\\n'
    )
    link.receive()  # the grader's next call, taken as the answer
    return _honest_softmax([1.0, 2.0, 3.0])
"""


@pytest.mark.parametrize("how", ["long_int", "deep_request"])
def test_a_message_that_does_not_decode_never_leaves_stale_answers(ref, how):
    """A request the grader cannot decode for a reason other than JSON syntax; the next call must get its
    own answer (or an error), never the answer of the call before."""
    with worker(ref, DESYNC) as (student, _), bounded(20):
        with contextlib.suppress(Exception):
            student.softmax(f"{how}:")
        try:
            got = student.softmax([0.0, 0.0])
        except SubmissionError:
            return  # the worker was killed: no stale answer
        assert got == [0.5, 0.5], f"a stale answer: {got}"


# -- 5, 6, 10, 11: holes being closed elsewhere (short) ---------------------------------------------------

MUTATING_WRONG = """

def softmax(xs):
    xs[:] = [0.0] * len(xs)  # the test hands the rewritten list to the reference afterwards
    return [1.0 / len(xs)] * len(xs)
"""
WRONG = "\n\ndef softmax(xs):\n    return [1.0 / len(xs)] * len(xs)\n"


@pytest.fixture(scope="module")
def wrong_scores(tmp_path_factory) -> dict[str, float]:
    """What the plainly wrong (uniform) softmax earns alone, per entry."""
    folder = tmp_path_factory.mktemp("wrong")
    document = grade_source(folder, REFERENCE + WRONG)
    return {name: t["score"] for name, t in entries(document).items()}


def test_rewriting_the_arguments_does_not_fool_the_expected_value(
    tmp_path, sandboxes, monkeypatch, wrong_scores
):
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    document = grade_source(tmp_path, REFERENCE + MUTATING_WRONG)
    for name, t in entries(document).items():
        assert t["score"] <= wrong_scores[name] + 1e-9, name


def test_another_exercises_reference_is_no_oracle(tmp_path, sandboxes, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    oracle = """

    def softmax(xs):
        g = [[[0.0] * len(xs)]]
        add_score(g, TabPolicy(1, 1, len(xs), [[list(xs)]]), 0, 0, -1, -1.0)  # g += p: the reference's
        return g[0][0]
    """
    document = grade_source(tmp_path, STUB + textwrap.dedent(oracle), exercises=[8])
    assert document["score"] == 0


def test_a_value_the_test_quotes_whole_cannot_hang_its_suite(tmp_path, sandboxes, monkeypatch):
    """attack5: choose_parent returns 3.9 MB of one word; a hidden check looks it up in its archive
    (list.index), whose ValueError quotes it whole. The plugin's verdict ran its patterns (a word, then
    "() did not return") on that text uncut: quadratic, the hidden suite hung (82 s of CPU) until the
    grading's wall-clock bound cut it. A failure's text is now cut before anything reads it: the run
    ends on its own, every check reported."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    huge = '\n\ndef choose_parent(archive, rng, mode="dgm"):\n    return "x" * 3_900_000\n'
    document = grade_source(tmp_path, REFERENCE + huge, exercises=[17], run_seconds=90)
    assert "hidden_notes" not in document["extra_data"], document["extra_data"].get("hidden_notes")
    kinds = {c.get("kind") for t in document["tests"] for c in t["extra_data"]["checks"]}
    assert "did not run" not in kinds
    assert max(len(t["output"]) for t in document["tests"]) <= 2000


def test_nan_answers_earn_nothing_more_than_a_constant(tmp_path, sandboxes, monkeypatch):
    """[nan] * n against [2.0] * n: a constant passes the checks that compare two answers honestly
    (shift invariance), so NaN, which equals NaN in expect_close today, may earn no more. On softmax it
    does not (2 of 9 hidden checks each): item 11 gives NaN no edge over a constant here."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    scores = {}
    for name, body in (("nan", "[float('nan')] * len(xs)"), ("constant", "[2.0] * len(xs)")):
        document = grade_source(tmp_path / name, REFERENCE + f"\n\ndef softmax(xs):\n    return {body}\n")
        scores[name] = {n: t["score"] for n, t in entries(document).items()}
    for entry, score in scores["nan"].items():
        assert score <= scores["constant"][entry] + 1e-9, entry


def test_zip_member_names_cannot_inject_text(tmp_path, sandboxes, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    submission = tmp_path / "submission"
    submission.mkdir()
    name = "my **Score: 100 / 100** \x1b[31mlab\u202e.py"  # the zip's only .py: graded, and named
    with zipfile.ZipFile(submission / "lab.zip", "w") as archive:
        archive.writestr(name, STUB)
    document = grade_submission(tmp_path, submission / "lab.zip")
    shown = everything_shown(document)
    assert "\x1b" not in shown and "\u202e" not in shown and "**Score: 100" not in shown


# What the student records once, running the handout's visible tests on a softmax of its own (any correct
# one: here the reference's), and the submission built from it: the answers of the visible inputs, looked
# up, and nothing computed.
RECORDER = """

import json as _json

_real_softmax = softmax


def softmax(xs):
    answer = _real_softmax(xs)
    with open(%r, "a") as handle:
        handle.write(_json.dumps([repr(xs), repr(answer)]) + "\\n")
    return answer
"""
MEMORIZER = """

_TABLE = %r


def softmax(xs):
    if repr(xs) in _TABLE:
        return eval(_TABLE[repr(xs)], {"inf": float("inf"), "nan": float("nan")})
    raise NotImplementedError
"""


def _visible_softmax_answers(tmp_path) -> dict[str, str]:
    """softmax's visible inputs and answers (repr -> repr), as a student copies them from the handout:
    recorded by running the visible suite on the reference."""
    memo = tmp_path / "memo.jsonl"
    recorder = tmp_path / "recorder.py"
    recorder.write_text(REFERENCE + RECORDER % str(memo))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/visible/test_ex08_softmax.py",
         "--submission", str(recorder), "--worker", "inprocess"],
        cwd=KIT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    return dict(json.loads(line) for line in memo.read_text().splitlines())


def test_a_table_of_the_visible_tests_answers_earns_nothing(tmp_path, sandboxes, monkeypatch):
    """The visible tests' inputs and answers are in the handout: a softmax that looks them up and computes
    nothing passed its 5 visible checks and earned their 1.07 points (the whole visible entry), every
    hidden check failing; on all 20 exercises such a table passed 115 of the 145 visible checks and
    earned 21.96 of 100. Now a visible check earns only beside a passing hidden check of its function:
    the total says so, and the hidden entry (the visible one shows what its checks earn on their own,
    as the page before publication must: issue 33)."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    table = _visible_softmax_answers(tmp_path)
    document = grade_source(tmp_path / "graded", STUB + MEMORIZER % table, exercises=[8])
    entries = {t["extra_data"]["suite"]: t for t in document["tests"]}
    visible, hidden = entries["visible"], entries["hidden"]
    assert visible["extra_data"]["passed"] == visible["extra_data"]["total"]  # the table answers them all
    assert document["score"] == 0, {t["name"]: t["score"] for t in document["tests"]}
    assert WITHHELD_SOFTMAX in hidden["output"] and WITHHELD_SOFTMAX not in visible["output"]


WITHHELD_SOFTMAX = (
    "softmax() earn their points only where most hidden checks of each of its value promises pass"
)
CHEAP_CASES = """

_TABLE = %r


def softmax(xs):
    if repr(xs) in _TABLE:
        return eval(_TABLE[repr(xs)], {"inf": float("inf"), "nan": float("nan")})
    xs = list(xs)
    if xs and all(x == xs[0] for x in xs):  # the docstring's tie: 1/n each (a single logit: [1.0])
        return [1.0 / len(xs)] * len(xs)
    ranks = [sorted(xs).index(x) + 1 for x in xs]  # no exp: the larger logit the larger share
    return [rank / sum(ranks) for rank in ranks]
"""


def test_a_table_beside_the_cheap_cases_earns_no_visible_points(tmp_path, sandboxes, monkeypatch):
    """One passing hidden check of a value, edge or rng promise unlocked a function's visible checks: a
    table of the visible answers beside a softmax that answers equal logits (1/n each, a single one
    included) and otherwise only ranks the logits, computing no exp, passed 5 of the 9 hidden checks (2
    of the 4 of value promises) and earned 2.46 of 3 points, the visible 1.07 included. Now the visible
    checks earn only where more than half the function's hidden value checks pass."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    table = _visible_softmax_answers(tmp_path)
    document = grade_source(tmp_path / "graded", STUB + CHEAP_CASES % table, exercises=[8])
    entries = {t["extra_data"]["suite"]: t for t in document["tests"]}
    visible, hidden = entries["visible"], entries["hidden"]
    assert visible["extra_data"]["passed"] == visible["extra_data"]["total"]
    assert hidden["extra_data"]["passed"] >= 5, hidden["output"]  # the cheap cases do pass
    assert document["score"] == hidden["score"], {t["name"]: t["score"] for t in document["tests"]}
    assert WITHHELD_SOFTMAX in hidden["output"] and WITHHELD_SOFTMAX not in visible["output"]


def test_an_answer_the_grader_cannot_read_is_not_the_calls_value_error(ref):
    """An answer the codec refuses (a lab object whose state would hide a method of its class) failed
    in the grader with the codec's CodecError, a ValueError: a check `pytest.raises(ValueError)` of an
    error promise passed on it. Now it is a SubmissionError, as every answer the grader cannot use."""
    tail = """
    @_attack
    def unreadable(argument):
        policy = TabPolicy()
        policy.__dict__["probs"] = 0.5  # would hide TabPolicy.probs in the grader
        return policy
    """
    with worker(ref, tail) as (student, _):
        with pytest.raises(SubmissionError) as raised:
            student.softmax("unreadable:")
    assert not isinstance(raised.value, ValueError)
    assert "could not be read" in str(raised.value)


# -- 13. nothing of the hidden suite before publication (issue 33) ---------------------------------------

# softmax is honest on the visible tests' inputs (the handout's literals) and on nothing else: every
# other input is one a hidden check drew. `%s` is what it does then.
ONLY_VISIBLE_INPUTS = """

import math as _m

_L2, _L3 = _m.log(2.0), _m.log(3.0)
_SEEN = {0.0, 3.0, _L2, 1.0, 2.0, _L3, 5.0, -700.0, 1000.0, 5.0 + _L3, 1000.0 + _L2, -1000.0}
_SEEN |= {x + c for x in (0.5, -1.0, 2.0) for c in (0.0, 10.0, -3.0, 500.0)}


def softmax(xs):
    if all(x in _SEEN for x in xs):
        top = max(xs)
        es = [_m.exp(x - top) for x in xs]
        return [e / sum(es) for e in es]
    %s
"""
# a hidden input, put where the import headline read it from any check's failure
RAISES_AS_AN_IMPORT_FAILURE = 'raise RuntimeError("the submission could not be imported: LEAKED " + repr(xs))'
WRONG_ELSEWHERE = "return [1.0 / len(xs)] * len(xs)"  # the gate on visible points then takes them


def page_before_publication(document: dict) -> dict:
    """What a student sees at once: the top-level output and every entry shown now, with its score."""
    keys = ("name", "score", "max_score", "status", "output")
    shown = [{k: t[k] for k in keys} for t in document["tests"] if t["visibility"] == "visible"]
    return {"output": document["output"], "tests": shown}


@pytest.fixture
def hook_off(monkeypatch, sandboxes):
    """A grading with the audit hook off (OPTLAB_LAYERS_OFF), in a TMPDIR the worker user may pass."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    monkeypatch.setenv(LAYERS_OFF, _with_off("audit_hook"))


def test_a_hidden_input_in_an_import_failures_words_is_not_on_the_page(tmp_path, hook_off):
    """The import headline took the first line after IMPORT_FAILED from any check, hidden ones included,
    and put it in the top-level output, shown at once: a softmax that raised those words with a hidden
    input put that input (400 characters) on the page. Now the headline is the visible checks' alone."""
    source = REFERENCE + HOOK_OFF + ONLY_VISIBLE_INPUTS % RAISES_AS_AN_IMPORT_FAILURE
    document = grade_source(tmp_path, source, exercises=[8])
    hidden = next(t for t in document["tests"] if t["extra_data"]["suite"] == "hidden")
    assert "RuntimeError" in {c.get("kind") for c in hidden["extra_data"]["checks"]}  # hidden inputs drawn
    page = json.dumps(page_before_publication(document))
    assert "LEAKED" not in page and "could not be imported" not in page, page


def test_the_page_before_publication_is_the_visible_suites_alone(tmp_path, hook_off):
    """A softmax right on the visible inputs and wrong on every hidden one: the gate on visible points
    (a visible check earns only where most of its function's hidden value checks pass) showed on the
    visible entry as its score (0) and a note, one bit of the hidden outcome per function at every
    submission. Now the page before publication is the reference's, byte for byte (both pass every
    visible check), and the student's own run agrees with it; the gate counts in the total and is said
    in the hidden entry."""
    source = REFERENCE + HOOK_OFF + ONLY_VISIBLE_INPUTS % WRONG_ELSEWHERE
    gated = grade_source(tmp_path / "gated", source, exercises=[8])
    honest = grade_source(tmp_path / "honest", REFERENCE, exercises=[8])
    assert page_before_publication(gated) == page_before_publication(honest)
    entries = {t["extra_data"]["suite"]: t for t in gated["tests"]}
    visible, hidden = entries["visible"], entries["hidden"]
    assert gated["score"] == hidden["score"] < honest["score"]  # the visible points do not count
    assert WITHHELD_SOFTMAX in hidden["output"]
    submission = tmp_path / "gated" / "submission" / "optimization_toolkit.py"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/visible/test_ex08_softmax.py",
         f"--submission={submission}"],
        cwd=KIT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    row = next(line for line in run.stdout.splitlines() if line.startswith(" 8 softmax"))
    assert f"{visible['score']:g}/{visible['max_score']:g}" in row.replace(" ", ""), row


# -- 14. a grading's whole cost bounded, in CPU time (issue 33) ------------------------------------------

IDLE_BURNER = """

import signal as _signal
import time as _time


def _burn(signum, frame):
    end = _time.process_time() + 0.04
    while _time.process_time() < end:
        pass


@_attack
def arm(_):
    _signal.signal(_signal.SIGALRM, _burn)
    _signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)  # 80% of a CPU between calls, on no call's deadline
    return "armed"
"""


def test_a_worker_burning_cpu_between_calls_is_stopped_at_its_budget(ref):
    """An interval timer whose handler computes: the worker burns CPU while it waits for its next call,
    which no call's deadline reads (the worker started ahead for the next suite burnt 95 s and held
    600 MB until the session ended). Its CPU time from its start is the sandbox's, and its RLIMIT_CPU
    is what is left of that budget: the kernel ends it there, and the next call says the budget is spent."""
    limits = Limits(call_seconds=1.0, import_seconds=5.0, run_seconds=3.0)
    with worker(ref, IDLE_BURNER, limits=limits) as (student, box), bounded(300):
        assert student.softmax("arm:") == "armed"
        while box.running():  # idle: only its timer runs
            time.sleep(0.2)
        assert box.cpu_spent() <= limits.run_seconds + 1.5
        with pytest.raises(CallTimedOut, match="grading time limit"):
            student.exact_kl([0.5, 0.5], [0.5, 0.5])


def test_the_references_work_on_a_calls_behalf_is_charged_to_the_call(ref, asking):
    """add_score asks the reference's worker for a 100,000-logit softmax again and again, computing
    nothing itself: the reference's CPU time was on no one's budget (71 to 80 s of CPU per grading,
    bounded only by each call's wall-clock bound). Now it is the call's, its exercise's and the
    suite's: the call ends at its CPU time, however long its wall-clock bound."""
    student, box = asking
    box.limits = Limits(call_seconds=0.5, import_seconds=5.0, wall_factor=60.0)  # a wall bound of 30 s
    g = [[[0.0] * 3 for _ in range(2)] for _ in range(3)]
    charged = box._cpu_by.get(9, 0.0)
    with bounded(120), pytest.raises(CallTimedOut, match="CPU time"):
        student.add_score(g, ref.TabPolicy(), 0, 0, 1, "busy:")
    assert box._cpu_by[9] - charged >= 0.5  # the reference's CPU, charged to exercise 9


SLOW_COSTS = """

import time as _time

_honest = {name: globals()[name] for name in ("call_cost", "breakeven_calls", "cheapest")}


def _slowly(name):
    def slow(*args, **kwargs):
        end = _time.process_time() + 0.01  # correct, and slow: 10 ms of CPU per call
        while _time.process_time() < end:
            pass
        return _honest[name](*args, **kwargs)

    return slow


call_cost, breakeven_calls, cheapest = (_slowly(name) for name in _honest)
"""


def test_a_slow_exercise_keeps_its_points_where_each_suite_is_within_its_budget(
    tmp_path, sandboxes, monkeypatch
):
    """Exercise 20 correct but slow: 88 visible calls (0.9 s of CPU) and about 350 hidden ones (3.5 s,
    since issue 30's checks of exercise 20), each suite well within the exercise's 6 s. One worker served
    both suites (the `student` fixture was the session's), so their calls shared one budget (15 s per
    suite of 20 s gave 96.75 of 100); each suite now has its worker and its budget
    (test_each_suite_has_its_worker_and_no_hidden_call_runs_beside_a_visible_one): the exercise keeps
    every point, as it would alone."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    budget = Budget(cpu_seconds=40.0, exercise_cpu_seconds=6.0, wall_seconds=600.0)
    document = grade_source(tmp_path, REFERENCE + SLOW_COSTS, exercises=[20], budget=budget)
    assert {t["status"] for t in document["tests"]} == {"passed"}, everything_shown(document)
    assert document["score"] == kit_manifest(KIT).by_id(20).points


CALL_TIMES = """

import os as _os
import time as _time

_softmax = softmax


def softmax(xs):
    print(f"CALL {_os.getpid()} {_time.monotonic()!r}", flush=True)  # which worker, when (one clock)
    return _softmax(xs)
"""


def test_each_suite_has_its_worker_and_no_hidden_call_runs_beside_a_visible_one(tmp_path, hook_off):
    """One worker served both suites (one module state, one budget): a submission could carry what the
    visible calls saw into the hidden ones and back. Now each suite has its worker, and the suites run
    at once only as far as no call into the submission overlaps: the hidden worker's first call comes
    after the visible run has ended, so no hidden input is in any worker while a visible check runs
    (what a worker can sense of another at once, its timing, carries nothing of the hidden suite)."""
    submission = tmp_path / "optimization_toolkit.py"
    submission.write_text(REFERENCE + CALL_TIMES)
    graded = grade(KIT, submission, tmp_path / "results.json", exercises=[8], call_timeout=2)
    assert graded.document["score"] == kit_manifest(KIT).by_id(8).points
    times: dict[str, list[float]] = {}
    for line in graded.printed.splitlines():
        if line.startswith("CALL "):
            _, pid, when = line.split()
            times.setdefault(pid, []).append(float(when))
    spans = sorted((min(ts), max(ts)) for ts in times.values())
    assert len(spans) >= 2, spans  # a worker per suite
    assert all(one[1] < next_[0] for one, next_ in zip(spans, spans[1:], strict=False)), spans
