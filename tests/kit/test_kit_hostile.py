"""The hostile and broken corpus: every submission gets a valid results.json in bounded time, and at most
its honest score. Each attack sits in `softmax` (exercise 8) or at import; `group_advantages` (exercise
12) stays honest. So the honest score is nothing where the module cannot import, exercise 12's points
where softmax earns nothing, and, where an attack comes with a plainly wrong softmax, what that wrong
softmax earns on its own (measured, not assumed). Grading is cut to those two exercises to keep the
corpus quick; the machinery is the same for all."""

from __future__ import annotations

import enum
import hashlib
import json
import os
import shutil
import sysconfig
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.grading.grade import grade
from grader.grading.results import OWN_EXCEPTION
from grader.sandbox import isolation
from tests.kit.channels import CHANNELS
from tests.kit.conftest import KIT
from tests.kit.gradescope_schema import problems
from tests.kit.test_kit_attacks import HOOK_OFF

REFERENCE = (KIT / "solutions" / "optimization_toolkit.py").read_text()
EXERCISES = [8, 12]


class Bound(enum.Enum):
    """The most an attack may score, by what it honestly is."""

    NOTHING = "no module: it never finishes importing, so every entry scores 0"
    HONEST = "exercise 12's points only: its softmax earns nothing"
    WRONG = "what WRONG_SOFTMAX (which the attack comes with) earns alone, entry by entry"


NOTHING, HONEST, WRONG = Bound.NOTHING, Bound.HONEST, Bound.WRONG
HONEST_POINTS = 4.0  # exercise 12's points

# Right only where the logits are all equal: it honestly earns some of exercise 8's checks.
WRONG_SOFTMAX = "def softmax(xs):\n    return [1.0 / len(xs)] * len(xs)\n"


def then_wrong_softmax(snippet: str) -> str:
    return textwrap.dedent(snippet) + WRONG_SOFTMAX


# name -> (code appended to the reference, the Bound of what it may score)
APPENDED = {
    "sys.exit at import": ("import sys\nsys.exit(0)\n", NOTHING),
    "os._exit at import": ("import os\nos._exit(0)\n", NOTHING),
    "endless loop at import": ("while True:\n    pass\n", NOTHING),
    "os._exit in a call": ("def softmax(xs):\n    import os\n    os._exit(0)\n", HONEST),
    "always-equal value": (
        """
        class Anything:
            def __eq__(self, other):
                return True
            def __len__(self):
                return 2
        def softmax(xs):
            return Anything()
        """,
        HONEST,
    ),
    "float subclass": (
        """
        class Close(float):
            def __eq__(self, other):
                return True
            __hash__ = float.__hash__
        def softmax(xs):
            return [Close(0.0) for _ in xs]
        """,
        HONEST,
    ),
    "patched builtins and math": (
        then_wrong_softmax(
            "import builtins, math\nmath.isclose = lambda *a, **k: True\nbuiltins.abs = lambda x: 0\n"
        ),
        WRONG,
    ),
    "patched test tools": (
        then_wrong_softmax(
            """
            import sys, types
            fake = types.ModuleType("pytest")
            fake.approx = lambda *a, **k: True
            sys.modules["pytest"] = sys.modules["hypothesis"] = sys.modules["_pytest"] = fake
            """
        ),
        WRONG,
    ),
    "pytest.skip and KeyboardInterrupt": (
        """
        class Skipped(BaseException):
            pass
        def softmax(xs):
            if len(xs) % 2:
                raise Skipped("skip me")
            raise KeyboardInterrupt
        """,
        HONEST,
    ),
    "atexit rewrites results.json": (
        then_wrong_softmax(
            """
            import atexit, json, os
            def _rewrite():
                for path in ("results.json", "/autograder/results/results.json", os.environ.get("OPTLAB_OUT", "")):
                    try:
                        with open(path, "w") as out:
                            json.dump({"score": 100, "tests": []}, out)
                    except Exception:
                        pass
            atexit.register(_rewrite)
            """
        ),
        WRONG,
    ),
    "reads the hidden tests and the reference": (
        f"""
        import glob, os
        def softmax(xs):
            for pattern in ("{KIT}/tests/hidden/*.py", "{KIT}/solutions/*.py", "/proc/%d/cmdline" % os.getppid()):
                for path in glob.glob(pattern) or [pattern]:
                    open(path).read()
            return [0.5, 0.5]
        """,
        HONEST,
    ),
    "overwrites a test file": (
        then_wrong_softmax(
            f"""
            try:
                open("{KIT}/tests/visible/test_ex08_softmax.py", "w").write("def test_pass():\\n    pass\\n")
            except Exception:
                pass
            """
        ),
        WRONG,
    ),
    "signal games": (
        """
        import signal
        for name in ("SIGALRM", "SIGTERM", "SIGINT", "SIGXCPU"):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        signal.alarm(0)
        def softmax(xs):
            while True:
                pass
        """,
        HONEST,
    ),
    "endless loop in a call": ("def softmax(xs):\n    while True:\n        pass\n", HONEST),
    "memory bomb": (
        "def softmax(xs):\n    hog = [bytearray(1 << 26) for _ in range(200)]\n    return hog\n",
        HONEST,
    ),
    "process bomb": (
        """
        import os, subprocess
        def softmax(xs):
            for start in (os.fork, lambda: subprocess.Popen(["sleep", "60"]), lambda: os.system("sleep 60 &")):
                try:
                    start()
                except BaseException:
                    pass
            os.setsid()
            return [0.5] * len(xs)
        """,
        HONEST,
    ),
    "huge output": (
        "import sys\ndef softmax(xs):\n    sys.stdout.write('x' * (64 << 20))\n    return [1.0 / len(xs)] * len(xs)\n",
        WRONG,
    ),
    "network": (
        """
        def softmax(xs):
            import socket
            socket.create_connection(("127.0.0.1", 9), timeout=1).sendall(repr(xs).encode())
            return [0.5] * len(xs)
        """,
        HONEST,
    ),
    "native code": ("def softmax(xs):\n    import ctypes\n    return [1.0 / len(xs)] * len(xs)\n", WRONG),
    "asks the grader for the reference's own answer": (
        """
        import gc
        def softmax(xs):
            from grader.runtime.worker import Worker
            worker = next(o for o in gc.get_objects() if isinstance(o, Worker))
            return worker._reference_proxy("softmax")(xs)
        """,
        HONEST,
    ),
    "leaks hidden inputs through exceptions": (
        "def softmax(xs):\n    raise ValueError('LEAK' + repr(xs))\n",
        HONEST,
    ),
    "huge answer": ("def softmax(xs):\n    return [0.5] * (20 << 20)\n", HONEST),
    # attack5's blind round: each held against the kit before it was added here, but the first
    "names its exception class after its inputs": (  # the hidden inputs in a hidden check's "kind" (fixed)
        """
        import re
        def softmax(xs):
            name = "LEAK" + re.sub(r"[^0-9A-Za-z]", "_", repr(xs))[:80] + "Error"
            raise type(name, (Exception,), {})("the class's name is the message")
        """,
        HONEST,
    ),
    "forged answers that skip, exit or end the run": (  # the worker's own perform replaced
        """
        import sys
        _worker = sys.modules["grader.runtime.worker"]
        _perform = _worker.perform
        _FORGED = ["Skipped", "XFailed", "Exit", "KeyboardInterrupt", "SystemExit", "StopIteration", "BaseException"]
        _calls = [0]
        def _forging(codec, fn, message, *rest):
            if message.get("function") != "softmax":
                return _perform(codec, fn, message, *rest)
            _calls[0] += 1
            k = _calls[0] % (len(_FORGED) + 2)
            if k < len(_FORGED):
                return {"op": "raise", "type": _FORGED[k], "message": "forged", "where": ""}
            if k == len(_FORGED):
                return {"op": "raise", "type": "SubmissionError", "message": "forged", "timed_out": "run"}
            state = {"$object": "TabPolicy", "state": {"$dict": []}}
            return {"op": "return", "value": state, "mutated": {"0": [1.0], "9": 5}, "changed": ["0"] * 1000}
        _worker.perform = _forging
        def softmax(xs):
            return [0.0] * len(xs)
        """,
        HONEST,
    ),
    "stops itself": (  # no CPU time passes in a stopped worker: only the wall-clock bound could end it
        """
        import os, signal, threading
        def softmax(xs):
            for stop in (
                lambda: os.kill(os.getpid(), signal.SIGSTOP), lambda: signal.raise_signal(signal.SIGSTOP),
                lambda: signal.pthread_kill(threading.get_ident(), signal.SIGSTOP),
                lambda: os.killpg(0, signal.SIGSTOP), lambda: signal.raise_signal(signal.SIGTSTP),
            ):
                try:
                    stop()
                except OSError:
                    pass
            return [0.0] * len(xs)
        """,
        HONEST,
    ),
    "shared memory past the quotas": (  # memfd, a shared mapping past the address space, /dev/shm
        """
        import mmap, os
        def softmax(xs):
            held = []
            for spend in (
                lambda: os.memfd_create("hog"), lambda: mmap.mmap(-1, 2 << 30, flags=mmap.MAP_SHARED),
                lambda: open("/dev/shm/optlab-hog", "wb").write(b"x" * (100 << 20)),
            ):
                try:
                    held.append(spend())
                except (OSError, MemoryError, ValueError):
                    pass
            return [0.0] * len(xs)
        """,
        HONEST,
    ),
    "rewrites its argument": (  # the uniform answer, and logits made equal so that it looks right
        "def softmax(xs):\n    n = len(xs)\n    xs[:] = [0.0] * n\n    return [1.0 / n] * n\n",
        WRONG,
    ),
}


def grade_file(tmp_path: Path, name: str, data: bytes | str) -> tuple[dict, Path]:
    submission = tmp_path / "submission"
    submission.mkdir(parents=True, exist_ok=True)
    path = submission / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return grade_path(tmp_path, submission)


def grade_path(tmp_path: Path, submission: Path) -> tuple[dict, Path]:
    out = tmp_path / "results" / "results.json"
    graded = grade(KIT, submission, out, call_timeout=2, exercises=EXERCISES)
    assert problems(out) == []
    assert json.loads(out.read_text()) == graded.document  # the grader's own document, not a rewrite
    return graded.document, out


def kit_test_hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (KIT / "tests").rglob("*.py")}


@pytest.fixture
def untouched_kit():
    before = kit_test_hashes()
    yield
    assert kit_test_hashes() == before, "a submission changed the kit's test files"


@pytest.fixture(scope="module")
def wrong_softmax_score(tmp_path_factory) -> dict[str, float]:
    """What the plainly wrong softmax earns on its own, per results entry: the honest bound of WRONG."""
    document, _ = grade_file(
        tmp_path_factory.mktemp("wrong"), "optimization_toolkit.py", REFERENCE + "\n\n" + WRONG_SOFTMAX
    )
    return {t["name"]: t["score"] for t in document["tests"]}


@pytest.mark.parametrize("case", sorted(APPENDED))
def test_hostile_submission_gets_at_most_its_honest_score(
    tmp_path, monkeypatch, untouched_kit, wrong_softmax_score, sandboxes, case
):
    code, bound = APPENDED[case]
    monkeypatch.setenv("OPTLAB_OUT", str(tmp_path / "results" / "results.json"))
    monkeypatch.setenv("TMPDIR", str(sandboxes))  # this grading's sandbox lives here
    document, _ = grade_file(tmp_path, "optimization_toolkit.py", REFERENCE + "\n\n" + textwrap.dedent(code))
    by_name = {t["name"]: t for t in document["tests"]}
    if bound is WRONG:
        for name, honest in wrong_softmax_score.items():
            assert by_name[name]["score"] <= honest + 1e-9, name
    elif bound is HONEST:
        assert document["score"] <= HONEST_POINTS + 1e-9
        assert by_name["8 softmax: visible checks"]["score"] == 0
    if bound is NOTHING:
        assert document["score"] == 0 and "import" in by_name["8 softmax: visible checks"]["output"]
    else:  # the honest exercise is untouched by the attack on the other
        assert by_name["12 group advantages: hidden checks"]["status"] == "passed"
    assert_nothing_left_behind(sandboxes)


def test_hidden_inputs_never_reach_the_hidden_entries(tmp_path):
    code, _ = APPENDED["leaks hidden inputs through exceptions"]
    document, _ = grade_file(tmp_path, "optimization_toolkit.py", REFERENCE + "\n\n" + code)
    hidden = [t for t in document["tests"] if t["name"].endswith("hidden checks")]
    assert hidden and all("LEAK" not in t["output"] for t in hidden)
    visible = [t for t in document["tests"] if t["name"] == "8 softmax: visible checks"]
    assert "LEAK" in visible[0]["output"]  # the visible entry shows what the student's code said


def test_no_name_the_submission_chose_reaches_a_hidden_entry(tmp_path):
    """attack5: an exception class named after the inputs (`LEAK_1_0__2_0_Error`) put the hidden inputs
    into each hidden check's "kind" in results.json, 80 characters a check; a class the submission named
    is now only "its own" there (the visible entry, whose inputs are the handout's, still names it)."""
    code, _ = APPENDED["names its exception class after its inputs"]
    document, _ = grade_file(tmp_path, "optimization_toolkit.py", REFERENCE + "\n\n" + textwrap.dedent(code))
    by_name = {t["name"]: t for t in document["tests"]}
    hidden = by_name["8 softmax: hidden checks"]
    assert "LEAK" not in json.dumps(hidden)
    assert {c.get("kind") for c in hidden["extra_data"]["checks"]} == {OWN_EXCEPTION}
    assert "LEAK" in json.dumps(by_name["8 softmax: visible checks"]["extra_data"])


# attack5: a call writes fake answers on every descriptor it holds (the grader's pipe, the reference's)
POSTED_AHEAD = """
import os
def softmax(xs):
    for fd in range(3, 64):
        try:
            os.write(fd, b'{"op":"return","value":[1.0],"mutated":{}}\\n' * 4)
        except OSError:
            pass
    return [0.0] * len(xs)
"""


def test_answers_posted_ahead_earn_nothing(tmp_path, sandboxes, monkeypatch):
    """Answers a worker posts ahead are read as its next calls' answers: they put its own exercise 12 out
    of step (its own loss), never a point more than it earns honestly, and nothing outlives the grading."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    document, _ = grade_file(tmp_path, "optimization_toolkit.py", REFERENCE + "\n\n" + POSTED_AHEAD)
    by_name = {t["name"]: t for t in document["tests"]}
    assert document["score"] <= HONEST_POINTS + 1e-9
    assert by_name["8 softmax: visible checks"]["score"] == 0
    assert_nothing_left_behind(sandboxes)


def test_a_submitted_conftest_and_shadow_modules_never_load(tmp_path, wrong_softmax_score):
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "optimization_toolkit.py").write_text(REFERENCE + "\n\n" + WRONG_SOFTMAX)
    everything_passes = (
        "import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    return True\n"
    )
    for name, text in {
        "conftest.py": everything_passes,
        "pytest.py": "raise SystemExit(0)\n",
        "hypothesis.py": "raise SystemExit(0)\n",
        "sitecustomize.py": "import os\nos._exit(0)\n",
    }.items():
        (submission / name).write_text(text)
    document, _ = grade_path(tmp_path, submission)
    assert document["score"] == sum(wrong_softmax_score.values())


@pytest.mark.parametrize(
    "name, data",
    [
        ("optimization_toolkit.py", "\ufeff" + REFERENCE),
        ("optimization_toolkit.py", REFERENCE.replace("\n", "\r\n")),
        ("optimization_toolkit.py", ("\ufeff" + REFERENCE).encode("utf-16-le")),
        ("optimization_toolkit (1).py", REFERENCE),
        ("my_lab.py", REFERENCE),
    ],
    ids=["utf-8 BOM", "CRLF", "UTF-16", "renamed by Gradescope", "any single .py name"],
)
def test_encodings_and_names_are_graded_in_full(tmp_path, name, data):
    document, _ = grade_file(tmp_path, name, data)
    assert document["score"] == 7.0


@pytest.mark.parametrize(
    "files, says",
    [
        ({"optimization_toolkit.py": ""}, "empty"),
        ({"optimization_toolkit.py": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"}, "not a text file"),
        ({"a.py": REFERENCE, "b.py": REFERENCE}, "optimization_toolkit.py"),
        ({"lab.ipynb": "{}"}, ".ipynb"),
    ],
    ids=["empty", "binary", "two modules", "no .py"],
)
def test_ungradable_submissions_get_a_clear_zero(tmp_path, files, says):
    submission = tmp_path / "submission"
    submission.mkdir()
    for name, data in files.items():
        (submission / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    document, _ = grade_path(tmp_path, submission)
    assert document["score"] == 0 and document["tests"] == []
    assert says in document["output"]


def test_a_syntax_error_costs_only_the_broken_function(tmp_path):
    broken = REFERENCE.replace("def softmax(xs):", "def softmax(xs)", 1)
    document, _ = grade_file(tmp_path, "optimization_toolkit.py", broken)
    assert document["score"] == HONEST_POINTS
    entry = next(t for t in document["tests"] if t["name"] == "8 softmax: visible checks")
    assert "syntax error" in entry["output"] and "line" in entry["output"]


def test_grading_twice_gives_the_same_results(tmp_path):
    code = "def softmax(xs):\n    return [x / (sum(xs) or 1) for x in xs]\n"
    first, _ = grade_file(tmp_path / "a", "optimization_toolkit.py", REFERENCE + "\n\n" + code)
    second, _ = grade_file(tmp_path / "b", "optimization_toolkit.py", REFERENCE + "\n\n" + code)
    first.pop("execution_time")
    second.pop("execution_time")
    assert first == second


@pytest.fixture
def sandboxes() -> Iterator[Path]:
    """A temporary folder of this test for the grading's sandbox (TMPDIR): in /tmp, which the worker
    user may pass through (pytest's own tmp_path is closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="optlab-corpus-"))
    os.chmod(folder, 0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def assert_nothing_left_behind(tmp_path: Path) -> None:
    """No process of this grading survives it and its sandbox folder is gone (the grading ran with
    TMPDIR = `tmp_path`); no worker uid left a file in the shared /tmp either."""
    alive = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if str(tmp_path).encode() in cmdline:
            alive.append(entry)
    assert alive == [], f"processes of this grading still running: {alive}"
    assert list(tmp_path.iterdir()) == [], "the sandbox folder was not removed"
    left = []
    for path in Path("/tmp").iterdir():
        try:
            if path.lstat().st_uid in isolation.worker_uids():
                left.append(path)
        except FileNotFoundError:  # another program's file, gone meanwhile
            continue
    assert left == [], f"worker uids left {left}"


def test_a_test_run_cut_at_its_time_limit_still_gets_results_that_say_so(tmp_path, sandboxes, monkeypatch):
    """grader grade --run-timeout: a run that overruns is stopped; every check it did not reach is
    failed with the reason, in a valid results.json, and nothing of it keeps running."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    out = tmp_path / "results.json"
    graded = grade(KIT, KIT / "solutions" / "optimization_toolkit.py", out, exercises=[8], run_seconds=0.2)
    assert problems(out) == []
    assert graded.document["score"] == 0
    assert "did not finish within 0.2 s" in graded.document["output"]
    assert {t["status"] for t in graded.document["tests"]} == {"failed"}
    assert_nothing_left_behind(sandboxes)


def test_a_cut_run_keeps_the_checks_that_ran_before_the_cut(tmp_path, sandboxes, monkeypatch):
    """The run is cut inside exercise 12's visible checks (an endless loop with a generous call timeout):
    exercise 8's visible checks ran before and keep their points; nothing after the cut counts."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    endless = "def group_advantages(*args, **kwargs):\n    while True:\n        pass\n"
    submission = tmp_path / "optimization_toolkit.py"
    submission.write_text(REFERENCE + "\n\n" + endless)
    out = tmp_path / "results.json"
    graded = grade(KIT, submission, out, call_timeout=100.0, exercises=[8, 12], run_seconds=15.0)
    assert problems(out) == []
    status = {t["name"]: t["status"] for t in graded.document["tests"]}
    assert status["8 softmax: visible checks"] == "passed"
    assert {status[name] for name in status if not name.startswith("8 softmax: visible")} == {"failed"}
    assert "did not finish within 15 s" in graded.document["output"]
    assert_nothing_left_behind(sandboxes)


def test_grade_refuses_a_run_timeout_that_is_not_positive(capsys):
    from grader.cli import main

    reference = str(KIT / "solutions" / "optimization_toolkit.py")
    assert main(["--root", str(KIT), "grade", reference, "--run-timeout", "0"]) == 2
    assert "argument --run-timeout: 0 is out of range" in capsys.readouterr().err


# -- no channel between gradings (issue 33) -----------------------------------------------------------------

CHANNEL_KEY = "1011001110001011"  # what the first grading passes to the next, one page of a stdlib file a bit
CHANNEL_MEDIUM = Path(sysconfig.get_paths()["stdlib"]) / "pydoc_data" / "topics.py"
CHANNEL_SENDER = f"""
_honest_softmax = softmax
{HOOK_OFF}
{CHANNELS}
softmax = _honest_softmax
_ch_send({str(CHANNEL_MEDIUM)!r}, {CHANNEL_KEY!r})  # cleared with POSIX_FADV_DONTNEED, then set
"""
# the receiver's softmax is right only where a probe of the page cache heard the key: its points say so
CHANNEL_RECEIVER = f"""
_honest_softmax = softmax
{HOOK_OFF}
{CHANNELS}
_heard = {{how: _CH_VERBS[how]({str(CHANNEL_MEDIUM)!r}, {len(CHANNEL_KEY)})
          for how in ("probe_nowait", "probe_aio", "probe_faults", "probe_pagemap")}}


def softmax(xs):
    if {CHANNEL_KEY!r} in _heard.values():
        return _honest_softmax(xs)
    raise RuntimeError("nothing heard: " + repr(_heard))
"""


@pytest.mark.skipif(not CHANNEL_MEDIUM.is_file(), reason="no pydoc_data in this stdlib")
def test_a_later_grading_hears_nothing_of_an_earlier_one_through_the_page_cache(
    tmp_path, sandboxes, monkeypatch
):
    """Issue 33: a grading's worker cleared a stdlib file's pages (fadvise), set one per bit of a key,
    and the next grading's worker, under other uids, read the key back (preadv2 with RWF_NOWAIT; Linux
    AIO's own RWF_NOWAIT, which this round's attack on the new filter found; the major faults getrusage
    counts; /proc/self/pagemap after a fault-around), and earned softmax's points with it: on main, all
    of them. Now every probe is refused: the receiver earns exercise 12's points alone."""
    monkeypatch.setenv("TMPDIR", str(sandboxes))
    grade_file(tmp_path / "sender", "optimization_toolkit.py", REFERENCE + CHANNEL_SENDER)
    document, _ = grade_file(tmp_path / "receiver", "optimization_toolkit.py", REFERENCE + CHANNEL_RECEIVER)
    by_name = {t["name"]: t for t in document["tests"]}
    assert by_name["8 softmax: visible checks"]["score"] == 0, by_name["8 softmax: visible checks"]["output"]
    assert document["score"] <= HONEST_POINTS + 1e-9
    assert "REFUSED" in by_name["8 softmax: visible checks"]["output"]  # each probe was refused, not unlucky
