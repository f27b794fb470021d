"""The student's page as a golden: examples/submissions/ben_partial.py graded, its entries as its student
sees them once grades are published (the total, the top-level output, then each entry's name, points,
status, when it is seen and its output), committed in tests/kit/golden/ben_partial.md.

A change of wording, of points or of what an entry says shows here as a diff to review, not as a surprise
on a student's page. After a deliberate change: `pytest tests/kit/test_kit_golden.py --update-goldens`,
then read the golden's diff and commit it with the change. The golden holds no time, path or uid.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.assignment.scoring import points_text
from grader.batch.student_page import SEEN
from grader.grading.grade import grade
from tests.kit.conftest import KIT

BEN = KIT / "examples" / "submissions" / "ben_partial.py"
GOLDEN = Path(__file__).parent / "golden" / "ben_partial.md"
NOT_DETERMINISTIC = re.compile(r"/tmp/|/work/|/root/|/home/|optlab-sandbox|\buid \d|\d+(\.\d+)? ?(ms|s)\b")


def student_view(document: dict) -> str:
    """What the student sees of a results.json `document` once grades are published, as text."""
    possible = document["extra_data"]["points_possible"]
    lines = [f"Total: {points_text(document['score'])} / {points_text(possible)}", "", document["output"], ""]
    for entry in document["tests"]:
        if entry.get("visibility") == "hidden":
            continue  # never seen by the student
        points = f"{points_text(entry['score'])} / {points_text(entry['max_score'])}"
        seen = SEEN[entry.get("visibility", "visible")]
        lines += [f"## {entry['number']} {entry['name']}: {points} ({entry['status']}; {seen})", ""]
        lines += [entry.get("output", ""), ""]
    return "\n".join(line.rstrip() for line in "\n".join(lines).splitlines()).rstrip() + "\n"


@pytest.fixture(scope="module")
def ben_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    results = tmp_path_factory.mktemp("ben") / "results.json"
    grade(KIT, BEN, results)
    return student_view(json.loads(results.read_text(encoding="utf-8")))


def test_the_student_page_of_a_partial_submission_is_the_golden(
    ben_page: str, request: pytest.FixtureRequest
):
    if request.config.getoption("update_goldens", default=False):
        GOLDEN.write_text(ben_page, encoding="utf-8")
    assert ben_page == GOLDEN.read_text(encoding="utf-8"), (
        "the student's page changed: review it, then rewrite the golden with --update-goldens"
    )


def test_the_golden_holds_no_time_path_or_uid(ben_page: str):
    assert not NOT_DETERMINISTIC.search(ben_page), NOT_DETERMINISTIC.search(ben_page)
    # a partial total (not 0, not full marks) and its entries: the page of a graded partial submission
    assert re.match(r"Total: (?!0 |100 )\d+(\.\d+)? / 100\n", ben_page), ben_page[:80]
    assert "## 1.1 1 mock model accuracy: visible checks" in ben_page
