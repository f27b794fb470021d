"""The item analysis of a batch: where the class struggled, read from the submissions' results.json.

- per exercise: how many submissions earned its full points, the mean share of its points, and its most
  common failures (each failed check's property, with the kind of failure: the exception's type, or
  "not implemented" / "timed out" for a hidden check);
- per results entry ("8 softmax: hidden checks"): how many passed it whole, and the mean share of its
  checks passed (results.json lists at most five failed checks per entry, so failures past those are
  counted as "not listed");
- a histogram of the total scores and a bar chart of the exercises' pass rates, as PNG (matplotlib's Agg
  renderer: no display needed), and `report.html`, one page with the images inlined, readable offline.

Only submissions that were scored count; those that were not are listed with their status.
"""

from __future__ import annotations

import base64
import html
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.batch import COMPLETED, Outcome
from grader.manifest import Exercise
from grader.scoring import points_text

TOP_FAILURES = 5
HISTOGRAM_PNG = "score-histogram.png"
PASS_RATES_PNG = "pass-rates.png"
REPORT_HTML = "report.html"

_FAILED = "- failed: "
_MORE = re.compile(r"^\.\.\. and (\d+) more$")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|TimedOut))\b:?\s*(.*)$")


@dataclass(frozen=True)
class ExerciseStats:
    """One exercise across the scored submissions."""

    exercise: Exercise
    scored: int
    full_marks: int
    mean_share: float  # of its points, 0..1
    failures: tuple[tuple[str, int], ...]  # (failure, submissions), most common first
    not_listed: int  # failed checks results.json does not name

    @property
    def pass_rate(self) -> float:
        return self.full_marks / self.scored if self.scored else 0.0


@dataclass(frozen=True)
class EntryStats:
    """One results entry (an exercise's visible or hidden checks) across the scored submissions."""

    name: str
    exercise: int
    scored: int
    passed: int  # submissions that passed every check of it
    mean_checks: float  # mean share of its checks passed, 0..1

    @property
    def pass_rate(self) -> float:
        return self.passed / self.scored if self.scored else 0.0


@dataclass(frozen=True)
class Analysis:
    """The item analysis of a batch."""

    submissions: int
    percents: tuple[float, ...]  # total score in percent, per scored submission
    exercises: tuple[ExerciseStats, ...]
    entries: tuple[EntryStats, ...]
    not_scored: tuple[tuple[str, str], ...]  # (file, grading status)


def item_analysis(outcomes: Sequence[Outcome], exercises: Sequence[Exercise]) -> Analysis:
    """The analysis of `outcomes` for the exercises graded."""
    scored = [o for o in outcomes if o.status == COMPLETED and o.document.get("tests")]
    kept = {id(o) for o in scored}
    not_scored = tuple((o.entry.file, o.grading_status) for o in outcomes if id(o) not in kept)
    percents = tuple(_percent(o.document) for o in scored)
    documents = [o.document for o in scored]
    per_exercise = tuple(_exercise_stats(e, documents) for e in exercises)
    return Analysis(len(outcomes), percents, per_exercise, _entry_stats(documents), not_scored)


def failure_messages(output: str) -> tuple[list[str], int]:
    """The failures a results entry's output lists ("property (kind)"), and how many it does not list."""
    found: list[str] = []
    more = 0
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(_FAILED):
            following = lines[index + 1] if index + 1 < len(lines) else ""
            detail = following.strip() if following.startswith(" ") else ""
            found.append(_failure(line[len(_FAILED) :].strip(), detail))
        elif match := _MORE.match(line.strip()):
            more += int(match[1])
    return found, more


def write_report(folder: Path, analysis: Analysis, title: str = "Batch grading") -> list[Path]:
    """Write the PNG charts and report.html into `folder`; the paths written. Without matplotlib, the
    page has the tables only."""
    folder.mkdir(parents=True, exist_ok=True)
    images: dict[str, Path] = {}
    try:
        images = {
            "Total scores": _histogram(analysis, folder / HISTOGRAM_PNG),
            "Exercises passed (full points)": _pass_rates(analysis, folder / PASS_RATES_PNG),
        }
    except ImportError:
        pass
    page = folder / REPORT_HTML
    page.write_text(report_html(analysis, images, title), encoding="utf-8")
    return [*images.values(), page]


# -- the numbers ------------------------------------------------------------------------------------


def _percent(document: dict) -> float:
    possible = document.get("extra_data", {}).get("points_possible") or 0
    return 100.0 * document.get("score", 0.0) / possible if possible else 0.0


def _exercise_stats(exercise: Exercise, documents: list[dict]) -> ExerciseStats:
    shares, full, failures, not_listed = [], 0, Counter(), 0
    for document in documents:
        item = next((i for i in document["extra_data"].get("exercises", []) if i["id"] == exercise.id), None)
        if item is None:
            continue
        shares.append(item["score"] / exercise.points)
        full += item["score"] >= exercise.points - 1e-6
        messages: set[str] = set()
        for test in document["tests"]:
            if test.get("extra_data", {}).get("exercise") == exercise.id and test.get("status") != "passed":
                found, more = failure_messages(test.get("output", ""))
                messages.update(found)
                not_listed += more
        failures.update(messages)  # one count per submission and failure
    mean = statistics.fmean(shares) if shares else 0.0
    common = tuple(failures.most_common(TOP_FAILURES))
    return ExerciseStats(exercise, len(shares), full, mean, common, not_listed)


def _entry_stats(documents: list[dict]) -> tuple[EntryStats, ...]:
    grouped: dict[str, list[dict]] = {}
    for document in documents:
        for test in document["tests"]:
            grouped.setdefault(test["name"], []).append(test)
    out = []
    for name, tests in grouped.items():
        shares = [_checks_share(t) for t in tests]
        passed = sum(t.get("status") == "passed" for t in tests)
        exercise = tests[0].get("extra_data", {}).get("exercise", 0)
        out.append(EntryStats(name, exercise, len(tests), passed, statistics.fmean(shares)))
    return tuple(out)  # in results.json's order: by exercise, visible before hidden


def _checks_share(test: dict) -> float:
    extra = test.get("extra_data", {})
    if extra.get("total"):
        return extra.get("passed", 0) / extra["total"]
    return 1.0 if test.get("status") == "passed" else 0.0


def _failure(property_: str, detail: str) -> str:
    """'property (kind)': a hidden check's line already ends with its kind, when it has one."""
    if not detail:
        return property_
    match = _EXCEPTION.match(detail)
    if match is None:
        return property_
    kind, message = match[1], match[2]
    if kind in ("AssertionError", "NotImplementedError") or not message:
        return f"{property_} ({'wrong result' if kind == 'AssertionError' else 'not implemented'})"
    return f"{property_} ({kind}: {message[:80]})"


# -- the charts -------------------------------------------------------------------------------------


def _histogram(analysis: Analysis, path: Path) -> Path:
    from matplotlib.figure import Figure  # the Agg renderer, without pyplot's global state
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(7, 3.6), dpi=100, layout="constrained")
    axes = figure.subplots()
    axes.hist(analysis.percents, bins=list(range(0, 101, 10)), color="#4c72b0", edgecolor="white")
    axes.set_xlim(0, 100)
    axes.set_xlabel("total score (%)")
    axes.set_ylabel("submissions")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(f"Total scores ({len(analysis.percents)} submissions scored)")
    figure.savefig(path, format="png")
    return path


def _pass_rates(analysis: Analysis, path: Path) -> Path:
    from matplotlib.figure import Figure

    rows = list(reversed(analysis.exercises))
    figure = Figure(figsize=(7, 0.9 + 0.32 * max(1, len(rows))), dpi=100, layout="constrained")
    axes = figure.subplots()
    axes.barh([s.exercise.label for s in rows], [100 * s.pass_rate for s in rows], color="#55a868")
    axes.set_xlim(0, 100)
    axes.set_xlabel("submissions with full points (%)")
    axes.set_title("Pass rate per exercise")
    figure.savefig(path, format="png")
    return path


# -- the page ---------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; } th, td { border: 1px solid #ccc; padding: .3em .6em; }
th { background: #f3f3f3; text-align: left; } td.n { text-align: right; }
ul { margin: 0; padding-left: 1.2em; } img { max-width: 100%; }
"""


def report_html(analysis: Analysis, images: dict[str, Path], title: str) -> str:
    """The page: summary, charts (inlined as base64 PNG), the exercise and entry tables, what was not
    scored. Every text that came from a submission is escaped."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>",
        _summary(analysis),
        *(f"<h2>{_e(name)}</h2><img alt='{_e(name)}' src='{_data_uri(p)}'>" for name, p in images.items()),
        "<h2>Exercises</h2>",
        _table(
            ["exercise", "points", "scored", "full points", "mean share", "most common failures"],
            [_exercise_row(s) for s in analysis.exercises],
        ),
        "<h2>Checks per results entry</h2>",
        _table(
            ["entry", "scored", "passed whole", "mean share of checks"],
            [[_e(s.name), _n(s.scored), _pct(s.pass_rate), _pct(s.mean_checks)] for s in analysis.entries],
        ),
    ]
    if analysis.not_scored:
        rows = [[_e(file), _e(status)] for file, status in analysis.not_scored]
        parts += ["<h2>Not scored</h2>", _table(["file", "grading status"], rows)]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _summary(analysis: Analysis) -> str:
    scored = len(analysis.percents)
    line = f"{analysis.submissions} submissions, {scored} scored, {len(analysis.not_scored)} not scored."
    if scored:
        mean, median = statistics.fmean(analysis.percents), statistics.median(analysis.percents)
        line += f" Mean score {mean:.1f}%, median {median:.1f}%."
    return f"<p>{_e(line)}</p>"


def _exercise_row(stats: ExerciseStats) -> list[str]:
    failures = "".join(f"<li>{count} &times; {_e(text)}</li>" for text, count in stats.failures)
    if stats.not_listed:
        failures += f"<li>{stats.not_listed} more failed checks (not listed in results.json)</li>"
    return [
        _e(stats.exercise.label),
        _n(stats.exercise.points),
        _n(stats.scored),
        _pct(stats.pass_rate),
        _pct(stats.mean_share),
        f"<ul>{failures}</ul>" if failures else "",
    ]


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(content: str) -> str:
    numeric = re.fullmatch(r"[\d.]+%?", content) is not None
    return f"<td class='n'>{content}</td>" if numeric else f"<td>{content}</td>"


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(value: float) -> str:
    return points_text(value)


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"
