"""The `grader` command line (also `python -m grader`): parse arguments, run a command, map errors to exits.

Exit codes: 0 done, 1 a check failed (a stale tree), 2 bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from grader.build import build
from grader.errors import KitError
from grader.grading import grade
from grader.layout import find_root
from grader.validate import report_rows, validate

PROG = "grader"
_ROOT_HELP = (
    "the kit tree (default: the nearest folder at or above the current one holding grader/exercises.toml)"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default: sys.argv[1:]); returns the exit code."""
    args = build_parser().parse_args(argv)
    root = args.root if args.root is not None else find_root(Path.cwd())
    try:
        return args.run(args, root)
    except KitError as error:
        return _fail(str(error))
    except OSError as error:
        return _fail(f"{error.filename}: {error.strerror}" if error.filename else str(error))


def build_parser() -> argparse.ArgumentParser:
    """The parser; each subcommand sets `run(args, root) -> exit code`."""
    # --root is accepted before or after the subcommand
    root_option = argparse.ArgumentParser(add_help=False)
    root_option.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=_ROOT_HELP)
    parser = argparse.ArgumentParser(prog=PROG, description="Build, check and grade the optimization lab.")
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
    validate_command.set_defaults(run=_run_validate)

    summary = "grade one submission (a .py file, a folder or a .zip) into Gradescope's results.json"
    grade_command = commands.add_parser("grade", help=summary, description=summary, parents=[root_option])
    grade_command.add_argument("submission", type=Path, metavar="SUBMISSION")
    grade_command.add_argument("-o", "--output", type=Path, default=Path("results.json"), metavar="RESULTS")
    grade_command.add_argument(
        "--call-timeout", type=float, default=None, metavar="S", help="seconds per call"
    )
    grade_command.add_argument(
        "--exercise", type=int, action="append", metavar="N", help="grade only exercise N (repeatable)"
    )
    grade_command.set_defaults(run=_run_grade)
    return parser


def _run_build(args: argparse.Namespace, root: Path) -> int:
    report = build(root, check=args.check)
    if args.check:
        for path in report.stale:
            print(f"{PROG}: stale: {path.as_posix()} (run: grader build)", file=sys.stderr)
        if not report.stale:
            print(f"{PROG}: up to date: {', '.join(path.as_posix() for path in report.outputs)}")
        return 1 if report.stale else 0
    for path in report.outputs:
        state = "wrote" if path in report.stale else "up to date"
        print(f"{PROG}: {state}: {path.as_posix()}")
    return 0


def _run_validate(args: argparse.Namespace, root: Path) -> int:
    stale = build(root, check=True).stale
    if stale:
        return _fail(f"{stale[0].as_posix()} is stale: run grader build first")
    checks = validate(root)
    for row in report_rows(checks):
        print(row)
    bad = [c for c in checks if c.problems]
    print(f"{PROG}: {len(checks) - len(bad)} of {len(checks)} exercises ok")
    return 1 if bad else 0


def _run_grade(args: argparse.Namespace, root: Path) -> int:
    if not args.submission.exists():
        return _fail(f"{args.submission}: no such file or folder (give a .py file, a folder or a .zip)")
    graded = grade(root, args.submission, args.output, args.call_timeout, args.exercise)
    print(graded.document["output"])
    if graded.printed.strip():
        print("\n--- what the submission printed (first 2000 characters) ---")
        print(graded.printed[:2000])
    print(f"\n{PROG}: wrote {args.output}")
    return 0


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2
