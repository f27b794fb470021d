"""The kit's corpus of realistic mistakes: edits of the reference, loaded, applied and graded.

The kit's corpus of realistic mistakes (tests/kit/mistakes/exNN.toml, issue 24): each one an edit of
the reference inside one function's body, with the promise it breaks; loaded, applied and graded here.

A mistake is graded as `grader grade --exercise ...` grades a submission (grader.grading.grade.grade: the
sandbox, the suites, the scoring), on the exercises whose checks can reach the edited function: its own
exercise, and every exercise with a check that calls a function running it in the submission (the
checks' calls recorded on the reference, `--record-calls`; what runs where, grader.assignment.contract's
`submission_runs`). A check that calls nothing running the edited function sees exactly the reference's
answers, so it cannot lose points; the one way around this, a mistake that changes module state other
functions read (a global), is graded on every exercise when its edit names such state
(`touches_module_state`), and `scope="all"` grades every mistake so. Mistakes whose exercises do not
meet are graded together, one submission carrying their edits (`grade_corpus`); one that fails so is
graded again alone.

A mistake has a label: "core" (it breaks its function's main result) or "edge" (a slip of form, one
edge case, a boundary), given in its entry or derived from its promise's kind (value: core, any other:
edge); an entry with a label may leave the promise out (its exercise is then its function's). An entry
with `correct = true` is a correct rewrite (other code keeping every promise): it must keep full marks
on every exercise it is graded on. The report's figures per label (issue 30): the median share of its
exercise a mistake keeps, and the edge slips that lose more than half.

Nothing here ships: it is the kit's own measure of its suites (scripts/mistakes.py, the kit's test).
"""

from __future__ import annotations

import ast
import multiprocessing
import re
import statistics
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from grader.assignment.manifest import Budget, Manifest
from grader.assignment.reference import Reference, parse_reference
from grader.layout import MODULE_FILE, REFERENCE, SUITES

if TYPE_CHECKING:
    from grader.assignment.records import TestRecord
    from grader.grading.grade import Graded as GradedRun

CORPUS = Path("tests/kit/mistakes")
PROMISES = Path("tests/promises")
# Every entry's text fields (`promise` may be left out beside a label or `correct = true`); optional:
# `label` (one of LABELS) and `correct` (true for a correct rewrite).
FIELDS = ("id", "function", "promise", "says", "old", "new")
LABELS = ("core", "edge")
HALF = 0.5  # an edge slip keeping less than this share of its exercise loses "more than half"
CORE_KEEPS = 0.4  # the most of its exercise a core mistake should keep (issue 30)


class Promised(NamedTuple):
    """What the corpus needs of a promise: its function, and its kind (grader.assignment.promises.KINDS)."""

    function: str
    kind: str


def label_of_kind(kind: str) -> str:
    """A promise's kind as a mistake's label: breaking the main result (value) is core, the rest edge."""
    return "core" if kind == "value" else "edge"


@dataclass(frozen=True)
class Mistake:
    """One mistake of the corpus, applied: `source` is the reference with the edit made."""

    id: str
    function: str
    promise: str  # "" where the entry gives a label and no promise
    says: str
    exercise: int  # the exercise of its function: where the mistake must cost points
    file: str  # the corpus file it came from, as errors name it
    source: str = field(repr=False)
    new: str = field(default="", repr=False)  # the edit's new text
    label: str = ""  # core or edge; "" for a correct rewrite
    correct: bool = False  # a correct rewrite: must keep full marks everywhere


def read_promises(folder: Path) -> dict[str, Promised]:
    """Promise id -> its function and kind, from every tests/promises/exNN.toml (an empty map without
    the folder)."""
    out: dict[str, Promised] = {}
    for path in sorted(folder.glob("ex*.toml")) if folder.is_dir() else ():
        for promise in tomllib.loads(path.read_text(encoding="utf-8")).get("promise", []):
            if isinstance(promise, dict) and isinstance(promise.get("id"), str):
                out[promise["id"]] = Promised(str(promise.get("function", "")), str(promise.get("kind", "")))
    return out


def load_corpus(
    folder: Path,
    reference: Reference,
    manifest: Manifest,
    promises: Mapping[str, Promised],
    exercise_functions_only: bool = True,
) -> tuple[list[Mistake], list[str]]:
    """Every mistake of the corpus files in `folder`, applied to `reference`, and one line per bad
    entry ("FILE: ID: what is wrong"). With `exercise_functions_only` off, an edit may change a given
    function (a demonstration of what fault isolation must catch), still charged to its promise's
    exercise."""
    exercise_of = {name: e.id for e in manifest.exercises for name in e.functions}
    mistakes: list[Mistake] = []
    problems: list[str] = []
    seen: set[str] = set()
    for path in sorted(folder.glob("ex*.toml")) if folder.is_dir() else ():
        name = path.as_posix()
        try:
            entries = tomllib.loads(path.read_text(encoding="utf-8")).get("mistake", [])
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            problems.append(f"{name}: not TOML ({error})")
            continue
        for n, entry in enumerate(entries if isinstance(entries, list) else [entries], 1):
            if not isinstance(entry, dict):
                problems.append(f"{name}: mistake #{n}: not a [[mistake]] table")
                continue
            given = entry.get("id")
            ident = given if isinstance(given, str) and given else f"mistake #{n}"
            problem = _entry_problem(entry, seen, exercise_of, promises, exercise_functions_only)
            seen.add(ident)
            source = None
            if problem is None:
                source, problem = apply_edit(reference, entry["function"], entry["old"], entry["new"])
            if problem is not None or source is None:
                problems.append(f"{name}: {ident}: {problem}")
                continue
            mistakes.append(_mistake(entry, ident, name, source, exercise_of, promises))
    return mistakes, problems


def _mistake(
    entry: dict,
    ident: str,
    file: str,
    source: str,
    exercise_of: dict[str, int],
    promises: Mapping[str, Promised],
) -> Mistake:
    """A checked entry as a Mistake: its exercise its promise's function's (else its own function's), its
    label given or its promise's kind's."""
    promise = entry.get("promise", "")
    correct = entry.get("correct", False) is True
    owner = promises[promise].function if promise else entry["function"]
    label = "" if correct else entry.get("label") or label_of_kind(promises[promise].kind)
    function, says, new = (entry[k] for k in ("function", "says", "new"))
    return Mistake(ident, function, promise, says, exercise_of[owner], file, source, new, label, correct)


def _entry_problem(
    entry: dict,
    seen: set[str],
    exercise_of: dict[str, int],
    promises: Mapping[str, Promised],
    exercise_only: bool,
) -> str | None:
    correct = entry.get("correct", False)
    if not isinstance(correct, bool):
        return "correct must be true or false"
    label = entry.get("label")
    if label is not None and label not in LABELS:
        return f"label must be one of {', '.join(LABELS)}, not {label!r}"
    optional = {"promise"} if correct or label is not None else set()
    missing = [  # `new` may be empty: the mistake leaves something out
        key
        for key in FIELDS
        if (key not in optional or key in entry)
        and (not isinstance(entry.get(key), str) or (not entry[key] and key != "new"))
    ]
    if missing:
        return f"needs {', '.join(missing)} (text)"
    if entry["id"] in seen:
        return "this id is used twice"
    function = entry["function"]
    if "promise" not in entry:  # a label or a correct rewrite: the exercise is its function's
        return _edit_problem(entry) if function in exercise_of else (
            f"{function} is not an exercise function (grader/exercises.toml): name the promise it breaks"
        )  # fmt: skip
    if entry["promise"] not in promises:
        return f"promise {entry['promise']!r} is in no file of {PROMISES.as_posix()}/"
    owner = promises[entry["promise"]].function
    own = exercise_of.get(owner)
    if own is None:
        return f"promise {entry['promise']!r} is of {owner!r}, no exercise function"
    if function in exercise_of and exercise_of[function] != own:
        return (
            f"{function} is exercise {exercise_of[function]}'s, its promise {entry['promise']!r} "
            f"exercise {own}'s"
        )
    if exercise_only and function not in exercise_of:
        return f"{function} is not an exercise function (grader/exercises.toml)"
    return _edit_problem(entry)


def _edit_problem(entry: dict) -> str | None:
    return "old and new are the same" if entry["old"] == entry["new"] else None


def apply_edit(reference: Reference, function: str, old: str, new: str) -> tuple[str | None, str | None]:
    """The reference's source with `old` replaced by `new` inside `function`'s body (after its
    docstring), and None; or None and why not (no such function, `old` not there exactly once, the
    result does not compile)."""
    nodes = reference.functions().get(function)
    if not nodes:
        return None, f"the reference has no top-level function {function}"
    if len(nodes) > 1:
        return None, f"the reference defines {function} {len(nodes)} times"
    node = nodes[0]
    body = node.body
    if ast.get_docstring(node, clean=False) is not None and len(body) > 1:
        first_line = body[0].end_lineno or body[0].lineno  # the line after the docstring
    else:
        first_line = body[0].lineno - 1
    lines = reference.source.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:first_line])
    end = sum(len(line) for line in lines[: node.end_lineno])
    span = reference.source[start:end]
    count = span.count(old)
    if count != 1:
        return None, f"`old` occurs {count} times in {function}'s body (it must occur exactly once)"
    source = reference.source[:start] + span.replace(old, new) + reference.source[end:]
    try:
        compile(source, reference.path, "exec", dont_inherit=True)
    except SyntaxError as error:
        return None, f"the edit does not compile: {error.msg} (line {error.lineno})"
    return source, None


def read_kit_corpus(root: Path, corpus: Path | None = None) -> tuple[list[Mistake], list[str]]:
    """The corpus of the kit at `root` (or the corpus folder `corpus`, a blind batch say) applied to
    that kit's reference, checked against its manifest and promises."""
    from grader.grading.grade import kit_manifest

    promises = read_promises(root / PROMISES)
    folder = corpus if corpus is not None else root / CORPUS
    return load_corpus(folder, _reference(root), kit_manifest(root), promises)


def _reference(root: Path) -> Reference:
    return parse_reference((root / REFERENCE).read_bytes().decode("utf-8"), REFERENCE.as_posix())


# -- grading -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """A mistake graded: per exercise graded, (visible, hidden) points earned and their maxima."""

    mistake: Mistake
    earned: dict[int, tuple[float, float]]
    maxima: dict[int, tuple[float, float]]
    failed: str = ""  # the grading failed (not the mistake): why

    @property
    def own_points(self) -> float:
        return round(sum(self.earned.get(self.mistake.exercise, (0.0, 0.0))), 2)

    @property
    def own_max(self) -> float:
        return round(sum(self.maxima.get(self.mistake.exercise, (0.0, 0.0))), 2)

    @property
    def share(self) -> float:
        """The share of its own exercise's points it keeps (0 to 1)."""
        return self.own_points / self.own_max if self.own_max else 1.0

    @property
    def caught(self) -> bool:
        return not self.failed and self.own_points < self.own_max

    @property
    def lost(self) -> dict[int, float]:
        """Exercise -> points lost there, for every exercise graded that lost any (its own included)."""
        out = {}
        for exercise, earned in self.earned.items():
            if (points := round(sum(self.maxima[exercise]) - sum(earned), 2)) > 0:
                out[exercise] = points
        return out

    @property
    def caught_by(self) -> tuple[bool, bool]:
        """(visible, hidden): whether each suite of its own exercise lost points."""
        earned = self.earned.get(self.mistake.exercise, (0.0, 0.0))
        most = self.maxima.get(self.mistake.exercise, (0.0, 0.0))
        return earned[0] < most[0], earned[1] < most[1]

    @property
    def lost_elsewhere(self) -> dict[int, float]:
        """Exercise -> points lost there, for every other exercise that lost any."""
        return {e: points for e, points in self.lost.items() if e != self.mistake.exercise}


def touches_module_state(mistake: Mistake) -> bool:
    """Whether the edit may change state that other functions read: its new text names a module-level
    variable (RULES, CONFLICTS, ...), says `global`, or reaches for globals by other means. Such a
    mistake is graded on every exercise: the checks that can reach its function are not all the checks
    it can change."""
    variables = {
        target.id
        for node in ast.parse(mistake.source).body
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", mistake.new))
    return bool(words & (variables | {"global", "globals", "setattr", "sys", "builtins", "__dict__"}))


def recorded_calls(root: Path) -> dict[str, tuple[int, frozenset[str]]] | None:
    """Test nodeid -> (its exercise, the lab functions it calls on the submission), recorded on the
    reference by the kit at `root`; None when that kit's plugin cannot record calls."""
    from grader.grading.suites import SuiteRunError, run_suites

    try:
        return calls_of(run_suites(root, root / REFERENCE, pytest_args=["--record-calls"]))
    except SuiteRunError:
        return None


def calls_of(records: Iterable[TestRecord]) -> dict[str, tuple[int, frozenset[str]]] | None:
    """Test nodeid -> (its exercise, the lab functions it calls), from a run recording calls; None when
    the run recorded none."""
    records = list(records)
    if not any(r.calls for r in records):
        return None
    return {r.nodeid: (r.exercise, frozenset(r.calls)) for r in records}


def reach(root: Path, calls: dict[str, tuple[int, frozenset[str]]]) -> dict[str, set[int]]:
    """Function name -> the exercises with a check that can reach it: one that calls a function running
    it in the submission (grader.assignment.contract.submission_runs)."""
    from grader.assignment.contract import submission_runs
    from grader.grading.grade import kit_manifest

    manifest = kit_manifest(root)
    exercise_of = {name: e.id for e in manifest.exercises for name in e.functions}
    runs = submission_runs(_reference(root).source, exercise_of)
    out: dict[str, set[int]] = {name: set() for name in runs}
    for exercise, called in calls.values():
        for name in called:
            for ran in runs.get(name, {name}):
                out.setdefault(ran, set()).add(exercise)
    return out


def grade_mistake(
    root: Path, mistake: Mistake, exercises: Iterable[int], budget: Budget | None = None
) -> Graded:
    """`mistake` graded by the kit at `root` on `exercises` (its own among them), as grader grade does."""
    return _split(_grade_source(root, mistake.source, exercises, budget), [(mistake, exercises)])[0]


def grade_together(root: Path, group: Sequence[tuple[Mistake, Sequence[int]]]) -> list[Graded]:
    """The mistakes of `group` (each with the exercises to grade it on, no exercise shared, every one on
    a function of its own) graded in ONE submission carrying every edit, each read on its own
    exercises. The shared budgets (the grading's CPU and wall) grow with the group, so a mistake can
    spend only its own exercises' budgets, as when graded alone."""
    from grader.grading.grade import kit_manifest

    if len(group) == 1:  # alone: graded exactly as grader grade grades it
        return [grade_mistake(root, *group[0])]
    base = kit_manifest(root).budget
    exercises = sorted({e for _, chosen in group for e in chosen})
    budget = Budget(
        cpu_seconds=max(base.cpu_seconds, len(exercises) * len(SUITES) * base.exercise_cpu_seconds),
        exercise_cpu_seconds=base.exercise_cpu_seconds,
        wall_seconds=base.wall_seconds * len(group),
    )
    source = combined_source(_reference(root), [mistake for mistake, _ in group])
    return _split(_grade_source(root, source, exercises, budget), group)


def combined_source(reference: Reference, mistakes: Sequence[Mistake]) -> str:
    """The reference with each mistake's edited function in place of its own (functions all distinct)."""
    spans = _function_spans(reference.source)
    lines = reference.source.splitlines(keepends=True)
    for mistake in sorted(mistakes, key=lambda m: spans[m.function][0], reverse=True):
        first, last = spans[mistake.function]
        edited_first, edited_last = _function_spans(mistake.source)[mistake.function]
        edited = mistake.source.splitlines(keepends=True)[edited_first:edited_last]
        lines[first:last] = edited
    return "".join(lines)


def _function_spans(source: str) -> dict[str, tuple[int, int]]:
    """Top-level function name -> its lines (0-based, end exclusive), decorators included."""
    return {
        node.name: (min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1, node.end_lineno or 0)
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _grade_source(root: Path, source: str, exercises: Iterable[int], budget: Budget | None) -> GradedRun:
    from grader.grading.grade import grade

    with tempfile.TemporaryDirectory(prefix="optlab-mistake-") as scratch:
        module = Path(scratch) / "submission" / MODULE_FILE
        module.parent.mkdir()
        module.write_text(source, encoding="utf-8")
        return grade(
            root, module, Path(scratch) / "results.json", exercises=sorted(set(exercises)), budget=budget
        )


def _split(graded: GradedRun, group: Sequence[tuple[Mistake, Iterable[int]]]) -> list[Graded]:
    """Per mistake of `group`, its points on its own exercises of one grading."""
    if graded.failed:
        return [Graded(mistake, {}, {}, failed=graded.failed) for mistake, _ in group]
    earned: dict[int, list[float]] = {}
    maxima: dict[int, list[float]] = {}
    for score in graded.scores:
        column = 0 if score.suite == "visible" else 1
        earned.setdefault(score.exercise.id, [0.0, 0.0])[column] += score.score
        maxima.setdefault(score.exercise.id, [0.0, 0.0])[column] += score.max_score
    out = []
    for mistake, exercises in group:
        mine = set(exercises)
        out.append(
            Graded(
                mistake,
                {e: (round(v[0], 2), round(v[1], 2)) for e, v in earned.items() if e in mine},
                {e: (round(v[0], 2), round(v[1], 2)) for e, v in maxima.items() if e in mine},
            )
        )
    return out


def grade_corpus(
    root: Path,
    mistakes: Sequence[Mistake],
    jobs: int = 2,
    scope: str = "reach",
    done: Callable[[Graded], None] | None = None,
    reached: dict[str, set[int]] | None = None,
) -> list[Graded]:
    """Grade every mistake with the kit at `root`, `jobs` gradings at a time: on the exercises that can
    reach its function (`scope="reach"`: `reached`, else found from a recorded run of that kit where its
    plugin records calls; else every exercise; `scope="own"`: its own exercise alone), in corpus order.

    Mistakes whose exercises do not meet are graded together, in one submission carrying all their
    edits (`grade_together`): what no check of an exercise can reach does not change its points, and a
    grading's fixed cost (two pytest sessions, their workers) is most of a one-exercise grading's. Each
    mistake that the grading together shows failing (not caught, points lost elsewhere, a correct
    rewrite losing points, a failed grading) is graded again alone, and that grading is its result."""
    from grader.grading.grade import kit_manifest

    every = [e.id for e in kit_manifest(root).exercises]
    if scope == "own":  # its own exercise alone: what a catch rate needs, not fault isolation
        reached = {}
    elif scope != "reach":
        reached = None
    elif reached is None and (calls := recorded_calls(root)) is not None:
        reached = reach(root, calls)

    def exercises(mistake: Mistake) -> list[int]:
        if reached is None or (scope != "own" and touches_module_state(mistake)):
            return every
        return sorted({mistake.exercise, *reached.get(mistake.function, set())} & set(every))

    plan = [(mistake, exercises(mistake)) for mistake in mistakes]
    # A process per grading, not a thread: CPython 3.11 builds syntax trees with state shared between an
    # interpreter's threads ("AST constructor recursion depth mismatch" when two parse at once).
    context = multiprocessing.get_context("spawn")
    results: dict[int, Graded] = {}
    told = 0  # `done` hears of the mistakes in corpus order, each as soon as it and those before are in

    def tell() -> None:
        nonlocal told
        while told in results:
            if done is not None:
                done(results[told])
            told += 1

    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context) as pool:
        groups = _groups(plan, len(every), max(1, jobs))
        futures = [pool.submit(grade_together, root, [plan[i] for i in group]) for group in groups]
        alone = {}
        for group, future in zip(groups, futures, strict=True):
            for index, graded in zip(group, future.result(), strict=True):
                if len(group) > 1 and corpus_failures([graded]):
                    alone[index] = pool.submit(grade_mistake, root, *plan[index])
                else:
                    results[index] = graded
            tell()
        for index, single in sorted(alone.items()):
            results[index] = single.result()
            tell()
    return [results[i] for i in range(len(plan))]


def _groups(plan: Sequence[tuple[Mistake, Sequence[int]]], every: int, jobs: int) -> list[list[int]]:
    """Indices of `plan` in groups whose exercises do not meet (a mistake on every exercise alone), at
    least `jobs` groups where there are that many mistakes, so that every job has gradings to run."""
    groups: list[list[int]] = []
    used: list[set[int]] = []
    for index, (_, exercises) in enumerate(plan):
        mine = set(exercises)
        fits = [k for k, taken in enumerate(used) if not taken & mine and len(mine) < every]
        if fits and len(groups) >= jobs:
            k = fits[0]
            groups[k].append(index)
            used[k] |= mine
        else:
            groups.append([index])
            used.append(mine)
    return groups


def corpus_failures(graded: Iterable[Graded]) -> list[str]:
    """One line per mistake the suites do not handle as they must: full marks on its own exercise (not
    caught), points lost on another exercise (fault isolation), or a grading that failed; and per
    correct rewrite that loses points anywhere."""
    out = []
    for g in graded:
        where = f"{g.mistake.file}: {g.mistake.id}"
        if g.failed:
            out.append(f"{where}: the grading failed: {g.failed}")
            continue
        if g.mistake.correct:
            if lost := g.lost:
                shown = ", ".join(f"exercise {e} -{points:g}" for e, points in sorted(lost.items()))
                out.append(f"{where}: a correct rewrite loses points ({shown}): a check rejects code that "
                           "keeps every promise")  # fmt: skip
            continue
        if not g.caught:
            about = g.mistake.promise or f"this {g.mistake.label} slip"  # a label given without a promise
            out.append(
                f"{where}: full marks on exercise {g.mistake.exercise} ({g.own_points:g}/{g.own_max:g}): "
                f"no check asks about {about} ({g.mistake.says})"
            )
        if lost := g.lost_elsewhere:
            shown = ", ".join(f"exercise {e} -{points:g}" for e, points in sorted(lost.items()))
            out.append(f"{where}: loses points on another exercise ({shown}): one mistake must cost its "
                       "own exercise only")  # fmt: skip
    return out


# -- figures per label (issue 30) ---------------------------------------------------------------------


@dataclass(frozen=True)
class LabelFigures:
    """The mistakes of one label, graded: how many, how many caught, the median share of its exercise a
    mistake keeps, and the ids of those keeping less than HALF."""

    label: str
    count: int
    caught: int
    median_share: float
    below_half: tuple[str, ...]


def label_figures(graded: Iterable[Graded]) -> list[LabelFigures]:
    """Per label (in LABELS' order, then any other), the figures of its graded mistakes (correct
    rewrites and failed gradings left out)."""
    by_label: dict[str, list[Graded]] = {}
    for g in graded:
        if not g.mistake.correct and not g.failed:
            by_label.setdefault(g.mistake.label, []).append(g)
    order = [label for label in LABELS if label in by_label] + sorted(set(by_label) - set(LABELS))
    return [
        LabelFigures(
            label,
            len(by_label[label]),
            sum(g.caught for g in by_label[label]),
            statistics.median(g.share for g in by_label[label]),
            tuple(g.mistake.id for g in by_label[label] if g.share < HALF),
        )
        for label in order
    ]
