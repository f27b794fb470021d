"""Exercise 20 (costs), hidden checks: call_cost against its formula, breakeven_calls against the reference
and the equal-totals property, cheapest against the reference over random (positive) CostInputs."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(20)

tokens = st.integers(0, 10**6)
price = st.floats(0.0, 100.0)
money = st.floats(0.0, 1e5)
rate = st.floats(0.0, 1.0)


def plan(fixed, per_call, acc, calls=1000, error_cost=0.1):
    total = fixed + per_call * calls
    return {
        "fixed": fixed,
        "per_call": per_call,
        "acc": acc,
        "total": total,
        "total_with_errors": total + calls * (1.0 - acc) * error_cost,
    }


plans = st.builds(plan, money, rate, rate, st.integers(0, 10**6), st.floats(0.0, 1.0))


@st.composite
def crossing_pairs(draw):
    """Plans a and b where b costs more up front and less per call, and is more accurate: b wins later."""
    fa, fb = sorted(draw(st.lists(money, min_size=2, max_size=2, unique=True)))
    pb, pa = sorted(draw(st.lists(rate, min_size=2, max_size=2, unique=True)))
    acc_a, acc_b = sorted(draw(st.lists(rate, min_size=2, max_size=2)))
    return plan(fa, pa, acc_a), plan(fb, pb, acc_b)


pairs = st.one_of(st.tuples(plans, plans), crossing_pairs())


def _pin_breakeven(student, reference):
    """Each breakeven property below also pins two numbers of calls: None or 0 satisfies some of them."""
    a, b, c = plan(0.0, 0.05, 0.6), plan(100.0, 0.01, 0.9), plan(500.0, 0.02, 0.95)
    expect_pinned(student, reference, "breakeven_calls", (a, b, 0.1), (a, c), rel=1e-8, abs=1e-9)


def _pin_cheapest(student, reference):
    """Each cheapest property below also pins two answers: a fixed choice satisfies them."""
    few, many = reference.CostInputs(calls=5_000), reference.CostInputs(calls=5_000_000)
    expect_pinned(student, reference, "cheapest", (few,), (many,), rel=1e-8, abs=1e-9)


def effective(p, error_cost):
    return p["per_call"] + (1.0 - p["acc"]) * error_cost


def clear_verdict(a, b, e):
    """Leave out near-ties of the two effective rates, where rounding decides."""
    ea, eb = effective(a, e), effective(b, e)
    return abs(ea - eb) > 1e-6 * max(ea, eb)


cost_inputs_fields = {
    "calls": st.integers(1, 10**7),
    "in_tokens": st.integers(1, 10**5),
    "out_tokens": st.integers(1, 10**4),
    "bloat_tokens": st.integers(1, 10**5),
    "big_in": st.floats(0.01, 100.0),
    "big_out": st.floats(0.01, 100.0),
    "small_in": st.floats(0.01, 100.0),
    "small_out": st.floats(0.01, 100.0),
    "prompt_opt_rollouts": st.integers(1, 10**5),
    "reflection_calls": st.integers(1, 10**4),
    "reflection_tokens": st.integers(1, 10**5),
    "teacher_rollouts": st.integers(1, 10**6),
    "train_examples": st.integers(1, 10**5),
    "train_tokens_each": st.integers(1, 10**4),
    "epochs": st.integers(1, 10),
    "train_price": st.floats(0.01, 100.0),
    "eng_hours_prompt": st.floats(0.01, 1000.0),
    "eng_hours_weights": st.floats(0.01, 1000.0),
    "eng_rate": st.floats(0.01, 1000.0),
    "both_bloat_share": st.floats(0.01, 1.0),
    "acc_none": st.floats(0.01, 1.0),
    "acc_prompt": st.floats(0.01, 1.0),
    "acc_weights": st.floats(0.01, 1.0),
    "acc_both": st.floats(0.01, 1.0),
    "error_cost": st.floats(0.001, 10.0),
    "can_finetune": st.booleans(),
}


# The fields of a CostInputs (positive values), built into the lab's class in each test.
cost_fields = st.fixed_dictionaries(cost_inputs_fields)


def near_best(opts):
    best = min(p["total_with_errors"] for p in opts.values())
    return [
        k for k, p in opts.items() if math.isclose(p["total_with_errors"], best, rel_tol=1e-9, abs_tol=1e-9)
    ]


# -- call_cost -------------------------------------------------------------------------------------------


@given(tokens, tokens, price, price)
def test_call_cost_is_tokens_times_prices_per_million(student, i, o, p_in, p_out):
    """call_cost is (in_tok p_in + out_tok p_out) / 1e6."""
    expect_close(
        student.call_cost(i, o, p_in, p_out),
        (i * p_in + o * p_out) / 1e6,
        call("call_cost", i, o, p_in, p_out),
        rel=1e-9,
        abs=1e-15,
    )


@given(tokens, tokens, price, price)
def test_call_cost_matches_the_reference(student, reference, i, o, p_in, p_out):
    """call_cost gives the reference's value, also with the arguments by keyword."""
    want = reference.call_cost(i, o, p_in, p_out)
    expect_close(
        student.call_cost(in_tok=i, out_tok=o, p_in=p_in, p_out=p_out),
        want,
        call("call_cost", in_tok=i, out_tok=o, p_in=p_in, p_out=p_out),
        rel=1e-9,
        abs=1e-15,
    )


# -- breakeven_calls -------------------------------------------------------------------------------------


@given(pairs, st.floats(0.0, 1.0))
def test_breakeven_matches_the_reference(student, reference, ab, e):
    """breakeven_calls gives the reference's answer (None, 0 or the number of calls)."""
    a, b = ab
    assume(clear_verdict(a, b, e))
    expect_close(
        student.breakeven_calls(a, b, e),
        reference.breakeven_calls(a, b, e),
        call("breakeven_calls", a, b, e),
        rel=1e-8,
        abs=1e-9,
    )


@given(pairs, st.floats(0.0, 1.0))
def test_at_breakeven_both_plans_cost_the_same(student, ab, e):
    """At the breakeven number of calls both plans' totals with errors are equal (0 if b starts cheaper)."""
    a, b = ab
    assume(clear_verdict(a, b, e))
    ea, eb = effective(a, e), effective(b, e)
    got = student.breakeven_calls(a, b, e)
    what = call("breakeven_calls", a, b, e)
    if eb >= ea:
        expect_true(
            got is None,
            f"{what}: b's effective cost per call is not lower, so b never wins",
            f"expected: None\n  got:      {got!r}",
        )
        return
    expect_true(
        isinstance(got, int | float) and not isinstance(got, bool) and got >= 0,
        f"{what}: expected a number of calls >= 0",
        f"got {got!r}",
    )
    if b["fixed"] <= a["fixed"]:
        expect_close(got, 0.0, f"{what}: b already wins at zero calls", abs=1e-9)
    else:
        total_a, total_b = a["fixed"] + got * ea, b["fixed"] + got * eb
        expect_close(
            total_a,
            total_b,
            f"the totals with errors of a and b after {what} = {got!r} calls",
            rel=1e-8,
            abs=1e-9,
        )


@given(plans, st.floats(0.0, 1.0), money)
def test_breakeven_is_none_when_the_rates_are_equal(student, reference, a, e, fixed):
    """When b's effective cost per call equals a's, b never wins (None), whatever the fixed costs."""
    _pin_breakeven(student, reference)
    b = dict(a, fixed=fixed)
    got = student.breakeven_calls(a, b, e)
    expect_true(got is None, call("breakeven_calls", a, b, e), f"expected: None\n  got:      {got!r}")


@given(cost_fields, st.floats(0.0, 1.0), st.data())
def test_breakeven_uses_its_error_cost_argument(student, reference, lab, fields, e, data):
    """breakeven_calls uses its error_cost argument (not the inputs' error_cost), 0.10 by default."""
    _pin_breakeven(student, reference)
    c = lab.CostInputs(**fields)
    names = data.draw(st.permutations(["plan_none", "plan_prompt", "plan_weights", "plan_both"]))
    a, b = getattr(lab, names[0])(c), getattr(lab, names[1])(c)
    for args, want_e in (((a, b, e), e), ((a, b), 0.10)):
        if not clear_verdict(a, b, want_e):
            continue
        expect_close(
            student.breakeven_calls(*args),
            reference.breakeven_calls(a, b, want_e),
            call("breakeven_calls", *args) + f" with CostInputs.error_cost={c.error_cost!r}",
            rel=1e-8,
            abs=1e-9,
        )


@given(crossing_pairs())
def test_breakeven_error_cost_defaults_to_0_10(student, reference, ab):
    """Without an error_cost argument, breakeven_calls counts 0.10 per wrong answer."""
    a, b = ab
    assume(clear_verdict(a, b, 0.10))
    expect_close(
        student.breakeven_calls(a, b),
        reference.breakeven_calls(a, b, 0.10),
        call("breakeven_calls", a, b),
        rel=1e-8,
        abs=1e-9,
    )


# -- cheapest --------------------------------------------------------------------------------------------


@given(cost_fields)
def test_cheapest_matches_the_reference(student, reference, lab, fields):
    """cheapest gives the reference's options and picks the cheapest one (either of a tie)."""
    c = lab.CostInputs(**fields)
    what = call("cheapest", c)
    name, opts = student.cheapest(c)
    _, want_opts = reference.cheapest(c)
    expect_close(opts, want_opts, f"the options of {what}", rel=1e-9, abs=1e-9)
    expect_true(
        name in near_best(want_opts),
        f"{what} picked {name!r}",
        f"the lowest total_with_errors is that of {near_best(want_opts)}",
    )


@given(cost_fields)
def test_cheapest_has_the_lowest_total_with_errors(student, reference, lab, fields):
    """The option cheapest names is one of its options, with the lowest total_with_errors among them."""
    _pin_cheapest(student, reference)
    c = lab.CostInputs(**fields)
    what = call("cheapest", c)
    name, opts = student.cheapest(c)
    expect_true(name in opts, f"{what} named {name!r}, which is not among its options {sorted(opts)}")
    expect_true(
        name in near_best(opts),
        f"{what} picked {name!r}, not the lowest total_with_errors",
        repr({k: p["total_with_errors"] for k, p in opts.items()}),
    )


@given(cost_fields)
def test_api_only_never_picks_weights(student, lab, fields):
    """API-only (can_finetune=False) offers only none and prompt, and never picks weights or both."""
    c = lab.CostInputs(**dict(fields, can_finetune=False))
    what = call("cheapest", c)
    name, opts = student.cheapest(c)
    expect_equal(sorted(opts), ["none", "prompt"], f"the option names of {what}")
    expect_true(name in ("none", "prompt"), f"{what} picked {name!r}")


@given(cost_fields)
def test_with_fine_tuning_all_four_options_are_offered(student, reference, lab, fields):
    """With fine-tuning allowed, the options are none, prompt, weights and both."""
    _pin_cheapest(student, reference)
    c = lab.CostInputs(**dict(fields, can_finetune=True))
    _, opts = student.cheapest(c)
    expect_equal(
        sorted(opts), ["both", "none", "prompt", "weights"], f"the option names of {call('cheapest', c)}"
    )
