"""results.json: a graded submission in Gradescope's schema, written by the grader alone, atomically.

One entry per exercise and suite ("12 group advantages: visible checks"). A visible entry shows each
failed check's message (the call, what was expected, what came back). A hidden entry shows what the
manifest allows: by default only the property each failed check states, never its inputs, since a
submission can put whatever it saw into its exceptions. The top-level output, which students see at
once, is a summary table and what intake noticed; it shows hidden checks' counts and points only where
their entries are visible at once too. Before the hidden results are shown, nothing a student sees
depends on the hidden suite: the top-level output and the visible entries are a function of the visible
checks alone (an import failure is said from the visible checks' records; a visible entry shows what its
checks earn on their own). The gate on visible points (grader.assignment.scoring.working: a visible check
earns only where its function computes, more than half the hidden checks of each of its value promises
passing) is said, with the points it takes, in the hidden entry, and counts in the top-level `score`,
which Gradescope shows (and which overrides the sum of the entries) only once no entry is hidden from
the student. extra_data holds the per-exercise
breakdown, and each entry's extra_data every check as data (which check, the property it states, the
promise it checks ("" for none), passed, the kind of failure: "wrong result", "not implemented", "timed
out", "did not run" or the exception's type), which the batch report reads (never the text above), and
from which the records can be rebuilt and scored again (grader.assignment.scoring.score_suites, with the
inventory's promises). Strict JSON, at most 1 MB.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader.assignment.records import TestRecord
from grader.assignment.scoring import SuiteScore, cents, points_text, total
from grader.grading.untrusted import shown
from grader.runtime.protocol import import_headline

MAX_BYTES = 1_000_000
MAX_FAILURES_SHOWN = 5
MAX_MESSAGE_CHARS = 1500  # one failure's text
MAX_ENTRY_CHARS = 2000  # one entry's output in all
WHEN_SHOWN = {"hidden": "to your instructors only", "after_due_date": "after the due date",
              "after_published": "when grades are published"}  # fmt: skip


def results_document(
    scores: Sequence[SuiteScore],
    notes: Sequence[str] = (),
    execution_time: float = 0.0,
    extra: dict | None = None,
) -> dict:
    """The results.json content for a completed grading."""
    earned, possible = total(scores)
    tests = [_entry(s, scores) for s in scores]
    return {
        "score": earned,
        "execution_time": round(execution_time, 2),
        "output": _summary(scores, notes, earned, possible),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"points_possible": possible, "exercises": _breakdown(scores), **(extra or {})},
        "tests": tests,
    }


def unscored_document(
    message: str, notes: Sequence[str] = (), execution_time: float = 0.0, extra: dict | None = None
) -> dict:
    """results.json for a submission that could not be graded at all: score 0, and why (`extra`: the
    same as data, e.g. {"ungraded_kind": "several modules", "ungraded_files": [...]})."""
    output = "\n".join(["**This submission could not be graded.**", "", message, *[f"- {n}" for n in notes]])
    return {
        "score": 0.0,
        "execution_time": round(execution_time, 2),
        "output": output,
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"ungraded": message, **(extra or {})},
        "tests": [],
    }


def write_results(document: dict, path: Path) -> None:
    """Write strict JSON (no NaN) of at most MAX_BYTES to `path`, atomically (a rename into place), with
    the mode any file of its writer gets (0644 under the usual umask 022): a TA reads it, as grades.csv."""
    text = _fit(document)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = str(path.parent / f".results-{secrets.token_hex(8)}.json")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _entry(score: SuiteScore, scores: Sequence[SuiteScore] = ()) -> dict:
    exercise = score.exercise
    hidden = score.suite == "hidden"
    gated = [s for s in scores if hidden and s.exercise == exercise and s.suite != "hidden" and s.gated]
    return {
        "name": score.name,
        "number": f"{exercise.id}.{1 if score.suite == 'visible' else 2}",
        "score": score.shown_score,  # the visible entry's before the gate: a function of its checks alone
        "max_score": score.max_score,
        "status": "passed" if score.passed == len(score.records) else "failed",
        "output": _entry_output(score, exercise.hidden_output if hidden else "full", _gate_note(gated)),
        "output_format": "text",
        "visibility": exercise.hidden_visibility if hidden else "visible",
        "tags": [exercise.part, f"exercise {exercise.id}"],
        "extra_data": {
            "exercise": exercise.id,
            "suite": score.suite,
            "passed": score.passed,
            "total": len(score.records),
            "checks": [_check(record) for record in score.records],
            # the points the gate took from this exercise's visible entry, which shows them earned
            **({"gated_visible_points": cents(sum(s.gated for s in gated))} if gated else {}),
        },
    }


def _check(record: TestRecord) -> dict:
    check: dict = {"check": record.nodeid, "property": record.property, "promise": record.promise}
    check["passed"] = record.passed
    return check if record.passed else {**check, "kind": failure_kind(record)}


_KINDS = {
    "AssertionError": "wrong result",
    "NotImplementedError": "not implemented",
    "CallTimedOut": "timed out",
}
_EXCEPTION = re.compile(
    r"^(?:E\s+)?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|TimedOut|Warning))\b(?::\s*(.*))?"
)


OWN_EXCEPTION = "an exception class of its own"  # a hidden check's kind where the submission named the class


def failure_kind(record: TestRecord) -> str:
    """What kind of failure a check's is, as data: "wrong result" (an assertion), "not implemented",
    "timed out", "did not run" (missing or skipped), else the exception's type (the submission's own,
    for an exception it raised: "ValueError"; in a hidden check, a class the submission named itself is
    OWN_EXCEPTION, since its name could carry the check's inputs into results.json)."""
    if record.outcome in ("missing", "skipped"):
        return "did not run"
    for line in record.message.splitlines():
        match = _EXCEPTION.match(line.strip())
        if match is None:
            continue
        name = match[1].rsplit(".", 1)[-1]
        if name == "SubmissionError" and match[2]:  # the submission's exception, as the worker names it
            inner = _EXCEPTION.match(match[2])
            name = inner[1].rsplit(".", 1)[-1] if inner else name
            if inner and record.suite == "hidden" and not _builtin_exception(name):
                name = OWN_EXCEPTION  # a name it chose could spell the hidden inputs it was called with
        return _KINDS.get(name, name)
    return "failed"


def _builtin_exception(name: str) -> bool:
    found = getattr(builtins, name, None)
    return isinstance(found, type) and issubclass(found, BaseException)


def _gate_note(gated: Sequence[SuiteScore]) -> str:
    """For the hidden entry of an exercise whose visible points the gate took (`gated`, its entries that
    lost points to grader.assignment.scoring.working): which functions and how many points, said where the
    hidden results are (never on the visible entry, whose page would then carry a bit of the hidden
    outcome)."""
    if not gated:
        return ""
    names = ", ".join(f"{name}()" if name else "the exercise" for s in gated for name in s.withheld)
    points = points_text(sum(s.gated for s in gated))
    # the visible answers are in the handout: recalling them is not computing them
    return (
        f"The passing visible checks of {names} earn their points only where most hidden checks of each"
        f" of its value promises pass too, and they do not: {points} of the visible entry's points do not"
        " count in the total."
    )


def _entry_output(score: SuiteScore, shown: str, gate_note: str = "") -> str:
    """An entry's text: how many checks passed (and `gate_note`), then its failures, each said once
    (checks that failed with the same text are one line, "5 checks: NotImplementedError: ..."; a hidden
    entry names each property once), at most MAX_ENTRY_CHARS in all."""
    failed = [r for r in score.records if not r.passed]
    head = f"{score.passed} of {len(score.records)} {score.suite} checks passed."
    if gate_note:
        head += f" {gate_note}"
    if not failed or shown == "none":
        return head
    groups: dict[tuple[str, str], list[TestRecord]] = {}  # (property, kind) or (failure text, "")
    for record in failed:
        key = (record.property, _kind(record)) if shown == "property" else (failure_text(record), "")
        groups.setdefault(key, []).append(record)
    items = []
    for key, records in list(groups.items())[:MAX_FAILURES_SHOWN]:
        many = f" ({len(records)} checks)" if len(records) > 1 else ""
        if shown == "property":
            items.append(f"- failed: {key[0]}{key[1]}{many}")
        elif len(records) > 1:
            first, *rest = key[0].splitlines() or [""]
            items.append(
                "\n".join([f"- {len(records)} checks: {first}", *(f"    {line}" for line in rest)]) + "\n"
            )
        else:
            items.append(f"- failed: {records[0].property}\n{_indent(key[0])}\n")
    left = sum(len(records) for records in list(groups.values())[MAX_FAILURES_SHOWN:])
    if left:
        items.append(f"... and {left} more failed {'check' if left == 1 else 'checks'}")
    return _bounded("\n".join([head, "", *items]).rstrip())


def _bounded(text: str) -> str:
    """At most MAX_ENTRY_CHARS of `text`, cut at a line's end, saying how much was cut."""
    if len(text) <= MAX_ENTRY_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_ENTRY_CHARS - 100)
    cut = cut if cut > 0 else MAX_ENTRY_CHARS - 100
    return (
        text[:cut].rstrip() + f"\n... ({len(text) - cut:,} more characters not shown: an entry shows at most "
        f"{MAX_ENTRY_CHARS:,})"
    )


def _kind(record: TestRecord) -> str:
    """For a hidden check: only the kind of failure, never its message (it may carry hidden inputs)."""
    kind = failure_kind(record)
    return f" ({kind})" if kind in ("timed out", "not implemented") else ""


def failure_text(record: TestRecord) -> str:
    """The failure's exception text; from a pytest long report, only its "E   ..." lines."""
    lines = record.message.splitlines()
    if any(line.startswith("E ") for line in lines):
        lines = [line[1:].strip() for line in lines if line.startswith("E ")]
    # what the submission's exceptions said: no control or bidi character (plain text, not markdown)
    return shown("\n".join(lines).strip(), MAX_MESSAGE_CHARS, markdown=False)


def _summary(scores: Sequence[SuiteScore], notes: Sequence[str], earned: float, possible: float) -> str:
    """The top-level output, which students see at once: hidden checks' counts and points only where
    the manifest shows hidden entries at once too (hidden_visibility "visible")."""
    later = {s.exercise.hidden_visibility for s in scores if not _shown_now(s)}
    by_exercise = _by_exercise(scores)
    if later:
        # Gradescope shows a student no total while an entry is hidden from them: the total, which counts
        # the hidden checks, appears once grades are published; until then this line is what they see.
        head = f"**Visible checks: {_points_text(_shown_points(r for r in by_exercise.values()))}**"
        when = " or ".join(sorted(WHEN_SHOWN[v] for v in later))
        lines = [
            head,
            "",
            f"Hidden checks count too; their results are shown {when}. Your total score, out of "
            f"{points_text(possible)} points, counts both: Gradescope shows it once grades are published.",
            "",
        ]
    else:
        lines = [f"**Score: {points_text(earned)} / {points_text(possible)}**", ""]
    if (headline := _import_headline(s for s in scores if s.suite != "hidden")) is not None:
        lines += [shown(headline, 400), ""]
    if notes:
        lines += [*(f"- {note}" for note in notes), ""]
    points_of = "points of visible checks" if later else "points"
    lines += [f"| exercise | visible | hidden | {points_of} |", "|---|---|---|---|"]
    for exercise, rows in by_exercise.items():
        cells = {s.suite: _counts(s) for s in rows}
        points = _points_text(_shown_points([rows]))
        lines.append(
            f"| {exercise.label} | {cells.get('visible', '-')} | {cells.get('hidden', '-')} | {points} |"
        )
    return "\n".join(lines)


def _import_headline(scores: Iterable[SuiteScore]) -> str | None:
    """Why the module never imported, where a check of `scores` failed for that
    (grader.runtime.protocol.import_headline): the visible entries' alone, since the summary is shown at once
    and a hidden check's failure may quote the hidden inputs it was called with."""
    for score in scores:
        for record in score.records:
            if not record.passed and (headline := import_headline(record.message)) is not None:
                return headline
    return None


def _counts(score: SuiteScore) -> str:
    if _shown_now(score):
        return f"{score.passed}/{len(score.records)}"
    return "not shown" if score.exercise.hidden_visibility == "hidden" else "later"


def _shown_now(score: SuiteScore) -> bool:
    return score.suite != "hidden" or score.exercise.hidden_visibility == "visible"


def _shown_points(exercises: Iterable[Sequence[SuiteScore]]) -> tuple[float, float]:
    """(earned, possible) of the entries of `exercises` shown at once: an exercise whose entries are
    all shown counts as the total does (the gate on visible points included); one whose hidden entry is
    not shown yet, its visible entry's own points alone."""
    earned = possible = 0.0
    for rows in exercises:
        now = [s for s in rows if _shown_now(s)]
        every = len(now) == len(rows)
        earned += sum(s.score if every else s.shown_score for s in now)
        possible += sum(s.max_score for s in now)
    return earned, possible


def _points_text(points: tuple[float, float]) -> str:
    return f"{points_text(points[0])} / {points_text(points[1])}"


def _breakdown(scores: Sequence[SuiteScore]) -> list[dict]:
    out = []
    for exercise, rows in _by_exercise(scores).items():
        out.append({
            "id": exercise.id,
            "title": exercise.title,
            "points": exercise.points,
            "score": cents(sum(s.score for s in rows)),
            **{s.suite: {"passed": s.passed, "total": len(s.records)} for s in rows},
        })  # fmt: skip
    return out


def _by_exercise(scores: Sequence[SuiteScore]) -> dict:
    grouped: dict = {}
    for s in scores:
        grouped.setdefault(s.exercise, []).append(s)
    return grouped


def _fit(document: dict) -> str:
    """Strict JSON within MAX_BYTES: long outputs are cut, longest first, until it fits."""
    _check_finite(document)
    text = json.dumps(document, allow_nan=False, ensure_ascii=False, indent=1)
    limit = MAX_MESSAGE_CHARS * 4
    while len(text.encode("utf-8")) > MAX_BYTES and limit >= 100:
        for test in document["tests"]:
            if len(test["output"]) > limit:
                test["output"] = test["output"][: limit - 20] + "\n... (cut)"
        document["output"] = document["output"][: limit * 4]
        text = json.dumps(document, allow_nan=False, ensure_ascii=False, indent=1)
        limit //= 2
    return text


def _check_finite(value: object) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("results.json cannot hold a non-finite number")
    if isinstance(value, dict):
        for v in value.values():
            _check_finite(v)
    elif isinstance(value, list):
        for v in value:
            _check_finite(v)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
