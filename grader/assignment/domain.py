"""The documented domain of the exercise functions' arguments: the features an input may have.

The documented domain of the exercise functions' arguments: the features an input may have (a negative
number, an empty list, a large offset, a near-tie, ...), each a named predicate over an argument's value,
defined here once; which features each argument's domain holds is data, the [[domain]] tables of
tests/promises/exNN.toml (grader.assignment.promises reads them, `grader build` stores them in the inventory).

With `--record-calls`, the suites' plugin names, for every call a check makes, the declared features its
arguments have (`drawn`); `undrawn` then names each declared feature that no hidden check of a working
kind (value, edge, rng: the checks that compare answers) called its function with, so a strategy that
stops drawing a documented case is found, not left to luck.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_DEPTH = 6  # how deep the leaves of a value are looked for (a policy's table is 3 deep)


@dataclass(frozen=True)
class Feature:
    """One feature an argument's value (or, with arity 2, a pair of arguments' values) may have."""

    says: str
    test: Callable[..., bool]
    arity: int = 1


@dataclass(frozen=True)
class Domain:
    """The declared features of one argument (or, for a feature of two, of a pair) of one function."""

    function: str
    arguments: tuple[str, ...]
    features: tuple[str, ...]

    def labels(self) -> list[str]:
        """How a record names each feature of this domain: `function(argument): feature`."""
        return [label(self.function, self.arguments, feature) for feature in self.features]

    def as_data(self) -> dict:
        return {"function": self.function, "arguments": list(self.arguments), "features": list(self.features)}


def label(function: str, arguments: Iterable[str], feature: str) -> str:
    return f"{function}({', '.join(arguments)}): {feature}"


# -- what a value is made of --------------------------------------------------------------------------------


def _leaves(value: Any, depth: int = _DEPTH) -> Iterator[Any]:
    """The numbers and strings a value holds, at any depth up to _DEPTH (lists, tuples, sets, dicts,
    dataclasses, objects' attributes), in order."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float | str):
        yield value
        return
    if depth == 0:
        return
    if isinstance(value, Mapping):
        items: Iterable[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif hasattr(value, "__dict__"):
        items = list(vars(value).values())
    else:
        return
    for item in items:
        yield from _leaves(item, depth - 1)


def _numbers(value: Any) -> list[float]:
    return [x for x in _leaves(value) if isinstance(x, int | float) and not math.isnan(x)]


def _texts(value: Any) -> list[str]:
    return [x for x in _leaves(value) if isinstance(x, str)]


def _sized(value: Any) -> bool:
    return isinstance(value, list | tuple | str | dict | set | frozenset)


def _sequences(value: Any) -> list[Any]:
    """The responses a list of samples, groups or pairs holds: each item's `seq`, or each of its `seqs`,
    else a pair's last component."""
    if not isinstance(value, list | tuple):
        return []
    out = []
    for item in value:
        seqs = getattr(item, "seqs", None)
        seq = getattr(item, "seq", None)
        if seq is None and isinstance(item, list | tuple) and item:
            seq = item[-1]
        found = seqs if isinstance(seqs, list | tuple) else [seq]
        out += [s for s in found if isinstance(s, list | tuple)]
    return out


def _gaps(numbers: list[float]) -> list[float]:
    """The differences between neighbours of the sorted distinct finite numbers."""
    distinct = sorted({x for x in numbers if math.isfinite(x)})
    return [b - a for a, b in zip(distinct, distinct[1:], strict=False)]


def _repeats(value: Any) -> bool:
    if not isinstance(value, list | tuple):
        return False
    items = list(value)
    return any(items[i] == items[j] for i in range(len(items)) for j in range(i + 1, len(items)))


def _large_offset(value: Any) -> bool:
    numbers = [x for x in _numbers(value) if math.isfinite(x)]
    if len(numbers) < 2 or min(abs(x) for x in numbers) < 1e6:
        return False
    spread = max(numbers) - min(numbers)
    return 0 < spread <= 1e-3 * max(abs(x) for x in numbers)


def _columns(table: Any) -> list[list[float]]:
    """The columns (instances) of a table given as rows (candidates) of equal length."""
    if (
        not isinstance(table, list | tuple)
        or not table
        or not all(isinstance(r, list | tuple) for r in table)
    ):
        return []
    width = len(table[0])
    if width == 0 or any(len(row) != width for row in table):
        return []
    return [[row[i] for row in table] for i in range(width)]


def _ucb_bounds(stats: Any) -> list[float]:
    """Each option's upper bound as ucb_choice's docstring defines it: mean + 0.5 / sqrt(pulls + 1)."""
    out = []
    for option in stats if isinstance(stats, list | tuple) else []:
        try:
            total, pulls = option
            out.append((total / pulls if pulls else 0.5) + 0.5 / math.sqrt(pulls + 1))
        except (TypeError, ValueError, ZeroDivisionError):
            continue
    return out


def _bound_gap(low: float, high: float) -> Callable[[Any], bool]:
    """Two options whose upper bounds differ by more than `low` and at most `high`."""

    def test(stats: Any) -> bool:
        bounds = _ucb_bounds(stats)
        return any(
            low < abs(a - b) <= high for i, a in enumerate(bounds) for b in bounds[i + 1 :]
        )  # fmt: skip

    return test


def _untried(stats: Any) -> bool:
    options = stats if isinstance(stats, list | tuple) else []
    return any(isinstance(o, list | tuple) and len(o) == 2 and o[1] == 0 for o in options)


def _shorter_than_t(value: Any, policy: Any) -> bool:
    horizon = getattr(policy, "T", None)
    return isinstance(horizon, int) and any(len(seq) < horizon for seq in _sequences(value))


def _zero_where_positive(value: Any, other: Any) -> bool:
    if not isinstance(value, list | tuple) or not isinstance(other, list | tuple):
        return False
    return any(v == 0 and o > 0 for v, o in zip(value, other, strict=False))


def _plans(a: Any, b: Any) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Two plans' (fixed, per_call, acc), as breakeven_calls reads them (KeyError, TypeError otherwise)."""
    return (a["fixed"], a["per_call"], a["acc"]), (b["fixed"], b["per_call"], b["acc"])


def _same_rate(a: Any, b: Any) -> bool:
    (_, per_a, acc_a), (_, per_b, acc_b) = _plans(a, b)
    return per_b == per_a and acc_b == acc_a


def _no_cheaper_per_call(a: Any, b: Any) -> bool:
    (_, per_a, acc_a), (_, per_b, acc_b) = _plans(a, b)
    return per_b >= per_a and acc_b <= acc_a


def _wins_from_start(a: Any, b: Any) -> bool:
    (fixed_a, per_a, acc_a), (fixed_b, per_b, acc_b) = _plans(a, b)
    return fixed_b <= fixed_a and per_b < per_a and acc_b >= acc_a


def _option_tie(inputs: Any) -> bool:
    """Two of the options the lab (the module defining the inputs' class) offers for `inputs` tie on
    total_with_errors; the cost model is the lab's own, not restated here."""
    options = sys.modules[type(inputs).__module__].options
    return _repeats([plan["total_with_errors"] for plan in options(inputs).values()])


FEATURES: dict[str, Feature] = {
    "empty": Feature("length 0", lambda v: _sized(v) and len(v) == 0),
    "single": Feature("a single item", lambda v: _sized(v) and len(v) == 1),
    "negative": Feature("a negative number somewhere", lambda v: any(x < 0 for x in _numbers(v))),
    "zero": Feature("a zero somewhere", lambda v: any(x == 0 for x in _numbers(v))),
    "tiny": Feature(
        "a number of magnitude below 1e-12, not 0", lambda v: any(0 < abs(x) < 1e-12 for x in _numbers(v))
    ),
    "subnormal": Feature(
        "a subnormal number: below 2.2e-308, not 0",
        lambda v: any(0 < abs(x) < sys.float_info.min for x in _numbers(v)),
    ),
    "large_offset": Feature(
        "numbers sharing a large offset: all 1e6 or more in size, spread not 0 and at most 1e-3 of it",
        _large_offset,
    ),
    "large": Feature(
        "a number of magnitude 700 or more, where exp overflows past 709.8",
        lambda v: any(math.isfinite(x) and abs(x) >= 700 for x in _numbers(v)),
    ),
    "wide_gap": Feature(
        "two numbers more than 745 apart, where exp of their difference underflows to 0",
        lambda v: any(g > 745 for g in _gaps(_numbers(v))) or sum(_gaps(_numbers(v))) > 745,
    ),
    "underflow": Feature(
        "a number below -745.2, whose exp underflows to 0", lambda v: any(x < -745.2 for x in _numbers(v))
    ),
    "tie": Feature("two equal numbers", lambda v: len(_numbers(v)) > len(set(_numbers(v)))),
    "near_tie": Feature(
        "two numbers within 1e-9 of each other, not equal",
        lambda v: any(g <= 1e-9 for g in _gaps(_numbers(v))),
    ),
    "repeated_item": Feature("an item listed twice", _repeats),
    "score_tie": Feature(
        "two items with equal scores (their `score` attributes)",
        lambda v: _repeats([x.score for x in v if isinstance(getattr(x, "score", None), int | float)]),
    ),
    "ragged": Feature(
        "responses of different lengths", lambda v: len({len(seq) for seq in _sequences(v)}) > 1
    ),
    "column_top_tie": Feature(
        "an instance, a column, whose best score two candidates reach",
        lambda v: any(col.count(max(col)) > 1 for col in _columns(v)),
    ),
    "all_zero_column": Feature(
        "an instance, a column, on which every candidate scores 0",
        lambda v: any(all(x == 0 for x in col) for col in _columns(v)),
    ),
    "untried_option": Feature("an option never pulled: [sum, 0]", _untried),
    "bound_tie": Feature("two options whose upper bounds are equal", _bound_gap(-1.0, 0.0)),
    "bound_gap_below_1e-12": Feature(
        "two options whose upper bounds differ, by 1e-12 or less", _bound_gap(0.0, 1e-12)
    ),
    "bound_gap_1e-12_to_1e-9": Feature(
        "two options whose upper bounds differ by more than 1e-12, at most 1e-9", _bound_gap(1e-12, 1e-9)
    ),
    "inner_period": Feature(
        "a text with a period before its end", lambda v: any("." in t.rstrip(".") for t in _texts(v))
    ),
    "trailing_period": Feature(
        "a text ending in a period", lambda v: any(t.endswith(".") for t in _texts(v))
    ),
    "trailing_periods": Feature(
        "a text ending in two periods or more", lambda v: any(t.endswith("..") for t in _texts(v))
    ),
    "crlf": Feature(
        "a text with a carriage return (CRLF line endings)", lambda v: any("\r" in t for t in _texts(v))
    ),
    "non_ascii": Feature(
        "a text with a character outside ASCII", lambda v: any(not t.isascii() for t in _texts(v))
    ),
    "edge_whitespace": Feature(
        "a text that starts or ends in whitespace", lambda v: any(t != t.strip() for t in _texts(v))
    ),
    "key_missing": Feature(
        "a key of the first mapping that the second lacks",
        lambda a, b: isinstance(a, Mapping) and isinstance(b, Mapping) and any(k not in b for k in a),
        arity=2,
    ),
    "shorter_than_T": Feature(
        "a response (in the first argument) shorter than the horizon T of the policy (the second)",
        _shorter_than_t,
        arity=2,
    ),
    "zero_where_positive": Feature(
        "a zero in the first argument where the second is positive", _zero_where_positive, arity=2
    ),
    "can_finetune": Feature(
        "inputs whose can_finetune is True (the weights can be tuned)",
        lambda v: getattr(v, "can_finetune", None) is True,
    ),
    "api_only": Feature(
        "inputs whose can_finetune is False (an API-only model)",
        lambda v: getattr(v, "can_finetune", None) is False,
    ),
    "option_tie": Feature(
        "inputs under which two of the lab's options tie on total_with_errors", _option_tie
    ),
    "same_rate": Feature(
        "a second plan with the first's per_call and acc: an equal effective cost per call at any error_cost",
        _same_rate,
        arity=2,
    ),
    "no_cheaper_per_call": Feature(
        "a second plan no cheaper per call and no more accurate than the first (equal included): its "
        "effective cost per call is not lower at any error_cost",
        _no_cheaper_per_call,
        arity=2,
    ),
    "wins_from_start": Feature(
        "a second plan costing no more up front, less per call and no less accurate than the first: "
        "cheaper from zero calls at any error_cost",
        _wins_from_start,
        arity=2,
    ),
}


def drawn(domains: Iterable[Domain], arguments: Mapping[str, Any]) -> set[str]:
    """The labels of the declared features that a call's `arguments` (bound by parameter name) have.
    A predicate that fails on a value it was not written for counts as not drawn."""
    out = set()
    for domain in domains:
        if not all(name in arguments for name in domain.arguments):
            continue
        values = [arguments[name] for name in domain.arguments]
        for feature in domain.features:
            try:
                has = bool(FEATURES[feature].test(*values))
            except Exception:  # a value of another shape than documented (an error check's input, say)
                has = False
            if has:
                out.add(label(domain.function, domain.arguments, feature))
    return out


def undrawn(domains: Iterable[Domain], drawn: set[str]) -> list[str]:
    """Each declared feature not among the labels `drawn` by the hidden checks of a working kind
    (grader.assignment.promises.drawn_by_working_checks), as one line."""
    return [
        f"{name} is declared in its domain, but no hidden value, edge or rng check calls "
        f"{domain.function} with it: draw it in a strategy (or an @example) of such a check"
        for domain in domains
        for name in domain.labels()
        if name not in drawn
    ]


def domains_from_data(data: Iterable[Mapping[str, Any]]) -> list[Domain]:
    """The domains as the inventory stores them (Domain.as_data)."""
    return [Domain(d["function"], tuple(d["arguments"]), tuple(d["features"])) for d in data]
