"""Exercise 20 (costs): call_cost, breakeven_calls and cheapest. ALL PRICES AND NUMBERS ARE MADE UP.

call_cost(in_tok, out_tok, p_in, p_out) = (in_tok * p_in + out_tok * p_out) / 1e6 dollars (prices per 1M).
breakeven_calls(a, b, error_cost): a plan's effective cost per call is per_call + (1 - acc) * error_cost;
None if b's is not lower, 0 if b already wins at zero calls, else (fixed_b - fixed_a) / (e_a - e_b).
cheapest(c) = (name, options): the option with the lowest total_with_errors, and all the options.
"""

import pytest

from grader.expect import call, expect_close, expect_equal, expect_true

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


def test_call_cost_adds_input_and_output_tokens_at_their_prices(student):
    """1500 tokens in at $3/M plus 300 out at $15/M is $0.009; input and output prices are not swapped."""
    for args, want in (
        ((1500, 300, 3.0, 15.0), 0.009),
        ((1000, 100, 3.0, 15.0), 0.0045),
        ((4000, 300, 0.25, 1.25), 0.001375),
        ((0, 0, 3.0, 15.0), 0.0),
    ):
        expect_close(student.call_cost(*args), want, call("call_cost", *args), rel=1e-9, abs=1e-15)


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


def test_breakeven_calls_uses_its_error_cost_argument(student):
    """The error_cost argument is used (not the plans' total_with_errors): 0.0 gives 4420 / 0.00825."""
    expect_close(
        student.breakeven_calls(NONE, WEIGHTS, 0.0),
        535757.5757575758,
        call("breakeven_calls", NONE, WEIGHTS, 0.0),
        rel=1e-9,
    )
    expect_close(
        student.breakeven_calls(PROMPT, WEIGHTS, error_cost=0.0),
        222926.9841269841,
        call("breakeven_calls", PROMPT, WEIGHTS, error_cost=0.0),
        rel=1e-9,
    )


def test_breakeven_calls_is_none_when_b_never_wins(student):
    """None when b's effective cost per call is not lower than a's, also when it is exactly equal (but not
    when it is lower)."""
    same_rate = dict(NONE, fixed=100.0)
    for a, b, e in ((WEIGHTS, NONE, 0.10), (NONE, PROMPT, 0.0), (NONE, same_rate, 0.10)):
        got = student.breakeven_calls(a, b, e)
        expect_true(got is None, call("breakeven_calls", a, b, e), f"expected: None\n  got:      {got!r}")
    # b with the lower rate does win, later: prompt -> both at 4420 / (0.0385 - 0.01590625)
    expect_close(
        student.breakeven_calls(PROMPT, BOTH, 0.10),
        195629.32226832645,
        call("breakeven_calls", PROMPT, BOTH, 0.10),
        rel=1e-7,
    )


def test_breakeven_calls_is_zero_when_b_wins_from_the_start(student):
    """0 when b is cheaper per call and costs no more up front (weights vs both without error costs); not 0
    when b costs more up front."""
    expect_close(
        student.breakeven_calls(BOTH, WEIGHTS, 0.0), 0.0, call("breakeven_calls", BOTH, WEIGHTS, 0.0)
    )
    # the other way round, weights -> both, b costs more up front: (5328.9 - 4420) / (0.02075 - 0.01590625)
    expect_close(
        student.breakeven_calls(WEIGHTS, BOTH, 0.10),
        187643.87096774208,
        call("breakeven_calls", WEIGHTS, BOTH, 0.10),
    )


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


def test_cheapest_options_of_the_default_inputs(student, lab):
    """All four options of CostInputs(), with fine-tuning allowed; only none and prompt when API-only."""
    c = lab.CostInputs()
    name, opts = student.cheapest(c)
    expect_equal(name, "both", call("cheapest", "CostInputs()"))
    expect_close(
        opts,
        {"none": NONE, "prompt": PROMPT, "weights": WEIGHTS, "both": BOTH},
        f"the options of {call('cheapest', 'CostInputs()')}",
        rel=1e-9,
    )
    c = lab.CostInputs(can_finetune=False)
    name, opts = student.cheapest(c)
    what = call("cheapest", "CostInputs(can_finetune=False)")
    expect_equal(name, "prompt", what)
    expect_close(opts, {"none": NONE, "prompt": PROMPT}, f"the options of {what}", rel=1e-9)
