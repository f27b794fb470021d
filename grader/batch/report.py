"""The item analysis of a batch: where the class struggled, read from the submissions' results.json data.

- per student (per submission, every submitter named): the total, each exercise's points, the grading
  status and a link to its results.json, in the batch's order;
- per exercise, weakest first: how many submissions earned its full points, the mean share of its
  points, and its most common failures (which check's property, what kind of failure), counted from the
  checks each results entry's extra_data carries, never from the text students see; failures that are
  not "not implemented" rank first (an unstarted exercise says little about the exercise); the weakest
  exercises are highlighted;
- per check: its pass rate and how well it separates strong from weak submissions (the point-biserial
  correlation of passing it with the total score); checks nobody fails, and checks failed mostly by top
  scorers (a negative correlation), are flagged as worth a look, but only where there is data enough
  for a flag to mean something: at least FLAG_CLASS_SIZE scored submissions, and for the second flag
  at least FLAG_FAILURES of them failing the check (below, no flag, and the page says why);
- a histogram of the total scores whose bins show the spread (full marks a bar of its own) and a bar
  chart of the exercises' pass rates, as PNG (matplotlib's Agg renderer: no display needed), and
  `report.html`, one page with the images inlined, readable offline, titled with the assignment and date.

Only submissions that were scored count; those that were not are listed with their status.
"""

from __future__ import annotations

import base64
import builtins
import html
import math
import posixpath
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.assignment.manifest import Exercise
from grader.assignment.scoring import points_text
from grader.batch.grades import Change
from grader.batch.outcomes import COMPLETED, CRASHED, INTERRUPTED, Outcome
from grader.batch.student_page import PAGE_HTML
from grader.grading.untrusted import ESCAPED_NOTE, printable

TOP_FAILURES = 5
HARDEST = 25  # checks listed at once; the rest folded away
WEAKEST = 3  # exercises highlighted: the weakest three, where their pass rate is below 100%
HISTOGRAM_PNG = "score-histogram.png"
PASS_RATES_PNG = "pass-rates.png"
REPORT_HTML = "report.html"
SEPARATION_FLAG = -0.1  # a correlation below this: failed mostly by the strong
FLAG_CLASS_SIZE = 20  # scored submissions below which no check is flagged (a correlation of noise)
FLAG_FAILURES = 3  # submissions failing a check below which it is not "failed mostly by top scorers"
NOT_IMPLEMENTED = "not implemented"  # the failure kind of an exercise not started (grader.grading.results)


@dataclass(frozen=True)
class ExerciseStats:
    """One exercise across the scored submissions."""

    exercise: Exercise
    scored: int
    full_marks: int
    mean_share: float  # of its points, 0..1
    failures: tuple[tuple[str, int], ...]  # ("property (kind)", submissions), most common first

    @property
    def pass_rate(self) -> float:
        return self.full_marks / self.scored if self.scored else 0.0


@dataclass(frozen=True)
class CheckStats:
    """One check (a test of a suite) across the scored submissions."""

    check: str  # its node id
    exercise: int
    suite: str
    property: str
    scored: int
    passed: int
    separation: float | None  # point-biserial correlation of passing it with the total; None if undefined

    @builtins.property  # `property` is a field of this class
    def pass_rate(self) -> float:
        return self.passed / self.scored if self.scored else 0.0

    @builtins.property
    def flag(self) -> str:
        """Why the check is worth a look ("" if it is not, or if there is too little data to say)."""
        if self.scored < FLAG_CLASS_SIZE:
            return ""
        if self.passed == self.scored:
            return "nobody fails it"
        failed = self.scored - self.passed
        if failed >= FLAG_FAILURES and self.separation is not None and self.separation < SEPARATION_FLAG:
            return "failed mostly by top scorers"
        return ""


@dataclass(frozen=True)
class StudentRow:
    """One submission in the per-student table."""

    file: str
    names: str  # its submitters, "; "-joined ("" where none is known)
    status: str  # grades.csv's grading_status
    total: float | None  # None: not scored
    possible: float | None
    points: dict[int, float]  # exercise id -> points earned


@dataclass(frozen=True)
class Analysis:
    """The item analysis of a batch."""

    submissions: int
    percents: tuple[float, ...]  # total score in percent, per scored submission
    exercises: tuple[ExerciseStats, ...]  # weakest first
    checks: tuple[CheckStats, ...]  # in results.json's order
    not_scored: tuple[tuple[str, str], ...]  # (file, grading status)
    students: tuple[StudentRow, ...] = ()  # in the batch's order

    @property
    def weakest(self) -> tuple[int, ...]:
        """The ids of the exercises to highlight."""
        return tuple(s.exercise.id for s in self.exercises[:WEAKEST] if s.scored and s.pass_rate < 1)


def item_analysis(outcomes: Sequence[Outcome], exercises: Sequence[Exercise]) -> Analysis:
    """The analysis of `outcomes` for the exercises graded."""
    scored = [o for o in outcomes if o.status == COMPLETED and o.document.get("tests")]
    kept = {id(o) for o in scored}
    not_scored = tuple((o.entry.file, o.grading_status) for o in outcomes if id(o) not in kept)
    percents = tuple(_percent(o.document) for o in scored)
    documents = [o.document for o in scored]
    per_exercise = sorted(
        (_exercise_stats(e, documents) for e in exercises),
        key=lambda s: (s.pass_rate, s.mean_share, s.exercise.id),
    )
    students = tuple(_student_row(o, id(o) in kept) for o in outcomes)
    return Analysis(
        len(outcomes), percents, tuple(per_exercise), _check_stats(documents, percents), not_scored, students
    )


def _student_row(outcome: Outcome, scored: bool) -> StudentRow:
    names = "; ".join(p.name or p.email or p.sid or "?" for p in outcome.entry.submitters)
    extra = outcome.document.get("extra_data", {}) if scored else {}
    points = {int(item["id"]): float(item["score"]) for item in extra.get("exercises", [])}
    total = float(outcome.document.get("score", 0.0)) if scored else None
    possible = float(extra.get("points_possible") or 0.0) if scored else None
    return StudentRow(outcome.entry.file, names, outcome.grading_status, total, possible, points)


def checks_of(test: dict) -> list[dict]:
    """The checks a results entry carries as data (see grader.grading.results)."""
    return list(test.get("extra_data", {}).get("checks", []))


def failure_label(check: dict) -> str:
    """How the report names a failed check: "property (kind)"."""
    kind = check.get("kind") or "failed"
    return f"{check.get('property') or check.get('check', '?')} ({kind})"


def point_biserial(passed: Sequence[bool], totals: Sequence[float]) -> float | None:
    """The correlation of passing (1/0) with the total; None when either does not vary."""
    n = len(passed)
    ones = [t for p, t in zip(passed, totals, strict=True) if p]
    zeros = [t for p, t in zip(passed, totals, strict=True) if not p]
    if n < 2 or not ones or not zeros:
        return None
    spread = statistics.pstdev(totals)
    if spread == 0:
        return None
    share = len(ones) / n
    return (statistics.fmean(ones) - statistics.fmean(zeros)) / spread * math.sqrt(share * (1 - share))


def histogram_bins(percents: Sequence[float]) -> list[float]:
    """Bin edges that show the spread: about 20 bins from a round number below the lowest score up to
    100, and full marks (100) in a bin of its own, so that 94 and 100 never share a bar."""
    low = min(percents, default=0.0)
    start = max(0.0, math.floor(low / 10) * 10 if low < 100 else 90.0)
    width = max(1.0, (100 - start) / 20)
    edges = [start + i * width for i in range(int(round((100 - start) / width)))]
    return [*edges, 100 - 1e-9, 100 + width - 1e-9]


def write_report(
    folder: Path,
    analysis: Analysis,
    title: str = "Batch grading",
    changes: Sequence[Change] = (),
    pairs: Sequence | None = None,
    links: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the PNG charts and report.html into `folder`; the paths written (`links`: each submission's
    results.json, by file, relative to `folder`). Without matplotlib, the page has the tables only."""
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
    page.write_text(report_html(analysis, images, title, changes, pairs, links), encoding="utf-8")
    return [*images.values(), page]


# -- the numbers ------------------------------------------------------------------------------------


def _percent(document: dict) -> float:
    possible = document.get("extra_data", {}).get("points_possible") or 0
    return 100.0 * document.get("score", 0.0) / possible if possible else 0.0


def _exercise_stats(exercise: Exercise, documents: list[dict]) -> ExerciseStats:
    shares, full, failures = [], 0, Counter[tuple[str, bool]]()
    for document in documents:
        item = next((i for i in document["extra_data"].get("exercises", []) if i["id"] == exercise.id), None)
        if item is None:
            continue
        shares.append(item["score"] / exercise.points)
        full += item["score"] >= exercise.points - 1e-6
        labels = {
            (failure_label(check), check.get("kind") == NOT_IMPLEMENTED)
            for test in document["tests"]
            if test.get("extra_data", {}).get("exercise") == exercise.id
            for check in checks_of(test)
            if not check.get("passed")
        }
        failures.update(labels)  # one count per submission and failure
    mean = statistics.fmean(shares) if shares else 0.0
    # what went wrong in code that was written first; then the most common; then by name (stable)
    ranked = sorted(failures.items(), key=lambda item: (item[0][1], -item[1], item[0][0]))
    return ExerciseStats(
        exercise, len(shares), full, mean, tuple((k[0], n) for k, n in ranked[:TOP_FAILURES])
    )


def _check_stats(documents: list[dict], percents: Sequence[float]) -> tuple[CheckStats, ...]:
    seen: dict[str, tuple[int, str, str]] = {}
    outcomes: dict[str, list[tuple[bool, float]]] = {}
    for document, percent in zip(documents, percents, strict=True):
        for test in document["tests"]:
            extra = test.get("extra_data", {})
            for check in checks_of(test):
                name = check.get("check", "")
                seen.setdefault(
                    name, (extra.get("exercise", 0), extra.get("suite", ""), check.get("property", ""))
                )
                outcomes.setdefault(name, []).append((bool(check.get("passed")), percent))
    out = []
    for name, (exercise, suite, property_) in seen.items():
        passed = [p for p, _ in outcomes[name]]
        separation = point_biserial(passed, [t for _, t in outcomes[name]])
        out.append(CheckStats(name, exercise, suite, property_, len(passed), sum(passed), separation))
    return tuple(out)


# -- the charts -------------------------------------------------------------------------------------


def _histogram(analysis: Analysis, path: Path) -> Path:
    from matplotlib.figure import Figure  # the Agg renderer, without pyplot's global state
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(7, 3.6), dpi=100, layout="constrained")
    axes = figure.subplots()
    bins = histogram_bins(analysis.percents)
    axes.hist(analysis.percents, bins=bins, color="#4c72b0", edgecolor="white")
    axes.set_xlim(bins[0], bins[-1])
    axes.set_xlabel("total score (%)")
    axes.set_ylabel("submissions")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title(f"Total scores ({_plural(len(analysis.percents), 'submission')} scored; 100: full marks)")
    figure.savefig(path, format="png")
    return path


def _pass_rates(analysis: Analysis, path: Path) -> Path:
    from matplotlib.figure import Figure

    rows = list(reversed(analysis.exercises))  # the weakest at the top
    figure = Figure(figsize=(7, 0.9 + 0.32 * max(1, len(rows))), dpi=100, layout="constrained")
    axes = figure.subplots()
    colors = [WEAK_COLOR if s.exercise.id in analysis.weakest else OTHER_COLOR for s in rows]
    axes.barh([s.exercise.label for s in rows], [100 * s.pass_rate for s in rows], color=colors)
    if analysis.weakest:  # every colour says what it means
        from matplotlib.patches import Patch

        weakest = f"the weakest {len(analysis.weakest)} (highlighted in the table)"
        handles = [Patch(color=WEAK_COLOR, label=weakest), Patch(color=OTHER_COLOR, label="the others")]
        figure.legend(handles=handles, loc="outside lower center", ncols=2, fontsize="small")
    axes.set_xlim(0, 100)
    axes.set_xlabel("submissions with full points (%)")
    axes.set_title("Pass rate per exercise")
    figure.savefig(path, format="png")
    return path


# -- the page ---------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0; } th, td { border: 1px solid #ccc; padding: .3em .6em; }
th { background: #f3f3f3; text-align: left; } td.n { text-align: right; }
td { overflow-wrap: break-word; } small { word-break: break-all; }
tr.weak td { background: #fde8e8; } tr.weak td:first-child { font-weight: bold; }
ul { margin: 0; padding-left: 1.2em; } img { max-width: 100%; }
.box { max-width: 100%; overflow: auto; margin: 1em 0; }
.box.students { max-height: 32em; border: 1px solid #ccc; }
.box.students td, .box.students th { white-space: nowrap; }
.box.students th { position: sticky; top: 0; z-index: 1; box-shadow: 0 1px 0 #ccc; }
.box.students td:first-child, .box.students th:first-child { position: sticky; left: 0; background: #fff; }
.box.students th:first-child { background: #f3f3f3; z-index: 2; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; } .charts figure { margin: 0; flex: 1 1 22em; }
.key { color: #555; } .swatch { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em;
  border: 1px solid #999; } .swatch.weak { background: #fde8e8; }
"""
WEAK_COLOR, OTHER_COLOR = "#c44e52", "#55a868"  # the pass-rate chart's bars: the weakest, the others


def report_html(
    analysis: Analysis,
    images: dict[str, Path],
    title: str,
    changes: Sequence[Change] = (),
    pairs: Sequence | None = None,
    links: Mapping[str, str] | None = None,
) -> str:
    """The page: summary, charts (inlined as base64 PNG), the exercises (weakest first, highlighted), the
    checks worth a look, what was not scored, and a row per student with a link to its results.json
    (`links`, by file). Every text that came from a submission is escaped (HTML, and
    control characters: said once, at the top, where there were any)."""
    weak = set(analysis.weakest)
    untrusted = [
        *(text for row in analysis.not_scored for text in row),
        *(c.file for c in changes),
        *(name for p in pairs or () for name in (p.first, p.second)),
        *(text for s in analysis.students for text in (s.file, s.names)),
    ]
    escaped = any(printable(text, lines=False) != text for text in untrusted)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>",
        f"<p>Note: {_e(ESCAPED_NOTE)}.</p>" if escaped else "",
        _summary(analysis),
        _students_section(analysis, links or {}),  # the grades a TA came for, first
        _not_scored_section(analysis),
        _changes_section(changes),
        _charts(images),
        "<h2>Exercises, weakest first</h2>",
        _weak_key(analysis),
        _table(
            ["exercise", "points", "scored", "full points", "mean share", "most common failures"],
            [_exercise_row(s) for s in analysis.exercises],
            [s.exercise.id in weak for s in analysis.exercises],
        ),
        _checks_section(analysis),
        _pairs_section(pairs),
        "</body></html>\n",
    ]
    return "\n".join(part for part in parts if part)


def _charts(images: Mapping[str, Path]) -> str:
    """The charts side by side where the page is wide enough, one above the other where it is not."""
    if not images:
        return ""
    figures = "".join(
        f"<figure><h2>{_e(name)}</h2><img alt='{_e(name)}' src='{_data_uri(path)}'></figure>"
        for name, path in images.items()
    )
    return f"<div class='charts'>{figures}</div>"


def _weak_key(analysis: Analysis) -> str:
    """What the highlighted rows (and the chart's red bars) mean."""
    if not analysis.weakest:
        return ""
    return (
        f"<p class='key'><span class='swatch weak'></span> the weakest {len(analysis.weakest)}: the lowest "
        "share of submissions with full points, then the lowest mean share (red in the chart above).</p>"
    )


def _not_scored_section(analysis: Analysis) -> str:
    if not analysis.not_scored:
        return ""
    rows = [[_e(file), _e(status)] for file, status in analysis.not_scored]
    return "<h2>Not scored</h2>" + _table(["file", "grading status"], rows)


def _changes_section(changes: Sequence[Change]) -> str:
    """Whose grade the regrade changes, and which entries (or exercises) changed (empty: none)."""
    if not changes:
        return ""
    rows = [
        [
            _e(c.file),
            _e(c.names),
            _e(c.kind),
            _e(c.before),
            _e(c.after),
            "" if c.delta is None else _e(("+" if c.delta > 0 else "") + points_text(c.delta)),
            "; ".join(f"{_e(label)}: {_e(b or '-')} &rarr; {_e(a or '-')}" for label, b, a in c.moved),
        ]
        for c in changes
    ]
    header = ["file", "name", "kind", "total before", "total after", "change", "what changed"]
    return f"<h2>Regrade: {_plural(len(changes), 'grade')} changed</h2>" + _table(header, rows)


def _students_section(analysis: Analysis, links: Mapping[str, str]) -> str:
    """A row per submission, in a box of its own that scrolls under a sticky header: who, the total,
    the status, its page and results.json, then each exercise's points (columns headed by the exercise's
    number: its name is in the header's tooltip and in the key below)."""
    if not analysis.students:
        return ""
    exercises = sorted((s.exercise for s in analysis.exercises), key=lambda e: e.id)
    head = ["file", "name", "total", "grading status", "results"]
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    header += "".join(f"<th title='{_e(e.label)}'>{_e(e.id)}</th>" for e in exercises)
    rows = []
    for student in analysis.students:
        scored = student.total is not None
        no_grade = student.status.startswith((INTERRUPTED, CRASHED))  # as grades.csv: no grade yet
        total = f"{_n(student.total or 0)} / {_n(student.possible or 0)}" if scored else "0"
        total = "no grade yet" if no_grade else total
        points = [_n(student.points.get(e.id, 0.0)) if scored else "" for e in exercises]
        cells = [
            _e(student.file),
            _e(student.names),
            _e(total),
            _e(student.status),
            _links(links.get(student.file)),
        ]
        rows.append("<tr>" + "".join(_cell(c) for c in [*cells, *points]) + "</tr>")
    key = ", ".join(_e(e.label) for e in exercises)
    return (
        f"<h2 id='students'>Students</h2><div class='box students'><table><tr>{header}</tr>{''.join(rows)}"
        f"</table></div><p class='key'>Exercise columns: the points of {key}.</p>"
    )


def _links(results: str | None) -> str:
    """The student's page (page.html, beside it) and the raw results.json of a submission."""
    if not results:
        return ""
    page = posixpath.join(posixpath.dirname(results), PAGE_HTML)
    return (
        f"<a href='{html.escape(page, quote=True)}'>page</a> &middot; "
        f"<a href='{html.escape(results, quote=True)}'>results.json</a>"
    )


def _pairs_section(pairs: Sequence | None) -> str:
    """The similar pairs (grader.batch.similarity.Pair), linked to similarity.html's side-by-side views."""
    if pairs is None:
        return ""
    head = "<h2>Similar exercise code (for TAs; never part of a grade)</h2>"
    if not pairs:
        return head + "<p>No pair at or above the threshold.</p>"
    rows = [
        [
            f"<a href='similarity.html#pair-{i}'>{_e(p.first)} &amp; {_e(p.second)}</a>",
            f"{100 * p.shares[0]:.0f}% / {100 * p.shares[1]:.0f}%",
            _n(p.tokens),
        ]
        for i, p in enumerate(pairs, 1)
    ]
    return head + _table(["pair", "share of each one's code found in the other", "tokens in common"], rows)


def _summary(analysis: Analysis) -> str:
    scored = len(analysis.percents)
    line = (
        f"{_plural(analysis.submissions, 'submission')}, {scored} scored, "
        f"{len(analysis.not_scored)} not scored."
    )
    if scored:
        mean, median = statistics.fmean(analysis.percents), statistics.median(analysis.percents)
        line += f" Mean score {mean:.1f}%, median {median:.1f}%."
    return f"<p>{_e(line)}</p>"


def _exercise_row(stats: ExerciseStats) -> list[str]:
    failures = "".join(f"<li>{count} &times; {_e(text)}</li>" for text, count in stats.failures)
    return [
        _e(stats.exercise.label),
        _n(stats.exercise.points),
        _n(stats.scored),
        _pct(stats.pass_rate),
        _pct(stats.mean_share),
        f"<ul>{failures}</ul>" if failures else "",
    ]


def _checks_section(analysis: Analysis) -> str:
    """Checks some submissions fail, hardest first, with how well each separates strong from weak; then
    the checks worth a look (nobody fails them, or mostly the strong do)."""
    failed = sorted((c for c in analysis.checks if c.passed < c.scored), key=lambda c: (c.pass_rate, c.check))
    flagged = [c for c in analysis.checks if c.flag]
    header = ["check", "exercise", "pass rate", "separation", "worth a look"]
    parts = [
        "<h2>Checks some submissions fail, hardest first</h2>",
        "<p>Separation: the point-biserial correlation of passing the check with the total score (near 1: "
        "the strong pass it and the weak fail it; below 0: the strong fail it more).</p>",
        _table(header, [_check_row(c) for c in failed[:HARDEST]])
        if failed
        else "<p>None: every check was passed.</p>",
    ]
    if len(failed) > HARDEST:
        rest = _table(header, [_check_row(c) for c in failed[HARDEST:]])
        parts.append(
            f"<details><summary>{len(failed) - HARDEST} more checks some fail</summary>{rest}</details>"
        )
    if analysis.checks and len(analysis.percents) < FLAG_CLASS_SIZE:
        parts.append(
            f"<p>No check is flagged as worth a look: {len(analysis.percents)} scored submissions are too "
            f"few for it to mean something (flags need at least {FLAG_CLASS_SIZE}).</p>"
        )
    elif analysis.checks:
        parts.append(
            f"<p>A check is flagged as failed mostly by top scorers only where at least {FLAG_FAILURES} "
            "submissions fail it.</p>"
        )
    easy = [c for c in flagged if c.flag == "nobody fails it"]
    odd = [c for c in flagged if c.flag != "nobody fails it"]
    if odd:
        parts += [
            "<h2>Checks failed mostly by top scorers</h2>",
            _table(header, [_check_row(c) for c in odd]),
        ]
    if easy:
        rows = "".join(f"<li>{_e(c.exercise)} {_e(c.suite)}: {_e(c.property or c.check)}</li>" for c in easy)
        parts.append(
            f"<details><summary>{_plural(len(easy), 'check')} nobody fails (worth a look: do they test "
            f"anything?)</summary><ul>{rows}</ul></details>"
        )
    return "\n".join(parts)


def _check_row(check: CheckStats) -> list[str]:
    separation = "" if check.separation is None else f"{check.separation:.2f}"
    return [
        f"{_e(check.property or check.check)}<br><small>{_e(check.check)}</small>",
        f"{_e(check.exercise)} ({_e(check.suite)})",
        _pct(check.pass_rate),
        separation,
        _e(check.flag),
    ]


def _table(header: list[str], rows: list[list[str]], highlight: Sequence[bool] = ()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    marks = list(highlight) + [False] * (len(rows) - len(highlight))
    body = "".join(
        ("<tr class='weak'>" if mark else "<tr>") + "".join(_cell(c) for c in row) + "</tr>"
        for row, mark in zip(rows, marks, strict=True)
    )
    return f"<div class='box'><table><tr>{head}</tr>{body}</table></div>"


def _cell(content: str) -> str:
    numeric = re.fullmatch(r"-?[\d.]+%?", content) is not None
    return f"<td class='n'>{content}</td>" if numeric else f"<td>{content}</td>"


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _e(text: object) -> str:
    """Text for the page: HTML-escaped, and one line with its control characters shown escaped
    (grader.grading.untrusted.printable)."""
    return html.escape(printable(str(text), lines=False), quote=True)


def _n(value: float) -> str:
    return points_text(value)


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _plural(n: int, one: str) -> str:
    return f"{n} {one}" if n == 1 else f"{n} {one}s"
