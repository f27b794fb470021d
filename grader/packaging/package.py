"""Packaging: `dist/autograder.zip` for Gradescope, `otter run` and `otter grade`, made with `otter generate`.

The zip is Otter's own (run_autograder, setup.sh, environment.yml, otter_config.json, run_otter.py) with
the kit's grading path in `files/optlab/`: the grader modules that grade, the manifest, the suites, their
promises and inventory, and the reference. `files/` because it is the one folder of the zip that Otter's
`otter grade` image copies besides its own files. Edits to Otter's files make it work everywhere:
- run_otter.py is the kit's: it puts `files/optlab` on sys.path, so Otter can import the plugin
  (grader.otter_plugin.KitGrading), takes the submission out of Otter's sight before Otter starts
  (grader.grading.otter_submission), and gives Otter a readable submission_metadata.json (otter grade's image
  holds an empty one, which Otter 7 cannot parse when a plugin is configured);
- `files/optlab-placeholder.ipynb` is what Otter resolves as the submission (Otter copies files/* into
  its submission folder and prefers a lone notebook): Otter opens no submitted file;
- setup.sh makes the grading environment from PyPI alone where the base has a released Python 3.11 to
  3.13 (scripts/python.sh, inlined: on PATH, or from the base's apt as on Debian 12): a virtual
  environment at OTTER_VENV with requirements.txt (environment.yml's pip packages); else, as on
  Gradescope's Ubuntu 22.04 (whose python3.11 is 3.11.0rc1), Otter's own Miniforge and conda-forge
  steps. run_autograder grades in whichever is there; both say which in one line of their log;
- setup.sh creates the unprivileged user that submissions run as (scripts/setup-worker.sh, inlined: otter
  grade runs setup.sh before anything else of the zip is in place, requirements.txt aside);
- setup.sh no longer installs Playwright's Chromium, TeX Live or pandoc, which only Otter's PDF export
  uses (off here): Chromium is a known cause of failed image builds, and TeX Live took 7 minutes of
  every `otter grade` image build (Otter's test of the config passes on a missing file with jq 1.6).
The environment installs only the suites' pinned libraries besides Otter. Before packaging, the kit must be
consistent: the student mirror current, the suites those of the inventory, every exercise of the manifest
tested by both suites, and the pinned Otter installed.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from grader.assignment.inventory import INVENTORY, load_inventory
from grader.assignment.promises import promise_files
from grader.errors import KitError
from grader.grading.grade import kit_manifest
from grader.layout import GRADING_MODULES, MANIFEST, REFERENCE, SUITES, ZIP_KIT, shipped_modules

OTTER_VERSION = "7.0.0"  # as pinned in pyproject.toml's `otter` extra
PYTHON_VERSION = "3.13"  # Otter's grading environment
AUTOGRADER_ZIP = "autograder.zip"
DIST = Path("dist")  # where `grader package` writes by default
ENV_NAME = "otter-env"  # the conda environment of Otter's setup.sh
OTTER_VENV = "/opt/otter-env"  # the zip's virtual environment, where the base has a released Python
REQUIREMENTS = "requirements.txt"  # its packages: environment.yml's pip section (otter grade copies it)
ENVIRONMENT_LINE = "optlab-kit: grading environment:"  # how setup.sh and run_autograder name their choice
GRADING_REQUIREMENTS = ("pytest", "pytest-json-report", "hypothesis")  # pinned in pyproject.toml
PLAYWRIGHT_STEP = f'mamba run -n {ENV_NAME} bash -c "playwright install-deps && playwright install chromium"'
# Otter's setup.sh installs TeX Live and pandoc when `jq -e '[.pdf, .token] | any'` holds; with jq 1.6
# that holds on a missing config too (otter grade adds otter_config.json after setup.sh): 7 minutes of it
PDF_BLOCK = re.compile(r"^# install PDF generation dependencies if enabled\n^if .*?^fi\n", re.M | re.S)
RUN_OTTER = '''"""Runs Otter-Grader's autograding process with optlab-kit's grader (files/optlab of this zip).

Before Otter starts, the submission is taken out of its sight (grader.grading.otter_submission): the lab
module alone is kept, where only root reads it, for the kit's grader; Otter finds its submission folder empty
of submitted files and grades the kit's placeholder notebook with the kit's plugin, which starts no
kernel. Otter unpacks no zip (the kit has read the one it would have unpacked) and gets a readable
submission_metadata.json (otter grade's image holds an empty one). Once Otter is done, each name the
submission folder had is there again, as an empty file, for otter grade to copy back.
"""

import os
import sys
from pathlib import Path

AUTOGRADER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # Gradescope's /autograder
sys.path.insert(0, os.path.join(AUTOGRADER_DIR, "source", "files", "optlab"))

from grader.grading.otter_submission import (  # noqa: E402
    leave_names,
    prepare_autograder_dir,
    submitted_names,
    take_submission,
)

if __name__ == "__main__":
    prepare_autograder_dir(AUTOGRADER_DIR)
    submitted = submitted_names(Path(AUTOGRADER_DIR))
    take_submission(Path(AUTOGRADER_DIR))
    from otter.run.run_autograder import main as run_autograder

    try:
        run_autograder(AUTOGRADER_DIR, zips=False)
    finally:  # otter grade copies the submission's file back out of the container: an empty one
        leave_names(Path(AUTOGRADER_DIR), submitted)
'''
# What Otter resolves as the submission (it prefers a lone notebook, and copies files/* into its
# submission folder before looking): the kit's own, so that Otter never opens a submitted file, and
# several submitted .py files do not make it refuse under `otter run`.
PLACEHOLDER_NOTEBOOK = "files/optlab-placeholder.ipynb"
FIXED_TIME = (2026, 1, 1, 0, 0, 0)  # every member's date


class PackageError(KitError):
    """The kit cannot be packaged as it is; the message says what to run."""


def write_autograder(root: Path, dist: Path) -> Path:
    """Check the kit, then write `dist/autograder.zip`; returns its path."""
    if not dist.parent.is_dir():
        raise PackageError(f"{dist.parent}: no such folder (-o names the folder to write, default dist)")
    check_packable(root)
    dist.mkdir(exist_ok=True)
    out = dist / AUTOGRADER_ZIP
    with tempfile.TemporaryDirectory(prefix="optlab-package-") as scratch:
        staging = Path(scratch)
        _stage_otter_inputs(root, staging)
        generated = staging / "otter-autograder.zip"
        _otter_generate(staging, generated)
        with zipfile.ZipFile(generated) as otter, zipfile.ZipFile(out, "w") as zf:
            for name in sorted(otter.namelist()):
                if not name.startswith("tests/"):
                    add_member(zf, name, _edited(root, name, otter.read(name)))
            add_member(zf, REQUIREMENTS, venv_requirements(otter.read("environment.yml")).encode())
            add_member(zf, "tests/", b"")  # Otter's test folder: empty, the plugin grades
            add_member(zf, PLACEHOLDER_NOTEBOOK, placeholder_notebook())
            for path in kit_files(root):
                add_member(zf, f"{ZIP_KIT}/{path.as_posix()}", (root / path).read_bytes())
    return out


def check_packable(root: Path) -> None:
    """Refuse, naming the problem and its fix, a kit that would package something it does not test."""
    installed = _installed_otter()
    if installed != OTTER_VERSION:
        found = f"otter-grader {installed} is installed" if installed else "otter-grader is not installed"
        raise PackageError(f"{found}, the kit is pinned to {OTTER_VERSION}: run pip install -e '.[otter]'")
    from grader.authoring.build import stale_problem

    if problem := stale_problem(root):
        raise PackageError(problem)
    manifest = kit_manifest(root)
    inventory = load_inventory(root)
    tested = {(test["exercise"], test["suite"]) for test in inventory["tests"]}
    for exercise in manifest.exercises:
        for suite in SUITES:
            if (exercise.id, suite) not in tested:
                raise PackageError(
                    f"exercise {exercise.label} has no {suite} tests in {INVENTORY}: "
                    "add them (with @pytest.mark.exercise) and run grader build"
                )
    unknown = {test["exercise"] for test in inventory["tests"]} - {e.id for e in manifest.exercises}
    if unknown:
        raise PackageError(
            f"{INVENTORY} has tests for exercise {min(unknown)}, which {MANIFEST} does not have: "
            "fix the marker or the manifest, then run grader build"
        )


def kit_files(root: Path) -> list[Path]:
    """The kit files the grading reads, relative to `root`."""
    files = kit_paths(root)
    missing = [p for p in files if not (root / p).is_file()]
    if missing:
        raise PackageError(f"{missing[0].as_posix()} is missing from the kit")
    return files


def kit_paths(root: Path) -> list[Path]:
    files = [MANIFEST, REFERENCE, Path("tests/conftest.py"), INVENTORY]
    files += [Path("grader") / f"{name}.py" for name in shipped_modules(GRADING_MODULES, root / "grader")]
    for suite in SUITES:
        files += sorted(p.relative_to(root) for p in (root / "tests" / suite).glob("*.py"))
    # Grading reads the promises from the inventory alone; their files come along so that the zip's kit
    # is the one the inventory describes (grading refuses a kit whose files differ from it).
    return files + [p.relative_to(root) for p in promise_files(root)]


def autograder_behind(root: Path, zip_path: Path) -> Path | None:
    """The first kit file (the manifest, the reference, a suite, the inventory, a grading module) that
    the autograder zip at `zip_path` holds otherwise than the kit at `root` does, or lacks, or holds
    though the kit no longer has it; None when the zip grades with the kit as it is (or is not there)."""
    try:
        with zipfile.ZipFile(zip_path) as zf:
            packed = {
                name.removeprefix(f"{ZIP_KIT}/"): zf.read(name)
                for name in zf.namelist()
                if name.startswith(f"{ZIP_KIT}/") and not name.endswith("/")
            }
    except FileNotFoundError:
        return None
    except (OSError, zipfile.BadZipFile):
        return Path(zip_path.name)  # unreadable: nothing says it is current
    on_disk = {p.as_posix(): p for p in kit_paths(root) if (root / p).is_file()}
    for name in sorted(set(packed) | set(on_disk), key=lambda n: (n not in _FIRST_NAMED, n)):
        if name not in on_disk or name not in packed or (root / on_disk[name]).read_bytes() != packed[name]:
            return Path(name)
    return None


_FIRST_NAMED = {MANIFEST.as_posix(), REFERENCE.as_posix()}  # what an instructor edits most, named first


def stale_autograder_note(root: Path, zip_path: Path | None = None) -> str | None:
    """The line `grader build` prints when dist/autograder.zip no longer grades with the kit as it is."""
    zip_path = zip_path or root / DIST / AUTOGRADER_ZIP
    behind = autograder_behind(root, zip_path)
    if behind is None:
        return None
    shown = zip_path.relative_to(root) if zip_path.is_relative_to(root) else zip_path
    return (
        f"{shown.as_posix()} is older than {behind.as_posix()}: run grader package, then upload it "
        "to Gradescope again (the assignment grades with the zip uploaded last)"
    )


def placeholder_notebook() -> bytes:
    """The notebook Otter takes for the submission: one markdown cell that says what grades instead."""
    text = "optlab-kit: the submission is graded by the kit's grader, not in this notebook.\n"
    cell = {"cell_type": "markdown", "id": "optlab", "metadata": {}, "source": text}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(notebook, indent=1, sort_keys=True) + "\n").encode()


def otter_config(root: Path) -> dict:
    """otter_config.json: the plugin grades, and the page students see is `grader grade`'s results.json
    (the plugin's). Otter prints no summary (its "No log found ..." line), and shows no stdout."""
    hidden = all(e.hidden_visibility == "hidden" for e in kit_manifest(root).exercises)
    return {
        "lang": "python",
        "plugins": ["grader.otter_plugin.KitGrading"],
        "show_hidden": not hidden,
        "show_stdout": False,
        "print_summary": False,
    }


def pinned_requirements(root: Path) -> dict[str, str]:
    """name -> "name==version" of the kit's pinned dependencies (pyproject.toml's [project])."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {line.split("==")[0].strip(): line.replace(" ", "") for line in project["dependencies"]}


def _stage_otter_inputs(root: Path, staging: Path) -> None:
    (staging / "tests").mkdir()
    (staging / "otter_config.json").write_text(json.dumps(otter_config(root), indent=2) + "\n")
    pins = pinned_requirements(root)
    (staging / "requirements.txt").write_text("".join(f"{pins[n]}\n" for n in GRADING_REQUIREMENTS))


def _otter_generate(staging: Path, out: Path) -> None:
    command = [sys.executable, "-m", "otter", "generate", "-t", "tests", "-o", str(out)]
    command += ["-c", "otter_config.json", "-r", "requirements.txt", "--no-environment"]
    command += ["--python-version", PYTHON_VERSION]
    run = subprocess.run(command, cwd=staging, capture_output=True, text=True)
    if run.returncode != 0:
        why = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
        raise PackageError(f"otter generate failed: {why[0]}")


def venv_requirements(environment_yml: bytes) -> str:
    """requirements.txt of the zip's virtual environment: the pip packages of Otter's environment.yml
    (Otter, the grading extras, the suites' pins); its conda packages (Python, pip, jupyter_server for
    Otter's notebook kernels) are the base's Python and what the plugin never starts."""
    import yaml  # type: ignore[import-untyped]  # Otter's dependency, as is the environment.yml it reads

    spec = yaml.safe_load(environment_yml)
    pips = [d["pip"] for d in spec["dependencies"] if isinstance(d, dict) and "pip" in d]
    if len(pips) != 1 or not pips[0]:
        raise PackageError(f"Otter's environment.yml has no pip section: is otter {OTTER_VERSION} installed?")
    return "".join(f"{line}\n" for line in pips[0])


def _edited(root: Path, name: str, data: bytes) -> bytes:
    """Otter's file `name`, with the kit's edits (see the module docstring)."""
    if name == "run_otter.py":
        if b"run_autograder" not in data:
            raise PackageError(f"Otter's run_otter.py is not {OTTER_VERSION}'s: is that Otter installed?")
        return RUN_OTTER.encode()
    if name == "setup.sh":
        text = data.decode()
        if PLAYWRIGHT_STEP not in text:
            raise PackageError(
                f"Otter's setup.sh has no {PLAYWRIGHT_STEP!r}: is otter {OTTER_VERSION} installed?"
            )
        text = text.replace(
            PLAYWRIGHT_STEP, "# optlab-kit: no Playwright (Otter's PDF export only; off here)"
        )
        text, blocks = PDF_BLOCK.subn(
            "# optlab-kit: no TeX Live or pandoc (Otter's PDF export; off here)\n", text
        )
        if blocks != 1:
            raise PackageError(f"Otter's setup.sh has no PDF block: is otter {OTTER_VERSION} installed?")
        head, sep, otters = text.partition("set -e\n")
        if not sep:
            raise PackageError(f"Otter's setup.sh has no 'set -e': is otter {OTTER_VERSION} installed?")
        return (
            head
            + sep
            + "\n"
            + _venv_steps(root)
            + otters.lstrip("\n").rstrip("\n")
            + "\n"
            + f"mamba run -n {ENV_NAME} bash /tmp/optlab-setup-worker.sh python\n"
        ).encode()
    if name == "run_autograder":
        head, sep, otters = data.decode().partition("\n")
        if f"mamba activate {ENV_NAME}" not in otters or "run_otter.py" not in otters:
            raise PackageError(f"Otter's run_autograder is not {OTTER_VERSION}'s: is that Otter installed?")
        return (head + sep + _venv_run() + otters).encode()
    return data


def _inlined(root: Path, script: str, marker: str) -> str:
    """A heredoc that writes the kit's scripts/`script` to /tmp (setup.sh runs before the zip is there)."""
    text = (root / "scripts" / script).read_text(encoding="utf-8").rstrip()
    return f"cat > /tmp/optlab-{script} <<'{marker}'\n{text}\n{marker}\n"


def _venv_steps(root: Path) -> str:
    """setup.sh's first steps: the kit's two scripts inlined, then the virtual environment from PyPI
    where a released Python 3.11 to 3.13 is found (it ends setup.sh); else on to Otter's Miniforge."""
    version = "$(\"$python\" -c 'import platform; print(platform.python_version())')"
    return (
        "# optlab-kit: a released Python 3.11 to 3.13 (the kit's scripts/python.sh), the unprivileged user\n"
        "# that submissions run as (its scripts/setup-worker.sh)\n"
        + _inlined(root, "python.sh", "OPTLAB_PYTHON")
        + _inlined(root, "setup-worker.sh", "OPTLAB_SETUP_WORKER")
        + "# optlab-kit: with a released Python here (or from apt: Debian 12's 3.11.2), a virtual\n"
        "# environment of PyPI's packages; else (Gradescope's Ubuntu 22.04: its python3.11 is 3.11.0rc1)\n"
        "# Otter's Miniforge below\n"
        f"venv={OTTER_VENV}\n"
        "if python=$(bash /tmp/optlab-python.sh); then\n"
        f'  echo "{ENVIRONMENT_LINE} $venv, Python {version} ($python), packages from PyPI"\n'
        "  if ! \"$python\" -c 'import ensurepip, venv' 2>/dev/null && command -v apt-get >/dev/null; then\n"
        "    export DEBIAN_FRONTEND=noninteractive\n"
        "    apt-get update -qq\n"
        '    apt-get install -y -qq --no-install-recommends "$(basename "$python")-venv"\n'
        "  fi\n"
        '  "$python" -m venv "$venv"\n'
        '  "$venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check \\\n'
        f'    -r "$(dirname "${{BASH_SOURCE[0]}}")/{REQUIREMENTS}"\n'
        '  bash /tmp/optlab-setup-worker.sh "$venv/bin/python"\n'
        "  exit 0\n"
        "fi\n"
        f'echo "{ENVIRONMENT_LINE} Otter\'s conda environment {ENV_NAME} (Miniforge, conda-forge)"\n\n'
    )


def _venv_run() -> str:
    """run_autograder's first lines: grade in the zip's virtual environment where setup.sh made one."""
    version = f"$({OTTER_VENV}/bin/python -c 'import platform; print(platform.python_version())')"
    return (
        f"if [ -x {OTTER_VENV}/bin/python ]; then\n"
        f'  echo "{ENVIRONMENT_LINE} {OTTER_VENV}, Python {version}, packages from PyPI"\n'
        f"  PATH={OTTER_VENV}/bin:$PATH exec python /autograder/source/run_otter.py\n"
        "fi\n"
        f'echo "{ENVIRONMENT_LINE} Otter\'s conda environment {ENV_NAME} (Miniforge)"\n'
    )


def add_member(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    """Add `name` to `zf`, compressed, with a fixed date (the same kit gives the same zip)."""
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    executable = name in ("run_autograder", "setup.sh") or name.endswith("/")
    info.external_attr = ((0o40755 if name.endswith("/") else 0o100755) if executable else 0o100644) << 16
    zf.writestr(info, data)


def _installed_otter() -> str | None:
    try:
        return importlib.metadata.version("otter-grader")
    except importlib.metadata.PackageNotFoundError:
        return None
