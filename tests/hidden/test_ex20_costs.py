"""Exercise 20 (costs), hidden checks: call_cost against its formula, breakeven_calls against the reference
and the equal-totals property, cheapest against the reference over random (positive) CostInputs.

One check per promise: a property that a trivial answer satisfies asks for some work only through cases
that no mistake of another promise changes (break-even numbers that are exact whole numbers of calls,
so rounding them does not show; names of the cheapest option that no price mistake changes)."""

import math
import weakref

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_form, expect_pinned, expect_true

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


# Made-up plans whose break-even numbers are exact whole numbers in binary floating point: 75 / 0.25 = 300
# calls without error costs, 75 / 0.3125 = 240 at error_cost 0.25, 75 / 0.375 = 200 at 0.5.
A = {"fixed": 0.0, "per_call": 0.5, "acc": 0.5}
B = {"fixed": 75.0, "per_call": 0.25, "acc": 0.75}
WHOLE = {0.0: 300.0, 0.25: 240.0, 0.5: 200.0}


def _some_break_even(student, reference):
    """The breakeven properties below hold for None or 0 too: they also ask for two break-even numbers
    without error costs, 300 and 600 calls (whole numbers, so a rounded formula gives them too)."""
    __tracebackhide__ = True
    far = dict(B, fixed=150.0)
    expect_pinned(student, reference, "breakeven_calls", (A, B, 0.0), (A, far, 0.0), rel=1e-9)


def _uses_error_cost(student, reference):
    """The error_cost properties below hold for a constant too: they also ask for the break-even numbers
    at error_cost 0, 0.25 and 0.5 (whole numbers: a rounded formula gives them too)."""
    __tracebackhide__ = True
    cases = [(A, B, e) for e in WHOLE]
    expect_pinned(student, reference, "breakeven_calls", *cases, rel=1e-9)


# Checks of the answers below that held, per student handle (as expect_pinned remembers its pins).
_HELD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cheapest_names(student, lab):
    """The cheapest property below holds for a fixed answer too: it also asks for the names at 1 call
    (none: every other option costs its fixed cost) and at 10^9 calls (both: the lowest cost per call
    with errors), which no mistake in call_cost's prices changes."""
    __tracebackhide__ = True
    held = _HELD.setdefault(student, set())
    if "names" in held:
        return
    for calls, want in ((1, "none"), (10**9, "both")):
        name, _ = student.cheapest(lab.CostInputs(calls=calls))
        expect_equal(name, want, call("cheapest", f"CostInputs(calls={calls})"))
    held.add("names")


def _pin_options(student, reference):
    """The option-names property below holds for any dict with those keys: it also pins the options."""
    __tracebackhide__ = True
    held = _HELD.setdefault(student, set())
    if "options" in held:
        return
    for c in (reference.CostInputs(calls=5_000), reference.CostInputs(calls=5_000_000)):
        _, got = student.cheapest(c)
        _, want = reference.cheapest(c)
        expect_close(got, want, f"the options of {call('cheapest', c)}", rel=1e-9, abs=1e-9)
    held.add("options")


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


@pytest.mark.promise("call_cost.formula")
@given(tokens, tokens, price, price)
@example(0, 300, 0.0, 15.0)  # no input tokens, at no input price: 0.0045
@example(1500, 0, 3.0, 0.0)  # no output tokens, at no output price: 0.0045
def test_call_cost_is_tokens_times_prices_per_million(student, i, o, p_in, p_out):
    """call_cost is (in_tok p_in + out_tok p_out) / 1e6."""
    expect_close(
        student.call_cost(i, o, p_in, p_out),
        (i * p_in + o * p_out) / 1e6,
        call("call_cost", i, o, p_in, p_out),
        rel=1e-9,
        abs=1e-15,
    )


@pytest.mark.promise("call_cost.formula")
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


@pytest.mark.promise("breakeven_calls.formula")
@given(crossing_pairs(), st.floats(0.0, 1.0))
def test_breakeven_matches_the_reference(student, reference, ab, e):
    """Where b costs more up front and less per call, breakeven_calls gives the reference's number, not
    rounded."""
    a, b = ab
    assume(clear_verdict(a, b, e))
    expect_close(
        student.breakeven_calls(a, b, e),
        reference.breakeven_calls(a, b, e),
        call("breakeven_calls", a, b, e),
        rel=1e-8,
        abs=1e-9,
    )


@pytest.mark.promise("breakeven_calls.formula")
@given(crossing_pairs(), st.floats(0.0, 1.0))
def test_at_breakeven_both_plans_cost_the_same(student, ab, e):
    """At the break-even number of calls both plans' totals with errors are equal."""
    a, b = ab
    assume(clear_verdict(a, b, e))
    ea, eb = effective(a, e), effective(b, e)
    got = student.breakeven_calls(a, b, e)
    what = call("breakeven_calls", a, b, e)
    expect_true(
        isinstance(got, int | float) and not isinstance(got, bool) and got >= 0,
        f"{what}: expected a number of calls >= 0",
        f"got {got!r}",
    )
    total_a, total_b = a["fixed"] + got * ea, b["fixed"] + got * eb
    expect_close(
        total_a,
        total_b,
        f"the totals with errors of a and b after {what} = {got!r} calls",
        rel=1e-8,
        abs=1e-9,
    )


@pytest.mark.promise("breakeven_calls.never_wins_none")
@given(plans, st.floats(0.0, 1.0), money, st.floats(0.0, 0.5))
@example(plan(10.0, 0.5, 0.5), 0.1, 75.0, 0.0)  # the same per_call and acc, b dearer up front: None
def test_breakeven_is_none_when_b_is_not_cheaper_per_call(student, reference, a, e, fixed, more):
    """When b's effective cost per call equals a's (more == 0) or is higher, b never wins (None), whatever
    the fixed costs; also when the rates are equal by different prices and accuracies."""
    _some_break_even(student, reference)
    b = dict(a, fixed=fixed, per_call=a["per_call"] + more)
    # 0.5 + (1 - 0.5) * 0.5 == 0.25 + (1 - 0.0) * 0.5, exactly
    same_rate = (
        {"fixed": 0.0, "per_call": 0.5, "acc": 0.5},
        {"fixed": 10.0, "per_call": 0.25, "acc": 0.0},
        0.5,
    )
    for args in ((a, b, e), same_rate):
        got = student.breakeven_calls(*args)
        expect_true(got is None, call("breakeven_calls", *args), f"expected: None\n  got:      {got!r}")


@pytest.mark.promise("breakeven_calls.wins_from_start_zero")
@given(crossing_pairs(), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
@example((plan(10.0, 0.5, 0.5), plan(10.0, 0.25, 0.75)), 0.1, 1.0)  # equal fixed costs: 0 exactly
def test_breakeven_is_zero_when_b_costs_no_more_up_front(student, reference, ab, e, share):
    """When b is cheaper per call and costs no more up front (here a share of a's fixed cost), b already
    wins at zero calls: 0."""
    _some_break_even(student, reference)
    a, b = ab
    b = dict(b, fixed=a["fixed"] * share)
    assume(clear_verdict(a, b, e))
    expect_close(student.breakeven_calls(a, b, e), 0.0, call("breakeven_calls", a, b, e), abs=1e-9)


def _folded(p, e):
    """The plan with its error cost at e folded into its price per call, and no errors left."""
    return dict(p, per_call=p["per_call"] + (1.0 - p["acc"]) * e, acc=1.0)


@pytest.mark.promise("breakeven_calls.error_cost")
@given(cost_fields, st.floats(0.0, 1.0), st.data())
def test_breakeven_uses_its_error_cost_argument(student, reference, lab, fields, e, data):
    """breakeven_calls uses its error_cost argument (not the inputs' error_cost): the same plans with that
    error cost folded into their price per call give the same answer."""
    _uses_error_cost(student, reference)
    c = lab.CostInputs(**fields)
    names = data.draw(st.permutations(["plan_none", "plan_prompt", "plan_weights", "plan_both"]))
    a, b = getattr(lab, names[0])(c), getattr(lab, names[1])(c)
    assume(clear_verdict(a, b, e))
    what = call("breakeven_calls", a, b, e) + f" with CostInputs.error_cost={c.error_cost!r}"
    folded = (_folded(a, e), _folded(b, e), 0.0)
    expect_close(student.breakeven_calls(a, b, e), student.breakeven_calls(*folded), what, rel=1e-8, abs=1e-9)


@pytest.mark.promise("breakeven_calls.error_cost")
@given(crossing_pairs())
def test_breakeven_error_cost_defaults_to_0_10(student, reference, ab):
    """Without an error_cost argument, breakeven_calls counts 0.10 per wrong answer."""
    _uses_error_cost(student, reference)
    a, b = ab
    assume(clear_verdict(a, b, 0.10))
    expect_close(
        student.breakeven_calls(a, b),
        student.breakeven_calls(_folded(a, 0.10), _folded(b, 0.10), 0.0),
        call("breakeven_calls", a, b),
        rel=1e-8,
        abs=1e-9,
    )


# -- cheapest --------------------------------------------------------------------------------------------

# Inputs where the lowest total and the lowest total with errors name different options, so that leaving
# out the cost of wrong answers changes the name: the demo's 500,000 calls (lowest total: none; with
# errors: both), API-only at 5,000,000 calls (none; with errors: prompt), and a costly error at 20,000
# calls (none; with errors: prompt).
ERRORS_DECIDE = (
    {},
    {"calls": 5_000_000, "can_finetune": False},
    {"calls": 20_000, "error_cost": 2.0},
)


# Drawn inputs, and as often with wrong answers costing 1 to 10 dollars (where a plan's total with errors
# differs most from its total).
costly_fields = st.one_of(
    cost_fields,
    st.fixed_dictionaries(dict(cost_inputs_fields, error_cost=st.floats(1.0, 10.0))),
)


def _expect_cheapest_name(student, reference, c):
    """The name cheapest gives is one of the reference's options with the lowest total with errors."""
    __tracebackhide__ = True
    what = call("cheapest", c)
    name, _ = student.cheapest(c)
    _, want_opts = reference.cheapest(c)
    best = near_best(want_opts)
    expect_true(
        name in best,
        f"{what} named {name!r}, not the option with the lowest total_with_errors ({' or '.join(best)})",
        repr({k: p["total_with_errors"] for k, p in want_opts.items()}),
    )


@pytest.mark.promise("cheapest.lowest_total_with_errors")
def test_cheapest_counts_the_cost_of_wrong_answers(student, reference, lab):
    """The cheapest option counts the cost of wrong answers: where the lowest total without it is
    another option, the name is the one with the lowest total_with_errors."""
    for fields in ERRORS_DECIDE:
        _expect_cheapest_name(student, reference, lab.CostInputs(**fields))


# API-only inputs where none and prompt tie on total_with_errors, exactly in binary floating point: at 32
# calls none costs 32 * 0.5 + 32 * 0.5 * 1.0 = 32 and prompt 8 up front + 32 * 0.75 = 32 (no errors).
OPTION_TIE = {
    "calls": 32, "in_tokens": 10**6, "out_tokens": 10**6, "bloat_tokens": 10**6, "big_in": 0.25,
    "big_out": 0.25, "prompt_opt_rollouts": 4, "reflection_calls": 2, "reflection_tokens": 10**6,
    "eng_hours_prompt": 1.0, "eng_rate": 4.0, "acc_none": 0.5, "acc_prompt": 1.0, "error_cost": 1.0,
    "can_finetune": False,
}  # fmt: skip


@pytest.mark.promise("cheapest.lowest_total_with_errors")
@given(costly_fields)
@example(OPTION_TIE)  # a tie: either name
def test_cheapest_names_the_reference_choice(student, reference, lab, fields):
    """cheapest names the option the reference names (either of a tie)."""
    _expect_cheapest_name(student, reference, lab.CostInputs(**fields))


@pytest.mark.promise("cheapest.lowest_total_with_errors")
@given(costly_fields)
def test_cheapest_has_the_lowest_total_with_errors(student, lab, fields):
    """The option cheapest names is one of its options, with the lowest total_with_errors among them."""
    _cheapest_names(student, lab)
    c = lab.CostInputs(**fields)
    what = call("cheapest", c)
    name, opts = student.cheapest(c)
    expect_true(name in opts, f"{what} named {name!r}, which is not among its options {sorted(opts)}")
    expect_true(
        name in near_best(opts),
        f"{what} picked {name!r}, not the lowest total_with_errors",
        repr({k: p["total_with_errors"] for k, p in opts.items()}),
    )


@pytest.mark.promise("cheapest.name_and_options")
@given(cost_fields)
@example({})  # CostInputs(): all four options
@example({"can_finetune": False})  # API-only: none and prompt
def test_cheapest_returns_a_tuple_of_the_name_and_the_options(student, reference, lab, fields):
    """cheapest returns a tuple (name, opts): name a str, opts the options as options(c) gives them."""
    c = lab.CostInputs(**fields)
    what = call("cheapest", c)
    got = student.cheapest(c)
    want = reference.cheapest(c)
    expect_form(got, want, what)
    expect_close(got[1], want[1], f"the options of {what}", rel=1e-9, abs=1e-9)


@pytest.mark.promise("cheapest.api_only")
@given(cost_fields)
def test_api_only_never_picks_weights(student, lab, fields):
    """API-only (can_finetune=False) offers only none and prompt, and never picks weights or both."""
    c = lab.CostInputs(**dict(fields, can_finetune=False))
    what = call("cheapest", c)
    name, opts = student.cheapest(c)
    expect_equal(sorted(opts), ["none", "prompt"], f"the option names of {what}")
    expect_true(name in ("none", "prompt"), f"{what} picked {name!r}")


@pytest.mark.promise("cheapest.name_and_options")
@given(cost_fields)
def test_with_fine_tuning_all_four_options_are_offered(student, reference, lab, fields):
    """With fine-tuning allowed, the options are none, prompt, weights and both."""
    _pin_options(student, reference)
    c = lab.CostInputs(**dict(fields, can_finetune=True))
    _, opts = student.cheapest(c)
    expect_equal(
        sorted(opts), ["both", "none", "prompt", "weights"], f"the option names of {call('cheapest', c)}"
    )
