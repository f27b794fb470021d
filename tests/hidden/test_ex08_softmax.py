"""Exercise 8 (hidden): softmax, against the reference and by its properties."""

import math
import weakref

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_form, expect_true

pytestmark = pytest.mark.exercise(8)


# Logits within 600 of each other: every probability is a positive float (exp(-600) ~ 1e-261).
logit = st.floats(-300.0, 300.0, allow_nan=False, allow_infinity=False)
logits = st.lists(logit, min_size=1, max_size=8)
# The core checks' inputs: at least two logits, most of them distinct and a few apart (ties and small
# integers too), so that an answer that only ranks them or knows two-logit cases meets ordinary rows.
small = st.one_of(st.integers(-4, 4).map(float), st.floats(-6.0, 6.0, allow_nan=False))
rows = st.one_of(st.lists(small, min_size=2, max_size=8), st.lists(logit, min_size=2, max_size=8))
# Rows that fakes of the right type get wrong: two logits (0.7 / 0.3 is not their softmax), several
# distinct ones (a ranking is not), ties beside a larger logit, logits that share an offset.
CORE_ROWS = (
    [0.0, 1.0],
    [2.0, -1.0],
    [0.5, -1.0, 2.0],
    [1.0, 1.0, 3.0],
    [-5.0, 0.0, 5.0, 2.5],
    [250.0, 251.0, 249.5],
)


def probs(student, xs):
    """The student's probabilities as a list, after a check that they are len(xs) numbers (of any
    container: the promised list is softmax.new_list's own check)."""
    got = student.softmax(xs)
    what = call("softmax", xs)
    expect_true(
        isinstance(got, list | tuple)
        and len(got) == len(xs)
        and all(isinstance(p, int | float) and not isinstance(p, bool) for p in got),
        what,
        f"expected {len(xs)} numbers, got {got!r}",
    )
    return list(got), what


_WORKS: weakref.WeakSet = weakref.WeakSet()  # the students whose softmax passed _works


def _works(student, reference):
    """A guard of the properties below, which the uniform vector, a constant or the logits themselves
    also satisfy: of two logits the larger gets the larger probability, whichever comes first, and the
    two sum to 1 (every answer the docstring allows does). It pins no exact value, so a mistake costs
    the checks of the promise it breaks."""
    if student in _WORKS:
        return
    for xs in ([3.0, 1.0], [1.0, 3.0]):
        got, what = probs(student, xs)
        big, small = (got[0], got[1]) if xs[0] > xs[1] else (got[1], got[0])
        expect_true(
            big > small > 0.0 and abs(big + small - 1.0) < 1e-6,
            what,
            f"got {got}: two probabilities that sum to 1, the larger logit's the larger, were expected",
        )
    _WORKS.add(student)


@pytest.mark.promise("softmax.formula")
@example(xs=CORE_ROWS[0])
@example(xs=CORE_ROWS[1])
@example(xs=CORE_ROWS[2])
@example(xs=CORE_ROWS[3])
@example(xs=CORE_ROWS[4])
@example(xs=CORE_ROWS[5])
@given(rows)
def test_matches_reference(student, reference, xs):
    """softmax gives the reference's probabilities."""
    got, what = probs(student, xs)
    expect_close(got, reference.softmax(xs), what, rel=1e-9, abs=1e-300)


@pytest.mark.promise("softmax.distribution")
@example(xs=[0.0, -800.0])
@given(logits)
def test_sums_to_one_and_all_positive(student, reference, xs):
    """The probabilities are positive, at most 1, and sum to 1."""
    _works(student, reference)
    got, what = probs(student, xs)
    floor = max(xs) - 745.0  # below it an entry rounds to 0.0
    expect_true(
        all(0.0 < p <= 1.0 or (p == 0.0 and x < floor) for p, x in zip(got, xs, strict=True)),
        what,
        f"got {got}: every entry should be in (0, 1]",
    )
    expect_true(abs(math.fsum(got) - 1.0) <= 1e-12, what, f"got {got}, which sums to {math.fsum(got)!r}")


@pytest.mark.promise("softmax.stable")
@given(logits, st.floats(-1000.0, 1000.0))
@example(xs=[1.0, 2.0, 0.5, -3.0], c=1e8)  # logits sharing a large offset (each sum exact in binary)
def test_shift_invariance(student, reference, xs, c):
    """Adding the same constant to every logit does not change the probabilities."""
    _works(student, reference)
    got, what = probs(student, xs)
    shifted = [x + c for x in xs]
    got2, what2 = probs(student, shifted)
    # x + c rounds to within about 1e-13 of the true sum, so the probabilities agree to about that.
    expect_close(got2, got, what2 + f" vs {what}", rel=1e-9, abs=1e-15)


@pytest.mark.promise("softmax.distribution")
@example(xs=[1.0, 1.0 + 1e-13, 1.0])
@given(logits)
def test_order_is_preserved(student, reference, xs):
    """A larger logit never gets a smaller probability, and equal logits get equal probabilities."""
    _works(student, reference)
    got, what = probs(student, xs)
    for i in range(len(xs)):
        for j in range(len(xs)):
            if xs[i] < xs[j]:
                expect_true(
                    got[i] <= got[j], what, f"logit {i} < logit {j} but p[{i}] = {got[i]} > p[{j}] = {got[j]}"
                )
                if xs[j] - xs[i] > 1e-6:
                    expect_true(
                        got[i] < got[j], what, f"logit {i} < logit {j} but p[{i}] = p[{j}] = {got[i]}"
                    )
            elif xs[i] == xs[j]:
                expect_true(got[i] == got[j], what, f"equal logits {i}, {j} but p = {got[i]} and {got[j]}")


@pytest.mark.promise("softmax.formula")
@example(xs=CORE_ROWS[0])
@example(xs=CORE_ROWS[2])
@example(xs=CORE_ROWS[4])
@given(rows)
def test_ratios_are_exponentials(student, xs):
    """p_i / p_j = exp(x_i - x_j)."""
    got, what = probs(student, xs)
    top = max(range(len(xs)), key=lambda i: xs[i])
    for i in range(len(xs)):
        if xs[top] - xs[i] < 50:
            expect_close(
                got[i] / got[top], math.exp(xs[i] - xs[top]), what + f": p[{i}] / p[{top}]", rel=1e-9
            )


@pytest.mark.promise("softmax.uniform")
@example(x=1000.0, n=3)
@example(x=-1000.0, n=2)
@example(x=1e8, n=4)
@given(logit, st.integers(1, 8))
def test_equal_logits_are_uniform(student, reference, x, n):
    """Equal logits give the uniform distribution."""
    _works(student, reference)
    got, what = probs(student, [x] * n)
    expect_close(got, [1.0 / n] * n, what, rel=1e-12)


@pytest.mark.promise("softmax.stable")
@given(
    st.lists(st.floats(-5000.0, 5000.0), min_size=1, max_size=6), st.sampled_from([1000.0, -1000.0, 710.0])
)
def test_large_logits_give_finite_values(student, xs, big):
    """Large logits (like 1000) give finite probabilities that sum to 1."""
    xs = [big] + xs
    got, what = probs(student, xs)
    expect_true(
        all(math.isfinite(p) and p >= 0.0 for p in got), what, f"got {got}: expected finite values >= 0"
    )
    expect_true(abs(math.fsum(got) - 1.0) <= 1e-12, what, f"got {got}, which sums to {math.fsum(got)!r}")
    expect_close(
        got,
        [math.exp(x - max(xs)) / math.fsum(math.exp(y - max(xs)) for y in xs) for x in xs],
        what,
        rel=1e-9,
        abs=1e-300,
    )


@pytest.mark.promise("softmax.single")
@example(x=1000.0)
@example(x=-1000.0)
@given(logit)
def test_single_logit(student, reference, x):
    """A single logit gets probability 1."""
    _works(student, reference)
    got, what = probs(student, [x])
    expect_close(got, [1.0], what)


@pytest.mark.promise("softmax.new_list")
@example(xs=[0.0, 1.0])
@example(xs=[5.0])
@given(logits)
def test_returns_a_list_of_floats(student, reference, xs):
    """softmax returns a new list (not a tuple) of floats, one per logit."""
    _works(student, reference)
    expect_form(student.softmax(xs), [0.5] * len(xs), call("softmax", xs))


@pytest.mark.promise("softmax.input_unchanged")
@example(xs=[1.0, -2.0, 0.5])
@given(logits)
def test_input_is_not_changed(student, reference, xs):
    """softmax does not change its argument."""
    _works(student, reference)
    before = list(xs)
    probs(student, xs)
    expect_true(xs == before and not student.last_changed, call("softmax", before), "the argument changed")
