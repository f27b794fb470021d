"""Exercise 20 (costs): call_cost, breakeven_calls and cheapest. ALL PRICES AND NUMBERS ARE MADE UP.

call_cost(in_tok, out_tok, p_in, p_out) = (in_tok * p_in + out_tok * p_out) / 1e6 dollars (prices per 1M).
breakeven_calls(a, b, error_cost): a plan's effective cost per call is per_call + (1 - acc) * error_cost;
None if b's is not lower, 0 if b already wins at zero calls, else (fixed_b - fixed_a) / (e_a - e_b).
cheapest(c) = (name, options): the option with the lowest total_with_errors, and all the options.
"""

import pytest

from grader.expect import call, expect_close, expect_equal, expect_form, expect_true

pytestmark = pytest.mark.exercise(20)

# The plans of CostInputs() (500,000 calls, error_cost 0.10), as plan_none(c), ..., plan_both(c) give them.
NONE = {"fixed": 0.0, "per_call": 0.009, "acc": 0.6, "total": 4500.0, "total_with_errors": 24500.0}
PROMPT = {"fixed": 908.9, "per_call": 0.0165, "acc": 0.78, "total": 9158.9, "total_with_errors": 20158.9}
WEIGHTS = {"fixed": 4420.0, "per_call": 0.00075, "acc": 0.8, "total": 4795.0, "total_with_errors": 14795.0}
BOTH = {
    "fixed": 5328.9,
    "per_call": 0.00090625,
    "acc": 0.85,
    "total": 5782.025,
    "total_with_errors": 13282.025,
}


@pytest.mark.promise("call_cost.formula")
def test_call_cost_adds_input_and_output_tokens_at_their_prices(student):
    """1500 tokens in at $3/M plus 300 out at $15/M is $0.009; input and output prices are not swapped."""
    for args, want in (
        ((1500, 300, 3.0, 15.0), 0.009),
        ((1000, 100, 3.0, 15.0), 0.0045),
        ((4000, 300, 0.25, 1.25), 0.001375),
        ((0, 0, 3.0, 15.0), 0.0),
    ):
        expect_close(student.call_cost(*args), want, call("call_cost", *args), rel=1e-9, abs=1e-15)


@pytest.mark.promise("breakeven_calls.formula")
def test_breakeven_calls_of_the_default_plans(student):
    """None -> weights: e_a = 0.009 + 0.4 * 0.1, e_b = 0.00075 + 0.2 * 0.1, so 4420 / (0.049 - 0.02075)."""
    expect_close(
        student.breakeven_calls(NONE, WEIGHTS, 0.10),
        156460.1769911504,
        call("breakeven_calls", NONE, WEIGHTS, 0.10),
        rel=1e-9,
    )
    # The default error_cost is 0.10: none -> prompt breaks even at 908.9 / (0.049 - 0.0385).
    expect_close(
        student.breakeven_calls(NONE, PROMPT),
        86561.90476190468,
        call("breakeven_calls", NONE, PROMPT),
        rel=1e-9,
    )


# Two made-up plans whose break-even numbers are whole numbers of calls: b costs 75 more up front and 0.25
# less per call, with an error rate of 0.25 against a's 0.5.
A = {"fixed": 0.0, "per_call": 0.5, "acc": 0.5}
B = {"fixed": 75.0, "per_call": 0.25, "acc": 0.75}


@pytest.mark.promise("breakeven_calls.error_cost")
def test_breakeven_calls_uses_its_error_cost_argument(student):
    """The error_cost argument is used (not the plans' total_with_errors): without error costs b saves
    0.25 a call, 75 / 0.25 = 300 calls; at 0.5 a wrong answer it saves 0.25 + 0.25 * 0.5, 75 / 0.375 = 200."""
    for e, want in ((0.0, 300.0), (0.5, 200.0), (0.25, 240.0)):
        expect_close(student.breakeven_calls(A, B, e), want, call("breakeven_calls", A, B, e), rel=1e-9)
    expect_close(
        student.breakeven_calls(A, B, error_cost=0.5),
        200.0,
        call("breakeven_calls", A, B, error_cost=0.5),
        rel=1e-9,
    )


@pytest.mark.promise("breakeven_calls.never_wins_none")
def test_breakeven_calls_is_none_when_b_never_wins(student):
    """None when b's effective cost per call is not lower than a's, also when it is exactly equal (but not
    when it is lower)."""
    same_rate = dict(NONE, fixed=100.0)
    for a, b, e in ((WEIGHTS, NONE, 0.10), (NONE, PROMPT, 0.0), (NONE, same_rate, 0.10), (B, A, 0.5)):
        got = student.breakeven_calls(a, b, e)
        expect_true(got is None, call("breakeven_calls", a, b, e), f"expected: None\n  got:      {got!r}")
    # b with the lower rate does win, later: 75 / 0.25 = 300 calls
    expect_close(student.breakeven_calls(A, B, 0.0), 300.0, call("breakeven_calls", A, B, 0.0), rel=1e-9)


@pytest.mark.promise("breakeven_calls.wins_from_start_zero")
def test_breakeven_calls_is_zero_when_b_wins_from_the_start(student):
    """0 when b is cheaper per call and costs no more up front (weights vs both without error costs, or
    the same fixed cost); not 0 when b costs more up front."""
    expect_close(
        student.breakeven_calls(BOTH, WEIGHTS, 0.0), 0.0, call("breakeven_calls", BOTH, WEIGHTS, 0.0)
    )
    same_fixed = dict(B, fixed=0.0)
    expect_close(
        student.breakeven_calls(A, same_fixed, 0.0), 0.0, call("breakeven_calls", A, same_fixed, 0.0)
    )
    # b costs 75 more up front: 75 / 0.25 = 300 calls, not 0
    expect_close(student.breakeven_calls(A, B, 0.0), 300.0, call("breakeven_calls", A, B, 0.0), rel=1e-9)


DEMO = [  # calls, fine-tuning allowed, the cheapest option, its total with errors (the demo's section 11)
    (5_000, True, "none", 245.0),
    (5_000, False, "none", 245.0),
    (50_000, True, "none", 2450.0),
    (50_000, False, "none", 2450.0),
    (500_000, True, "both", 13282.025),
    (500_000, False, "prompt", 20158.9),
    (5_000_000, True, "both", 84860.15),
    (5_000_000, False, "prompt", 193408.9),
]


@pytest.mark.promise("cheapest.lowest_total_with_errors")
def test_cheapest_reproduces_the_demo_table(student, lab):
    """The demo's table: the cheapest option including errors, for 5,000 to 5,000,000 calls."""
    for calls, ft, name, total in DEMO:
        c = lab.CostInputs(calls=calls, can_finetune=ft)
        what = call("cheapest", f"CostInputs(calls={calls}, can_finetune={ft})")
        got_name, opts = student.cheapest(c)
        expect_equal(got_name, name, what)
        expect_close(
            opts[name]["total_with_errors"],
            total,
            f"options[{name!r}]['total_with_errors'] of {what}",
            rel=1e-9,
        )


@pytest.mark.promise("cheapest.name_and_options")
def test_cheapest_options_of_the_default_inputs(student, lab):
    """cheapest returns a tuple (name, opts); opts of CostInputs(), with fine-tuning allowed, are all four
    options as plan_none(c) and the like give them."""
    c = lab.CostInputs()
    got = student.cheapest(c)
    what = call("cheapest", "CostInputs()")
    want_opts = {"none": NONE, "prompt": PROMPT, "weights": WEIGHTS, "both": BOTH}
    expect_form(got, ("both", want_opts), what)
    expect_close(got[1], want_opts, f"the options of {what}", rel=1e-9)


@pytest.mark.promise("cheapest.api_only")
def test_cheapest_when_api_only(student, lab):
    """API-only (can_finetune=False): only none and prompt are offered, and the name is one of them."""
    c = lab.CostInputs(can_finetune=False)
    name, opts = student.cheapest(c)
    what = call("cheapest", "CostInputs(can_finetune=False)")
    expect_true(name in ("none", "prompt"), f"{what} picked {name!r}, which is not offered API-only")
    expect_close(opts, {"none": NONE, "prompt": PROMPT}, f"the options of {what}", rel=1e-9)
