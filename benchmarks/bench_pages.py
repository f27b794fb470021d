"""The two pages side by side: what Gradescope shows from the uploaded autograder zip (`otter run`) and
what `grader grade` previews, for the rehearsal's four submissions (reference, stubs, partial, hostile).
Prints, per submission, every entry with its maximum and both scores, the totals, and the differences
(execution time aside) that the CI rehearsal (tests/kit/test_kit_otter.py) asserts are none.

    .venv/bin/python benchmarks/bench_pages.py [--only reference stubs ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(KIT), str(KIT / "tests" / "kit")]

from otter_comparison import SUBMISSIONS, grader_document, page_differences, rehearsed  # noqa: E402
from test_kit_otter import otter_page  # noqa: E402

from grader.assignment.scoring import points_text  # noqa: E402
from grader.packaging.package import write_autograder  # noqa: E402


def show(which: str, shown: dict, previewed: dict) -> None:
    totals = f"Gradescope {points_text(shown['score'])}, grader grade {points_text(previewed['score'])}"
    print(f"\n## {which}: {totals}")
    print(f"{'entry':44} {'max':>6} {'gradescope':>10} {'grade':>6}  visibility")
    by_name = {t["name"]: t for t in previewed["tests"]}
    for test in shown["tests"]:
        other = by_name.get(test["name"], {})
        print(
            f"{test['name'][:44]:44} {points_text(test['max_score']):>6} {points_text(test['score']):>10} "
            f"{points_text(other.get('score', float('nan'))):>6}  {test.get('visibility', '')}"
        )
    differences = page_differences(shown, previewed)
    print(f"{len(shown['tests'])} entries; differences: {len(differences)}")
    for line in differences:
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=SUBMISSIONS, default=list(SUBMISSIONS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="optlab-pages-") as scratch:
        autograder = write_autograder(KIT, Path(scratch) / "dist")
        for which in args.only:
            work = Path(scratch) / which
            work.mkdir()
            submission, _ = rehearsed(which, work)
            shown = otter_page(autograder, submission, work / "otter")
            previewed = grader_document(submission, work / "grade.json")
            show(which, shown, previewed)


if __name__ == "__main__":
    main()
