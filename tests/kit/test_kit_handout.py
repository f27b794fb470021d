"""The student handout: what it holds, that the leak check finds every kind of secret put into it, and
that it runs on its own (a fresh virtual environment with only pytest and hypothesis): every visible
test fails on the stubs with its exercise's NotImplementedError, and passes on the reference."""

from __future__ import annotations

import ast
import json
import os
import platform
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from grader import MIN_PYTHON
from grader.assignment.inventory import load_inventory
from grader.assignment.scoring import points_text
from grader.cli import main
from grader.grading.grade import kit_manifest
from grader.grading.local import SEPARATOR
from grader.layout import HANDOUT_RUNNER, shipped_modules
from grader.packaging.handout import (
    FOLDER,
    HANDOUT_ZIP,
    PLUGIN_ENTRY_POINT,
    PYTHON_GUARD_WHEEL,
    handout_leaks,
    python_guard_wheel,
    requirements_text,
    write_handout,
)
from grader.sandbox.sandbox import NO_SANDBOX
from tests.kit.conftest import KIT, visible_checks

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"


@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    return write_handout(KIT, tmp_path_factory.mktemp("dist") / HANDOUT_ZIP)


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name.removeprefix(f"{FOLDER}/"): zf.read(name) for name in zf.namelist()}


def test_the_handout_holds_the_stubs_the_visible_suite_and_its_runner(handout):
    files = members(handout)
    visible = {f"tests/visible/{p.name}" for p in (KIT / "tests" / "visible").glob("*.py")}
    runner = {f"grader/{name}.py" for name in shipped_modules(HANDOUT_RUNNER)}
    expected = {"optimization_toolkit.py", "README.md", "requirements.txt", "pytest.ini", "tests/conftest.py"}
    expected |= {"conftest.py", PYTHON_GUARD_WHEEL}  # pytest.ini from any folder; pip's Python check
    expected |= {"tests/exercises.json", "tests/lab_stubs.py", *PLUGIN_ENTRY_POINT}
    assert set(files) == expected | visible | runner
    assert files["optimization_toolkit.py"] == (KIT / "student" / "optimization_toolkit.py").read_bytes()
    assert files["tests/lab_stubs.py"] == files["optimization_toolkit.py"]  # a local run decodes into it
    requirements = [line for line in files["requirements.txt"].decode().splitlines() if line[:1] != "#"]
    pins = [f'{pin}; python_version >= "3.11"' for pin in ("pytest==9.2.0", "hypothesis==6.170.15")]
    assert requirements == [f"./{PYTHON_GUARD_WHEEL}", *pins]
    readme = files["README.md"].decode()
    total = points_text(kit_manifest(KIT).total_points)
    assert "| 6 | Pareto selection |" in readme and f"Total: {total} points." in readme


# -- a Python older than the lab's: one line from pip, one line from a run ------------------------------


def test_the_lab_needs_the_python_pyproject_requires():
    pyproject = tomllib.loads((KIT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["requires-python"].startswith(f">={'.'.join(map(str, MIN_PYTHON))},")


def pip_dry_run(folder: Path) -> subprocess.CompletedProcess:
    """`pip install -r requirements.txt` in `folder`, as the README says, installing nothing (no index:
    the pins are this Python's already, and a too-old Python must need none)."""
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--disable-pip-version-check"]
    return subprocess.run([*pip, "-r", "requirements.txt"], cwd=folder, capture_output=True, text=True)


def test_pip_on_a_python_older_than_the_labs_stops_in_one_line(tmp_path):
    """Played with this Python as the too-old one (the machine has no older): the lab asks for one minor
    version more. Before: every skipped hypothesis version, then "No matching distribution"."""
    newer = (sys.version_info.major, sys.version_info.minor + 1)
    pins = {"pytest": "pytest==9.2.0", "hypothesis": "hypothesis==6.170.15"}
    (tmp_path / "requirements.txt").write_text(requirements_text(pins, newer))
    (tmp_path / PYTHON_GUARD_WHEEL).write_bytes(python_guard_wheel(newer))
    run = pip_dry_run(tmp_path)
    assert run.returncode != 0
    errors = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith("ERROR")]
    this, wanted = platform.python_version(), ".".join(map(str, newer))
    assert errors == [
        f"ERROR: Package 'optlab-needs-python' requires a different Python: {this} not in '>={wanted}'"
    ]


def test_pip_on_the_labs_python_takes_the_pins(handout, tmp_path):
    with zipfile.ZipFile(handout) as zf:
        zf.extractall(tmp_path)
    run = pip_dry_run(tmp_path / FOLDER)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "pytest==9.2.0" in run.stdout and "hypothesis==6.170.15" in run.stdout


def test_a_run_on_a_python_older_than_the_labs_is_one_line(handout, tmp_path):
    """`python -m pytest` in the handout on Python 3.10, played by this Python: pytest's own modules
    loaded first (they are 3.11's), then version_info set to 3.10, then the run, which loads the plugin."""
    with zipfile.ZipFile(handout) as zf:
        zf.extractall(tmp_path)
    old = (
        "import collections, importlib, sys, pytest, _pytest.config as c\n"
        "for name in c.default_plugins: importlib.import_module('_pytest.' + name)\n"
        "V = collections.namedtuple('V', 'major minor micro releaselevel serial')\n"
        "sys.version_info = V(3, 10, 12, 'final', 0)\n"
        "raise SystemExit(pytest.main())\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", old], cwd=tmp_path / FOLDER, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert lines == ["optlab: this needs Python 3.11 or newer, and this is Python 3.10: use a newer one"]


def test_the_handout_leaks_nothing(handout):
    assert handout_leaks(handout, KIT) == []


def test_the_handout_is_the_same_zip_every_time(handout, tmp_path):
    assert write_handout(KIT, tmp_path / HANDOUT_ZIP).read_bytes() == handout.read_bytes()


def tampered(handout: Path, out: Path, name: str, data: bytes) -> Path:
    """The handout with `name` added (or replaced) in its folder."""
    files = members(handout) | {name: data}
    with zipfile.ZipFile(out, "w") as zf:
        for member, content in files.items():
            zf.writestr(f"{FOLDER}/{member}", content)
    return out


def hidden_test_renamed() -> bytes:
    """A hidden test's code under another name, as a visible test file."""
    source = (KIT / "tests" / "hidden" / "test_ex06_pareto.py").read_text()
    return source.replace("def test_", "def test_copied_").encode()


@pytest.mark.parametrize(
    ("name", "data", "found"),
    [
        ("tests/hidden/test_ex06_pareto.py", b"", "a grading-only file"),
        ("solutions/optimization_toolkit.py", b"", "a grading-only file"),
        ("grader/exercises.toml", (KIT / "grader/exercises.toml").read_bytes(), "hidden_visibility"),
        ("grader/grading/grade.py", b"", "a grading-only file"),
        ("grader/batch/run.py", b"", "a grading-only file"),
        ("grader/authoring/validate.py", b"", "a grading-only file"),
        ("grader/runtime/__pycache__/worker.cpython-311.pyc", b"", "a grading-only file"),
        ("optimization_toolkit.py", REFERENCE.read_bytes(), "holds the solution of pareto_front"),
        ("tests/visible/test_ex06_more.py", hidden_test_renamed(), "is the code of the hidden test_ex06"),
        ("README.md", b"Hint: read test_front_matches_reference_on_larger_tables", "names the hidden test"),
        ("tests/promises/ex06.toml", b"# every promise, the hidden checks' too\n", "a grading-only file"),
    ],
    ids=[
        "hidden-file",
        "solutions-file",
        "manifest",
        "grading-module",
        "batch-module",
        "grading-module-in-a-subpackage",
        "bytecode-in-a-subpackage",
        "reference",
        "hidden-code",
        "name",
        "promise-file",
    ],
)
def test_the_leak_check_finds_each_kind_of_secret(handout, tmp_path, name, data, found):
    leaks = handout_leaks(tampered(handout, tmp_path / "leaky.zip", name, data), KIT)
    assert any(found in leak for leak in leaks), leaks


def test_the_hidden_name_of_that_case_is_a_real_hidden_only_test():
    """The "name" case above must name a test that exists in the hidden suite and not in the visible one."""
    tests = load_inventory(KIT)["tests"]
    by_suite = {
        s: {t["nodeid"].split("::")[-1].split("[")[0] for t in tests if t["suite"] == s}
        for s in ("visible", "hidden")
    }
    assert "test_front_matches_reference_on_larger_tables" in by_suite["hidden"] - by_suite["visible"]


def test_grader_package_refuses_a_leaking_handout(tmp_path, monkeypatch, capsys):
    import grader.packaging.handout as handout_module
    import grader.packaging.package as package

    files = handout_module.handout_files
    monkeypatch.setattr(package, "write_autograder", lambda root, dist: _touch(dist / "autograder.zip"))
    monkeypatch.setattr(
        handout_module,
        "handout_files",
        lambda root, manifest: files(root, manifest) | {"tests/hidden/x.py": b""},
    )
    assert main(["--root", str(KIT), "package", "-o", str(tmp_path)]) == 2
    assert not (tmp_path / HANDOUT_ZIP).exists()
    err = capsys.readouterr().err
    assert "tests/hidden/x.py: a grading-only file" in err and "was not written" in err


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def run_visible(folder: Path, python: Path, report: Path) -> dict[str, str]:
    """Run the handout's visible tests as a student would; nodeid -> failure message ("" if passed)."""
    subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:randomly", f"--junitxml={report}"],
        cwd=folder, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        nodeid = case.get("classname").replace(".", "/") + ".py::" + case.get("name")
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        outcomes[nodeid] = "" if failure is None else failure.get("message", "")
    return outcomes


@pytest.fixture(scope="module")
def unpacked(handout, tmp_path_factory) -> tuple[Path, Path]:
    """The handout unpacked, and the Python of a fresh virtual environment with its requirements only."""
    tmp = tmp_path_factory.mktemp("handout")
    with zipfile.ZipFile(handout) as zf:
        zf.extractall(tmp)
    folder = tmp / FOLDER
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    install = subprocess.run(pip + ["-r", "requirements.txt"], cwd=folder, capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    return folder, python


def test_the_handout_needs_only_pytest_and_hypothesis(unpacked):
    _, python = unpacked
    installed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True
    )
    names = {p["name"].lower() for p in json.loads(installed.stdout)}
    assert {"pytest", "hypothesis"} <= names
    assert not names & {"otter-grader", "pytest-json-report", "optlab-kit", "rich"}


def test_the_space_form_inside_another_project_runs_the_handout_alone(unpacked, tmp_path):
    """`python -m pytest lab/optlab-handout --submission mine.py` from a project with its own pytest.ini,
    in a virtual environment without the kit: the handout's tests only, under its pytest.ini."""
    folder, python = unpacked
    project = tmp_path / "project"
    shutil.copytree(folder, project / "lab" / FOLDER)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_theirs.py").write_text("def test_theirs():\n    raise AssertionError('theirs ran')\n")
    shutil.copy(folder / "optimization_toolkit.py", project / "mine.py")
    run = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:randomly", f"lab/{FOLDER}", "--submission", "mine.py"],
        cwd=project, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 1, (run.stdout[-2000:], run.stderr[-2000:])
    assert run.stdout.startswith(f"optlab: pytest read {project / 'pytest.ini'}, not this lab's pytest.ini")
    assert f"rootdir: {project / 'lab' / FOLDER}\nconfigfile: pytest.ini" in run.stdout
    assert f"{visible_checks()} not started" in run.stdout and "theirs" not in run.stdout


def test_the_handout_fails_on_the_stubs_and_passes_on_the_reference(unpacked, tmp_path):
    folder, python = unpacked
    visible = {t["nodeid"]: t["exercise"] for t in load_inventory(KIT)["tests"] if t["suite"] == "visible"}
    on_stubs = run_visible(folder, python, tmp_path / "stubs.xml")
    assert on_stubs.keys() == visible.keys()
    titles = {e["id"]: e["title"] for e in _exercises()}
    wrong = {
        nodeid: message[:200]
        for nodeid, message in on_stubs.items()
        if f"NotImplementedError: exercise {visible[nodeid]} ({titles[visible[nodeid]]}): implement"
        not in message
    }
    assert wrong == {}

    solved = tmp_path / "solved"
    shutil.copytree(folder, solved)
    shutil.copy(REFERENCE, solved / "optimization_toolkit.py")
    on_reference = run_visible(solved, python, tmp_path / "reference.xml")
    assert on_reference.keys() == visible.keys()
    assert {nodeid: message for nodeid, message in on_reference.items() if message} == {}


# What a Windows Python lacks that a POSIX one has (issue 26, item 2): its modules, and the calls of `os`
# the handout's path could reach. A sitecustomize removes them from the student's pytest process.
POSIX_ONLY = ("fcntl", "resource", "pwd", "grp", "termios", "tty", "pty", "posix", "crypt", "syslog")
WINDOWS_LIKE = """\
import os, sys
for name in ("fcntl", "resource", "pwd", "grp", "termios"):
    sys.modules[name] = None
for name in ("fork", "setsid", "killpg", "getpgid", "geteuid", "setuid", "setgid", "setgroups", "uname",
             "statvfs", "memfd_create", "sched_getaffinity"):
    if hasattr(os, name):
        delattr(os, name)
"""


def windows_like_run(python: Path, cwd: Path, *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`python -m pytest ARGS` in `cwd` on a Python without the POSIX-only modules and calls."""
    site = tmp_path / "windows-like"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(WINDOWS_LIKE)
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:randomly", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip


def test_no_module_of_the_handout_imports_a_posix_only_module_at_load():
    """Each POSIX-only module is imported where it is used, or guarded (try/except ImportError)."""
    problems = []
    for name in shipped_modules(HANDOUT_RUNNER):
        tree = ast.parse((KIT / "grader" / f"{name}.py").read_text(encoding="utf-8"))
        for node in tree.body:  # statements run at load; a try's guarded imports are not among them
            for alias in node.names if isinstance(node, ast.Import) else ():
                if alias.name.split(".")[0] in POSIX_ONLY:
                    problems.append(f"grader/{name}.py:{node.lineno}: import {alias.name}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_ONLY:
                problems.append(f"grader/{name}.py:{node.lineno}: from {node.module} import ...")
    assert problems == []  # sandbox/isolation.py imported fcntl here: the plugin did not load on Windows


def test_on_a_windows_like_python_the_handout_gives_its_verdicts_from_a_worker_process(unpacked, tmp_path):
    """Without fcntl, resource, pwd, grp and termios (and os.fork, os.setsid, os.killpg, os.geteuid...),
    the plugin loads, says in one line which guarantees it lacks, and calls a worker of its own: the stubs
    are not started, the reference passes every check, a top-level endless loop ends at the import
    deadline. (Before: the plugin did not load without fcntl; without resource it called in-process.)"""
    folder, python = unpacked
    (tmp_path / "windows-like").mkdir()
    (tmp_path / "windows-like" / "sitecustomize.py").write_text(WINDOWS_LIKE)
    check = subprocess.run(
        [str(python), "-c", "import fcntl"], env=dict(os.environ, PYTHONPATH=str(tmp_path / "windows-like")),
        capture_output=True, text=True,
    )  # fmt: skip
    assert check.returncode == 1 and "fcntl" in check.stderr  # the simulation holds

    on_stubs = windows_like_run(python, folder, tmp_path=tmp_path)
    assert on_stubs.returncode == 1, on_stubs.stdout[-3000:] + on_stubs.stderr[-2000:]
    head = on_stubs.stdout.split("collected", 1)[0]
    assert "its calls run in a process of its own" in head
    assert f"optlab: {NO_SANDBOX}" in head and head.count("without") == 1  # the guarantees it lacks, once
    assert f"{visible_checks()} not started" in on_stubs.stdout
    states = {line.rsplit(SEPARATOR, 1)[-1].split(":")[0] for line in on_stubs.stdout.splitlines()
              if line[:2].strip().isdigit() and SEPARATOR in line}  # fmt: skip
    assert states == {"not started"}

    solved = tmp_path / "solved"
    shutil.copytree(folder, solved)
    shutil.copy(REFERENCE, solved / "optimization_toolkit.py")
    on_reference = windows_like_run(python, solved, tmp_path=tmp_path)
    assert on_reference.returncode == 0, on_reference.stdout[-3000:]
    assert f"{visible_checks()} passed" in on_reference.stdout

    looping = tmp_path / "looping.py"
    looping.write_text((folder / "optimization_toolkit.py").read_text().replace(
        "import random\n", "import random\nwhile True: pass\n", 1))  # fmt: skip
    loop = windows_like_run(
        python, folder, "tests/visible/test_ex08_softmax.py", f"--submission={looping}", tmp_path=tmp_path
    )
    assert "Your module did not finish importing at line" in loop.stdout, loop.stdout[-3000:]
    assert "5 not imported" in loop.stdout


def _exercises() -> list[dict]:
    import tomllib

    return tomllib.loads((KIT / "grader" / "exercises.toml").read_text())["exercise"]
