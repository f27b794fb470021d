"""The codec: every value the suites pass crosses intact, and nothing but plain data crosses at all."""

from __future__ import annotations

import math
import random
import sys
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.runtime.codec import (
    MAX_INT_DIGITS,
    MAX_SHARED_HASH,
    Codec,
    CodecError,
    dumps,
    loads,
    update_in_place,
)
from grader.runtime.worker import load_module
from tests.kit.conftest import KIT


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(KIT / "solutions" / "optimization_toolkit.py", "codec_test_reference")


@pytest.fixture(scope="module")
def stubs() -> types.ModuleType:
    return load_module(KIT / "student" / "optimization_toolkit.py", "codec_test_student")


def cross(value, sender: types.ModuleType, receiver: types.ModuleType | None = None):
    """Encode on one side, pass strict JSON text, decode on the other (by default the same module)."""
    return Codec(receiver or sender).decode(loads(dumps(Codec(sender).encode(value))))


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.integers() | st.text(max_size=3) | st.tuples(st.integers()), inner, max_size=4)
        | st.frozensets(st.integers(), max_size=4)
    ),
    max_leaves=20,
)


@given(plain)
def test_plain_values_cross_with_their_exact_types(ref, value):
    back = cross(value, ref)
    assert back == value
    assert _types(back) == _types(value)


def _types(value):
    if isinstance(value, list | tuple | frozenset | set):
        return (
            type(value),
            [_types(v) for v in sorted(value, key=repr)]
            if isinstance(value, frozenset)
            else [_types(v) for v in value],
        )
    if isinstance(value, dict):
        return (dict, [(_types(k), _types(v)) for k, v in value.items()])
    return type(value)


@pytest.mark.parametrize("x", [math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308])
def test_special_floats_cross_and_the_json_is_strict(ref, x):
    text = dumps(Codec(ref).encode([x]))
    assert "Infinity" not in text
    back = cross([x], ref)[0]
    assert back == x and math.copysign(1, back) == math.copysign(1, x)


def test_nan_crosses_as_nan(ref):
    assert math.isnan(cross(math.nan, ref))


def test_sets_and_dicts_with_odd_keys(ref):
    value = {(1, "a"): {2, 3}, 7: frozenset({"x"}), None: [], 2.5: "f"}
    assert cross(value, ref) == value


def test_random_state_continues_identically(ref):
    rng = random.Random(42)
    rng.random()
    back = cross(rng, ref)
    assert type(back) is random.Random
    assert [back.random() for _ in range(5)] == [rng.random() for _ in range(5)]


def test_lab_objects_decode_into_the_receivers_classes(ref, stubs):
    prog = stubs.Program().with_demos([stubs.Demo(1, "A", 2, False)])
    back = cross(prog, stubs, ref)
    assert type(back) is ref.Program and type(back.demos[0]) is ref.Demo
    assert back == ref.Program().with_demos([ref.Demo(1, "A", 2, False)])
    policy = cross(ref.TabPolicy(2, 2, 3), ref, stubs)
    assert type(policy) is stubs.TabPolicy and policy.theta == [[[0.0] * 3] * 2] * 2
    variant = cross(ref.AgentVariant(3, frozenset({"planner"}), 0.5, 0), ref)
    assert variant == ref.AgentVariant(3, frozenset({"planner"}), 0.5, 0) and hash(variant)


def test_lab_functions_cross_by_name(ref, stubs):
    assert cross(ref.honest_proposer, ref, stubs) is stubs.honest_proposer


def test_an_attribute_that_would_hide_a_method_is_refused(ref):
    """A policy whose `probs` names a lab function would run that function where the method was meant."""
    state = {"S": 1, "T": 1, "V": 1, "theta": [[[0.0]]], "probs": {"$function": "exact_kl"}}
    encoded = {"$object": "TabPolicy", "state": {"$dict": [[k, v] for k, v in state.items()]}}
    with pytest.raises(CodecError, match="may not name its class's attribute 'probs'"):
        Codec(ref).decode(encoded)
    meter = {"$object": "Meter", "state": {"$dict": [["charge", 1], ["rollouts", 0]]}}
    with pytest.raises(CodecError, match="'charge'"):
        Codec(ref).decode(meter)
    plain = {"$object": "Meter", "state": {"$dict": [["max_rollouts", 3], ["cache", [1]]]}}
    assert Codec(ref).decode(plain).max_rollouts == 3  # a field with a class default, and a new attribute


def test_where_functions_are_named_only_those_cross(ref):
    codec = Codec(ref)
    codec.functions = frozenset({"softmax"})
    assert codec.decode({"$function": "softmax"}) is ref.softmax
    with pytest.raises(CodecError, match="not on the open call's graph"):
        codec.decode({"$function": "exact_kl"})


def test_constructing_codecs_build_dataclass_objects_through_their_constructors(ref):
    codec = Codec(ref)
    codec.construct = True
    variant = codec.decode(Codec(ref).encode(ref.AgentVariant(3, frozenset({"planner"}), 0.5, 0)))
    assert variant == ref.AgentVariant(3, frozenset({"planner"}), 0.5, 0)
    missing = {"$object": "PPOSample", "state": {"$dict": [["s", 0]]}}
    with pytest.raises(CodecError, match="could not be built"):
        codec.decode(missing)  # its constructor needs every field without a default
    policy = codec.decode(Codec(ref).encode(ref.TabPolicy(2, 2, 3)))  # not a dataclass: its state, as sent
    assert type(policy) is ref.TabPolicy and policy.S == 2


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class SneakyFloat(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


@pytest.mark.parametrize(
    "value", [AlwaysEqual(), SneakyFloat(1.0), [SneakyFloat(2.0)], (x for x in []), object()]
)
def test_values_that_are_not_plain_data_are_refused(ref, value):
    with pytest.raises(CodecError, match="cannot be graded"):
        Codec(ref).encode(value)


def test_callables_are_refused_unless_this_side_issues_callbacks(ref):
    def proposer(files, rng):
        return files, "none"

    with pytest.raises(CodecError):
        Codec(ref).encode(proposer)
    side = Codec(ref, issue_callbacks=True)
    assert side.encode(proposer) == {"$callback": 1} and side.callbacks[1] is proposer


@pytest.mark.parametrize(
    "message",
    [
        {"$object": "BudgetExhausted", "state": {"$dict": []}},
        {"$object": "Path", "state": {"$dict": []}},
        {"$object": "Program", "state": [1]},
        {"$function": "not_there"},
        {"$function": "replace"},  # what the module imported: dataclasses.replace ran on main
        {"$function": "dataclass"},
        {"$function": "TabPolicy"},  # a class is no function
        {"$float": "1e400"},
        {"$eval": "1"},
        {"a": 1},
        {"$dict": [[[1], 2]]},
        {"$set": [[1]]},
        {"$dict": [[1]]},
        {"$random": [3, ["x"], None]},
        {"$random": [3, [-1] * 624 + [624], None]},  # a word below 0
        {"$random": [3, [0.5] * 624 + [624], None]},
        {"$random": [3, [1, 2, 3], None]},  # not 625 words
        {"$random": [3, 7, None]},
        {"$callback": 1},
    ],
)
def test_malformed_or_foreign_encodings_are_refused(ref, message):
    with pytest.raises(CodecError):
        Codec(ref).decode(message)


def test_deep_nesting_is_refused(ref):
    deep: list = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(CodecError, match="deeply"):
        Codec(ref).encode(deep)


def test_bare_nan_in_json_text_is_refused():
    with pytest.raises(CodecError):
        loads('{"x": NaN}')
    with pytest.raises(CodecError):
        loads("{not json")


def test_update_in_place_keeps_identity_of_shared_parts(ref):
    g = [[[0.0, 0.0], [0.0, 0.0]]]
    row = g[0][1]
    assert update_in_place(g, [[[1.0, 2.0], [3.0, 4.0]]]) is g
    assert row is g[0][1] and row == [3.0, 4.0]

    var = ref.TGVar("Solve.", "parse", True, ["consider naming: units"])
    graph = [("parse", var)]
    new_var = ref.TGVar("Solve units", "parse", True, [])
    assert update_in_place(graph, [("parse", new_var)]) is graph
    assert graph[0][1] is var and var.value == "Solve units" and var.grads == []

    rng, other = random.Random(1), random.Random(2)
    assert update_in_place(rng, other) is rng and rng.getstate() == other.getstate()

    files = {"a": "1", "b": "2"}
    assert update_in_place(files, {"b": "3", "c": "4"}) is files and files == {"b": "3", "c": "4"}


@pytest.mark.parametrize("tag", ["$set", "$frozenset", "$dict"])
def test_keys_chosen_to_collide_are_refused(ref, tag):
    modulus = 2**61 - 1  # hash(k * modulus) == 0 for every int k: building the set would be quadratic
    keys = [k * modulus for k in range(1, 200)]
    items = [[k, 0] for k in keys] if tag == "$dict" else keys
    with pytest.raises(CodecError, match="share one hash"):
        Codec(ref).decode({tag: items})
    few = keys[:MAX_SHARED_HASH]  # an honest handful of equal hashes still decodes
    assert len(Codec(ref).decode({"$set": few})) == MAX_SHARED_HASH


def test_messages_that_parse_but_cannot_be_values_are_codec_errors():
    with pytest.raises(CodecError):
        loads("1" * 5000)  # an int longer than int() converts
    with pytest.raises(CodecError):
        loads("[" * 100_000 + "]" * 100_000)  # deeper than the parser recurses


def test_a_long_integer_is_refused_before_it_is_converted():
    """A Python without a limit on integer digits (3.11.0rc1) converts a million digits in quadratic time
    (4 s of the grader's CPU): the codec refuses past MAX_INT_DIGITS before converting, whatever the
    interpreter's own limit, and takes every integer up to it."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # no limit of Python's own, as on 3.11.0rc1
    try:
        with pytest.raises(CodecError, match="1000000 digits"):
            loads("[" + "7" * 1_000_000 + "]")
        with pytest.raises(CodecError, match="digits"):
            loads('{"$tuple": [-' + "9" * (MAX_INT_DIGITS + 1) + "]}")
        assert loads("-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)
    finally:
        sys.set_int_max_str_digits(limit)
