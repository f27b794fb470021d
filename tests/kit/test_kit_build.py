"""`grader build` and `build --check` on a minimal kit tree: the API, `main` and `python -m grader`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.authoring import module_map
from grader.authoring.build import BuildReport, build
from grader.cli import main
from grader.layout import README, STUDENT, find_root
from tests.kit.conftest import KIT

STUDENT_TEXT = '''\
"""A tiny reference module."""


def double(x):
    """Twice x."""
    raise NotImplementedError("exercise 1 (double): implement double")


def given(x):
    return x + 1
'''


def test_build_writes_the_student_module(kit_tree: Path) -> None:
    report = build(kit_tree)

    assert report == BuildReport(outputs=(STUDENT,), stale=(STUDENT,), written=True)
    assert (kit_tree / STUDENT).read_text(encoding="utf-8") == STUDENT_TEXT
    assert build(kit_tree) == BuildReport(outputs=(STUDENT,), stale=(), written=True)


def test_check_writes_nothing_and_reports_stale_files(kit_tree: Path) -> None:
    assert build(kit_tree, check=True) == BuildReport(outputs=(STUDENT,), stale=(STUDENT,), written=False)
    assert not (kit_tree / "student").exists()


def test_cli_check_on_a_stale_tree_exits_1_until_built(
    kit_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ["--root", str(kit_tree)]

    assert main([*root, "build", "--check"]) == 1
    assert capsys.readouterr().err == "grader: stale: student/optimization_toolkit.py (run: grader build)\n"

    assert main([*root, "build"]) == 0
    assert capsys.readouterr().out == "grader: wrote: student/optimization_toolkit.py\n"

    assert main(["build", "--check", *root]) == 0  # --root also after the subcommand
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("grader: up to date: student/optimization_toolkit.py\n", "")


def test_validate_refuses_a_stale_tree_and_names_the_fix(
    kit_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(kit_tree), "validate"]) == 2
    assert capsys.readouterr().err == (
        "grader: error: student/optimization_toolkit.py is stale: run grader build first\n"
    )


def test_check_sees_an_edited_reference_and_an_edited_student_module(
    kit_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(kit_tree)
    reference = kit_tree / "solutions" / "optimization_toolkit.py"
    reference.write_text(reference.read_text(encoding="utf-8").replace("x + 1", "x + 2"), encoding="utf-8")
    assert main(["--root", str(kit_tree), "build", "--check"]) == 1

    build(kit_tree)
    student = kit_tree / STUDENT
    student.write_bytes(student.read_bytes().replace(b"\n", b"\r\n"))  # only the line endings differ
    assert main(["--root", str(kit_tree), "build", "--check"]) == 1
    assert "grader: stale: student/optimization_toolkit.py" in capsys.readouterr().err


def test_missing_reference_is_a_one_line_error(kit_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (kit_tree / "solutions" / "optimization_toolkit.py").unlink()

    assert main(["--root", str(kit_tree), "build"]) == 2
    assert capsys.readouterr().err == "grader: error: solutions/optimization_toolkit.py: no such file\n"


def test_stub_error_is_a_one_line_error(kit_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = kit_tree / "solutions" / "optimization_toolkit.py"
    marked = reference.read_text(encoding="utf-8").replace(
        "    return 2", "    # BEGIN SOLUTION\n    return 2"
    )
    reference.write_text(marked, encoding="utf-8")

    assert main(["--root", str(kit_tree), "build"]) == 2
    assert capsys.readouterr().err == (
        "grader: error: solutions/optimization_toolkit.py:6: "
        "BEGIN SOLUTION without an END SOLUTION in the same function\n"
    )


def test_root_is_found_from_a_subfolder(
    kit_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(kit_tree / "solutions")

    assert find_root(Path.cwd()) == kit_tree.resolve()
    assert main(["build"]) == 0
    assert (kit_tree / STUDENT).read_text(encoding="utf-8") == STUDENT_TEXT


def test_root_falls_back_to_the_start_folder(tmp_path: Path) -> None:
    assert find_root(tmp_path) == tmp_path.resolve()


def _python_m_grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=cwd,
        env={"PYTHONPATH": str(KIT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_python_m_grader_reports_bad_input_without_a_traceback(kit_tree: Path) -> None:
    (kit_tree / "grader" / "exercises.toml").write_text("[defaults\n", encoding="utf-8")

    done = _python_m_grader("build", "--check", "--root", str(kit_tree), cwd=kit_tree)

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("grader: error: grader/exercises.toml:1: TOML syntax error: ")
    assert done.stderr.count("\n") == 1


def test_python_m_grader_build_then_check(kit_tree: Path) -> None:
    assert _python_m_grader("build", cwd=kit_tree).returncode == 0
    assert _python_m_grader("build", "--check", cwd=kit_tree).returncode == 0


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade-everything"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("grader: error: argument COMMAND: invalid choice") and err.count("\n") == 1


# -- README's map of grader/ -----------------------------------------------------------------------------


def test_the_readme_map_is_the_package_as_it_stands():
    """Every subpackage and module of grader/ is in README's map, by the first sentence of its docstring."""
    readme = (KIT / README).read_text(encoding="utf-8")
    written = readme[
        readme.index(module_map.BEGIN) + len(module_map.BEGIN) + 1 : readme.index(module_map.END)
    ]
    assert written == module_map.module_map(KIT / "grader")
    for path in (KIT / "grader").rglob("*.py"):
        name = f"`{path.parent.name}/`" if path.name == "__init__.py" else f"`{path.name}`"
        assert f"{name}: {module_map.summary(path)}" in written, path
    assert module_map.NO_DOCSTRING not in written


def test_a_module_added_or_described_anew_makes_the_map_stale(kit_tree):
    (kit_tree / "grader" / "__init__.py").write_text('"""The kit."""\n', encoding="utf-8")
    (kit_tree / "grader" / "sandbox").mkdir()
    (kit_tree / "grader" / "sandbox" / "__init__.py").write_text('"""The OS layers."""\n', encoding="utf-8")
    (kit_tree / README).write_text(
        f"# Kit\n\n{module_map.BEGIN}\n{module_map.END}\n\nMore.\n", encoding="utf-8"
    )
    build(kit_tree)
    assert build(kit_tree, check=True).stale == ()
    module = kit_tree / "grader" / "sandbox" / "pipes.py"
    module.write_text(
        '"""The pipes: messages within a deadline. More detail.\n\nAnd more."""\n', encoding="utf-8"
    )
    assert README in build(kit_tree, check=True).stale
    build(kit_tree)
    text = (kit_tree / README).read_text(encoding="utf-8")
    assert (
        "  - `sandbox/`: The OS layers.\n    - `pipes.py`: The pipes: messages within a deadline.\n" in text
    )
    assert text.startswith("# Kit\n\n") and text.endswith(f"{module_map.END}\n\nMore.\n")
    module.write_text("x = 1\n", encoding="utf-8")  # no docstring: the map says so
    build(kit_tree)
    assert f"`pipes.py`: {module_map.NO_DOCSTRING}" in (kit_tree / README).read_text(encoding="utf-8")


def test_a_readme_without_the_map_markers_is_one_line_of_error(kit_tree):
    (kit_tree / README).write_text("# Kit\n", encoding="utf-8")
    with pytest.raises(module_map.MapMarkersMissing, match="the map of grader/ goes between"):
        build(kit_tree, check=True)
