"""What the Otter rehearsals compare with: `grader grade`'s score per exercise, named as Otter names its
test files ("12 group advantages"), and how closely Otter's scores must match them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parents[2]
OTTER_ROUNDING = 1e-5  # Otter writes scores rounded to 5 decimals


def grader_scores(submission: Path, out: Path) -> dict[str, float]:
    """`grader grade` of `submission` in a child process (results.json to `out`): score per exercise."""
    run = subprocess.run(
        [sys.executable, "-m", "grader", "--root", str(KIT), "grade", str(submission), "-o", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    exercises = json.loads(out.read_text())["extra_data"]["exercises"]
    return {f"{e['id']} {e['title']}": e["score"] for e in exercises}
