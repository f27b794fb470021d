"""The exercise manifest: read grader/exercises.toml, check it against the reference, expose it as data."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from grader.assignment.reference import Reference
from grader.errors import LocatedError
from grader.layout import MANIFEST

Visibility = Literal["hidden", "after_due_date", "after_published", "visible"]  # Gradescope's
VISIBILITIES: tuple[Visibility, ...] = ("hidden", "after_due_date", "after_published", "visible")
HIDDEN_OUTPUTS = ("property", "none", "full")

_TOP_KEYS = ("defaults", "exercise", "budget")
_BUDGET_KEYS = ("cpu_seconds", "exercise_cpu_seconds", "wall_seconds")
_DEFAULT_KEYS = ("module", "hidden_visibility", "hidden_output")
_REQUIRED_KEYS = ("id", "title", "part", "functions", "points")
_OPTIONAL_KEYS = ("hidden_visibility", "hidden_output", "visible_points")
# The keys of an exercise that change scores alone, never what a check does: a change of them re-scores
# the batch's kept results (grader.batch.rescore) instead of running every submission again.
SCORING_KEYS = ("points", "visible_points")


class ManifestError(LocatedError):
    """A problem in the manifest; str is `grader/exercises.toml:LINE: problem`."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: the functions a student implements for it and how it is scored and shown."""

    id: int
    title: str
    part: str
    functions: tuple[str, ...]
    points: int | float
    hidden_visibility: Visibility
    hidden_output: str
    visible_points: int | float | None = None  # the visible entry's share; None: by number of checks

    @property
    def label(self) -> str:
        """How students see the exercise, e.g. "6 Pareto selection"."""
        return f"{self.id} {self.title}"


@dataclass(frozen=True)
class Budget:
    """What grading one submission may cost ([budget]; each a generous multiple of the reference's).
    CPU time decides (so a loaded machine or a neighbour in a batch costs no points): the workers' own,
    from their start (what they do between calls too), the reference worker's on their behalf, and the
    grader's decoding of their answers; past a budget the calls left fail with the limit named. Wall-clock
    time is only a backstop, for code that sleeps."""

    cpu_seconds: float = 60.0  # the whole grading, shared equally by the suites (each runs on its own)
    exercise_cpu_seconds: float = 20.0  # one exercise's calls in one suite
    wall_seconds: float = 300.0  # the whole grading, wall-clock (grader grade's --run-timeout)

    def suite_cpu_seconds(self, suites: int) -> float:
        """One suite's share of `cpu_seconds`, where the grading runs `suites` of them."""
        return self.cpu_seconds / max(1, suites)


@dataclass(frozen=True)
class Manifest:
    """The module under exercise and its exercises, in id order (ids are 1..n)."""

    module: str
    exercises: tuple[Exercise, ...]
    budget: Budget = Budget()

    @property
    def total_points(self) -> int | float:
        return sum(exercise.points for exercise in self.exercises)

    @property
    def functions(self) -> tuple[str, ...]:
        """Every exercise function, in manifest order."""
        return tuple(name for exercise in self.exercises for name in exercise.functions)

    def by_id(self, exercise_id: int) -> Exercise:
        """The exercise with this id; KeyError if there is none."""
        for exercise in self.exercises:
            if exercise.id == exercise_id:
                return exercise
        raise KeyError(f"no exercise {exercise_id}")

    def by_function(self, name: str) -> Exercise:
        """The exercise that covers function `name`; KeyError if it is not an exercise function."""
        for exercise in self.exercises:
            if name in exercise.functions:
                return exercise
        raise KeyError(f"{name!r} is not an exercise function")


def load_manifest(path: Path, reference: Reference, shown_as: str | None = None) -> Manifest:
    """Read and check the manifest at `path`; errors name it `shown_as` (default: `path`)."""
    shown_as = shown_as or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(shown_as, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ManifestError(shown_as, None, f"cannot read: {error}") from None
    return parse_manifest(text, reference, shown_as)


def parse_manifest(text: str, reference: Reference, shown_as: str = MANIFEST.as_posix()) -> Manifest:
    """Check the manifest `text` against `reference` and return it; any problem raises ManifestError."""
    where = _ManifestText(text, shown_as)
    data = _parse_toml(text, where)
    _check_top_keys(data, where)
    defaults = _defaults(data["defaults"], where)
    entries = data["exercise"]
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise where.error(where.top_line("exercise"), "'exercise' must be an array of [[exercise]] tables")
    if not entries:
        raise where.error(where.top_line("exercise"), "no exercises")
    exercises = tuple(_exercise(entry, index, defaults, where) for index, entry in enumerate(entries))
    _check_functions(exercises, reference, where)
    _check_parts(exercises, where)
    return Manifest(defaults["module"], exercises, _budget(data.get("budget", {}), where))


class _ManifestText:
    """The manifest's lines, for finding the line of a table, a key or a value (best effort)."""

    _TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
    _ARRAY = re.compile(r"^\s*\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$")

    def __init__(self, text: str, shown_as: str) -> None:
        self.shown_as = shown_as
        self.lines = text.split("\n")  # TOML line breaks are \n and \r\n only
        # (name, line) of each table header, in order; line 1-based
        self.headers = [
            (match[1], number)
            for number, line in enumerate(self.lines, 1)
            if (match := self._ARRAY.match(line) or self._TABLE.match(line))
        ]

    def error(self, line: int | None, problem: str) -> ManifestError:
        return ManifestError(self.shown_as, line, problem)

    def table_line(self, name: str, index: int = 0) -> int | None:
        """The header line of the index-th table `name` ([name] or [[name]])."""
        lines = [number for header, number in self.headers if header == name]
        return lines[index] if index < len(lines) else None

    def top_line(self, key: str) -> int:
        """The line of a top-level table or key."""
        return self.table_line(key) or self._find_key(key, 0, self._end(0)) or 1

    def key_line(self, table: str, index: int, key: str) -> int:
        """The line of `key` in the index-th table `table`; the table's header if not found."""
        start = self.table_line(table, index)
        if start is None:
            return 1
        return self._find_key(key, start, self._end(start)) or start

    def value_line(self, table: str, index: int, key: str, value: str) -> int:
        """The line holding the string `value` of `key` (for multi-line arrays); else the key's line."""
        start = self.key_line(table, index, key)
        quoted = re.compile(rf"""["']{re.escape(value)}["']""")
        for number in range(start, self._end(start) + 1):
            if quoted.search(self.lines[number - 1]):
                return number
        return start

    def _end(self, start: int) -> int:
        """The last line of the table whose header is at `start` (0: the root, before any header)."""
        following = [number for _, number in self.headers if number > start]
        return following[0] - 1 if following else len(self.lines)

    def _find_key(self, key: str, start: int, end: int) -> int | None:
        pattern = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
        for number in range(start + 1, end + 1):
            if pattern.match(self.lines[number - 1]):
                return number
        return None


def _parse_toml(text: str, where: _ManifestText) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        found = re.search(r"\(at line (\d+), column \d+\)|\(at end of document\)", message)
        line = int(found[1]) if found and found[1] else len(where.lines) or 1
        problem = message[: found.start()].strip() if found else message
        raise where.error(line, f"TOML syntax error: {problem}") from None


def _check_top_keys(data: Mapping[str, Any], where: _ManifestText) -> None:
    for key in data:
        if key not in _TOP_KEYS:
            problem = f"unknown table or key {key!r} (expected defaults, exercise, budget)"
            raise where.error(where.top_line(key), problem)
    for key in _TOP_KEYS[:2]:  # [budget] may be left out
        if key not in data:
            raise where.error(1, f"missing [{key}]" if key == "defaults" else "missing [[exercise]] tables")


@dataclass(frozen=True)
class _Table:
    """One table of the manifest ([defaults] or the index-th [[exercise]]) and the checks of its values."""

    values: Mapping[str, Any]
    name: str
    index: int
    where: _ManifestText

    @property
    def label(self) -> str:
        return f"[{self.name}]" if self.name != "exercise" else f"[[exercise]] entry {self.index + 1}"

    def error(self, key: str | None, problem: str) -> ManifestError:
        """An error at the line of `key` (at the table's header when `key` is None)."""
        if key is None:
            line = self.where.table_line(self.name, self.index) or self.where.top_line(self.name)
        else:
            line = self.where.key_line(self.name, self.index, key)
        return self.where.error(line, f"{self.label}: {problem}")

    def check_keys(self, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
        allowed = (*required, *optional)
        for key in self.values:
            if key not in allowed:
                raise self.error(key, f"unknown key {key!r} (expected one of {', '.join(allowed)})")
        missing = [key for key in required if key not in self.values]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            raise self.error(None, f"missing key{plural} {', '.join(repr(key) for key in missing)}")

    def text(self, key: str) -> str:
        """A non-empty one-line string."""
        value = self.values[key]
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            raise self.error(key, f"{key} must be a non-empty one-line string, not {value!r}")
        return value

    def identifier(self, key: str) -> str:
        value = self.values[key]
        if not isinstance(value, str) or not value.isidentifier():
            raise self.error(key, f"{key} must be a Python identifier, not {value!r}")
        return value

    def choice(self, key: str, options: tuple[str, ...], default: str | None = None) -> str:
        value = self.values.get(key, default)
        if value not in options:
            raise self.error(key, f"{key} must be one of {', '.join(options)}, not {value!r}")
        return value

    def positive_int(self, key: str) -> int:
        value = self.values[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.error(key, f"{key} must be a positive integer, not {value!r}")
        return value

    def seconds(self, key: str) -> float:
        value = self.values[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value <= 0:
            raise self.error(key, f"{key} must be a positive number of seconds, not {value!r}")
        return float(value)

    def points(self, key: str) -> int | float:
        value = self.values[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value <= 0:
            raise self.error(key, f"{key} must be a positive number, not {value!r}")
        if round(value, 2) != value:
            raise self.error(key, f"{key} must have at most two decimals, not {value!r}")
        return value

    def names(self, key: str) -> tuple[str, ...]:
        """A non-empty list of distinct Python identifiers."""
        value = self.values[key]
        if not isinstance(value, list) or not value:
            raise self.error(key, f"{key} must be a non-empty list of function names, not {value!r}")
        seen: list[str] = []
        for name in value:
            if not isinstance(name, str) or not name.isidentifier():
                raise self.error(key, f"{key}: {name!r} is not a function name")
            if name in seen:
                raise self.error(key, f"{key}: {name!r} is listed twice")
            seen.append(name)
        return tuple(seen)


def _budget(values: Any, where: _ManifestText) -> Budget:
    if not isinstance(values, dict):
        raise where.error(where.top_line("budget"), "'budget' must be a table")
    table = _Table(values, "budget", 0, where)
    table.check_keys((), _BUDGET_KEYS)
    return Budget(**{key: table.seconds(key) for key in _BUDGET_KEYS if key in values})


def _defaults(values: Any, where: _ManifestText) -> dict[str, str]:
    if not isinstance(values, dict):
        raise where.error(where.top_line("defaults"), "'defaults' must be a table")
    table = _Table(values, "defaults", 0, where)
    table.check_keys(_DEFAULT_KEYS)
    return {
        "module": table.identifier("module"),
        "hidden_visibility": table.choice("hidden_visibility", VISIBILITIES),
        "hidden_output": table.choice("hidden_output", HIDDEN_OUTPUTS),
    }


def _exercise(
    values: Mapping[str, Any], index: int, defaults: Mapping[str, str], where: _ManifestText
) -> Exercise:
    table = _Table(values, "exercise", index, where)
    table.check_keys(_REQUIRED_KEYS, _OPTIONAL_KEYS)
    exercise_id = table.positive_int("id")
    if exercise_id <= index:
        raise table.error("id", f"duplicate id {exercise_id} (ids are 1..n in order)")
    if exercise_id != index + 1:
        problem = f"id {exercise_id} out of order: expected {index + 1} (ids are 1..n in order)"
        raise table.error("id", problem)
    points = table.points("points")
    visible_points = table.points("visible_points") if "visible_points" in values else None
    if visible_points is not None and visible_points >= points:
        problem = f"visible_points must be less than points ({points!r}), not {visible_points!r}"
        raise table.error("visible_points", problem)
    return Exercise(
        id=exercise_id,
        title=table.text("title"),
        part=table.text("part"),
        functions=table.names("functions"),
        points=points,
        hidden_visibility=cast(
            Visibility, table.choice("hidden_visibility", VISIBILITIES, defaults["hidden_visibility"])
        ),
        hidden_output=table.choice("hidden_output", HIDDEN_OUTPUTS, defaults["hidden_output"]),
        visible_points=visible_points,
    )


def _check_parts(exercises: tuple[Exercise, ...], where: _ManifestText) -> None:
    """A part is written the same way by every exercise in it: its number ("3." of "3. weight
    optimization") names one title (a part spelt anew split the students' tags and the report)."""
    first: dict[str, Exercise] = {}
    for index, exercise in enumerate(exercises):
        number = exercise.part.split(maxsplit=1)[0]
        if not number.rstrip(".").isdigit():
            continue
        earlier = first.setdefault(number, exercise)
        if earlier.part != exercise.part:
            problem = (
                f"[[exercise]] entry {index + 1}: part {exercise.part!r} has the number of exercise "
                f"{earlier.id}'s part {earlier.part!r}: write that part the same way, or give a new part "
                "a number of its own"
            )
            raise where.error(where.key_line("exercise", index, "part"), problem)


def _check_functions(exercises: tuple[Exercise, ...], reference: Reference, where: _ManifestText) -> None:
    """Every function is a top-level def of the reference and belongs to one exercise only."""
    defined = reference.functions()
    owner: dict[str, Exercise] = {}
    for index, exercise in enumerate(exercises):
        for name in exercise.functions:
            line = where.value_line("exercise", index, "functions", name)
            if name in owner:
                first = owner[name]
                problem = f"function {name!r} is already in exercise {first.id} ({first.title})"
                raise where.error(line, problem)
            if name not in defined:
                raise where.error(line, f"function {name!r} is not a top-level def in {reference.path}")
            owner[name] = exercise
