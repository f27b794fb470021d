"""A submission's results.json rendered as the page its student sees on Gradescope, for a TA.

A submission's results.json rendered as the page its student sees on Gradescope once grades are
published, for a TA reading a batch (`grader batch` writes it beside each results.json as page.html).

The top-level output, then each entry: its name, score, status, when students see it, and its output
as Gradescope renders it (`md` through markdown-it with raw HTML off, so a submission's text shown in an
entry stays text, and no link or image, so the page reads offline and fetches nothing; `text` and every
other format as preformatted text). Nothing is read back out of the text: the page shows the document's
fields as they are.
"""

from __future__ import annotations

import html
from pathlib import Path

from grader.assignment.scoring import points_text
from grader.grading.untrusted import printable

PAGE_HTML = "page.html"
SEEN = {  # Gradescope's visibility of an entry, as a TA reads it
    "visible": "seen at once",
    "after_published": "seen once grades are published",
    "after_due_date": "seen after the due date",
    "hidden": "never seen by the student",
}
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; padding: 0 1em; color: #222; }
.entry { border: 1px solid #ccc; border-radius: 4px; margin: 1em 0; }
.entry h2 { font-size: 1.05em; margin: 0; padding: .5em .8em; background: #f3f3f3; display: flex;
  flex-wrap: wrap; gap: .3em 1em; justify-content: space-between; }
.entry.failed h2 { background: #fde8e8; } .entry.passed h2 { background: #e6f4ea; }
.entry .body { padding: 0 .8em; overflow-x: auto; } .seen { font-weight: normal; color: #555; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; } table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .2em .5em; } .top { overflow-x: auto; }
"""


def student_page_html(document: dict, title: str) -> str:
    """The page of one results.json `document`, titled `title` (escaped)."""
    score, possible = document.get("score"), (document.get("extra_data") or {}).get("points_possible")
    total = "" if score is None else f"Total: {points_text(float(score))}"
    total += "" if possible is None or score is None else f" / {points_text(float(possible))}"
    tests = [test for test in document.get("tests", []) if isinstance(test, dict)]
    return "\n".join(
        [
            f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>",
            f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>",
            f"<p><strong>{_e(total)}</strong></p>" if total else "",
            f"<div class='top'>{_rendered(document.get('output', ''), document.get('output_format'))}</div>",
            *(_entry(test) for test in tests),
            "</body></html>\n",
        ]
    )


def write_student_page(results: Path, title: str) -> Path | None:
    """page.html beside the results.json at `results`; None where that cannot be read as a document."""
    import json

    try:
        document = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    page = results.parent / PAGE_HTML
    page.write_text(student_page_html(document, title), encoding="utf-8")
    return page


def _entry(test: dict) -> str:
    status = test.get("status", "")
    score, most = test.get("score"), test.get("max_score")
    points = "" if score is None else points_text(float(score))
    points += "" if most is None else f" / {points_text(float(most))}"
    seen = SEEN.get(str(test.get("visibility", "visible")), str(test.get("visibility")))
    output = _rendered(test.get("output", ""), test.get("output_format"))
    return (
        f"<section class='entry {_e(status)}'><h2><span>{_e(test.get('name', ''))}</span>"
        f"<span>{_e(points)} <span class='seen'>({_e(status or 'no status')}; {_e(seen)})</span></span>"
        f"</h2><div class='body'>{output}</div></section>"
    )


def _rendered(text: object, output_format: object) -> str:
    """`text` as Gradescope shows an output of `output_format`: markdown for "md", else as text."""
    text = str(text or "")
    if not text:
        return ""
    if output_format == "md":
        return _markdown().render(printable(text, lines=True))
    return f"<pre>{_e(text, lines=True)}</pre>"


def _markdown():  # imported only where a page is written: markdown-it comes with rich (batch's extra)
    from markdown_it import MarkdownIt

    # no raw HTML, and no links or images: a submission's text in an entry could fetch or point anywhere
    return MarkdownIt("commonmark", {"html": False}).enable("table").disable(["link", "image", "autolink"])


def _e(text: object, lines: bool = False) -> str:
    return html.escape(printable(str(text), lines=lines), quote=True)
