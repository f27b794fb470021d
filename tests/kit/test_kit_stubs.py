"""The stub generator on small synthetic modules: what it keeps byte-for-byte, replaces, and rejects."""

from __future__ import annotations

import pytest

from grader.assignment.manifest import Exercise, Manifest
from grader.assignment.reference import ModuleSourceError
from grader.authoring.stubs import StubError, stub_message, stub_module, stub_statement


def manifest(**functions: tuple[str, ...]) -> Manifest:
    """Exercise k (1-based, in keyword order) titled by its keyword, covering the given functions."""
    exercises = tuple(
        Exercise(index, title.replace("_", " "), "1. part", names, 1, "hidden", "property")
        for index, (title, names) in enumerate(functions.items(), 1)
    )
    return Manifest("toolkit", exercises)


RAISE_F = 'raise NotImplementedError("exercise 1 (first): implement f")'
RAISE_G = 'raise NotImplementedError("exercise 1 (first): implement g")'


def run(source: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "stubbed"}
    exec(compile(source, "stubbed.py", "exec"), namespace)
    return namespace


REFERENCE = '''\
"""Module docstring: stays."""
import functools  # a comment that stays

LIMIT = 3


def helper(x):
    return x + LIMIT  # not an exercise: untouched


@functools.lru_cache(
    maxsize=None,
)
def pareto(
    scores,
    *,
    eps: float = 1e-12,  # a default
    names=("a", "b"),
) -> list[int]:
    """Indices of the front.

    A literal backslash \\n, "quotes" and 'ticks' stay exactly as written.
    """
    # hint: scan from the lowest index
    front = [i for i, s in enumerate(scores) if s > eps]
    return front
    # trailing remark about the trick


async def fetch(url):
    r"""Raw docstring \\d+."""
    return url


def select(scores, rng=None):
    """Pick one."""
    return max(scores)


# a comment between functions
def after():
    return "after"
'''

STUBBED = '''\
"""Module docstring: stays."""
import functools  # a comment that stays

LIMIT = 3


def helper(x):
    return x + LIMIT  # not an exercise: untouched


@functools.lru_cache(
    maxsize=None,
)
def pareto(
    scores,
    *,
    eps: float = 1e-12,  # a default
    names=("a", "b"),
) -> list[int]:
    """Indices of the front.

    A literal backslash \\n, "quotes" and 'ticks' stay exactly as written.
    """
    raise NotImplementedError("exercise 1 (Pareto selection): implement pareto")


async def fetch(url):
    r"""Raw docstring \\d+."""
    raise NotImplementedError("exercise 2 (fetching): implement fetch")


def select(scores, rng=None):
    """Pick one."""
    raise NotImplementedError("exercise 1 (Pareto selection): implement select")


# a comment between functions
def after():
    return "after"
'''

EXERCISES = manifest(Pareto_selection=("pareto", "select"), fetching=("fetch",))


def test_keeps_signatures_decorators_docstrings_and_the_rest_byte_for_byte() -> None:
    assert stub_module(REFERENCE, EXERCISES, "ref.py") == STUBBED


def test_stubs_raise_not_implemented_naming_the_exercise_and_the_rest_still_works() -> None:
    namespace = run(stub_module(REFERENCE, EXERCISES, "ref.py"))

    with pytest.raises(NotImplementedError) as caught:
        namespace["select"]([1, 2])  # type: ignore[operator]
    assert str(caught.value) == "exercise 1 (Pareto selection): implement select"
    with pytest.raises(NotImplementedError, match=r"^exercise 1 \(Pareto selection\): implement pareto$"):
        namespace["pareto"]((1, 2))  # type: ignore[operator]
    assert namespace["helper"](1) == 4  # type: ignore[operator]
    assert namespace["after"]() == "after"  # type: ignore[operator]
    assert namespace["pareto"].__doc__.startswith("Indices of the front.")  # type: ignore[union-attr]


def test_stub_statement_escapes_the_title() -> None:
    exercise = Exercise(3, 'say "hi" \\ there', "p", ("f",), 1, "hidden", "none")

    statement = stub_statement(exercise, "f")

    assert stub_message(exercise, "f") == 'exercise 3 (say "hi" \\ there): implement f'
    with pytest.raises(NotImplementedError) as caught:
        exec(statement)
    assert str(caught.value) == stub_message(exercise, "f")


def test_function_without_docstring_loses_its_whole_body_comments_included() -> None:
    source = "def f(x):\n    # the trick: add one\n    y = x + 1\n\n    return y\n\n\nZ = 1\n"

    out = stub_module(source, manifest(first=("f",)), "ref.py")

    assert out == 'def f(x):\n    raise NotImplementedError("exercise 1 (first): implement f")\n\n\nZ = 1\n'


def test_one_line_def_keeps_the_header_and_replaces_the_statement() -> None:
    source = "def g(x): return x * 2  # doubles\ndef h(): 'doc'; return 1\nW = 2\n"

    out = stub_module(source, manifest(first=("g", "h")), "ref.py")

    assert out == (
        'def g(x): raise NotImplementedError("exercise 1 (first): implement g")\n'
        "def h(): 'doc'; raise NotImplementedError(\"exercise 1 (first): implement h\")\n"
        "W = 2\n"
    )


def test_statement_after_docstring_on_the_same_line_is_replaced() -> None:
    source = 'def f():\n    """Doc."""; return 1\n'

    out = stub_module(source, manifest(first=("f",)), "ref.py")

    assert out == 'def f():\n    """Doc."""; raise NotImplementedError("exercise 1 (first): implement f")\n'


def test_docstring_only_function_gets_a_raise() -> None:
    source = 'def f():\n    """Nothing yet."""\n\n\ndef g(): "inline"\n'

    out = stub_module(source, manifest(first=("f", "g")), "ref.py")

    assert out == f'def f():\n    """Nothing yet."""\n    {RAISE_F}\n\n\ndef g(): "inline"; {RAISE_G}\n'


def test_non_ascii_before_the_body_and_crlf_line_endings_are_kept() -> None:
    source = 'def grüße(x): return "ü" * x\r\ndef f(x):\r\n    """Dök."""\r\n    return x\r\nY = "é"\r\n'

    out = stub_module(source, manifest(first=("grüße", "f")), "ref.py")

    assert out == (
        'def grüße(x): raise NotImplementedError("exercise 1 (first): implement grüße")\r\n'
        'def f(x):\r\n    """Dök."""\r\n    raise NotImplementedError("exercise 1 (first): implement f")\r\n'
        'Y = "é"\r\n'
    )


def test_nested_definitions_go_with_the_body() -> None:
    source = (
        'def f(x):\n    """Doc."""\n    def inner():\n        return x\n\n    class C:\n        pass\n'
        "    return inner\n"
    )

    out = stub_module(source, manifest(first=("f",)), "ref.py")

    assert out == f'def f(x):\n    """Doc."""\n    {RAISE_F}\n'


def test_stubbing_a_stubbed_module_changes_nothing() -> None:
    once = stub_module(REFERENCE, EXERCISES, "ref.py")
    assert stub_module(once, EXERCISES, "ref.py") == once


MARKED = '''\
def f(xs):
    """Sum of the doubled items."""
    total = 0
    for x in xs:
        # BEGIN SOLUTION
        total += 2 * x
        # END SOLUTION
    #   begin   solution
    total = round(total, 3)
    #END SOLUTION
    return total
    # trailing scaffolding comment stays


def g():
    """Not marked: whole body."""
    return 1
'''

MARKED_STUB = '''\
def f(xs):
    """Sum of the doubled items."""
    total = 0
    for x in xs:
        # YOUR CODE HERE
        raise NotImplementedError("exercise 1 (first): implement f")
    # YOUR CODE HERE
    raise NotImplementedError("exercise 1 (first): implement f")
    return total
    # trailing scaffolding comment stays


def g():
    """Not marked: whole body."""
    raise NotImplementedError("exercise 1 (first): implement g")
'''


def test_markers_replace_only_the_marked_regions_and_keep_the_scaffolding() -> None:
    out = stub_module(MARKED, manifest(first=("f", "g")), "ref.py")

    assert out == MARKED_STUB


def test_scaffolding_around_a_marked_region_still_runs() -> None:
    source = (
        "def f(xs):\n    out = []\n    for x in xs:\n        # BEGIN SOLUTION\n        out.append(x)\n"
        "        # END SOLUTION\n    return out\n"
    )
    f = run(stub_module(source, manifest(first=("f",)), "ref.py"))["f"]

    assert f([]) == []  # type: ignore[operator]
    with pytest.raises(NotImplementedError, match=r"^exercise 1 \(first\): implement f$"):
        f([1])  # type: ignore[operator]


def test_marker_text_inside_a_string_is_not_a_marker() -> None:
    source = 'def f():\n    """Use\n    # BEGIN SOLUTION\n    markers."""\n    return 1\n'

    out = stub_module(source, manifest(first=("f",)), "ref.py")

    assert out == (
        'def f():\n    """Use\n    # BEGIN SOLUTION\n    markers."""\n'
        '    raise NotImplementedError("exercise 1 (first): implement f")\n'
    )


MARKER_ERRORS = [
    (
        "begin without end",
        "def f():\n    x = 1\n    # BEGIN SOLUTION\n    return x\n",
        3,
        "BEGIN SOLUTION without an END SOLUTION",
    ),
    (
        "end without begin",
        "def f():\n    x = 1\n    # END SOLUTION\n    return x\n",
        3,
        "END SOLUTION without a BEGIN SOLUTION",
    ),
    (
        "nested begin",
        "def f():\n    # BEGIN SOLUTION\n    x = 1\n    # BEGIN SOLUTION\n    return x\n    # END SOLUTION\n",
        4,
        "BEGIN SOLUTION inside the region opened at line 2",
    ),
    (
        "begin and end in different functions",
        "def f():\n    # BEGIN SOLUTION\n    return 1\n\n\ndef g():\n    # END SOLUTION\n    return 2\n",
        2,
        "BEGIN SOLUTION without an END SOLUTION",
    ),
    (
        "marker at top level",
        "def f():\n    return 1\n\n\n# BEGIN SOLUTION\nX = 1\n# END SOLUTION\n",
        5,
        "BEGIN SOLUTION marker outside any exercise function body",
    ),
    (
        "marker in a function that is no exercise",
        "def f():\n    return 1\n\n\ndef given():\n    # BEGIN SOLUTION\n    return 2\n    # END SOLUTION\n",
        6,
        "BEGIN SOLUTION marker outside any exercise function body",
    ),
    (
        "region that breaks the syntax",
        "def f(xs):\n    # BEGIN SOLUTION\n    for x in xs:\n        y = x\n        # END SOLUTION\n"
        "        y += 1\n",
        2,
        "the stubbed body does not compile",
    ),
]


@pytest.mark.parametrize(
    ("source", "line", "problem"), [case[1:] for case in MARKER_ERRORS], ids=[c[0] for c in MARKER_ERRORS]
)
def test_marker_errors_are_one_line_with_the_marker_line(source: str, line: int, problem: str) -> None:
    with pytest.raises(StubError) as caught:
        stub_module(source, manifest(first=("f",)), "solutions/optimization_toolkit.py")

    message = str(caught.value)
    assert message.startswith(f"solutions/optimization_toolkit.py:{line}: ")
    assert problem in message
    assert "\n" not in message


def test_exercise_function_missing_from_the_source_is_an_error() -> None:
    with pytest.raises(StubError, match=r"^ref\.py:1: exercise 1 function 'f' is not a top-level def$"):
        stub_module("def g():\n    return 1\n", manifest(first=("f",)), "ref.py")


def test_syntax_error_in_the_source_is_a_one_line_error() -> None:
    with pytest.raises(ModuleSourceError, match=r"^ref\.py:2: syntax error: "):
        stub_module("def f():\n    return (\n", manifest(first=("f",)), "ref.py")
