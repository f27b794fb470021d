"""Grade the kit's corpus of realistic mistakes (tests/kit/mistakes/, issue 24) through the suites, as
`grader grade` grades a submission, and say what each mistake costs.

    .venv/bin/python scripts/mistakes.py [--exercise N ...] [--id ID ...] [--jobs N] [--scope reach|all]
                                         [--kit PATH] [--markdown docs/mistakes.md [--before PATH]]

Per mistake: the points on its own exercise (of its maximum), which suite caught it, the points lost on
other exercises (each a fault-isolation failure); per exercise the catch rate. The corpus and its
promises are this kit's, applied to this kit's reference; `--kit PATH` grades them with the suites,
inventory and manifest of another kit tree (a checkout of main, say). `--scope reach` (default) grades
each mistake on its own exercise and every exercise with a check that can reach its function (the
checks' calls recorded on the reference); `all` on every exercise (slower; also sees a mistake that
changes a global another exercise reads). `--markdown FILE` writes the report; with `--before PATH`
it grades the corpus with that kit's suites too and sets the catch rates side by side.
Exit 1 when a mistake earns full marks on its exercise, loses points on another, or an entry is bad.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.mistakes import (  # noqa: E402
    Graded,
    Mistake,
    corpus_failures,
    grade_corpus,
    reach,
    read_kit_corpus,
    recorded_calls,
)
from grader.scoring import points_text  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exercise", type=int, action="append", metavar="N", help="only exercise N's")
    parser.add_argument("--id", action="append", metavar="ID", help="only the mistake ID (repeatable)")
    parser.add_argument("--jobs", "-j", type=int, default=len(os.sched_getaffinity(0)), metavar="N")
    parser.add_argument("--scope", choices=("reach", "all"), default="reach")
    parser.add_argument("--kit", type=Path, default=KIT, help="the kit whose suites grade (default: this)")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the report here")
    parser.add_argument("--before", type=Path, metavar="PATH", help="with --markdown: the kit before")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.before and not args.markdown:
        parser.error("--before needs --markdown")
    for kit in (args.kit, args.before):
        if kit is not None and not (kit / "grader" / "exercises.toml").is_file():
            parser.error(f"{kit}: not a kit tree (no grader/exercises.toml)")
    mistakes, problems = read_kit_corpus(KIT)
    for problem in problems:
        print(f"bad entry: {problem}")
    mistakes = [
        m
        for m in mistakes
        if (not args.exercise or m.exercise in args.exercise) and (not args.id or m.id in args.id)
    ]
    if args.id and (unknown := set(args.id) - {m.id for m in mistakes}):
        parser.error(f"no mistake {sorted(unknown)[0]} in {KIT / 'tests/kit/mistakes'}")
    print(f"{len(mistakes)} mistakes, graded with the suites of {args.kit.resolve()} ({args.scope})")
    after = run(args.kit.resolve(), mistakes, args.jobs, args.scope)
    failures = corpus_failures(after)
    for failure in failures:
        print(f"FAIL {failure}")
    if args.markdown:
        before = None
        if args.before:
            print(f"and with the suites of {args.before.resolve()}")
            # before: only the catch rate counts, so only each mistake's own exercise is graded
            before = run(args.before.resolve(), mistakes, args.jobs, "own", quiet=True)
        args.markdown.write_text(markdown(mistakes, after, before, args.kit, args.before), encoding="utf-8")
        print(f"wrote {args.markdown}")
    return 1 if failures or problems else 0


def run(kit: Path, mistakes: list[Mistake], jobs: int, scope: str, quiet: bool = False) -> list[Graded]:
    started = time.monotonic()
    reached: dict[str, set[int]] | None = {} if scope == "own" else None
    if scope == "reach" and mistakes:
        calls = recorded_calls(kit)
        if calls is None:
            print(f"{kit}: its plugin records no calls (--record-calls): every exercise grades every mistake")
        else:
            reached = reach(kit, calls)
    graded = grade_corpus(
        kit, mistakes, jobs, "all" if reached is None else scope,
        done=None if quiet else lambda g: print(row(g), flush=True), reached=reached,
    )  # fmt: skip
    print()
    for exercise, (caught, count) in catch_rates(graded).items():
        print(f"exercise {exercise:>2}: {caught} of {count} caught")
    total = sum(g.caught for g in graded)
    print(f"all: {total} of {len(graded)} caught; {len([g for g in graded if g.lost_elsewhere])} lose "
          f"points on another exercise; {time.monotonic() - started:.0f} s")  # fmt: skip
    for line in kept_by_role(kit, graded):
        print(line)
    return graded


def kept_by_role(kit: Path, graded: list[Graded]) -> list[str]:
    """The median share of its exercise a mistake keeps, for mistakes of value promises (the core) and
    of the others (issue 30: at most 40% and at least 75%), and how many of the others lose over half."""
    from grader.inventory import load_inventory
    from grader.promises import VALUE, inventory_promises

    promises = inventory_promises(load_inventory(kit))
    shares: dict[bool, list[float]] = {True: [], False: []}
    for g in graded:
        promise = promises.get(g.mistake.promise)
        if not g.failed and g.own_max and promise is not None:
            shares[promise.kind == VALUE].append(g.own_points / g.own_max)
    out = []
    for core, label in ((True, "value promises"), (False, "other promises")):
        if kept := shares[core]:
            median = f"{len(kept)}, median kept {statistics.median(kept):.0%}"
            over_half = "" if core else f"; {sum(k < 0.5 for k in kept)} lose more than half"
            out.append(f"mistakes of {label}: {median}{over_half}")
    return out


def row(g: Graded) -> str:
    m = g.mistake
    if g.failed:
        return f"ex{m.exercise:02} {m.id}: the grading failed: {g.failed}"
    visible, hidden = g.caught_by
    by = "+".join(s for s, hit in (("visible", visible), ("hidden", hidden)) if hit) or "NOT CAUGHT"
    elsewhere = ", ".join(f"ex{e:02} -{points_text(p)}" for e, p in sorted(g.lost_elsewhere.items()))
    return (
        f"ex{m.exercise:02} {m.id:44} {points_text(g.own_points):>5}/{points_text(g.own_max):<5} "
        f"{by:15} elsewhere: {elsewhere or '-'}"
    )


def catch_rates(graded: list[Graded]) -> dict[int, tuple[int, int]]:
    out: dict[int, tuple[int, int]] = {}
    for g in sorted(graded, key=lambda g: g.mistake.exercise):
        caught, count = out.get(g.mistake.exercise, (0, 0))
        out[g.mistake.exercise] = (caught + g.caught, count + 1)
    return out


def markdown(
    mistakes: list[Mistake], after: list[Graded], before: list[Graded] | None, kit: Path, old: Path | None
) -> str:
    lines = [
        "# The corpus of realistic mistakes: what the suites catch",
        "",
        "Written by `scripts/mistakes.py --markdown` (issue 24): each mistake of `tests/kit/mistakes/` is",
        "the reference with one edit a student who read the docstring could make, graded as `grader grade`",
        "grades a submission. A mistake is caught when it loses points on its own exercise; it must lose",
        "none on any other.",
        "",
    ]
    rates = catch_rates(after)
    old_rates = catch_rates(before) if before is not None else {}
    header = "| exercise | caught before | caught now |" if before is not None else "| exercise | caught |"
    lines += [header, "|---|---|---|" if before is not None else "|---|---|"]
    for exercise, (caught, count) in rates.items():
        now = f"{caught} of {count}"
        if before is not None:
            was = old_rates.get(exercise, (0, count))
            lines.append(f"| {exercise} | {was[0]} of {was[1]} | {now} |")
        else:
            lines.append(f"| {exercise} | {now} |")
    total = f"{sum(g.caught for g in after)} of {len(after)}"
    if before is not None:
        lines.append(f"| all | {sum(g.caught for g in before)} of {len(before)} | {total} |")
    else:
        lines.append(f"| all | {total} |")
    lines += ["", "Each mistake: the points it keeps on its own exercise (of its maximum); what caught it."]
    lines.append("")
    olds = {g.mistake.id: g for g in before or []}
    head = "| mistake | exercise | promise | what the student did | points kept | caught by |"
    columns = 7 if before is not None else 6
    lines += [head + (" before |" if before is not None else ""), "|---" * columns + "|"]
    for g in after:
        m = g.mistake
        visible, hidden = g.caught_by
        by = ", ".join(s for s, hit in (("visible", visible), ("hidden", hidden)) if hit) or "**not caught**"
        kept = f"{points_text(g.own_points)} of {points_text(g.own_max)}"
        cells = [f"`{m.id}`", str(m.exercise), f"`{m.promise}`", m.says.replace("|", "\\|"), kept, by]
        if before is not None:
            was = olds.get(m.id)
            cells.append(f"{points_text(was.own_points)} of {points_text(was.own_max)}" if was else "-")
        lines.append("| " + " | ".join(cells) + " |")
    leaks = [g for g in after if g.lost_elsewhere]
    lines += ["", f"Points lost on another exercise: {len(leaks)} mistake(s)."]
    lines += [f"- `{g.mistake.id}`: {g.lost_elsewhere}" for g in leaks]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
