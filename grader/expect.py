"""Assertions for the suites whose failure messages teach: the call, what was expected, what came back.

    expect_equal(student.pareto_front(s), [0, 2], call("pareto_front", s))
    expect_close(student.softmax(xs), [0.5, 0.5], call("softmax", xs))

`expect_close` compares numbers with a tolerance, walking lists, tuples and dicts alike (a list and a
tuple with the same items are alike: the lab's docstrings do not promise one or the other), and
takes an infinity as equal to itself. A nan matches nothing, not even a nan: two of the student's own
answers that are both nan agree on nothing (a submission could otherwise pass a consistency check by
answering nan everywhere). Only where the expected value comes from the reference or is a literal, and
is itself nan, may a test say ``nan_ok=True``.

`expect_form` checks only the form the docstring promises: the container and scalar types at every
level (a list is not a tuple nor a set, a bool is not an int, an int is not a float), values not
compared. It is the one place a list and a tuple differ: a check of a `form` promise uses it, so a type
slip fails that promise alone while expect_equal and expect_close still accept it elsewhere.

`expect_pinned` is for a property that a trivial answer satisfies too (a constant, zeros, the uniform
vector, the input unchanged): it pins the answer on fixed, non-degenerate inputs against the reference,
so the property's test earns nothing for code that does no work (grader.authoring.trivial measures this).

In `call`, a string argument that reads ``random.Random(...)`` stands for that seeded generator (a test
cannot recover the seed from the object): it prints as code, ``random.Random(0)``, not as a string.

A value is cut before it is formatted (at most SHOWN items, nested at most SHOWN_DEPTH deep, strings at
most SHOWN_CHARS long): a submission's answer of megabytes costs a failure message microseconds, never
a pretty-printing of all of it.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pprint
import random
import re
import weakref
from collections.abc import Iterator
from typing import Any

__tracebackhide__ = True
_SEEDED_RNG = re.compile(r"random\.Random\([\w ]*\)")


def call(function: str, *args: Any, **kwargs: Any) -> str:
    """How a call reads in a message: ``softmax([1.0, 2.0])``."""
    parts = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"{function}({', '.join(parts)})"


def expect_equal(got: Any, want: Any, what: str) -> None:
    """Fail unless got == want and of the same type (a list and a tuple count as the same type, at
    any depth: the lab's docstrings do not promise one or the other)."""
    __tracebackhide__ = True
    if not _same(got, want):
        raise AssertionError(_message(what, want, got))


def expect_close(
    got: Any, want: Any, what: str, rel: float = 1e-9, abs: float = 1e-12, nan_ok: bool = False
) -> None:
    """Fail unless got matches want, numbers within `rel`/`abs` (as math.isclose), structure exactly.

    A nan in `got` never matches, unless `nan_ok` and the expected number is a nan too: pass `nan_ok`
    only when `want` is the reference's answer (or a literal), never when it is another student answer.
    """
    __tracebackhide__ = True
    problem = _difference(got, want, rel, abs, "", nan_ok)
    if problem is not None:
        raise AssertionError(
            _message(what, want, got) + (f"\n  first difference: {problem}" if problem else "")
        )


def expect_form(got: Any, want: Any, what: str) -> None:
    """Fail unless `got` has exactly the container and scalar types of `want` at every level (list,
    tuple, set, frozenset, dict; str, bool, int, float, None; a class by name), values not compared.

    A tuple is a record: its length is part of its form. The items of a list or set (and a dict's keys
    and values) must each have the form of one of `want`'s items, so their number is not compared; an
    empty container in `want` says nothing about its items."""
    __tracebackhide__ = True
    problem = _form_difference(got, want, "")
    if problem is not None:
        raise AssertionError(
            f"{what}\n  expected: {_form(want)}\n  got:      {_form(got)}"
            + (f"\n  first difference: {problem}" if problem else "")
        )


_CONTAINERS = (list, tuple, set, frozenset, dict)


def _form_difference(got: Any, want: Any, path: str) -> str | None:
    """Where `got`'s form first differs from `want`'s ("" at the top), or None where it does not."""
    if type(got) is not type(want):
        return f"{path} is {_form(got)}, not {_form(want)}" if path else ""
    if isinstance(want, tuple):
        if len(got) != len(want):
            return f"{path or 'the tuple'} has {len(got)} item(s), not {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if (found := _form_difference(g, w, f"{path}[{i}]")) is not None:
                return found
        return None
    if isinstance(want, list) and len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if (found := _form_difference(g, w, f"{path}[{i}]")) is not None:
                return found
        return None
    if isinstance(want, dict):
        return _items_form(list(got), list(want), f"{path} a key") or _items_form(
            list(got.values()), list(want.values()), f"{path} a value"
        )
    if isinstance(want, list | set | frozenset):
        return _items_form(list(got), list(want), f"{path} an item")
    return None


def _items_form(got: list, want: list, where: str) -> str | None:
    """Where an item of `got` has the form of no item of `want` (None where `want` is empty)."""
    kinds = {_form(w): w for w in want}  # one item of each form stands for its kind
    for g in got if want else ():
        if all(_form_difference(g, w, "") is not None for w in kinds.values()):
            return f"{where.strip()} is {_form(g)}, not {' or '.join(sorted(kinds))}"
    return None


def _form(value: Any, depth: int = 0) -> str:
    """A value's form as it reads in a message: ``list[float]``, ``tuple[str, list[str]]``."""
    name = type(value).__name__
    if not isinstance(value, _CONTAINERS) or depth >= SHOWN_DEPTH:
        return name
    if isinstance(value, tuple):
        return f"{name}[{', '.join(_form(v, depth + 1) for v in value[:SHOWN])}]"
    if isinstance(value, dict):
        keys = _union(_form(k, depth + 1) for k in list(value)[:SHOWN])
        values = _union(_form(v, depth + 1) for v in list(value.values())[:SHOWN])
        return f"{name}[{keys}, {values}]" if value else name
    items = _union(_form(v, depth + 1) for v in list(value)[:SHOWN])
    return f"{name}[{items}]" if value else name


def _union(forms: Iterator[str]) -> str:
    return " | ".join(sorted(set(forms)))


def expect_pinned(
    student: Any, reference: Any, function: str, *cases: tuple, rel: float = 1e-9, abs: float = 1e-12
) -> None:
    """Fail unless `student.function(*args)` gives the reference's answer, and leaves the arguments the
    lab's contract lets it change (a policy, a generator) as the reference leaves them, for every `args`
    of `cases`. Give at least two cases with different answers, neither of them degenerate (zero, empty,
    uniform), so that no constant passes. Changes to other arguments stay in the worker and are not
    seen here: a check of an `unchanged` promise asks `student.last_changed`."""
    __tracebackhide__ = True
    key = _pin_key(function, cases, rel, abs)
    passed = _PINS_PASSED.setdefault(student, set()) if key is not None else set()
    if key in passed:
        return  # this student already gave these answers in this suite: the pin holds
    for args in cases:
        mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
        got = getattr(student, function)(*mine)
        want = getattr(reference, function)(*theirs)
        expect_close(got, want, call(function, *args), rel, abs)
        expect_close(_plain(mine), _plain(theirs), call(function, *args) + ": its arguments after the call")
    if key is not None:
        passed.add(key)


# Pins that held, per student handle (one worker per suite). A property test pins its answer in every
# example, but the pinned inputs never change: after they held once, asking again costs two calls per
# example (a third of all calls) and tells nothing more about a submission whose functions answer the
# same inputs the same way. Only a pass is remembered: a failing pin is asked again, so every failure is
# reported as it happens (a timeout marks its exercise, a stub's NotImplementedError says "not started").
_PINS_PASSED: weakref.WeakKeyDictionary[Any, set[tuple]] = weakref.WeakKeyDictionary()


def _pin_key(function: str, cases: tuple, rel: float, abs_: float) -> tuple | None:
    """What identifies one pin: the function, the cases as plain data, the tolerances (None: the cases
    cannot be told apart by their text, so the pin is not remembered)."""
    try:
        return (function, repr(_plain(list(cases))), rel, abs_)
    except Exception:  # noqa: BLE001 - a case whose repr fails is simply asked every time
        return None


def _plain(value: Any) -> Any:
    """A value as plain data: objects by their attributes, a random.Random by its state."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, random.Random):
        return list(value.getstate()[1])
    if hasattr(value, "__dict__") and not callable(value):
        return {"class": type(value).__name__, **_plain(vars(value))}
    return value


def expect_true(condition: bool, what: str, detail: str = "") -> None:
    """Fail with `what` (and `detail`) unless condition holds."""
    __tracebackhide__ = True
    if not condition:
        detail = detail if len(detail) <= 1500 else detail[:1497] + "..."  # it may hold a huge answer's repr
        raise AssertionError(what + (f"\n  {detail}" if detail else ""))


def _difference(got: Any, want: Any, rel: float, abs_: float, path: str, nan_ok: bool) -> str | None:
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return None if type(got) is type(want) and got == want else (path or "")
    if isinstance(want, int | float):
        if isinstance(got, bool) or not isinstance(got, int | float):
            return path or ""
        got_nan, want_nan = _is_nan(got), _is_nan(want)
        if got_nan or want_nan:
            return None if nan_ok and got_nan and want_nan else (path or "")
        if math.isinf(want) or math.isinf(got):
            return None if got == want else (path or "")
        if math.isclose(got, want, rel_tol=rel, abs_tol=abs_):
            return None
        off = abs(got - want)
        return f"{path or 'the number'} is off by {off:.3g}; the tolerance is rel={rel:g}, abs={abs_:g}"
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            return path or ""
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if (found := _difference(g, w, rel, abs_, f"{path}[{i}]", nan_ok)) is not None:
                return found
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return path or ""
        for key in want:
            if (found := _difference(got[key], want[key], rel, abs_, f"{path}[{key!r}]", nan_ok)) is not None:
                return found
        return None
    return None if got == want else (path or "")


def _is_nan(x: int | float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
    return type(got) is type(want) and got == want


def _message(what: str, want: Any, got: Any) -> str:
    return f"{what}\n  expected: {_long(want)}\n  got:      {_long(got)}"


def _short(value: Any) -> str:
    # built for every check, passed or not: repr, linear in the value and at C speed (a 4 MB answer: a
    # few ms), where _cut would cost every passing check tens of microseconds in Python
    text = value if isinstance(value, str) and _SEEDED_RNG.fullmatch(value) else repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _long(value: Any) -> str:
    text = pprint.pformat(_cut(value, [SHOWN]), width=100, compact=True)
    text = text.replace("\n", "\n            ")
    return text if len(text) <= 1500 else text[:1497] + "..."


SHOWN, SHOWN_DEPTH, SHOWN_CHARS = 400, 12, 300


class _Elided:
    """Stands, in a value cut for showing, for what was cut (or for an object, as its repr would read)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _cut(value: Any, room: list[int], depth: int = 0) -> Any:
    """`value` with at most room[0] items in all, nested at most SHOWN_DEPTH deep (the rest elided), for
    formatting: the work is bounded by what is shown, not by the value's size."""
    if room[0] <= 0:
        return _Elided("...")
    room[0] -= 1
    if isinstance(value, str):
        return value if len(value) <= SHOWN_CHARS else _Elided(repr(value[:SHOWN_CHARS]) + "...")
    if not isinstance(value, list | tuple | dict | set | frozenset) and not dataclasses.is_dataclass(value):
        return value if isinstance(value, int | float | bool | type(None)) else _Elided(_bounded_repr(value))
    if depth >= SHOWN_DEPTH:
        return _Elided("...")
    if isinstance(value, list | tuple):
        items = [_cut(v, room, depth + 1) for v in _while_room(value, room)]
        items += [_Elided("...")] if len(items) < len(value) else []
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        pairs = _while_room(value.items(), room)
        shown = {_cut(k, room, depth + 1): _cut(v, room, depth + 1) for k, v in pairs}
        return shown if len(shown) == len(value) else shown | {_Elided("..."): _Elided("...")}
    if isinstance(value, set | frozenset):
        items = [repr(_cut(v, room, depth + 1)) for v in _while_room(value, room)]
        text = "{" + ", ".join(items + (["..."] if len(items) < len(value) else [])) + "}"
        text = text if value else "set()" if isinstance(value, set) else "frozenset()"
        return _Elided(text if isinstance(value, set) or not value else f"frozenset({text})")
    names = [f.name for f in dataclasses.fields(value)]
    fields = ", ".join(f"{k}={_cut(getattr(value, k, None), room, depth + 1)!r}" for k in names)
    return _Elided(f"{type(value).__name__}({fields})")


def _while_room(items: Any, room: list[int]) -> Iterator:
    """The items, one by one, while there is room to show them."""
    for item in items:
        if room[0] <= 0:
            return
        yield item


def _bounded_repr(value: Any) -> str:
    """repr(value), or the class's name where that fails; cut to SHOWN_CHARS."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is named by its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."
