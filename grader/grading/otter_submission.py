"""What Otter is shown of a submission: nothing. Before Otter looks at its submission folder, everything
in it is moved to a folder beside it that only root can read, the lab module is chosen there by intake's
rule (the one `grader grade` uses) and kept alone, and the rest is deleted unread. Otter then finds in its
submission folder only what it put there itself (the kit's placeholder notebook, its tests folder): no
log to load, no package or module its kernel or the grader could import, no notebook to prefer.

Gradescope and `otter grade` run the zip's run_otter.py, which takes the submission before Otter starts.
`otter run` starts Otter in its own process, so there the plugin's before_grading takes it: after Otter
has listed the folder's names (and refused a folder it cannot resolve), before it loads a log or starts
a kernel. Taking is done once; the second call (the plugin's, on Gradescope) finds it done.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from grader.grading.intake import IntakeError, chosen_module
from grader.layout import MODULE
from grader.sandbox.isolation import remove_tree

KEPT = "optlab-submission"  # <autograder>/optlab-submission: what the kit's grader grades, root only
OTTER_CONFIG = Path("source") / "otter_config.json"


def take_submission(autograder_dir: Path) -> Path:
    """Empty Otter's submission folder under `autograder_dir`, keeping the lab module alone beside it;
    the path to hand `grader grade`: a folder holding the module at the path it had in the submission
    (so intake's notes read as for the submission itself), or, when no module can be chosen or read,
    what was received, which `grader grade` refuses with the same message, reading nothing."""
    kept = autograder_dir / KEPT
    received, module = kept / "received", kept / "module"
    if not kept.is_dir():
        kept.mkdir(mode=0o700)
        os.chmod(kept, 0o700)  # whatever the umask
        received.mkdir()
        folder = autograder_dir / "submission"
        for name in sorted(os.listdir(folder)):
            _move(folder / name, received / name)
        _keep_module(_as_received(autograder_dir, received), module)
        if module.is_dir():
            remove_tree(received)  # however deep (a .git intake never walks may be 1,500 folders deep)
    return module if module.is_dir() else _as_received(autograder_dir, received)


def _keep_module(received: Path, module: Path) -> None:
    """Write the module that intake chooses in `received` to `module`/its path; nothing when none."""
    try:
        found_as, data = chosen_module(received, MODULE)
        target = module / found_as
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except (IntakeError, OSError):
        shutil.rmtree(module, ignore_errors=True)


def _as_received(autograder_dir: Path, received: Path) -> Path:
    """The submission as Otter would have graded it: with Otter's `zips` on (`otter grade --ext zip`),
    the one zip Otter would have unpacked (intake reads it in memory); else the folder."""
    zips = [p for p in received.iterdir() if p.name.endswith(".zip") and p.is_file() and not p.is_symlink()]
    if len(zips) == 1 and _zips_on(autograder_dir):
        return zips[0]
    return received


def _zips_on(autograder_dir: Path) -> bool:
    try:
        config = json.loads((autograder_dir / OTTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("zips") is True


def _move(source: Path, target: Path) -> None:
    """Move without reading: a rename; across file systems, shutil's copy (links stay links)."""
    try:
        os.rename(source, target)
    except OSError:
        shutil.move(source, target)


def submitted_names(autograder_dir: Path) -> list[str]:
    """The files (not folders or links) in Otter's submission folder before the submission is taken
    (`leave_names`): otter grade puts one file there."""
    folder = autograder_dir / "submission"
    return sorted(n for n in os.listdir(folder) if (folder / n).is_file() and not (folder / n).is_symlink())


def leave_names(autograder_dir: Path, names: list[str]) -> None:
    """Once Otter is done: an empty file under each of `names` gone from Otter's submission folder.
    `otter grade` copies the file it put there back out of its container (`docker cp`) and counts the
    grading as failed where it is gone; what was submitted stays out of its reach."""
    folder = autograder_dir / "submission"
    for name in names:
        if not os.path.lexists(folder / name):
            (folder / name).touch()


def prepare_autograder_dir(autograder_dir: str) -> None:
    """Run by the zip's run_otter.py before Otter starts: Otter 7 reads submission_metadata.json as
    JSON when a plugin is configured, and `otter grade`'s image holds an empty one."""
    metadata = Path(autograder_dir) / "submission_metadata.json"
    if not metadata.is_file() or not metadata.read_text(encoding="utf-8").strip():
        metadata.write_text("{}\n", encoding="utf-8")
