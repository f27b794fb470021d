"""Grade the kit's corpus of realistic mistakes (tests/kit/mistakes/, issue 24) through the suites, as
`grader grade` grades a submission, and say what each mistake costs.

    .venv/bin/python scripts/mistakes.py [--exercise N ...] [--id ID ...] [--jobs N] [--scope reach|all]
                                         [--kit PATH] [--corpus DIR]
                                         [--markdown docs/mistakes.md [--before PATH]]

Per mistake: its label, the points on its own exercise (of its maximum) and their share, which suite
caught it, the points lost on other exercises (each a fault-isolation failure); per exercise the catch
rate; per label (core, edge) the median share kept and the edge slips losing more than half; the
correct rewrites' points (full marks everywhere, else a failure). The corpus (tests/kit/mistakes/, or
the folder `--corpus DIR`: a batch written blind, say) and its promises are this kit's, applied to this
kit's reference; `--kit PATH` grades them with the suites,
inventory and manifest of another kit tree (a checkout of main, say). `--scope reach` (default) grades
each mistake on its own exercise and every exercise with a check that can reach its function (the
checks' calls recorded on the reference); `all` on every exercise (slower; also sees a mistake that
changes a global another exercise reads). `--markdown FILE` writes the report; with `--before PATH`
it grades the corpus with that kit's suites too and sets the catch rates side by side.
Exit 1 when a mistake earns full marks on its exercise, loses points on another, a correct rewrite loses
any, or an entry is bad.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.assignment.scoring import points_text  # noqa: E402
from grader.authoring.mistakes import (  # noqa: E402
    CORE_KEEPS,
    CORPUS,
    HALF,
    Graded,
    Mistake,
    corpus_failures,
    grade_corpus,
    label_figures,
    reach,
    read_kit_corpus,
    recorded_calls,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exercise", type=int, action="append", metavar="N", help="only exercise N's")
    parser.add_argument("--id", action="append", metavar="ID", help="only the mistake ID (repeatable)")
    parser.add_argument("--jobs", "-j", type=int, default=len(os.sched_getaffinity(0)), metavar="N")
    parser.add_argument("--scope", choices=("reach", "all"), default="reach")
    parser.add_argument("--kit", type=Path, default=KIT, help="the kit whose suites grade (default: this)")
    parser.add_argument("--corpus", type=Path, default=KIT / CORPUS, metavar="DIR", help="the corpus folder")
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
    if not args.corpus.is_dir() or not any(args.corpus.glob("ex*.toml")):
        parser.error(f"{args.corpus}: no corpus there (no exNN.toml)")
    mistakes, problems = read_kit_corpus(KIT, args.corpus.resolve())
    for problem in problems:
        print(f"bad entry: {problem}")
    mistakes = [
        m
        for m in mistakes
        if (not args.exercise or m.exercise in args.exercise) and (not args.id or m.id in args.id)
    ]
    if args.id and (unknown := set(args.id) - {m.id for m in mistakes}):
        parser.error(f"no mistake {sorted(unknown)[0]} in {args.corpus}")
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
        args.markdown.write_text(
            markdown(args.corpus, after, before, args.kit, args.before), encoding="utf-8"
        )
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
    wrong = [g for g in graded if not g.mistake.correct]
    print(f"all: {sum(g.caught for g in wrong)} of {len(wrong)} caught; "
          f"{len([g for g in wrong if g.lost_elsewhere])} lose points on another exercise; "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip
    for line in summary(graded):
        print(line)
    return graded


def summary(graded: list[Graded]) -> list[str]:
    """Per label its catch rate and median share kept; the correct rewrites' points."""
    lines = [
        f"{f.label}: {f.caught} of {f.count} caught, median share kept {f.median_share:.0%}"
        + (f", {len(f.below_half)} keep less than {HALF:.0%}" if f.label == "edge" else "")
        for f in label_figures(graded)
    ]
    right = [g for g in graded if g.mistake.correct and not g.failed]
    if right:
        full = [g for g in right if not g.lost]
        lines.append(f"correct rewrites: {len(full)} of {len(right)} at full marks on every exercise graded")
    return lines


def row(g: Graded) -> str:
    m = g.mistake
    if g.failed:
        return f"ex{m.exercise:02} {m.id}: the grading failed: {g.failed}"
    visible, hidden = g.caught_by
    missed = "LOSES POINTS" if m.correct and g.lost else "full marks" if m.correct else "NOT CAUGHT"
    by = (
        "+".join(s for s, hit in (("visible", visible), ("hidden", hidden)) if hit and not m.correct)
        or missed
    )
    elsewhere = ", ".join(f"ex{e:02} -{points_text(p)}" for e, p in sorted(g.lost_elsewhere.items()))
    return (
        f"ex{m.exercise:02} {kind(m):7} {m.id:44} {points_text(g.own_points):>5}/{points_text(g.own_max):<5} "
        f"{g.share:>4.0%} {by:15} elsewhere: {elsewhere or '-'}"
    )


def kind(m: Mistake) -> str:
    return "correct" if m.correct else m.label


def catch_rates(graded: list[Graded]) -> dict[int, tuple[int, int]]:
    out: dict[int, tuple[int, int]] = {}
    for g in sorted((g for g in graded if not g.mistake.correct), key=lambda g: g.mistake.exercise):
        caught, count = out.get(g.mistake.exercise, (0, 0))
        out[g.mistake.exercise] = (caught + g.caught, count + 1)
    return out


def markdown(
    corpus: Path, after: list[Graded], before: list[Graded] | None, kit: Path, old: Path | None
) -> str:
    """The report: catch rates per exercise (before and now), the figures per label, every mistake's row,
    the edge slips losing more than half, the core mistakes keeping more than CORE_KEEPS, the correct
    rewrites and the points lost on another exercise."""
    lines = [
        "# The corpus of realistic mistakes: what the suites catch",
        "",
        f"Written by `scripts/mistakes.py --markdown` (issues 24, 30): each mistake of `{_shown(corpus)}/`",
        "is the reference with one edit a student who read the docstring could make, graded as",
        "`grader grade` grades a submission. A mistake is caught when it loses points on its own exercise;",
        "it must lose none on any other. A correct rewrite must keep full marks everywhere.",
        "",
    ]
    lines += _catch_table(after, before) + [""]
    wrong = [g for g in after if not g.mistake.correct]
    lines += [f"- caught: {sum(g.caught for g in wrong)} of {len(wrong)}"]
    lines += [f"- {line}" for line in summary(after)] + [""]
    lines += _rows(wrong, before)
    figures = {f.label: f for f in label_figures(after)}
    edge = figures.get("edge")
    lines += [
        "",
        f"Edge slips keeping less than {HALF:.0%} of their exercise: {len(edge.below_half) if edge else 0}.",
    ]
    lines += [_line(g) for g in wrong if edge and g.mistake.id in edge.below_half]
    heavy = [g for g in wrong if g.mistake.label == "core" and not g.failed and g.share > CORE_KEEPS]
    lines += ["", f"Core mistakes keeping more than {CORE_KEEPS:.0%} of their exercise: {len(heavy)}."]
    lines += [_line(g) for g in sorted(heavy, key=lambda g: -g.share)]
    right = [g for g in after if g.mistake.correct]
    lines += ["", f"Correct rewrites: {len(right)}."]
    lines += [_line(g) + (f"; lost: {g.lost}" if g.lost else "") for g in right]
    leaks = [g for g in after if g.lost_elsewhere]
    lines += ["", f"Points lost on another exercise: {len(leaks)} entr(ies)."]
    lines += [f"- `{g.mistake.id}`: {g.lost_elsewhere}" for g in leaks]
    return "\n".join(lines) + "\n"


def _shown(folder: Path) -> str:
    """A corpus folder as the report names it: relative to this kit where it is inside it."""
    folder = folder.resolve()
    return folder.relative_to(KIT).as_posix() if folder.is_relative_to(KIT) else folder.as_posix()


def _line(g: Graded) -> str:
    m = g.mistake
    kept = f"{points_text(g.own_points)} of {points_text(g.own_max)} ({g.share:.0%})"
    return f"- `{m.id}` (exercise {m.exercise}): {kept}; {m.says}"


def _catch_table(after: list[Graded], before: list[Graded] | None) -> list[str]:
    rates = catch_rates(after)
    old_rates = catch_rates(before) if before is not None else {}
    header = "| exercise | caught before | caught now |" if before is not None else "| exercise | caught |"
    lines = [header, "|---|---|---|" if before is not None else "|---|---|"]
    for exercise, (caught, count) in rates.items():
        now = f"{caught} of {count}"
        if before is not None:
            was_caught, was_count = old_rates.get(exercise, (0, count))
            lines.append(f"| {exercise} | {was_caught} of {was_count} | {now} |")
        else:
            lines.append(f"| {exercise} | {now} |")
    wrong = [g for g in after if not g.mistake.correct]
    total = f"{sum(g.caught for g in wrong)} of {len(wrong)}"
    if before is not None:
        old_wrong = [g for g in before if not g.mistake.correct]
        lines.append(f"| all | {sum(g.caught for g in old_wrong)} of {len(old_wrong)} | {total} |")
    else:
        lines.append(f"| all | {total} |")
    return lines


def _rows(wrong: list[Graded], before: list[Graded] | None) -> list[str]:
    lines = ["Each mistake: the points it keeps on its own exercise (of its maximum); what caught it.", ""]
    olds = {g.mistake.id: g for g in before or []}
    head = "| mistake | label | exercise | promise | what the student did | points kept | share | caught by |"
    columns = 9 if before is not None else 8
    lines += [head + (" before |" if before is not None else ""), "|---" * columns + "|"]
    for g in wrong:
        m = g.mistake
        visible, hidden = g.caught_by
        by = ", ".join(s for s, hit in (("visible", visible), ("hidden", hidden)) if hit) or "**not caught**"
        kept = f"{points_text(g.own_points)} of {points_text(g.own_max)}"
        promise = f"`{m.promise}`" if m.promise else "-"
        says = m.says.replace("|", "\\|")
        cells = [f"`{m.id}`", m.label, str(m.exercise), promise, says, kept, f"{g.share:.0%}", by]
        if before is not None:
            was = olds.get(m.id)
            cells.append(f"{points_text(was.own_points)} of {points_text(was.own_max)}" if was else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
