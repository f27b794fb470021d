"""The promises of the exercise functions: tests/promises/exNN.toml read, checked, and checked against the
suites' checks.

One file per exercise lists every promise its functions' docstrings make, one [[promise]] table each:
an `id` ("<function>.<short_snake_name>", unique in the kit), the `function` (one of the exercise's), a
`kind` (value: the function's main result; edge: a boundary it names; form: the type, layout or order
of its output where the docstring promises one; unchanged; rng; error), what it `says` (one line) and
an optional `weight` (default 1: the promise's share of an entry's points, grader.assignment.scoring). Every
suite test names the one promise it checks with `@pytest.mark.promise(ID)`. `grader build` folds the promises
into tests/inventory.json, which is all grading reads; a problem in a file is one line naming the file,
the line and the problem.

A file may also declare its functions' documented domains, one [[domain]] table per argument (or pair of
arguments): the `function`, the `argument` (a parameter's name, or a list of two for a feature of a
pair) and the `features` of grader.assignment.domain its documented domain holds. The suites' strategies must
draw each of them in a check of a working kind of that function (grader.assignment.domain; a kit test and
`grader validate` say which are not).
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.errors import LocatedError
from grader.layout import PROMISES, SUITES

if TYPE_CHECKING:
    from grader.assignment.domain import Domain
    from grader.assignment.manifest import Manifest

KINDS = ("value", "edge", "form", "unchanged", "rng", "error")
VALUE, ERROR = "value", "error"
# The kinds that code doing no work satisfies too (raising on every input; returning without touching its
# arguments; an answer of the right type): their checks earn only beside a passing check of a working
# kind (value, edge, rng) of the same function, in the same entry (grader.assignment.scoring).
GATED = frozenset({ERROR, "unchanged", "form"})
# A function's core: its value promises; where it has none, its edge and rng promises
# (grader.assignment.scoring)
FALLBACK_CORE = frozenset({"edge", "rng"})
# Default weights (issue 30): a function's value promises together carry CORE_SHARE of its weight (more
# where it has one other promise: each other promise carries at most OTHER_MOST). With the hidden gate
# (grader.assignment.scoring: the other promises earn only where most value checks pass) a broken core
# keeps at most CORE_SHARE / 2 of its function, and one slip of form or edge costs at most OTHER_MOST.
CORE_SHARE, OTHER_MOST = Fraction(3, 5), Fraction(3, 10)
_REQUIRED_KEYS = ("id", "function", "kind", "says")
_OPTIONAL_KEYS = ("weight",)
_FILE_NAME = re.compile(r"ex(\d\d)\.toml")
_SHORT_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")


class PromiseError(LocatedError):
    """A problem in a promise file; str is `tests/promises/exNN.toml:LINE: problem`."""


@dataclass(frozen=True)
class Promise:
    """One promise a docstring makes, as a check of the suites names it."""

    id: str
    exercise: int
    function: str
    kind: str
    says: str
    weight: int | float = 1

    def as_data(self) -> dict:
        """The promise as the inventory stores it (its id is the key)."""
        return {
            "exercise": self.exercise,
            "function": self.function,
            "kind": self.kind,
            "says": self.says,
            "weight": self.weight,
        }


def promise_files(root: Path) -> list[Path]:
    """The promise files of the kit at `root` (every .toml of tests/promises), in name order."""
    return sorted((root / PROMISES).glob("*.toml"))


def load_promises(root: Path, manifest: Manifest) -> dict[str, Promise]:
    """Every promise of the kit at `root`, by id, in file and table order; PromiseError on the first
    problem of a file (a file named for no exercise, an unknown function or kind, a repeated id...).
    An id is unique in the kit: it starts with its function's name, and a function is one exercise's."""
    promises: dict[str, Promise] = {}
    for path in promise_files(root):
        shown_as = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise PromiseError(shown_as, None, f"cannot read: {error}") from None
        promises.update((promise.id, promise) for promise in parse_promises(text, manifest, shown_as))
    return promises


def parse_promises(text: str, manifest: Manifest, shown_as: str) -> list[Promise]:
    """The promises of one file's `text` (`shown_as`, as tests/promises/exNN.toml), checked against the
    manifest: the file's exercise is the one its name gives."""
    where = _PromiseText(text, shown_as)
    named = _FILE_NAME.fullmatch(Path(shown_as).name)
    ids = [e.id for e in manifest.exercises]
    if named is None:
        problem = f"a promise file is named exNN.toml, NN an exercise's id (01 to {max(ids):02d})"
        raise where.error(None, problem)
    exercise_id = int(named[1])
    if exercise_id not in ids:
        raise where.error(None, f"no exercise {exercise_id} in the manifest (exercises are 1 to {max(ids)})")
    exercise = manifest.by_id(exercise_id)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        found = re.search(r"\(at line (\d+), column \d+\)|\(at end of document\)", message)
        line = int(found[1]) if found and found[1] else len(where.lines)
        problem = message[: found.start()].strip() if found else message
        raise where.error(line, f"TOML syntax error: {problem}") from None
    for key in data:
        if key not in ("promise", "domain"):
            problem = f"unknown table or key {key!r} (expected [[promise]] and [[domain]] tables)"
            raise where.error(where.key_line(None, key), problem)
    tables = data.get("promise", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise where.error(None, "'promise' must be an array of [[promise]] tables")
    if not tables:
        raise where.error(None, f"no [[promise]] tables: list every promise of exercise {exercise.label}")
    out: list[Promise] = []
    for index, table in enumerate(tables):
        promise = _promise(table, index, exercise.id, exercise.functions, where)
        if any(p.id == promise.id for p in out):
            raise where.error(where.key_line(index, "id"), f"id {promise.id!r} is listed twice")
        out.append(promise)
    defaults = default_weights(out)
    written = {p.id for p, table in zip(out, tables, strict=True) if "weight" in table}
    return [p if p.id in written else dataclasses.replace(p, weight=defaults[p.id]) for p in out]


def load_domains(
    root: Path, manifest: Manifest, parameters: Mapping[str, tuple[str, ...]] | None = None
) -> list[Domain]:
    """Every [[domain]] table of the kit at `root`, in file and table order; PromiseError on the first
    problem (`parameters`: function -> its parameters' names, to check the arguments named)."""
    out: list[Domain] = []
    for path in promise_files(root):
        shown_as = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        parse_promises(text, manifest, shown_as)  # the file's own problems first, as load_promises says them
        out += parse_domains(text, manifest, shown_as, parameters)
    return out


def parse_domains(
    text: str, manifest: Manifest, shown_as: str, parameters: Mapping[str, tuple[str, ...]] | None = None
) -> list[Domain]:
    """The [[domain]] tables of one promise file (already read by parse_promises, which names its other
    problems), checked: a function of the file's exercise, arguments it has, features grader.assignment.domain
    defines, of the arity the feature takes, each (function, arguments) once."""
    where = _PromiseText(text, shown_as, "domain")
    named = _FILE_NAME.fullmatch(Path(shown_as).name)
    functions = manifest.by_id(int(named[1])).functions if named else ()
    tables = tomllib.loads(text).get("domain", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise where.error(None, "'domain' must be an array of [[domain]] tables")
    out: list[Domain] = []
    for index, table in enumerate(tables):
        domain = _domain(table, index, functions, parameters, where)
        if any((d.function, d.arguments) == (domain.function, domain.arguments) for d in out):
            raise where.error(where.key_line(index, "argument"), f"[[domain]] {index + 1}: listed twice")
        out.append(domain)
    return out


def _domain(
    values: Mapping[str, Any],
    index: int,
    functions: tuple[str, ...],
    parameters: Mapping[str, tuple[str, ...]] | None,
    where: _PromiseText,
) -> Domain:
    from grader.assignment.domain import (  # grading and authoring only: the handout reads no domains
        FEATURES,
        Domain,
    )

    def fail(key: str | None, problem: str) -> PromiseError:
        return where.error(where.key_line(index, key), f"[[domain]] {index + 1}: {problem}")

    keys = ("function", "argument", "features")
    if unknown := [key for key in values if key not in keys]:
        raise fail(unknown[0], f"unknown key {unknown[0]!r} (expected {', '.join(keys)})")
    if missing := [key for key in keys if key not in values]:
        raise fail(None, f"missing {', '.join(repr(key) for key in missing)}")
    function, argument, features = values["function"], values["argument"], values["features"]
    if function not in functions:
        raise fail("function", f"{function!r} is not a function of this exercise ({', '.join(functions)})")
    arguments = [argument] if isinstance(argument, str) else argument
    if not isinstance(arguments, list) or not arguments or not all(isinstance(a, str) for a in arguments):
        raise fail("argument", "argument must be a parameter's name, or a list of two names")
    known = (parameters or {}).get(function)
    if known is not None and (strange := [a for a in arguments if a not in known]):
        raise fail("argument", f"{function} has no parameter {strange[0]!r} ({', '.join(known)})")
    if not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features):
        raise fail("features", "features must be a non-empty list of feature names")
    for feature in features:
        if feature not in FEATURES:
            raise fail(
                "features", f"no feature {feature!r} in grader.assignment.domain ({', '.join(FEATURES)})"
            )
        if FEATURES[feature].arity != len(arguments):
            arity = FEATURES[feature].arity
            raise fail("features", f"{feature!r} is a feature of {arity} argument(s), not {len(arguments)}")
    if len(set(features)) != len(features):
        raise fail("features", "a feature is listed twice")
    return Domain(function, tuple(arguments), tuple(features))


def default_weights(promises: Iterable[Promise]) -> dict[str, float]:
    """Each promise's weight by its role, by id: per function with v value promises and n others (N in
    all), each value promise CORE_SHARE * N / v (with one other promise: (1 - OTHER_MOST) * N), each
    other (1 - CORE_SHARE) * N / n (one: OTHER_MOST * N); a function with no value promise or no other
    promise, 1 each. A function's defaults add up to N."""
    by_function: dict[str, list[Promise]] = {}
    for promise in promises:
        by_function.setdefault(promise.function, []).append(promise)
    out: dict[str, float] = {}
    for mine in by_function.values():
        core = [p for p in mine if p.kind == VALUE]
        others = [p for p in mine if p.kind != VALUE]
        if not core or not others:
            out.update((p.id, 1.0) for p in mine)
            continue
        rest = min(1 - CORE_SHARE, OTHER_MOST * len(others))
        out.update((p.id, float((1 - rest) * len(mine) / len(core))) for p in core)
        out.update((p.id, float(rest * len(mine) / len(others))) for p in others)
    return out


def _promise(
    values: Mapping[str, Any], index: int, exercise: int, functions: tuple[str, ...], where: _PromiseText
) -> Promise:
    def fail(key: str | None, problem: str) -> PromiseError:
        return where.error(where.key_line(index, key), f"[[promise]] {index + 1}: {problem}")

    for key in values:
        if key not in (*_REQUIRED_KEYS, *_OPTIONAL_KEYS):
            expected = ", ".join((*_REQUIRED_KEYS, *_OPTIONAL_KEYS))
            raise fail(key, f"unknown key {key!r} (expected {expected})")
    if missing := [key for key in _REQUIRED_KEYS if key not in values]:
        raise fail(None, f"missing {', '.join(repr(key) for key in missing)}")
    for key in _REQUIRED_KEYS:
        value = values[key]
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            raise fail(key, f"{key} must be a non-empty one-line string, not {value!r}")
    function, kind, promise_id = values["function"], values["kind"], values["id"]
    if function not in functions:
        of = ", ".join(functions)
        raise fail("function", f"{function!r} is not a function of exercise {exercise} ({of})")
    if kind not in KINDS:
        raise fail("kind", f"kind {kind!r} is not one of {', '.join(KINDS)}")
    prefix, dot, name = promise_id.partition(".")
    if prefix != function or not dot or not _SHORT_NAME.fullmatch(name):
        raise fail("id", f"id {promise_id!r} must be {function}.<short_snake_name>")
    weight = values.get("weight", 1)  # where none is written, parse_promises puts its role's default
    number = isinstance(weight, int | float) and not isinstance(weight, bool)
    if not number or not math.isfinite(weight) or weight <= 0:
        raise fail("weight", f"weight must be a positive number, not {weight!r}")
    return Promise(promise_id, exercise, function, kind, values["says"], weight)


class _PromiseText:
    """A promise file's lines, for the line of a [[promise]] table or of one of its keys (best effort)."""

    def __init__(self, text: str, shown_as: str, table: str = "promise") -> None:
        self.shown_as = shown_as
        self.lines = text.split("\n")
        header = re.compile(rf"^\s*\[\[\s*{table}\s*\]\]")
        self.headers = [n for n, line in enumerate(self.lines, 1) if header.match(line)]

    def error(self, line: int | None, problem: str) -> PromiseError:
        return PromiseError(self.shown_as, line, problem)

    def key_line(self, index: int | None, key: str | None) -> int:
        """The line of `key` in the index-th table (None: before the first), else the table's header."""
        start = 0 if index is None else self.headers[index]
        following = [n for n in self.headers if n > start]
        end = following[0] - 1 if following else len(self.lines)
        if key is not None:
            pattern = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
            for number in range(start + 1, end + 1):
                if pattern.match(self.lines[number - 1]):
                    return number
        return start or 1


# -- the promises in the inventory, and the checks that name them ---------------------------------------


def inventory_promises(inventory: Mapping[str, Any]) -> dict[str, Promise]:
    """The promises `grader build` stored in an inventory, by id (none in an inventory made before them)."""
    return {
        promise_id: Promise(
            promise_id, data["exercise"], data["function"], data["kind"], data["says"], data["weight"]
        )
        for promise_id, data in inventory.get("promises", {}).items()
    }


def drawn_by_working_checks(
    promises: Mapping[str, Promise], checks: Iterable[tuple[str, str, Iterable[str]]]
) -> set[str]:
    """The domain features (grader.assignment.domain's labels, which name the function called) that hidden
    checks of a working kind drew: those that compare answers, whichever function of the exercise their
    promise is of; `checks`: (suite, promise id, labels drawn) of each check of a recorded run."""
    out: set[str] = set()
    for suite, promise_id, labels in checks:
        promise = promises.get(promise_id)
        if suite == SUITES[-1] and promise is not None and promise.kind not in GATED:
            out.update(labels)
    return out


def naming_problems(promises: Mapping[str, Promise], tests: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every check (an inventory test) that names a promise no file declares, or one of another exercise:
    grading could not score it."""
    out = []
    for test in tests:
        name = test.get("promise", "")
        if not name:
            continue
        promise = promises.get(name)
        if promise is None:
            out.append(f"{test['nodeid']} names the promise {name!r}, which no file of {PROMISES} declares")
        elif promise.exercise != test["exercise"]:
            out.append(
                f"{test['nodeid']} (exercise {test['exercise']}) names the promise {name!r} of "
                f"{promise.function}, which is exercise {promise.exercise}'s"
            )
    return out


def coverage_problems(
    promises: Mapping[str, Promise], tests: Iterable[Mapping[str, Any]], exercises: Iterable[int]
) -> list[str]:
    """Everything wrong with how the checks of `exercises` (those with a promise file) name promises."""
    exercises = set(exercises)
    tests = [t for t in tests if t["exercise"] in exercises]
    return [
        *unnamed_checks(tests),
        *naming_problems(promises, tests),
        *unchecked_promises(promises, tests, exercises),
        *idle_gated_checks(promises, tests),
    ]


def unnamed_checks(tests: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every check that names no promise."""
    return [
        f"{t['nodeid']} names no promise: mark it @pytest.mark.promise(ID)"
        for t in tests
        if not t.get("promise")
    ]


def unchecked_promises(
    promises: Mapping[str, Promise], tests: Iterable[Mapping[str, Any]], exercises: Iterable[int]
) -> list[str]:
    """Every promise of `exercises` that no hidden check names."""
    hidden = {t.get("promise") for t in tests if t["suite"] == SUITES[-1]}
    return [
        f"the promise {p.id!r} of exercise {p.exercise} has no hidden check"
        for p in promises.values()
        if p.exercise in set(exercises) and p.id not in hidden
    ]


def idle_gated_checks(promises: Mapping[str, Promise], tests: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every check of a gated promise (error, unchanged) whose entry holds no check of a working kind
    (value, edge, rng) of its function: it could never earn, and the reference would not get full marks."""
    declared = [(t, promises[t["promise"]]) for t in tests if t.get("promise") in promises]
    working = {(t["suite"], p.function) for t, p in declared if p.kind not in GATED}
    return [
        f"{t['nodeid']} checks the {p.kind} promise {p.id!r}, but its {t['suite']} entry has no check of "
        f"a value, edge or rng promise of {p.function}: it could never earn"
        for t, p in declared
        if p.kind in GATED and (t["suite"], p.function) not in working
    ]
