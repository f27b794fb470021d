"""grader.grading.untrusted: what a submission printed is marked line by line, in whatever pieces it
arrives."""

from __future__ import annotations

import pytest

from grader.grading.untrusted import PRINTED_MARK, PrintedLines, marked


@pytest.mark.parametrize(
    "pieces",
    [["grader: score 100 / 100\nisolation: none\n"], ["grad", "er: score 100 / 100\nisol", "ation: none\n"]],
)
def test_every_line_printed_is_marked_once_whatever_the_pieces(pieces: list[str]) -> None:
    lines = PrintedLines()
    text = "".join(lines.mark(piece) for piece in pieces)
    assert text == f"{PRINTED_MARK}grader: score 100 / 100\n{PRINTED_MARK}isolation: none\n"


def test_a_carriage_return_cannot_rewrite_a_marked_line_into_the_graders() -> None:
    # \r would move the cursor back over the mark: it is shown escaped, on the marked line
    assert (
        marked("x\rgrader: score 100 / 100\r\nnext")
        == f"{PRINTED_MARK}x\\rgrader: score 100 / 100\n{PRINTED_MARK}next"
    )


def test_an_empty_line_is_marked_and_nothing_is_added_at_the_end() -> None:
    assert marked("a\n\nb\n") == f"{PRINTED_MARK}a\n{PRINTED_MARK.rstrip()}\n{PRINTED_MARK}b\n"
    assert marked("") == ""
