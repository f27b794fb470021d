"""The suites' pytest plugin: the `student`, `lab` and `reference` fixtures, the exercise marker and the
hypothesis profiles. The same plugin serves a student's local run, the kit's CI and grading.

- ``--submission PATH``: the module under test (a .py file, or a folder holding optimization_toolkit.py).
  Default: ``optimization_toolkit.py`` beside the tests (the handout), else the kit's reference.
- ``student``: calls the submission through the codec (see grader.sandbox.student); a fresh worker per suite,
  started at the suite's first test and closed when it ends (the two suites never share a worker, its
  module state or its budgets). ``--hold-calls-fd N``: no call before descriptor N reads as closed
  (grading runs the hidden suite beside the visible one, its first call after the visible one ends).
- ``lab``: the lab's given parts (classes, constants, non-exercise functions), to build inputs with.
  It refuses exercise functions, so a test cannot take an expected value from the reference by accident.
- ``reference``: the whole reference module, for hidden tests only (it is not in the handout).
- Every test under tests/visible or tests/hidden carries exactly one ``@pytest.mark.exercise(N)``, and
  at most one ``@pytest.mark.promise(ID)``: the promise of tests/promises it checks
  (grader.assignment.promises; a kit test asks every test of an annotated exercise for one).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from grader.grading.intake import IntakeError, Submission, read_submission
from grader.grading.local import (
    EXERCISES_FILE,
    NOT_CALLED,
    NOT_IMPORTED,
    NOT_STARTED,
    SYNTAX_ERROR,
    WAITING,
    Verdict,
    classify,
    failure_text,
    load_exercises,
)
from grader.grading.untrusted import ESCAPED_NOTE, PrintedLines, printable
from grader.layout import LAB_STUBS, MANIFEST, MODULE_FILE, REFERENCE, STUDENT, SUITES
from grader.runtime.worker import load_module
from grader.sandbox.isolation import protect_kit
from grader.sandbox.sandbox import NO_SANDBOX, SANDBOX_AVAILABLE, Limits, Sandbox, SandboxError
from grader.sandbox.student import Student, in_process_student, sandboxed_student, unanswerable_student

# Grading must give the same submission the same results: fixed seeds, no example database, no clock.
settings.register_profile(
    "grading",
    derandomize=True,
    database=None,
    deadline=None,
    # Six examples per property test (25 before issue 16): the visible suite's literal cases and the pins
    # kill nearly every mutant, and the mutation score at six (docs/mutation.md) is the one at 25; the
    # drawing of examples was most of a grading's time. A test may ask for fewer (a slow one), never more.
    max_examples=6,
    print_blob=False,
    report_multiple_bugs=False,
    # No shrinking: a failing example is reported as found. Grading needs the verdict, not the smallest
    # input (hidden inputs are never shown), and shrinking a stub's failures costs seconds per test.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
    # `student` is a test's fixture (one worker per suite, whatever the session holds) that gives every
    # example the same worker: what the function-scoped check warns of does not happen
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],  # fmt: skip
)
# The kit's own deeper search (not for grading): more examples, still reproducible.
settings.register_profile(
    "deep", parent=settings.get_profile("grading"), max_examples=300, phases=list(Phase)
)
settings.load_profile("grading")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("optlab", "optlab-kit suites")
    group.addoption(
        "--submission", metavar="PATH", help="the module under test: a .py file, a folder or a .zip"
    )
    group.addoption(
        "--reference", metavar="PATH", help="the reference module (default: solutions/ of the kit)"
    )
    group.addoption(
        "--worker",
        choices=("sandbox", "inprocess"),
        default="sandbox",
        help="where the submission runs: a process of its own (default; sandboxed where the OS allows it), "
        "or this process (to debug with pdb: no deadline holds)",
    )
    group.addoption(
        "--call-timeout", type=float, default=Limits.call_seconds, metavar="S", help="seconds per call"
    )
    group.addoption("--worker-log", metavar="PATH", help="append what the submission printed to this file")
    group.addoption(
        "--suite-cpu-seconds",
        type=float,
        metavar="S",
        help="CPU seconds of each suite's workers all told (default: the manifest's [budget])",
    )
    group.addoption(
        "--exercise-cpu-seconds",
        type=float,
        metavar="S",
        help="CPU seconds of one exercise's calls in one suite (default: the manifest's [budget])",
    )
    group.addoption("--cost-out", metavar="PATH", help="write the CPU seconds the workers cost (JSON)")
    group.addoption(
        "--hold-calls-fd",
        type=int,
        metavar="N",
        help="make no call into the submission before descriptor N reads as closed (its worker starts)",
    )
    group.addoption(
        "--inventory-out", metavar="PATH", help="write the collected suite tests as JSON (grader build)"
    )
    group.addoption(
        "--record-calls",
        action="store_true",
        help="record in each test's properties the lab functions it called on the submission and the "
        "declared domain features their arguments had (grader validate)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "exercise(id): the exercise of the manifest this test scores for")
    config.addinivalue_line("markers", "promise(id): the promise of tests/promises this test checks")
    option = config.getoption("submission", None)
    if option:  # a submission that cannot be graded: one usage line (exit 4), the words of `grader grade`
        if not Path(option).exists():
            raise pytest.UsageError(f"{option}: no such file or folder (give a .py file, a folder or a .zip)")
        if isinstance(problem := _intake(Path(option)), str):
            raise pytest.UsageError(problem)
    config.stash[_VERDICT] = Verdict(load_exercises(_root(config)))


_VERDICT = pytest.StashKey[Verdict]()


def _root(config: pytest.Config) -> Path:
    """The kit or handout folder: pytest's rootdir, or, where pytest found no configuration (a handout
    run from its folder with `--submission ../other.py`), the folder this plugin was loaded from."""
    root = Path(config.rootpath)
    own = Path(__file__).resolve().parents[1]
    if not (root / MANIFEST).is_file() and not (root / EXERCISES_FILE).is_file():
        if (own / EXERCISES_FILE).is_file():
            return own
    return root


def pytest_report_header(config: pytest.Config) -> str | list[str]:
    """Which module the run tests, and where its calls run."""
    sandbox = "a sandboxed process" if SANDBOX_AVAILABLE else "a process of its own"
    where = {"sandbox": sandbox, "inprocess": "this process"}[config.getoption("worker")]
    try:
        module = _submission_path(config.getoption("submission"), _root(config))
    except pytest.UsageError as error:
        return f"optlab: {error}"
    lines = [f"optlab: testing {module}; its calls run in {where}"]
    if config.getoption("worker") == "sandbox" and not SANDBOX_AVAILABLE:
        lines.append(f"optlab: {NO_SANDBOX}")  # the one guarantee this machine lacks, said once
    intake = _intake(module)  # what `grader grade` would note: a syntax error, what it costs, a renaming
    lines += [f"optlab: {note}" for note in ([intake] if isinstance(intake, str) else intake.notes)]
    return lines


class OptLab:
    """What the tests run on: the submission, the reference (if any) and the exercise functions."""

    def __init__(self, config: pytest.Config):
        root = _root(config)
        self.config = config
        self.submission = _submission_path(config.getoption("submission"), root)
        reference = config.getoption("reference") or (
            root / REFERENCE if (root / REFERENCE).is_file() else None
        )
        self.reference: types.ModuleType | None = (
            load_module(Path(reference), "optlab_reference") if reference else None
        )
        # What values decode into: the reference's classes, else (a student's own run) the stubs' given
        # parts, never the submission itself: its code runs only in its worker, under the import deadline.
        self.given = self.reference or _given_parts(root)
        manifest = _kit_manifest(root / MANIFEST, Path(reference) if reference else None)
        self.exercise_of = _exercise_of(manifest) or {
            name: exercise.id for exercise in load_exercises(root) for name in exercise.functions
        }  # the handout's map (not secret): a timeout fails the rest of its exercise fast, as in grading
        self.contract = _contract(root, Path(reference) if reference else None, self.exercise_of)
        self.limits = _limits(config, manifest)
        self.cpu_spent = 0.0  # what the workers closed so far cost (`--cost-out`)
        self.intake = _intake(self.submission)
        self._suite: tuple[str, Student, Callable[[], None]] | None = None  # the running suite's worker
        self._hold = config.getoption("hold_calls_fd", None)
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # worker uids must not read the kit while it grades
            # restored after the workers are closed (cleanups run last registered, first)
            config.add_cleanup(protect_kit(root, Path(__file__).parent))
        config.add_cleanup(self.close)

    def student(self, suite: str) -> Student:
        """The Student of `suite` (one of SUITES, or "" for a test of neither): a fresh worker, module state
        and budget per suite, started at its first test (no worker is ever started ahead of its need: one
        never handed a call was read by no deadline) and closed when a test of another suite begins or
        the session ends."""
        if self._suite is not None and self._suite[0] == suite:
            return self._suite[1]
        self.close()
        student, close = self._new_student(set())  # a timeout costs the rest of its exercise in its suite
        if self.config.getoption("record_calls", False):
            student.observe = self._domain_observer()
        self._suite = (suite, student, close)
        self._await_hold()
        return student

    def _domain_observer(self) -> Callable[[str, tuple, dict], set[str]]:
        """What --record-calls records of a call: the declared domain features (grader.assignment.domain, as
        the inventory stores them) its arguments have, bound to the reference's parameters."""
        import inspect

        from grader.assignment.domain import drawn
        from grader.assignment.inventory import stored_domains

        domains: dict[str, list] = {}
        for domain in stored_domains(_root(self.config)):
            domains.setdefault(domain.function, []).append(domain)

        def observe(name: str, args: tuple, kwargs: dict) -> set[str]:
            function = getattr(self.reference, name, None)
            if name not in domains or function is None:
                return set()
            try:
                bound = inspect.signature(function).bind(*args, **kwargs).arguments
            except TypeError:  # a check calling with the wrong arguments on purpose
                return set()
            return drawn(domains[name], bound)

        return observe

    def close(self) -> None:
        """Close the running suite's worker, if any."""
        if self._suite is not None:
            _, _, close = self._suite
            self._suite = None
            close()

    def _await_hold(self) -> None:
        """Wait until the descriptor `--hold-calls-fd` names reads as closed (the visible suite's run has
        ended): the worker imports meanwhile, but no input of this suite reaches it before."""
        if self._hold is None:
            return
        hold, self._hold = self._hold, None
        try:
            while os.read(hold, 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(hold)

    def _new_student(self, timed_out: set[int]) -> tuple[Student, Callable[[], None]]:
        if isinstance(self.intake, str):
            return unanswerable_student(self.intake), lambda: None
        lab = self.given
        broken = self.intake.broken
        if self.config.getoption("worker") == "inprocess":
            folder = Path(tempfile.mkdtemp(prefix="optlab-inprocess-"))
            (path := folder / MODULE_FILE).write_text(self.intake.source, encoding="utf-8")
            student = in_process_student(
                path, lab, self.reference, self.exercise_of, timed_out, broken, self.contract
            )
            return student, lambda: shutil.rmtree(folder, ignore_errors=True)
        try:
            student, sandbox = sandboxed_student(
                self.intake.source,
                lab,
                self.reference,
                self.exercise_of,
                timed_out,
                self.limits,
                broken,
                self.contract,
            )
            student.link = _EchoOutput(sandbox)
            sandbox.spawn()  # it imports the module while this process goes on
        except (
            OSError,
            SandboxError,
        ) as error:  # the machine's fault (a full disk): no check may fail for it
            pytest.exit(
                f"optlab: the sandbox could not be set up: {error}", returncode=pytest.ExitCode.INTERNAL_ERROR
            )
        return student, lambda: self._close(student, sandbox)

    def _close(self, student: Student, sandbox: Sandbox) -> None:
        log = self.config.getoption("worker_log")
        try:
            if log:
                with open(log, "a", encoding="utf-8") as handle:
                    handle.write(sandbox.output())
        except OSError as error:  # a full disk: the instructor's log loses this output, never a check
            sys.stderr.write(f"optlab: what the worker printed was not logged ({error.strerror})\n")
        finally:
            student.close()
            self.cpu_spent += sandbox.cpu_spent()
            if out := self.config.getoption("cost_out"):
                Path(out).write_text(json.dumps({"cpu_seconds": round(self.cpu_spent, 3)}))


def _limits(config: pytest.Config, manifest) -> Limits:
    """The workers' limits: the call's from --call-timeout, the budgets from the options, else the
    manifest's [budget] (grader.assignment.manifest.Budget), else Limits' own (a student's run: no
    manifest)."""
    budget = manifest.budget if manifest is not None else None
    run = config.getoption("suite_cpu_seconds", None)
    exercise = config.getoption("exercise_cpu_seconds", None)
    if budget is not None:
        run = run or budget.suite_cpu_seconds(len(SUITES))
        exercise = exercise or budget.exercise_cpu_seconds
    budgets = {"run_seconds": run, "exercise_seconds": exercise}
    return Limits(call_seconds=config.getoption("call_timeout"), **{k: v for k, v in budgets.items() if v})


class _EchoOutput:
    """The sandbox as the Student's link, which after each call writes what the worker printed during
    it to this process's stdout: pytest shows it under a failing test (or at once with -s), escaped and
    every line marked (grader.grading.untrusted.PrintedLines), so none of it passes for the grader's
    verdict."""

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self._offset = 0
        self._handle: Any = None  # opened at the first call after the worker made the file, then kept
        self._noted = False  # whether it said that it escaped what the worker printed
        self._lines = PrintedLines()

    def send(self, message: dict) -> dict:
        try:
            return self.sandbox.send(message)
        finally:
            self._echo()

    def settled(self) -> None:
        self.sandbox.settled()  # the grader's work on the answer is the call's time (grader.sandbox.sandbox)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self.sandbox.close()

    def _echo(self) -> None:
        try:
            if self._handle is None:
                self._handle = open(self.sandbox.home / "output.txt", "rb")  # noqa: SIM115 - kept open
            if os.fstat(self._handle.fileno()).st_size <= self._offset:
                return  # most calls print nothing: one fstat, no read
            self._handle.seek(self._offset)
            printed = self._handle.read(self.sandbox.limits.output_bytes)
        except OSError:
            return
        self._offset += len(printed)
        if printed:  # a terminal's with -s: control characters and escapes shown, not obeyed
            text = printed.decode("utf-8", "replace")
            shown = printable(text)
            if shown != text and not self._noted:
                self._noted = True
                sys.stdout.write(f"({ESCAPED_NOTE})\n")
            sys.stdout.write(self._lines.mark(shown))
            sys.stdout.flush()


def _given_parts(root: Path) -> types.ModuleType:
    """The lab's given parts (classes, constants, helpers) from the stubs: the handout's copy of them, or
    the kit's student/ folder; an empty module where neither is there."""
    for path in (root / LAB_STUBS, root / STUDENT):
        if path.is_file():
            return load_module(path, "optlab_given")
    return types.ModuleType("optlab_given")


def _intake(path: Path) -> Submission | str:
    """The submission as intake reads it, or the one-line reason it cannot be graded."""
    try:
        return read_submission(path)
    except IntakeError as error:
        return str(error)


def _submission_path(option: str | None, root: Path) -> Path:
    if option:
        path = Path(option)
        if not path.exists():
            raise pytest.UsageError(f"--submission {option}: no such file or folder")
        return path.resolve()
    for candidate in (root / MODULE_FILE, root / REFERENCE):
        if candidate.is_file():
            return candidate
    raise pytest.UsageError(f"no {MODULE_FILE} beside the tests: put yours there or pass --submission PATH")


def _kit_manifest(manifest_path: Path, reference_path: Path | None):
    """The kit's manifest (grader.assignment.manifest.Manifest), checked against the reference; None in a
    student's own run (neither is there)."""
    if not manifest_path.is_file() or reference_path is None:
        return None
    from grader.assignment.manifest import load_manifest
    from grader.assignment.reference import read_reference

    return load_manifest(manifest_path, read_reference(reference_path, str(reference_path)))


def _exercise_of(manifest) -> dict[str, int]:
    if manifest is None:
        return {}
    return {name: exercise.id for exercise in manifest.exercises for name in exercise.functions}


def _contract(root: Path, reference_path: Path | None, exercise_of: dict[str, int]) -> dict | None:
    """The reference's call contract: as `grader build` stored it for the kit's own reference, else
    derived from the reference given; None without a reference (a student's own run)."""
    if reference_path is None:
        return None
    from grader.assignment.contract import derive_contract
    from grader.assignment.inventory import stored_contract

    if reference_path.resolve() == (root / REFERENCE).resolve() and (stored := stored_contract(root)):
        return stored
    return derive_contract(reference_path.read_text(encoding="utf-8"), exercise_of)


@pytest.fixture(scope="session")
def optlab(pytestconfig: pytest.Config) -> OptLab:
    return OptLab(pytestconfig)


@pytest.fixture
def student(optlab: OptLab, request: pytest.FixtureRequest) -> Student:
    """The submission, called through the codec; a fresh worker per suite (OptLab.student). A test's
    fixture, not the package's: tests/visible and tests/hidden are folders, not packages, so a
    package-scoped fixture was one instance for both suites (one process, module state and budget)."""
    return optlab.student(_suite_of(request.node) or "")


@pytest.fixture(scope="session")
def reference(optlab: OptLab) -> types.ModuleType:
    """The reference module (hidden tests only)."""
    if optlab.reference is None:
        pytest.fail("this test needs the reference module, which only the kit has")
    return optlab.reference


@pytest.fixture
def lab(optlab: OptLab, student: Student) -> Lab:
    """The lab's given parts: from the reference when grading, else from the submission itself."""
    return Lab(optlab.reference or student.decodes_into, optlab.exercise_of)


class Lab:
    """The lab module's given parts (its classes, constants and helpers), without its exercise
    functions: those are the student's, called through the `student` fixture."""

    def __init__(self, module: types.ModuleType, exercise_of: dict[str, int]):
        self._module, self._exercise_of = module, exercise_of

    def __getattr__(self, name: str):
        if name in self._exercise_of:
            raise AttributeError(f"{name} is exercise {self._exercise_of[name]}: call student.{name}")
        return getattr(self._module, name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every suite test scores for exactly one exercise and checks at most one promise; record them for
    the results."""
    problems = []
    for item in items:
        suite = _suite_of(item)
        if suite is None:
            continue
        marks = list(item.iter_markers("exercise"))
        promises = list(item.iter_markers("promise"))
        if len(marks) != 1 or len(marks[0].args) != 1 or type(marks[0].args[0]) is not int:
            problem = "needs exactly one @pytest.mark.exercise(N)"
        elif len(promises) > 1 or any(len(m.args) != 1 or type(m.args[0]) is not str for m in promises):
            problem = 'names its promise once, @pytest.mark.promise("function.name")'
        else:
            problem = ""
        if problem:
            path, line, name = item.location  # the test's file:line, as an editor opens it
            where = f"{path}:{line + 1}" if line is not None else path
            said = f"{where}: {name.split('[')[0]} {problem}"
            if said not in problems:  # a parametrized test once
                problems.append(said)
            continue
        item.user_properties.append(("exercise", marks[0].args[0]))
        item.user_properties.append(("suite", suite))
        item.user_properties.append(("property", _first_doc_paragraph(item)))
        item.user_properties.append(("promise", promises[0].args[0] if promises else ""))
    if problems:  # one line each ("ERROR: ..."), which grader build shows without the collection
        raise pytest.UsageError(*problems)
    if out := config.getoption("inventory_out"):
        Path(out).write_text(json.dumps([_inventory_entry(i) for i in items if _suite_of(i)], indent=1))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Record a failure's exception text (with its notes) for the results, whatever --tb says."""
    report = yield
    if report.when == "call" and item.config.getoption("record_calls", False):
        student = getattr(item, "funcargs", {}).get("student")
        called = sorted(student.called) if isinstance(student, Student) else []
        drawn = sorted(student.drawn) if isinstance(student, Student) else []
        if isinstance(student, Student):
            student.called.clear()  # what the next test calls (from its setup on) is its own
            student.drawn.clear()
        item.user_properties.append(("calls", called))
        item.user_properties.append(("drawn", drawn))
    if report.failed and call.excinfo is not None and _suite_of(item):
        # on the item: pytest-json-report reads the properties of the teardown report, made later
        item.user_properties.append(("failure", failure_text(call.excinfo)))
    props: dict[str, Any] = dict(item.user_properties)  # what this plugin and the suites put there
    if "exercise" in props and (report.when == "call" or not report.passed):
        state, message = classify(call.excinfo, props["exercise"]) if not report.passed else ("passed", "")
        item.config.stash[_VERDICT].record(
            item.nodeid, props["exercise"], props["suite"], state, message, props.get("promise", "")
        )
        report.optlab_state = state
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """A test that fails only because its function is still the stub's is "not started", and one not run
    because its exercise timed out earlier is "not called": both without a traceback (in a local run;
    results for grading keep their outcomes)."""
    if getattr(config.option, "json_report", None):
        return None
    state = getattr(report, "optlab_state", None)
    if state == NOT_STARTED:
        return "not started", "N", ("NOT STARTED", {"yellow": True})
    if state == NOT_CALLED:
        return "not called", "T", ("NOT CALLED (its exercise timed out earlier)", {"red": True})
    if state == NOT_IMPORTED:  # said once, above the verdict
        return "not imported", "I", ("NOT IMPORTED (see the verdict)", {"red": True})
    if state == SYNTAX_ERROR:  # intake's note at the top says where ("S" read as pytest's skip)
        return "syntax error", "C", ("SYNTAX ERROR (could not compile)", {"red": True})
    if state == WAITING:  # the verdict says on which exercise
        return "waiting", "W", ("WAITING ON ANOTHER EXERCISE (see the verdict)", {"yellow": True})
    return None


LETTERS = {  # the progress letters of this plugin, beside pytest's own (. F E s x)
    NOT_STARTED: "N not started",
    WAITING: "W waiting on another exercise",
    NOT_CALLED: "T not called (its exercise timed out earlier)",
    NOT_IMPORTED: "I not imported",
    SYNTAX_ERROR: "C syntax error (could not compile)",
}


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The grader's verdict, per exercise, at the end of the run."""
    lines = config.stash[_VERDICT].lines()
    if lines:
        terminalreporter.section("optlab: your verdict, as the grader counts it")
        for line in lines:
            terminalreporter.write_line(line)
        shown = config.stash[_VERDICT].states()
        if legend := [said for state, said in LETTERS.items() if state in shown]:
            terminalreporter.write_line("Letters: " + ", ".join(legend) + ".")


def _inventory_entry(item: pytest.Item) -> dict:
    props: dict[str, Any] = dict(item.user_properties)  # what this plugin and the suites put there
    return {
        "nodeid": item.nodeid,
        "exercise": props["exercise"],
        "suite": props["suite"],
        "property": props["property"],
        "promise": props["promise"],
    }


def _first_doc_paragraph(item: pytest.Item) -> str:
    """What the test checks, in its own words: the first paragraph of its docstring (else its name)."""
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    paragraph = doc.strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    return text or item.name.removeprefix("test_").replace("_", " ")


def _suite_of(item: pytest.Item) -> str | None:
    parts = Path(item.path).parts
    for suite in SUITES:
        if "tests" in parts and suite in parts:
            return suite
    return None
