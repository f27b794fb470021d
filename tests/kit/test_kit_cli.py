"""The command line as a TA meets it (issue 26 item 5): `grader` finds its kit from any folder, every
numeric option refuses a value out of range in one line (exit 2), a damaged zip is named as one, and
`grade` without -o writes beside the submission and says where.

Before (main at b7871c6): from another folder "grader: error: solutions/optimization_toolkit.py: no such
file"; `grade --call-timeout -1` graded the reference 0/100 and exited 0, `--call-timeout 0` used the
default; a damaged fake.zip was "found no .py file in the submission, only 'fake.zip'"; results.json
went to the current folder."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

import grader.cli
from grader.cli import main
from tests.kit.conftest import KIT

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"


def run(*args: str) -> tuple[int, str, str]:
    """`grader ARGS` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_grade_from_another_folder_finds_the_installed_kit_and_writes_beside_the_submission(tmp_path):
    submission = tmp_path / "ada.py"
    shutil.copy(REFERENCE, submission)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(KIT)}
    command = [sys.executable, "-m", "grader", "grade", str(submission), "--exercise", "8"]
    done = subprocess.run(command, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "ada.results.json"
    assert f"grader: wrote {written}" in done.stdout
    assert json.loads(written.read_text())["score"] > 0
    assert list(elsewhere.iterdir()) == []  # nothing in the current folder


def test_a_root_that_is_not_a_kit_is_one_line(tmp_path):
    code, out, err = run("--root", str(tmp_path), "grade", str(REFERENCE))
    assert code == 2 and out == ""
    said = f"{tmp_path}: not a kit (no grader/exercises.toml there): give --root the kit's own folder"
    assert err == f"grader: error: {said}\n"


def test_no_kit_anywhere_says_how_to_point_at_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(grader.cli, "installed_root", lambda: None)  # a grader installed without its kit
    code, out, err = run("build", "--check")
    assert code == 2 and out == ""
    assert err == (
        f"grader: error: no kit at or above {tmp_path}, and this grader was not installed from one: "
        "run it inside the kit's folder or give --root KIT\n"
    )


@pytest.mark.parametrize(
    "args, said",
    [
        (["grade", "{ref}", "--call-timeout", "-1"], "argument --call-timeout: -1 is out of range"),
        (["grade", "{ref}", "--call-timeout", "0"], "argument --call-timeout: 0 is out of range"),
        (["grade", "{ref}", "--call-timeout", "inf"], "argument --call-timeout: inf is out of range"),
        (["grade", "{ref}", "--call-timeout", "soon"], "argument --call-timeout: 'soon' is not a number"),
        (["grade", "{ref}", "--run-timeout", "-5"], "argument --run-timeout: -5 is out of range"),
        (["grade", "{ref}", "--exercise", "0"], "argument --exercise: 0 is out of range"),
        (["validate", "--exercise", "-3"], "argument --exercise: -3 is out of range"),
        (["batch", "{tmp}", "-j", "0"], "argument -j/--jobs: 0 is out of range"),
        (["batch", "{tmp}", "--timeout", "nan"], "argument --timeout: nan is out of range"),
        (["similarity", "{tmp}", "--threshold", "1.5"], "argument --threshold: 1.5 is out of range"),
        (["similarity", "{tmp}", "--threshold", "0"], "argument --threshold: 0 is out of range"),
    ],
)
def test_every_numeric_option_refuses_a_value_out_of_range_in_one_line(tmp_path, args, said):
    filled = [a.format(ref=REFERENCE, tmp=tmp_path) for a in args]
    code, out, err = run("--root", str(KIT), *filled)
    assert code == 2 and out == ""
    assert err.startswith(f"grader: error: {said}") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []  # nothing graded, nothing written


def test_a_damaged_zip_is_named_as_one(tmp_path):
    damaged = tmp_path / "fake.zip"
    damaged.write_bytes(b"this was never a zip file\n")
    code, out, _ = run("--root", str(KIT), "grade", str(damaged), "-o", str(tmp_path / "r.json"))
    document = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and document["score"] == 0
    assert "fake.zip is not a readable zip file" in document["output"]
    assert "found no .py file" not in document["output"]


def test_grade_says_where_it_wrote_and_how_to_write_elsewhere_when_it_cannot(tmp_path, monkeypatch):
    submission = tmp_path / "ben"
    submission.mkdir()
    (submission / "optimization_toolkit.py").write_text("x = 1\n")
    code, out, err = run("--root", str(KIT), "grade", str(submission), "--exercise", "8")
    assert code == 0 and f"grader: wrote {tmp_path / 'ben.results.json'}\n" in out
    (tmp_path / "a-file").write_text("")
    unwritable = tmp_path / "a-file" / "ben.results.json"  # refused, as a read-only folder refuses it
    monkeypatch.setattr(grader.cli, "results_beside", lambda submission: unwritable)
    code, out, err = run("--root", str(KIT), "grade", str(submission), "--exercise", "8")
    assert code == 3 and "(give -o PATH to write results.json elsewhere)" in err


def test_every_argument_of_every_command_says_what_it_is_and_its_default() -> None:
    """Issue 34: `grader batch --help` showed `-o` with no help and no default."""
    import argparse

    parser = grader.cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    silent = []
    for name, command in commands.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            said = action.help or ""
            flag = isinstance(action, argparse._StoreTrueAction)
            positional = not action.option_strings
            if not said or not (flag or positional or "default" in said):
                silent.append(f"{name} {action.option_strings or action.dest}: {said!r}")
    assert silent == []
