"""`grader batch` from its options to the files it writes, step by step.

`grader batch` from its options to the files it writes, step by step: scan the source, grade (here or
on a cluster), compare with the earlier grades (the regrade preview), keep what is replaced (history),
write grades.csv, the report, the similarity page and each student's page, and say how it went.

The grading itself is grader.batch's; this module orders its steps and tells the TA
(grader.grading.untrusted's Terminal: text a submission controls is shown escaped).
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from grader.assignment.inventory import load_inventory
from grader.assignment.manifest import Exercise, Manifest
from grader.batch.folders import previous_results, read_results, submission_folder
from grader.batch.grades import (
    MOVED,
    GradesFileError,
    change_text,
    entry_scores,
    grade_rows,
    read_grades,
    regrade_changes,
    write_rows,
)
from grader.batch.history import backups, keep
from grader.batch.keys import kit_identity
from grader.batch.outcomes import (
    COMPLETED,
    INTERRUPTED,
    RESULTS,
    BatchInterrupted,
    BatchOptions,
    Engine,
    Outcome,
)
from grader.batch.progress import BarProgress
from grader.batch.report import HISTOGRAM_PNG, PASS_RATES_PNG, REPORT_HTML, item_analysis, write_report
from grader.batch.roster import Entry, scan_source
from grader.batch.run import run_batch
from grader.errors import KitError
from grader.grading.grade import SUBMISSION_SECONDS, kit_manifest, only_exercises
from grader.grading.untrusted import Terminal, printable
from grader.layout import STUDENT
from grader.sandbox.isolation import exposed_source_warning, machine_layers

MAX_LISTED = 30  # changes of grade listed in the terminal; the rest are in the report and grades.csv
MAX_FAILED_LISTED = 20


@dataclass(frozen=True)
class BatchRequest:
    """What the TA asked `grader batch` for (its command line, parsed)."""

    source: Path  # a folder of submissions or an export zip
    grades: Path  # grades.csv; the report and GRADES-results/ go beside it
    jobs: int | None = None  # None: the CPUs
    force: bool = False
    call_timeout: float | None = None
    exercises: tuple[int, ...] = ()
    timeout: float = SUBMISSION_SECONDS
    dry_run: bool = False
    compare: Path | None = None  # an earlier grades.csv to compare with (default: the one replaced)
    cluster: str | None = None  # a Dask scheduler's address


@dataclass
class _Batch:
    """One `grader batch` run as it goes: what it grades against, then what it graded."""

    manifest: Manifest
    options: BatchOptions
    compared: dict | None  # --compare's grades.csv, read before anything is graded
    title: str  # the report's
    skipped: Sequence[tuple[str, str]] = ()  # entries that cannot be a submission, and why
    outcomes: Sequence[Outcome] = ()
    interrupted: BatchInterrupted | None = None
    pairs: list | None = None  # similar code (None: not compared)


def run_batch_command(root: Path, request: BatchRequest, terminal: Terminal) -> int:
    """`grader batch`: its exit code (0 done, 130 interrupted); bad input raises KitError (exit 2)."""
    batch = _prepare(root, request)
    if not _scan_and_grade(root, request, batch, terminal):
        return 130
    grades, prog = request.grades, terminal.prog
    identity = kit_identity(root, batch.options)
    kit = {"kit_version": identity["kit_version"], "inventory_hash": identity["inventory"] or ""}
    exercises = batch.manifest.exercises
    rows = [row for o in batch.outcomes for row in grade_rows(o, exercises, kit)]
    changes = _regrade_preview(
        grades, batch.compared, request.compare, rows, exercises, batch.outcomes, batch.options, terminal
    )
    if request.dry_run:
        _print_batch(batch.outcomes, batch.skipped, terminal)
        print(
            f"{prog}: a dry run: nothing written ({grades} and {batch.options.results_dir}/ are as they were)"
        )
        return 130 if batch.interrupted is not None else 0
    if _differs(grades, rows, exercises) and (kept := keep(grades, grades_history(grades))) is not None:
        print(f"{prog}: the earlier {grades.name} is kept as {kept}")
    write_rows(grades, rows, exercises)
    written = _write_pages(grades, batch, changes)
    _print_batch(batch.outcomes, batch.skipped, terminal)
    _note_escaped_in_files(batch.outcomes, terminal)
    print(f"{prog}: wrote {grades}, {', '.join(str(p) for p in written)}, {batch.options.results_dir}/")
    if (interrupted := batch.interrupted) is not None:
        if str(interrupted) not in ("", "SIGINT", "SIGTERM"):  # stopped for a reason of its own
            terminal.say(f"{prog}: {interrupted}", file=sys.stderr)
        done = f"{interrupted.finished} of {len(batch.outcomes)}"
        print(f"{prog}: interrupted after {done} gradings: grades.csv and the report are marked incomplete; "
              f"what finished is kept in {batch.options.results_dir}: run again to grade the rest",
              file=sys.stderr)  # fmt: skip
        return 130
    return 0


def _prepare(root: Path, request: BatchRequest) -> _Batch:
    """The kit's manifest (of the chosen exercises) and how to grade; a stale kit, a source that is not
    there or a bad --compare file fail here (KitError), before anything is graded."""
    if not request.source.exists():
        raise KitError(
            f"{request.source}: no such folder or zip (give a folder of submissions or an export zip)"
        )
    manifest = kit_manifest(root)
    inventory = load_inventory(root)  # a stale kit fails here, not once per submission
    if request.exercises:
        manifest, inventory = only_exercises(manifest, inventory, list(request.exercises))
    compared = read_grades(request.compare) if request.compare is not None else None  # a bad one: exit 2 now
    grades = request.grades
    jobs = request.jobs if request.jobs is not None else len(os.sched_getaffinity(0))
    options = BatchOptions(
        grades.parent / f"{grades.stem}-results", jobs, request.force, request.call_timeout,
        request.exercises, request.timeout, request.dry_run,
    )  # fmt: skip
    return _Batch(manifest, options, compared, batch_title(manifest.module, request.source))


def _scan_and_grade(root: Path, request: BatchRequest, batch: _Batch, terminal: Terminal) -> bool:
    """Scan the source (an export unpacked into a scratch folder), grade every entry, and compare the
    code while it is there to read; False where Ctrl-C came before grading began."""
    grades, prog = request.grades, terminal.prog
    reports = (REPORT_HTML, HISTOGRAM_PNG, PASS_RATES_PNG)
    outputs = [
        grades,
        batch.options.results_dir,
        grades_history(grades),
        *(grades.parent / n for n in reports),
    ]
    with tempfile.TemporaryDirectory(prefix="optlab-batch-") as scratch:
        roster = scan_source(request.source, Path(scratch), exclude=outputs)
        if not roster.entries:
            skipped = f" (skipped, not submissions: {_names(roster.skipped)})" if roster.skipped else ""
            raise KitError(
                f"{request.source}: no submissions in it{skipped}: give the folder that holds them"
            )
        batch.skipped = roster.skipped
        if roster.skipped:
            terminal.say(f"{prog}: skipped {_count(len(roster.skipped), 'entry', 'entries')} that cannot be "
                         f"a submission: {_names(roster.skipped)}")  # fmt: skip
        if request.cluster is None:  # on a cluster, its workers' layers are named once they answer
            print(machine_layers().summary())
            if warning := exposed_source_warning(request.source, machine_layers()):
                print(warning)
        try:
            batch.outcomes = run_batch(
                root, roster.entries, batch.options, BarProgress(), _engine(request.cluster)
            )
        except BatchInterrupted as stop:
            batch.outcomes, batch.interrupted = stop.outcomes, stop
            batch.title += f" (incomplete: {stop.finished} of {len(stop.outcomes)} graded)"
        except KeyboardInterrupt:  # before the batch began
            print(f"{prog}: interrupted before grading began", file=sys.stderr)
            return False
        if not (batch.interrupted or request.dry_run):  # while an export's submissions are there to read
            batch.pairs = _batch_similarity(
                root, batch.manifest, roster.entries, grades.parent, batch.title, terminal
            )
    return True


def _write_pages(grades: Path, batch: _Batch, changes: list) -> list[Path]:
    """The report (and its charts), each student's page.html, and similarity.html: the paths written."""
    analysis = item_analysis(batch.outcomes, batch.manifest.exercises)
    links = _results_links(batch.outcomes, batch.options, grades)
    written = write_report(grades.parent, analysis, batch.title, changes, batch.pairs, links)
    _write_student_pages(batch.outcomes, batch.options)
    if batch.pairs is not None:
        from grader.batch.similarity import SIMILARITY_HTML

        written.append(grades.parent / SIMILARITY_HTML)
    return written


def grades_history(grades: Path) -> Path:
    """Where every grades.csv a batch replaced is kept, under the time it was written: GRADES-history/."""
    return grades.parent / f"{grades.stem}-history"


def batch_title(module: str, source: Path, today: str | None = None) -> str:
    """The report's title: the assignment (the lab module), the source's name and the date."""
    name = source.resolve().name or str(source.resolve())
    return f"{module}.py: {name}, graded {today or datetime.date.today().isoformat()}"


def stub_text(root: Path) -> str:
    """The stub's text, the similarity check's boilerplate ("" where the kit has none)."""
    stub = root / STUDENT
    return stub.read_text(encoding="utf-8") if stub.is_file() else ""


def _engine(cluster: str | None) -> Engine | None:
    """The batch's way of grading: a Dask cluster's workers with --cluster, else this machine's pool."""
    if cluster is None:
        return None
    from grader.batch.cluster import on_cluster

    return on_cluster(cluster)


def _batch_similarity(
    root: Path, manifest: Manifest, entries: Sequence[Entry], folder: Path, title: str, terminal: Terminal
) -> list | None:
    """similarity.html beside grades.csv, where copydetect is installed; the pairs (None: not run)."""
    from grader.batch.similarity import SIMILARITY_HTML, SimilarityUnavailable, compare, write_similarity

    if len(entries) < 2:
        return None
    try:
        pairs, left_out = compare(list(entries), manifest, stub_text(root))
    except SimilarityUnavailable as error:
        print(f"{terminal.prog}: no similarity check: {error}")
        return None
    write_similarity(folder / SIMILARITY_HTML, pairs, left_out, f"Similarity: {title}")
    return pairs


def _regrade_preview(
    grades: Path,
    compared: dict | None,
    compare: Path | None,
    rows: list,
    exercises: Sequence[Exercise],
    outcomes: Sequence[Outcome],
    options: BatchOptions,
    terminal: Terminal,
) -> list:
    """Whose grade changes against `--compare`'s grades.csv, else the grades.csv about to be replaced
    (kept in GRADES-history/ when it changes); printed before grades.csv is written. A row that had no
    grade there (not reached, crashed) is compared with the newest kept grades.csv that has one. Which
    results entries changed comes from the earlier results.json: the one a regrade kept (in a dry run:
    the one in place), or, for `--compare`, the one in that grades.csv's own results folder."""
    prog = terminal.prog
    old, against = compared, compare
    if old is None and grades.is_file():
        try:
            old, against = read_grades(grades), grades
        except GradesFileError as error:
            print(f"{prog}: {error}; it is replaced without a comparison")
    if old is None or against is None:
        return []
    after = {o.entry.file: entry_scores(o.document) for o in outcomes}
    before = {
        o.entry.file: entry_scores(document)
        for o, path in _earlier_results(against, grades, outcomes, options)
        if path is not None and (document := read_results(path))
    }
    if against == grades:  # this batch's own folder: what a regrade replaced
        old = _graded_in_history(old, grades_history(grades))
    found = regrade_changes(old, rows, exercises, before, after)
    changes = [c for c in found if c.counts]
    would = "would change" if options.dry_run else "change"
    if changes:
        print(f"{prog}: {_count(len(changes), 'grade')} {would} against {against}:")
        _list(changes, "see the report", terminal)
    else:
        print(f"{prog}: no grade {would} against {against}")
    moved = [c for c in found if c.kind == MOVED]
    others = [c for c in found if not c.counts and c.kind != MOVED]
    for listed, why in ((moved, "the same total, points moved between exercises"),
                        (others, "a row with no grade on one side")):  # fmt: skip
        if listed:
            print(f"{prog}: not changes of a grade ({len(listed)}): {why}")
        _list(listed, "see grades.csv", terminal)
    return changes


def _earlier_results(
    against: Path, grades: Path, outcomes: Sequence[Outcome], options: BatchOptions
) -> list[tuple[Outcome, Path | None]]:
    """Each outcome's earlier results.json: the one a regrade of this batch's folder kept (in a dry run,
    the one in place), or the one in `against`'s own results folder."""
    if against == grades:
        folders = [(o, submission_folder(options.results_dir, o.entry)) for o in outcomes if not o.skipped]
        return [(o, f / RESULTS if options.dry_run else previous_results(f)) for o, f in folders]
    folder = against.parent / f"{against.stem}-results"
    return [(o, submission_folder(folder, o.entry) / RESULTS) for o in outcomes]


def _list(changes: Sequence, more: str, terminal: Terminal) -> None:
    """Up to MAX_LISTED changes, one line each, then how many more and where they are."""
    for change in changes[:MAX_LISTED]:
        terminal.say(f"  {change_text(change)}")
    if len(changes) > MAX_LISTED:
        print(f"  ... and {len(changes) - MAX_LISTED} more ({more})")


def _graded_in_history(old: dict, history: Path) -> dict:
    """`old`'s rows, each without a grade (not reached, crashed) replaced by the newest kept grades.csv's
    row of that file that has one: an interrupted regrade hides no earlier grade from the next preview."""
    missing = {file for file, row in old.items() if not row.get("total_points_earned")}
    old = dict(old)
    for backup in backups(history, "grades", ".csv") if missing else []:
        try:
            earlier = read_grades(backup)
        except (GradesFileError, OSError):
            continue
        for file in [f for f in missing if (earlier.get(f) or {}).get("total_points_earned")]:
            old[file] = earlier[file]
            missing.discard(file)
        if not missing:
            break
    return old


def _differs(grades: Path, rows: list, exercises: Sequence[Exercise]) -> bool:
    """Whether writing `rows` would change grades.csv at `grades` (an existing one)."""
    if not grades.is_file():
        return False
    with tempfile.TemporaryDirectory(prefix="optlab-grades-") as scratch:
        write_rows(Path(scratch) / grades.name, rows, exercises)
        new = (Path(scratch) / grades.name).read_bytes()
    with open(grades, "rb") as handle:
        return handle.read() != new


def _results_links(outcomes: Sequence[Outcome], options: BatchOptions, grades: Path) -> dict[str, str]:
    """Each submission's results.json, as report.html (beside grades.csv) links to it."""
    return {
        o.entry.file: quote(
            os.path.relpath(submission_folder(options.results_dir, o.entry) / RESULTS, grades.parent)
        )
        for o in outcomes
    }


def _write_student_pages(outcomes: Sequence[Outcome], options: BatchOptions) -> None:
    """Each submission's page.html beside its results.json: the page its student sees on Gradescope."""
    from grader.batch.student_page import write_student_page

    for outcome in outcomes:
        results = submission_folder(options.results_dir, outcome.entry) / RESULTS
        write_student_page(results, f"{outcome.entry.file}, as its student sees it on Gradescope")


def _print_batch(outcomes: Sequence[Outcome], skipped: Sequence[tuple[str, str]], terminal: Terminal) -> None:
    """One summary line whose every part adds up to the submissions, then what was not scored."""
    total = len(outcomes)
    kept = sum(o.skipped for o in outcomes)
    rescored = sum(o.rescored for o in outcomes)
    left = sum(o.status == INTERRUPTED for o in outcomes)
    failed = [o for o in outcomes if o.status != COMPLETED]
    kinds = Counter(o.status for o in failed)
    why = f" ({', '.join(f'{n} {status}' for status, n in sorted(kinds.items()))})" if failed else ""
    line = f"{terminal.prog}: {_count(total, 'submission')}: {total - len(failed)} scored, "
    line += f"{len(failed)} not scored"
    line += f"{why}; {total - kept - left - rescored} graded now, "
    if rescored:
        line += f"{rescored} re-scored from their kept results.json (points alone changed), "
    line += f"{kept} kept from an earlier run"
    if left:
        line += f", {left} not reached"
    if skipped:
        line += f"; {_count(len(skipped), 'entry', 'entries')} skipped (not submissions)"
    print(line)
    for outcome in failed[:MAX_FAILED_LISTED]:
        terminal.say(f"  {outcome.entry.file}: {outcome.grading_status}")
    if len(failed) > MAX_FAILED_LISTED:
        print(f"  ... and {len(failed) - MAX_FAILED_LISTED} more (see grades.csv)")


def _note_escaped_in_files(outcomes: Sequence[Outcome], terminal: Terminal) -> None:
    """Say once, where grades.csv or the report holds text from submissions that was escaped, that it
    does (the names, emails, sids and statuses of its rows)."""
    people = [str(value) for o in outcomes for p in o.entry.submitters for value in vars(p).values()]
    texts = [*(o.entry.file for o in outcomes), *(o.grading_status for o in outcomes), *people]
    if any(printable(text, False) != text for text in texts):
        terminal.note_escaped(sys.stdout)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _names(skipped: Sequence[tuple[str, str]], shown: int = 8) -> str:
    names = ", ".join(name for name, _ in skipped[:shown])
    return names + (f" and {len(skipped) - shown} more" if len(skipped) > shown else "")
