"""The `grader` command line (also `python -m grader`): parse arguments, run a command, map errors to exits.

Exit codes: 0 done, 1 a check failed (a stale tree), 2 bad input (one line on stderr, never a traceback),
3 the grading failed (`grader grade`: its results.json says why, and says it is no score).

Text a submission controls (what it printed, file and folder names, statuses and reasons, export names)
reaches the terminal only through `_say` (grader.grading.untrusted.Terminal): escaped, what a submission
printed marked line by line; the first time anything was escaped, a line says so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from grader.assignment.scoring import points_text
from grader.errors import KitError
from grader.grading.grade import GRADING_FAILED, SUBMISSION_SECONDS, Graded, grade
from grader.grading.intake import privately
from grader.grading.untrusted import Terminal
from grader.layout import MANIFEST, find_root, installed_root
from grader.sandbox.isolation import hide_command_line, machine_layers

if TYPE_CHECKING:
    pass

# The other commands import their stages when they run: the autograder zip ships only the grading path.

PROG = "grader"
_ROOT_HELP = (
    "the kit tree (default: the nearest folder at or above the current one holding grader/exercises.toml, "
    "else the kit this grader was installed from)"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: sys.argv[1:]); returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0), or bad arguments, said in one line (2)
        return done.code if isinstance(done.code, int) else 2
    _TERMINAL.forget()
    if argv is None and args.command in ("grade", "batch") and os.geteuid() == 0:
        hide_command_line(f"{PROG} {args.command}")  # workers run beside this process: its paths hidden
    try:
        return args.run(args, kit_root(args.root, Path.cwd()))
    except KitError as error:
        return _fail(str(error))
    except OSError as error:
        return _fail(f"{error.filename}: {error.strerror}" if error.filename else str(error))


class _Parser(argparse.ArgumentParser):
    """argparse, with bad arguments told in one line, as every other bad input is, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (see {self.prog} --help)\n")


def kit_root(given: Path | None, here: Path) -> Path:
    """The kit the command works on: `--root`, else the nearest kit at or above `here`, else the kit this
    grader was installed from; a KitError that says how to point at one when there is none."""
    if given is not None:
        if not (given / MANIFEST).is_file():
            raise KitError(f"{given}: not a kit (no {MANIFEST} there): give --root the kit's own folder")
        return given
    found = find_root(here)
    if (found / MANIFEST).is_file():
        return found
    installed = installed_root()
    if installed is None:
        raise KitError(
            f"no kit at or above {here}, and this grader was not installed from one: "
            "run it inside the kit's folder or give --root KIT"
        )
    return installed


def number(kind: type[int] | type[float], low: float, high: float, above: bool = False):
    """An argparse type: a `kind` from `low` (or above it) to `high`, else exit 2 with what is allowed."""
    words = "a whole number" if kind is int else "a number"
    allowed = f"{'above' if above else 'from'} {low:g} {'and at most' if above else 'to'} {high:g}"

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {words} (give one {allowed})") from None
        if not math.isfinite(value) or not (low < value if above else low <= value) or value > high:
            raise argparse.ArgumentTypeError(f"{text} is out of range (give {words} {allowed})")
        return value

    return parse


_SECONDS = number(float, 0, 7 * 24 * 3600, above=True)  # a week: anything longer is a typo
_CALL_SECONDS = number(float, 0, 3600, above=True)
_EXERCISE = number(int, 1, 999)
_JOBS = number(int, 1, 1024)
_SHARE = number(float, 0, 1, above=True)


def build_parser() -> argparse.ArgumentParser:
    """The parser; each subcommand sets `run(args, root) -> exit code`. Every option's help says its
    default."""
    from grader.sandbox.sandbox import Limits  # the per-call bound's default, said once

    # --root is accepted before or after the subcommand
    root_option = _Parser(add_help=False)
    root_option.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=_ROOT_HELP)
    # grade and batch: the same per-call limit and choice of exercises
    grading_options = _Parser(add_help=False)
    grading_options.add_argument(
        "--call-timeout", type=_CALL_SECONDS, default=None, metavar="S",
        help=f"seconds of CPU per call into the submission (default {Limits.call_seconds:g})",
    )  # fmt: skip
    grading_options.add_argument(
        "--exercise", type=_EXERCISE, action="append", metavar="N",
        help="grade only exercise N (repeatable; default: every exercise)",
    )  # fmt: skip
    parser = _Parser(prog=PROG, description="Build, check and grade the optimization lab.")
    parser.add_argument("--root", type=Path, default=None, help=_ROOT_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    summary = "write student/ from solutions/ and the manifest"
    build_command = commands.add_parser("build", help=summary, description=summary, parents=[root_option])
    build_command.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file is stale"
    )
    build_command.set_defaults(run=_run_build)

    summary = (
        "run both suites on the reference (all pass) and on the stubs (all fail with NotImplementedError)"
    )
    validate_command = commands.add_parser(
        "validate", help=summary, description=summary, parents=[root_option]
    )
    validate_command.add_argument(
        "--exercise", type=_EXERCISE, action="append", metavar="N",
        help="check only exercise N (repeatable; default: every exercise)",
    )  # fmt: skip
    validate_command.add_argument(
        "--no-trivial", action="store_true", help="skip the trivial-answer check (grader.authoring.trivial)"
    )
    validate_command.set_defaults(run=_run_validate)

    summary = "grade one submission (a .py file, a folder or a .zip) into Gradescope's results.json"
    grade_command = commands.add_parser(
        "grade", help=summary, description=summary, parents=[root_option, grading_options]
    )
    grade_command.add_argument(
        "submission",
        type=Path,
        metavar="SUBMISSION",
        help="a .py file, a folder or a .zip holding the module",
    )
    grade_command.add_argument(
        "-o", "--output", type=Path, default=None, metavar="RESULTS",
        help="where to write results.json (default: beside the submission, NAME.results.json)",
    )  # fmt: skip
    grade_command.add_argument(
        "--run-timeout", type=_SECONDS, default=None, metavar="S",
        help="wall-clock seconds for the whole grading (default: the manifest's [budget] wall_seconds)",
    )  # fmt: skip
    grade_command.set_defaults(run=_run_grade)

    summary = (
        "grade every submission of a folder or a Gradescope export zip, in parallel, into grades.csv, "
        "each one's results.json and an item-analysis report"
    )
    batch_command = commands.add_parser(
        "batch", help=summary, description=summary, parents=[root_option, grading_options]
    )
    batch_command.add_argument(
        "source", type=Path, metavar="SOURCE",
        help="a folder of submissions (a file or folder each) or Gradescope's Export Submissions zip",
    )  # fmt: skip
    where = batch_command.add_mutually_exclusive_group()
    where.add_argument(
        "-j", "--jobs", type=_JOBS, default=None, metavar="N", help="submissions at once (default: CPUs)"
    )
    where.add_argument(
        "--cluster", default=None, metavar="ADDRESS",
        help="grade on the workers of the Dask scheduler at ADDRESS (tcp://HOST:PORT; needs .[cluster]; "
        "default: this machine)",
    )  # fmt: skip
    batch_command.add_argument(
        "-o", "--output", type=Path, default=Path("grades.csv"), metavar="GRADES",
        help="where to write grades.csv; the report and GRADES-results/ go beside it (default grades.csv)",
    )  # fmt: skip
    batch_command.add_argument("--force", action="store_true", help="grade again what is already graded")
    batch_command.add_argument(
        "--dry-run", action="store_true",
        help="grade what needs grading in a scratch folder and print whose grade would change; write nothing",
    )  # fmt: skip
    batch_command.add_argument(
        "--compare", type=Path, default=None, metavar="OLD_GRADES.csv",
        help="list whose grade changes against this earlier grades.csv (default: the one being replaced)",
    )  # fmt: skip
    batch_command.add_argument(
        "--timeout", type=_SECONDS, default=SUBMISSION_SECONDS, metavar="S",
        help=f"wall-clock seconds per submission (default {SUBMISSION_SECONDS:g})",
    )  # fmt: skip
    batch_command.set_defaults(run=_run_batch)

    summary = (
        "compare the exercise code of a folder's submissions (copydetect; the stub as boilerplate) into a "
        "side-by-side page for TAs: never part of a grade"
    )
    similarity_command = commands.add_parser(
        "similarity", help=summary, description=summary, parents=[root_option]
    )
    similarity_command.add_argument(
        "source", type=Path, metavar="SOURCE", help="a folder of submissions or Gradescope's export zip"
    )
    similarity_command.add_argument(
        "-o", "--output", type=Path, default=Path("similarity.html"), metavar="HTML",
        help="where to write the page (default similarity.html)",
    )  # fmt: skip
    similarity_command.add_argument(
        "--threshold", type=_SHARE, default=0.5, metavar="SHARE",
        help="list pairs where one shares at least this share of its exercise code (default 0.5)",
    )  # fmt: skip
    similarity_command.set_defaults(run=_run_similarity)

    summary = "write dist/autograder.zip (Gradescope, otter run, otter grade) and dist/student-handout.zip"
    package_command = commands.add_parser("package", help=summary, description=summary, parents=[root_option])
    package_command.add_argument(
        "-o", "--output", type=Path, default=Path("dist"), metavar="DIST",
        help="the folder for autograder.zip and student-handout.zip (default dist)",
    )  # fmt: skip
    package_command.set_defaults(run=_run_package)
    return parser


def _run_build(args: argparse.Namespace, root: Path) -> int:
    from grader.authoring.build import build

    report = build(root, check=args.check)
    if args.check:
        for path in report.stale:
            print(f"{PROG}: stale: {path.as_posix()} (run: grader build)", file=sys.stderr)
        if not report.stale:
            print(f"{PROG}: up to date: {', '.join(path.as_posix() for path in report.outputs)}")
        _note_stale_autograder(root)
        return 1 if report.stale else 0
    for path in report.outputs:
        state = "wrote" if path in report.stale else "up to date"
        print(f"{PROG}: {state}: {path.as_posix()}")
    _note_stale_autograder(root)
    return 0


def _note_stale_autograder(root: Path) -> None:
    """Say when dist/autograder.zip no longer grades with the kit as it is (Gradescope keeps the old)."""
    from grader.packaging.package import stale_autograder_note

    if note := stale_autograder_note(root):
        print(f"{PROG}: {note}")


def _run_validate(args: argparse.Namespace, root: Path) -> int:
    from grader.authoring.build import stale_problem
    from grader.authoring.validate import report_rows, validate

    if problem := stale_problem(root):
        return _fail(problem)
    checks = validate(root, args.exercise)
    for row in report_rows(checks):
        print(row, flush=True)
    bad = {c.exercise.label for c in checks if c.problems}
    if not args.no_trivial:
        bad |= _validate_trivial(root, args.exercise)
    print(f"{PROG}: {len(checks) - len(bad)} of {len(checks)} exercises ok")
    return 1 if bad else 0


def _validate_trivial(root: Path, exercises: Sequence[int] | None) -> set[str]:
    """Grade the trivial answers of `exercises` (default: all), print them; the exercises over the bar."""
    import time

    from grader.assignment.inventory import load_inventory
    from grader.authoring.trivial import MAX_SHARE, check_trivial, report_rows
    from grader.authoring.validate import validated_manifest
    from grader.grading.grade import only_exercises

    manifest = validated_manifest(root)
    if exercises:
        manifest, _ = only_exercises(manifest, load_inventory(root), exercises)
    started = time.monotonic()
    print(f"\n{report_rows([])[0]} (at most {100 * MAX_SHARE:g}% each)", flush=True)
    checks = check_trivial(
        root,
        manifest.exercises,
        progress=lambda c: print("\n".join(report_rows([c], header=False)), flush=True),
        jobs=len(os.sched_getaffinity(0)),
    )
    print(f"{PROG}: trivial answers of {len(checks)} exercises graded in {time.monotonic() - started:.0f} s")
    for check in checks:
        for problem in check.problems:
            print(f"{PROG}: {check.exercise.label}: {problem}")
    return {c.exercise.label for c in checks if c.problems}


def _grade_privately(root: Path, args: argparse.Namespace) -> Graded:
    """`grade` of the submission; as root, of a copy no worker uid can read (the grading's command lines
    name that copy, never the submission's own path)."""
    if os.geteuid() != 0:
        return grade(root, args.submission, args.output, args.call_timeout, args.exercise, args.run_timeout)
    with privately(args.submission) as submission:
        return grade(root, submission, args.output, args.call_timeout, args.exercise, args.run_timeout)


def results_beside(submission: Path) -> Path:
    """Where `grade` writes without -o: beside the submission, named after it (ada.py -> ada.results.json),
    so that grading several submissions in one folder overwrites none."""
    submission = submission.resolve()
    stem = submission.stem if submission.suffix.lower() in (".py", ".zip") else submission.name
    return submission.parent / f"{stem}.results.json"


def _run_grade(args: argparse.Namespace, root: Path) -> int:
    if not args.submission.exists():
        return _fail(f"{args.submission}: no such file or folder (give a .py file, a folder or a .zip)")
    chosen = args.output is not None
    if not chosen:
        args.output = results_beside(args.submission)
    print(machine_layers().summary())
    try:
        graded = _grade_privately(root, args)
    except OSError as error:  # results.json itself could not be written (a full disk, a read-only folder)
        where = error.filename or args.output
        hint = "" if chosen else " (give -o PATH to write results.json elsewhere)"
        _say(f"{PROG}: error: the grading failed: {where}: {error.strerror or error}{hint}", file=sys.stderr)
        return GRADING_FAILED
    _say(graded.document["output"], lines=True)
    if graded.printed.strip():
        print("\n--- what the submission printed (first 2000 characters) ---")
        _TERMINAL.say_printed(graded.printed[:2000])
    if graded.failed:
        _say(f"{PROG}: error: the grading failed, no score was given: {graded.failed}", file=sys.stderr)
        print(f"{PROG}: wrote {args.output} (it says the grading failed)")
        return GRADING_FAILED
    possible = graded.document["extra_data"].get("points_possible")
    if possible is not None:  # the summary above is what students see at once; this is the grade
        score = f"{points_text(graded.document['score'])} / {points_text(possible)}"
        print(f"\n{PROG}: score {score}, hidden checks included")
    print(f"{PROG}: wrote {args.output}")
    return 0


def _run_batch(args: argparse.Namespace, root: Path) -> int:
    from grader.batch.command import BatchRequest, run_batch_command

    request = BatchRequest(
        args.source, args.output, args.jobs, args.force, args.call_timeout, tuple(args.exercise or ()),
        args.timeout, args.dry_run, args.compare, args.cluster,
    )  # fmt: skip
    return run_batch_command(root, request, _TERMINAL)


def _run_similarity(args: argparse.Namespace, root: Path) -> int:
    import time

    from grader.batch.command import batch_title, stub_text
    from grader.batch.roster import scan_source
    from grader.batch.similarity import compare, write_similarity
    from grader.grading.grade import kit_manifest

    if not args.source.exists():
        return _fail(f"{args.source}: no such folder or zip (give a folder of submissions or an export zip)")
    manifest = kit_manifest(root)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="optlab-similarity-") as scratch:
        roster = scan_source(args.source, Path(scratch))
        if len(roster.entries) < 2:
            return _fail(f"{args.source}: fewer than two submissions in it, nothing to compare")
        pairs, left_out = compare(roster.entries, manifest, stub_text(root), args.threshold)
    write_similarity(args.output, pairs, left_out, f"Similarity: {batch_title(manifest.module, args.source)}")
    seconds = time.monotonic() - started
    found = f"{len(pairs)} pair(s) at or above {args.threshold:g}"
    print(f"{PROG}: {len(roster.entries)} submissions compared in {seconds:.1f} s: {found}")
    for pair in pairs[:20]:
        _say(f"  {pair.first} & {pair.second}: {100 * pair.similarity:.0f}%")
    print(f"{PROG}: wrote {args.output}")
    return 0


def _run_package(args: argparse.Namespace, root: Path) -> int:
    from grader.packaging.handout import HANDOUT_ZIP, handout_leaks, write_handout
    from grader.packaging.package import AUTOGRADER_ZIP, autograder_behind, write_autograder

    earlier = args.output / AUTOGRADER_ZIP
    changed = autograder_behind(root, earlier) if earlier.is_file() else None
    existed = earlier.is_file()
    autograder = write_autograder(root, args.output)
    handout = write_handout(root, args.output / HANDOUT_ZIP)
    leaks = handout_leaks(handout, root)
    if leaks:
        handout.unlink()
        for leak in leaks:
            print(f"{PROG}: handout leak: {leak}", file=sys.stderr)
        return _fail(f"the student handout would leak {len(leaks)} secret(s); it was not written")
    for path in (autograder, handout):
        print(f"{PROG}: wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    if not existed:
        print(f"{PROG}: upload {autograder} to the Gradescope assignment (its autograder)")
    elif changed is not None:
        print(f"{PROG}: {autograder} changed ({changed.as_posix()} with it): upload it to Gradescope "
              "again (the assignment grades with the zip uploaded last)")  # fmt: skip
    else:
        print(f"{PROG}: {autograder} grades as the one it replaced: no new upload needed")
    return 0


def _fail(message: str) -> int:
    _say(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


_TERMINAL = Terminal(PROG)  # this command's output to the TA
_say = _TERMINAL.say
