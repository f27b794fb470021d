"""Running the suites: pytest in a child process against one submission, one record per test.

Running the suites: pytest in a child process against one submission, read back through
pytest-json-report into one record per test (exercise, suite, outcome, the property it checks, the
failure message; the promise it checks is the inventory's, set when grading accounts for every test of
it). A test that the run was expected to hold but did not report counts as failed. A run
that leaves no readable report (missing, empty, truncated: a full disk, say), or that pytest itself
could not finish, is a failure of the grading (`GradingCrashed`), never a run whose tests all failed. A
run cut at its time limit is the run's own time spent: what it reported counts, nothing where it left none.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from grader.assignment.records import TestRecord
from grader.errors import KitError
from grader.layout import BYTECODE_CACHE, SUITES


class SuiteRunError(KitError):
    """The suites could not be run, or not to the end (not a failure of the submission); `records` holds
    what the tests that did run reported (a run cut at its time limit keeps them)."""

    def __init__(self, message: str, records: Sequence[TestRecord] = ()):
        super().__init__(message)
        self.records = list(records)


class GradingCrashed(SuiteRunError):
    """The run left no record of its tests that can be trusted: its report missing, empty, truncated or
    not pytest-json-report's, or pytest's own failure (interrupted, internal or usage error). The
    grading failed, not the submission: nothing it reported may be scored. `detail`, the end of what
    pytest printed, is for the instructor's log only (it may quote hidden checks' failures)."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


_KIT_FAULTS = {  # pytest's exits that are the kit's or the machine's fault, never the submission's
    2: "the test run was interrupted",
    3: "the test run stopped on an internal error (the machine's: a sandbox not set up, say)",
    4: "pytest could not start the test run",
}
INTERRUPT_GRACE = 15.0  # seconds a cut run has to write the report of the tests that ran


def run_suites(
    root: Path,
    submission: Path,
    paths: Sequence[str] | None = None,
    pytest_args: Sequence[str] = (),
    timeout: float | None = None,
    pass_fds: Sequence[int] = (),
) -> list[TestRecord]:
    """Run the suites of the kit at `root` (or only the test files `paths`, relative to it) against
    `submission`; one record per test that ran. `pass_fds`: descriptors pytest inherits."""
    with tempfile.TemporaryDirectory(prefix="optlab-run-") as scratch:
        report_path = Path(scratch) / "report.json"
        command = [
            sys.executable, "-m", "pytest",
            *[str(root / p) for p in (paths or [f"tests/{suite}" for suite in SUITES])],
            f"--submission={submission}",
            f"--rootdir={root}",
            "-p", "no:cacheprovider",
            "--json-report", f"--json-report-file={report_path}",
            "--json-report-omit=collectors,log,traceback,streams,warnings",
            "-q", "--no-header", "-p", "no:randomly", "--tb=native",
            # The suites assert through grader.expect, whose messages say what failed; pytest's rewriting
            # of every test and plugin module adds nothing to them and, with bytecode not written (below),
            # costs about 1.3 s per grading on this machine.
            "--assert=plain",
            *pytest_args,
        ]  # fmt: skip
        env = _bytecode(root, dict(os.environ, PYTHONHASHSEED="0"))
        run, cut = _run_within(command, root, env, timeout, pass_fds)
        report, problem = _read_report(report_path)
    if cut:  # the run's own time spent: what it reported counts (nothing, where it was cut too soon)
        raise SuiteRunError(f"the suites did not finish within {timeout:g} s", _records(report))
    if report is None:
        raise GradingCrashed(f"the test run's report (pytest-json-report's) was {problem}", _tail(run))
    if report["exitcode"] in _KIT_FAULTS:
        code = report["exitcode"]
        raise GradingCrashed(f"{_KIT_FAULTS[code]} (pytest's exit code {code})", _tail(run))
    return _records(report)


def _bytecode(root: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` for the test run, with where its compiled modules go: the kit's own private cache folder
    (Python's PYTHONPYCACHEPREFIX), so that the suites, the plugin and the reference are compiled once,
    not at every grading (about 1 s each), and nothing is written beside the kit's sources or the
    submission. The folder is the kit's (protect_kit closes it to the worker uids like every entry of
    the kit) and made private here; where it cannot be made or written (a read-only kit), nothing is
    written at all, as before."""
    env = dict(env)
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = root / BYTECODE_CACHE
    try:
        cache.mkdir(mode=0o700, exist_ok=True)
        usable = cache.is_dir() and not cache.is_symlink() and os.access(cache, os.W_OK)
    except OSError:
        usable = False
    if usable:
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run_within(
    command: list[str], root: Path, env: dict, timeout: float | None, pass_fds: Sequence[int] = ()
) -> tuple[subprocess.CompletedProcess, bool]:
    """Run pytest; past `timeout`, interrupt it as Ctrl-C would, so that it still reports the tests that
    ran, and kill it if it has not within INTERRUPT_GRACE. Returns the run and whether it was cut."""
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        pass_fds=tuple(pass_fds),
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=timeout)
        return subprocess.CompletedProcess(command, process.returncode, out, err), False
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        return subprocess.CompletedProcess(command, process.returncode, out, err), True


def _read_report(path: Path) -> tuple[dict | None, str]:
    """pytest-json-report's report; else None and what was wrong with it ("missing", "empty", ...): the
    run wrote none, could not write it whole (a full disk), or was killed while writing it."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None, "missing"
    except OSError as error:
        return None, f"unreadable ({error.strerror})"
    if not text.strip():
        return None, "empty"
    try:
        report = json.loads(text.decode("utf-8"))
    except ValueError:
        return None, "cut short or corrupt (not JSON)"
    well_formed = (
        isinstance(report, dict)
        and isinstance(report.get("exitcode"), int)
        and isinstance(report.get("tests"), list)
        and all(isinstance(t, dict) and isinstance(t.get("nodeid"), str) for t in report["tests"])
    )
    return (report, "") if well_formed else (None, "not a pytest-json-report report")


def _records(report: dict | None) -> list[TestRecord]:  # None: a cut run that left no report
    return [_record(test) for test in (report or {}).get("tests", [])]


def _record(test: dict) -> TestRecord:
    props = {k: v for entry in test.get("user_properties", []) for k, v in entry.items()}
    outcome = test.get("outcome", "missing")
    failed_stage = next(
        (test[s] for s in ("setup", "call", "teardown") if test.get(s, {}).get("outcome") == "failed"), None
    )
    message = ""
    if outcome != "passed":
        message = props.get("failure") or (failed_stage or {}).get("longrepr", "") or outcome
    return TestRecord(
        nodeid=test["nodeid"],
        exercise=int(props.get("exercise", 0)),
        suite=str(props.get("suite", "")),
        passed=outcome == "passed",
        outcome=outcome,
        property=str(props.get("property", "")),
        message=message,
        calls=tuple(str(name) for name in props.get("calls", ()) if isinstance(name, str)),
        drawn=tuple(str(name) for name in props.get("drawn", ()) if isinstance(name, str)),
    )


def _tail(run: subprocess.CompletedProcess) -> str:
    return " | ".join((run.stdout + run.stderr).strip().splitlines()[-5:])
