"""What the Otter rehearsals compare with: `grader grade`'s results.json of the same submission, which
the uploaded autograder zip must give entry by entry (execution time aside); and its score per exercise,
named as Otter names its test files ("12 group advantages"), for otter grade's CSV."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.kit.conftest import KIT

OTTER_ROUNDING = 1e-5  # Otter writes scores rounded to 5 decimals
OTTER_WORDS = ("Public Tests", "No log found", "Otter", "IPKernelApp", "Kernel is running")


def grader_document(submission: Path, out: Path, name: str | None = None, python: Path | None = None) -> dict:
    """`grader grade` of `submission` in a child process (results.json to `out`); with `name`, of a
    copy under that name (as Gradescope renames a submission); with `python`, under that interpreter
    (the autograder's environment: floats print as its Python's do)."""
    if name is not None:
        copy = out.parent / "as-submitted" / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(submission, copy)
        submission = copy
    command = [str(python or sys.executable), "-m", "grader", "--root", str(KIT), "grade", str(submission)]
    run = subprocess.run(
        [*command, "-o", str(out)], capture_output=True, text=True, cwd=KIT,
        env={**os.environ, "PYTHONPATH": str(KIT)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text())


def grader_scores(submission: Path, out: Path) -> dict[str, float]:
    """`grader grade` of `submission`: score per exercise."""
    return exercise_scores(grader_document(submission, out))


def exercise_scores(document: dict) -> dict[str, float]:
    return {f"{e['id']} {e['title']}": e["score"] for e in document["extra_data"]["exercises"]}


def page_differences(shown: dict, previewed: dict) -> list[str]:
    """Where the page students are shown differs from `grader grade`'s, entry by entry and key by key,
    execution time aside; and any word of Otter's in what a student sees."""
    out = []
    keys = (set(shown) | set(previewed)) - {"execution_time", "tests"}
    out += [f"top level {k}: {shown.get(k)!r} != {previewed.get(k)!r}" for k in sorted(keys)
            if shown.get(k) != previewed.get(k)]  # fmt: skip
    tests, expected = shown.get("tests", []), previewed.get("tests", [])
    if [t.get("name") for t in tests] != [t.get("name") for t in expected]:
        out.append(f"entries {[t.get('name') for t in tests]} != {[t.get('name') for t in expected]}")
    for test, want in zip(tests, expected, strict=False):
        for key in sorted(set(test) | set(want)):
            if test.get(key) != want.get(key):
                out.append(f"{test.get('name')}: {key}: {test.get(key)!r} != {want.get(key)!r}")
    seen = [shown.get("output", ""), *(t.get(k, "") for t in tests for k in ("output", "name"))]
    out += [f"Otter's {word!r} shown to students" for word in OTTER_WORDS if any(word in s for s in seen)]
    return out


SUBMISSIONS = ("reference", "stubs", "partial", "hostile")


def rehearsed(which: str, tmp_path: Path) -> tuple[Path, Path | None]:
    """One of SUBMISSIONS, and for the hostile one the file it leaves if Otter's kernel runs it."""
    if which != "hostile":
        return {
            "reference": KIT / "solutions/optimization_toolkit.py",
            "stubs": KIT / "student/optimization_toolkit.py",
            "partial": KIT / "examples/submissions/ben_partial.py",
        }[which], None
    return hostile(tmp_path)


def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A submission that, if run by Otter's kernel (root, no audit hook), leaves a file, then exits."""
    marker = tmp_path / "otter-ran-the-submission"
    source = f"import os\nopen({str(marker)!r}, 'w').write('ran')\nos._exit(0)\n"
    path = tmp_path / "hostile" / "optimization_toolkit.py"
    path.parent.mkdir()
    path.write_text(source + (KIT / "solutions/optimization_toolkit.py").read_text())
    return path, marker


GRADESCOPE_METADATA = {"id": 1, "users": [{"email": "ada@example.edu", "id": 1, "name": "Ada", "sid": "A1"}]}


def gradescope_layout(autograder: Path, submission: Path, root: Path, zips: bool = False) -> Path:
    """Lay `root` out as Gradescope does for the folder `submission` (copied as it is, symlinks kept): the
    zip unpacked into `root`/source, the submission, results/ and the metadata; with `zips`, Otter's
    config says so, as `otter grade --ext zip` writes it into its image. The run_otter.py to run."""
    with zipfile.ZipFile(autograder) as zf:
        zf.extractall(root / "source")
    shutil.copytree(submission, root / "submission", symlinks=True)
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps(GRADESCOPE_METADATA))
    config = root / "source" / "otter_config.json"
    if zips:
        config.write_text(json.dumps({**json.loads(config.read_text()), "zips": True}))
    run_otter = root / "source" / "run_otter.py"
    run_otter.write_text(run_otter.read_text().replace('"/autograder"', repr(str(root))))  # an older zip's
    return run_otter


def gradescope_page(autograder: Path, submission: Path, root: Path, zips: bool = False) -> dict:
    """Gradescope's results.json for the folder `submission` (`gradescope_layout`): run_otter.py run as
    run_autograder runs it, as root, with this interpreter (which has the pinned Otter)."""
    run_otter = gradescope_layout(autograder, submission, root, zips)
    run = subprocess.run([sys.executable, str(run_otter)], cwd=root, capture_output=True, text=True)
    results = root / "results" / "results.json"
    assert results.is_file(), run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(results.read_text())
