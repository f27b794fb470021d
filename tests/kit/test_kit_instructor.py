"""An instructor's path (issue 26, item 7), as an instructor meets it: a function added to an exercise
that no test calls fails `grader validate`, named in one line; a test without its exercise marker is
named by file:line, not in a collection dump; `grader build` and `grader package` say when
dist/autograder.zip no longer grades with the kit as it is.

The small kit here is a real kit tree: the grader package, a manifest, a reference, both suites.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.grading.grade import grade
from grader.layout import ZIP_KIT
from grader.packaging.package import AUTOGRADER_ZIP
from tests.kit.conftest import KIT, manifest_text

MANIFEST = manifest_text(("multiples", ["double", "triple"], 3))
REFERENCE = '''\
"""A small reference module."""


def double(x):
    """Twice x."""
    return 2 * x


def triple(x):
    """Three times x."""
    return 3 * x
'''
VISIBLE = '''\
import pytest


@pytest.mark.exercise(1)
def test_double_of_two(student):
    """double(2) is 4."""
    assert student.double(2) == 4


@pytest.mark.exercise(1)
def test_double_of_three(student):
    """double(3) is 6."""
    assert student.double(3) == 6
'''
HIDDEN = '''\
import pytest


@pytest.mark.exercise(1)
def test_double_of_minus_one(student):
    """double(-1) is -2."""
    assert student.double(-1) == -2
'''
TRIPLE_TEST = '''

@pytest.mark.exercise(1)
def test_triple_of_two(student):
    """triple(2) is 6."""
    assert student.triple(2) == 6
'''
TRIPLE_NOT_DONE = REFERENCE.replace("    return 3 * x", '    raise NotImplementedError("triple")')


@pytest.fixture
def small_kit(tmp_path: Path) -> Path:
    """A kit tree of one exercise (double and triple) whose tests call only double."""
    kit = tmp_path / "kit"
    shutil.copytree(KIT / "grader", kit / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (kit / "grader" / "exercises.toml").write_text(MANIFEST, encoding="utf-8")
    (kit / "solutions").mkdir()
    (kit / "solutions" / "optimization_toolkit.py").write_text(REFERENCE, encoding="utf-8")
    for suite, text in (("visible", VISIBLE), ("hidden", HIDDEN)):
        (kit / "tests" / suite).mkdir(parents=True)
        (kit / "tests" / suite / "__init__.py").write_text("", encoding="utf-8")
        (kit / "tests" / suite / f"test_multiples_{suite}.py").write_text(text, encoding="utf-8")
    shutil.copy(KIT / "tests" / "conftest.py", kit / "tests" / "conftest.py")
    return kit


def _points(kit: Path, source: str, scratch: Path) -> float:
    module = scratch / "submission" / "optimization_toolkit.py"
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(source, encoding="utf-8")
    return grade(kit, module, scratch / "results.json").document["score"]


def test_validate_fails_on_an_exercise_function_no_test_calls(
    small_kit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: "1 of 1 exercises ok", and a submission whose triple is the stub's kept 3 of 3 points."""
    root = ["--root", str(small_kit)]
    assert main([*root, "build"]) == 0
    assert _points(small_kit, TRIPLE_NOT_DONE, tmp_path / "before") == 3.0  # the hole validate closes
    capsys.readouterr()

    assert main([*root, "validate", "--no-trivial"]) == 1
    out = capsys.readouterr().out
    problems = [line.strip() for line in out.splitlines() if line.startswith("    ")]
    assert problems == [
        "triple is never called by exercise 1's tests, so a stub of it keeps its points: add a test "
        "marked @pytest.mark.exercise(1) that calls student.triple, then run grader build"
    ]
    assert "0 of 1 exercises ok" in out

    hidden = small_kit / "tests" / "hidden" / "test_multiples_hidden.py"
    hidden.write_text(HIDDEN + TRIPLE_TEST, encoding="utf-8")
    assert main([*root, "build"]) == 0
    assert main([*root, "validate", "--no-trivial"]) == 0
    assert "1 of 1 exercises ok" in capsys.readouterr().out
    assert _points(small_kit, TRIPLE_NOT_DONE, tmp_path / "after") < 3.0


def test_a_test_without_its_exercise_marker_is_named_by_file_and_line(
    small_kit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main, `grader build` said: "collecting the suites failed: tests/visible/...::test_double_of_two |
    tests/visible/...::test_double_of_three | ... | 3 tests collected in 0.07s | ERROR: ...": the
    collection's last lines, the test's node id without its line."""
    visible = small_kit / "tests" / "visible" / "test_multiples_visible.py"
    parametrized = textwrap.dedent('''

        @pytest.mark.parametrize("x", [1, 2])
        def test_double_is_even(student, x):
            """double(x) is even."""
            assert student.double(x) % 2 == 0
        ''')
    marked = "@pytest.mark.exercise(1)\ndef test_double_of_three"
    unmarked = VISIBLE.replace(marked, "def test_double_of_three")
    visible.write_text(unmarked + parametrized, encoding="utf-8")
    root = ["--root", str(small_kit)]

    assert main([*root, "build"]) == 2
    expected = (
        "grader: error: tests/visible/test_multiples_visible.py:10: test_double_of_three needs exactly one "
        "@pytest.mark.exercise(N) (and 1 more like it): fix the tests, then run grader build\n"
    )
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", expected)
    assert main([*root, "validate"]) == 2  # validate builds first: the same line
    assert capsys.readouterr().err == expected


def _zip_of(kit: Path, out: Path, edit: tuple[str, bytes] | None = None) -> None:
    """An autograder zip holding the kit's files as they are now (`edit`: one member otherwise)."""
    from grader.packaging.package import kit_paths

    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as zf:
        for path in kit_paths(kit):
            if (kit / path).is_file():
                data = (kit / path).read_bytes()
                if edit is not None and path.as_posix() == edit[0]:
                    data = edit[1]
                zf.writestr(f"{ZIP_KIT}/{path.as_posix()}", data)


def test_build_says_when_the_autograder_zip_is_older_than_the_kit(
    small_kit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main, after a points change `grader build` said only "up to date" (twice)."""
    root = ["--root", str(small_kit)]
    assert main([*root, "build"]) == 0
    _zip_of(small_kit, small_kit / "dist" / AUTOGRADER_ZIP)
    capsys.readouterr()
    assert main([*root, "build"]) == 0
    assert "autograder.zip" not in capsys.readouterr().out  # current: nothing to say

    manifest = small_kit / "grader" / "exercises.toml"
    manifest.write_text(MANIFEST.replace("points = 3", "points = 4"), encoding="utf-8")
    stale = (
        "grader: dist/autograder.zip is older than grader/exercises.toml: run grader package, then upload "
        "it to Gradescope again (the assignment grades with the zip uploaded last)"
    )
    assert main([*root, "build"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == stale
    assert main([*root, "build", "--check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == stale

    hidden = small_kit / "tests" / "hidden" / "test_multiples_hidden.py"
    _zip_of(small_kit, small_kit / "dist" / AUTOGRADER_ZIP)
    hidden.write_text(HIDDEN + TRIPLE_TEST, encoding="utf-8")  # a suite changed
    assert main([*root, "build"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == stale.replace(
        "grader/exercises.toml", "tests/hidden/test_multiples_hidden.py"
    )


def test_package_says_whether_the_zip_must_be_uploaded_again(
    autograder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main, `grader package` said only "wrote ..." whatever had changed."""
    dist = tmp_path / "dist"
    dist.mkdir()
    with zipfile.ZipFile(autograder) as old, zipfile.ZipFile(dist / AUTOGRADER_ZIP, "w") as zf:
        for name in old.namelist():  # the zip of the kit before a points change
            data = old.read(name)
            zf.writestr(name, data + b"\n# points changed\n" if name.endswith("exercises.toml") else data)
    assert main(["--root", str(KIT), "package", "-o", str(dist)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"grader: {dist / AUTOGRADER_ZIP} changed (grader/exercises.toml with it): upload it to "
        "Gradescope again (the assignment grades with the zip uploaded last)"
    )


# -- README's "Adding an exercise", step by step, on a copy of this kit (issue 34) -----------------------


def readme_blocks() -> list[str]:
    """The indented code blocks of README's "Adding an exercise, end to end", in order."""
    text = (KIT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Adding an exercise") : text.index("**When to upload again.**")]
    blocks, current = [], []
    for line in section.splitlines():
        if line.startswith("       ") or (current and not line.strip()):
            current.append(line[7:])
        elif current:
            blocks.append(textwrap.dedent("\n".join(current)).strip() + "\n")
            current = []
    return blocks


def kit_command(root: Path, *args: str, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    code = main(["--root", str(root), *args])
    said = capsys.readouterr()
    return code, said.out + said.err


def grader_process(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m grader --root ROOT ARGS` in a process of its own, in ROOT (its grader package first)."""
    return subprocess.run(
        [sys.executable, "-m", "grader", "--root", str(root), *args],
        cwd=root, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


def test_readmes_new_exercise_builds_validates_packages_and_each_step_names_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """After README's steps 1-3, `grader build` crashed (IndexError in scoring), the example's `part`
    differed from the manifest's and was taken silently, and its test failed the kit's own lint."""
    reference, manifest, promises, test = readme_blocks()
    root = tmp_path / "kit"
    for part in ("grader", "solutions", "student", "tests", "scripts"):
        shutil.copytree(KIT / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "kit"))
    shutil.copy2(KIT / "pyproject.toml", root)
    with open(root / "solutions" / "optimization_toolkit.py", "a", encoding="utf-8") as lab:
        lab.write("\n\n" + reference)
    with open(root / "grader" / "exercises.toml", "a", encoding="utf-8") as exercises:
        exercises.write("\n" + manifest)
    code, said = kit_command(root, "build", capsys=capsys)
    assert code == 2 and said.count("\n") == 1 and "tests/promises/ex21.toml (README" in said, said
    (root / "tests" / "promises" / "ex21.toml").write_text(promises, encoding="utf-8")
    code, said = kit_command(root, "build", capsys=capsys)
    assert code == 2 and said.count("\n") == 1 and "write tests/visible/test_ex21_*.py" in said, said
    assert "step 4" in said
    for suite in ("visible", "hidden"):
        (root / "tests" / suite / "test_ex21_clip.py").write_text(test, encoding="utf-8")
    linted = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--config", str(KIT / "pyproject.toml"), "tests/visible"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert linted.returncode == 0, linted.stdout
    assert kit_command(root, "build", capsys=capsys)[0] == 0
    # as the instructor runs them: a process of its own (validate grades in-process with pytest, which
    # inside this test session would meet the session's own imports)
    validated = grader_process(root, "validate", "--exercise", "21")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "21 reward clipping" in validated.stdout and "1 of 1 exercises ok" in validated.stdout
    packaged = grader_process(root, "package", "-o", str(tmp_path / "dist"))  # step 7
    assert packaged.returncode == 0, packaged.stdout + packaged.stderr
    with zipfile.ZipFile(tmp_path / "dist" / "student-handout.zip") as handout:
        assert any(name.endswith("tests/visible/test_ex21_clip.py") for name in handout.namelist())
        stub = next(name for name in handout.namelist() if name.endswith("/optimization_toolkit.py"))
        assert "def clip_reward(r, lo=-1.0, hi=1.0):" in handout.read(stub).decode()


def test_a_part_spelt_anew_under_an_existing_number_is_one_line(tmp_path: Path) -> None:
    manifest = (
        MANIFEST + '\n[[exercise]]\nid = 2\ntitle = "t"\npart = "1. integers"\nfunctions = ["triple"]\n'
    )
    manifest = manifest.replace('functions = ["double", "triple"]', 'functions = ["double"]')
    root = tmp_path / "kit"
    shutil.copytree(KIT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "solutions").mkdir()
    (root / "solutions" / "optimization_toolkit.py").write_text(REFERENCE, encoding="utf-8")
    (root / "grader" / "exercises.toml").write_text(manifest + "points = 1\n", encoding="utf-8")
    with contextlib.redirect_stderr(io.StringIO()) as said:
        code = main(["--root", str(root), "build"])
    assert code == 2
    assert said.getvalue() == (
        "grader: error: grader/exercises.toml:16: [[exercise]] entry 2: part '1. integers' has the number "
        "of exercise 1's part '1. numbers': write that part the same way, or give a new part a number of "
        "its own\n"
    )
