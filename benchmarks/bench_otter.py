"""Benchmark of the Otter packaging: the zips' sizes, and `otter run -a dist/autograder.zip` against
`grader grade` on the same submissions (wall time, and the ratio). Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_otter.py [--repeat 2]

Each submission is graded --repeat times by each command, alternating; the best time of each counts
(the least disturbed by the rest of the machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.packaging.handout import HANDOUT_ZIP, write_handout  # noqa: E402
from grader.packaging.package import write_autograder  # noqa: E402

SUBMISSIONS = {
    "reference": KIT / "solutions" / "optimization_toolkit.py",
    "partial": KIT / "examples" / "submissions" / "ben_partial.py",
    "stubs": KIT / "student" / "optimization_toolkit.py",
}


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{command[2]} failed: {(run.stdout + run.stderr)[-1000:]}")
    return time.perf_counter() - started


def sizes(path: Path) -> str:
    with zipfile.ZipFile(path) as zf:
        unpacked = sum(info.file_size for info in zf.infolist())
        count = len(zf.infolist())
    return f"{path.stat().st_size / 1024:6.0f} KiB ({count} files, {unpacked / 1024:.0f} KiB unpacked)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="optlab-bench-otter-") as scratch:
        tmp = Path(scratch)
        started = time.perf_counter()
        autograder = write_autograder(KIT, tmp / "dist")
        print(f"grader package (autograder.zip): {time.perf_counter() - started:.1f} s")
        print(f"autograder.zip:      {sizes(autograder)}")
        print(f"student-handout.zip: {sizes(write_handout(KIT, tmp / 'dist' / HANDOUT_ZIP))}\n")
        python = sys.executable
        print(f"{'submission':10} {'otter run':>10} {'grader grade':>13} {'ratio':>6}")
        for name, submission in SUBMISSIONS.items():
            otter, grader = [], []
            for i in range(args.repeat):
                out = tmp / f"{name}-{i}"
                out.mkdir()
                otter.append(timed([python, "-m", "otter", "run", "-a", str(autograder), "-o", str(out),
                                    str(submission)], out))  # fmt: skip
                grader.append(timed([python, "-m", "grader", "--root", str(KIT), "grade", str(submission),
                                     "-o", str(out / "grade.json")], KIT))  # fmt: skip
            print(f"{name:10} {min(otter):9.1f}s {min(grader):12.1f}s {min(otter) / min(grader):6.2f}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
