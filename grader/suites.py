"""Running the suites: pytest in a child process against one submission, read back through
pytest-json-report into one record per test (exercise, suite, outcome, the property it checks, the
failure message). A test that the run was expected to hold but did not report counts as failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.errors import KitError
from grader.layout import SUITES


@dataclass(frozen=True)
class TestRecord:
    """The outcome of one suite test."""

    __test__ = False  # not a pytest test class, though its name starts with Test

    nodeid: str
    exercise: int
    suite: str
    passed: bool
    outcome: str  # passed, failed, error, skipped, missing
    property: str  # first docstring line: what the test checks, without its inputs
    message: str  # the failure as pytest reported it ("" when passed)


class SuiteRunError(KitError):
    """The suites could not be run at all (not a failure of the submission)."""


def run_suites(
    root: Path,
    submission: Path,
    paths: Sequence[str] | None = None,
    pytest_args: Sequence[str] = (),
    timeout: float | None = None,
) -> list[TestRecord]:
    """Run the suites of the kit at `root` (or only the test files `paths`, relative to it) against
    `submission`; one record per test that ran."""
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
            *pytest_args,
        ]  # fmt: skip
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        try:
            run = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SuiteRunError(f"the suites did not finish within {timeout:g} s") from None
        if not report_path.is_file():
            tail = (run.stdout + run.stderr).strip().splitlines()[-5:]
            raise SuiteRunError("the test run wrote no report: " + " | ".join(tail))
        report = json.loads(report_path.read_text())
    if report.get("exitcode") in (2, 3, 4):  # interrupted, internal error, usage error: the kit's fault
        raise SuiteRunError(f"pytest exited with {report['exitcode']}: " + _tail(run))
    return [_record(test) for test in report.get("tests", [])]


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
    )


def _tail(run: subprocess.CompletedProcess) -> str:
    return " | ".join((run.stdout + run.stderr).strip().splitlines()[-5:])
