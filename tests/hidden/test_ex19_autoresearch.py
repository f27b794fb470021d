"""Exercise 19 (autoresearch loop), hidden checks: reference comparisons with the lab's proposers (guard on
and off), the guard's effect, the log's shape, and the keep-or-discard loop seen from a proposer."""

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_true

pytestmark = pytest.mark.exercise(19)

BLOCKED = "blocked: locked file changed"
STATUSES = ("keep", "discard", BLOCKED)
LOCKED = ("eval.py", "program.md")
seed = st.integers(0, 2**32 - 1)
iters = st.integers(0, 40)


def fields(result):
    """The result with the keep and discard entries of its log: what the loop decided, apart from how it
    logs blocked steps (autoresearch.blocked_logged checks those), counts them (autoresearch.blocked_count)
    and numbers its steps."""
    out = {k: getattr(result, k) for k in ("files", "log", "reported", "true")}
    out["log"] = decisions(result.log)
    return out


def decisions(log):
    """The keep and discard entries as (what, r, status): the step numbers are the log's form
    (autoresearch.log checks them)."""
    return [tuple(entry[1:]) if len(entry) == 4 else entry for entry in judged(log)]


def judged(log):
    """The log's keep and discard entries, in order."""
    return [entry for entry in log if len(entry) != 4 or entry[3] != BLOCKED]


def proposer_of(lab, which):
    return lab.honest_proposer if which == "honest" else lab.sneaky_proposer


def run_text(n, s, which, guard):
    return call("autoresearch", n, f"random.Random({s})", f"{which}_proposer", guard=guard)


def expect_same_rng(mine, theirs, what):
    __tracebackhide__ = True
    expect_true(
        mine.getstate() == theirs.getstate(),
        f"the rng state after {what} differs from the reference's",
        f"next random(): expected {theirs.random()!r}, got {mine.random()!r}",
    )


def _one_entry_per_step(result, n, blocked, what):
    """The properties below hold for a fixed result too (one with nothing blocked and nothing kept), so
    each also asks that the log has a keep or discard entry for every step of this run not blocked (blocked:
    the reference's count, so a wrong count costs only autoresearch.blocked_count)."""
    __tracebackhide__ = True
    expect_equal(len(judged(result.log)), n - blocked, f"the keep and discard entries of {what}")


# -- against the reference -------------------------------------------------------------------------------


@pytest.mark.promise("autoresearch.result")
@given(iters, seed, st.sampled_from(["honest", "sneaky"]), st.booleans())
@example(30, 3, "sneaky", False)  # edits of eval.py kept: the reported loss drops below the true loss
@example(25, 7, "sneaky", True)  # edits of eval.py blocked
def test_matches_the_reference_with_the_lab_proposers(student, reference, lab, n, s, which, guard):
    """With honest_proposer or sneaky_proposer, guard on or off, the result (its keep and discard entries)
    and the rng state match."""
    mine, theirs = random.Random(s), random.Random(s)
    what = run_text(n, s, which, guard)
    got = fields(student.autoresearch(n, mine, proposer_of(lab, which), guard=guard))
    want = fields(reference.autoresearch(n, theirs, proposer_of(reference, which), guard=guard))
    expect_close(got, want, what, rel=1e-12, abs=1e-12)
    expect_same_rng(mine, theirs, what)


@pytest.mark.promise("autoresearch.defaults")
@given(iters, seed)
def test_defaults_are_the_honest_proposer_with_the_guard_on(student, reference, lab, n, s):
    """Without proposer and guard, the loop runs honest_proposer with the guard on."""
    mine, theirs = random.Random(s), random.Random(s)
    what = call("autoresearch", n, f"random.Random({s})")
    got = fields(student.autoresearch(n, mine))
    want = fields(reference.autoresearch(n, theirs, reference.honest_proposer, True))
    expect_close(got, want, what, rel=1e-12, abs=1e-12)
    expect_same_rng(mine, theirs, what)
    # The guard is on by default: the sneaky proposer's edits of eval.py are blocked.
    mine, theirs = random.Random(s), random.Random(s)
    what = call("autoresearch", n, f"random.Random({s})", "sneaky_proposer")
    got = fields(student.autoresearch(n, mine, lab.sneaky_proposer))
    want = fields(reference.autoresearch(n, theirs, reference.sneaky_proposer, True))
    expect_close(got, want, what, rel=1e-12, abs=1e-12)
    expect_same_rng(mine, theirs, what)


# -- the guard -------------------------------------------------------------------------------------------


@pytest.mark.promise("autoresearch.guard_blocks_locked")
@given(iters, seed)
def test_with_the_guard_the_sneaky_proposer_changes_nothing_locked(student, reference, lab, n, s):
    """With the guard on, eval.py and program.md are never changed and the reported loss is the true loss."""
    result = student.autoresearch(n, random.Random(s), lab.sneaky_proposer, guard=True)
    what = run_text(n, s, "sneaky", True)
    want = reference.autoresearch(n, random.Random(s), reference.sneaky_proposer, guard=True)
    _one_entry_per_step(result, n, want.blocked, what)
    start = lab.start_repo()
    for f in ("eval.py", "program.md"):
        expect_equal(result.files[f], start[f], f"{f} at the end of {what}")
    rescales = [entry for entry in result.log if entry[1] == "rescale eval"]
    expect_true(
        all(entry[3] == BLOCKED for entry in rescales),
        f"{what}: an edit of eval.py was not blocked",
        f"log entries of 'rescale eval': {rescales!r}",
    )
    expect_close(
        result.reported,
        result.true,
        f"reported vs true loss of {what} (scale 1, offset 0)",
        rel=1e-12,
        abs=1e-12,
    )


@pytest.mark.promise("autoresearch.guard_off")
@given(iters, seed, st.sampled_from(["honest", "sneaky"]))
@example(30, 3, "sneaky")
def test_without_the_guard_nothing_is_blocked(student, reference, lab, n, s, which):
    """With the guard off, no edit is blocked: an edit of eval.py is kept or discarded by its reported loss
    like any other, as the reference decides."""
    result = student.autoresearch(n, random.Random(s), proposer_of(lab, which), guard=False)
    what = run_text(n, s, which, False)
    _one_entry_per_step(result, n, 0, what)
    expect_true(
        all(entry[3] in ("keep", "discard") for entry in result.log),
        f"{what} logged an entry that is neither keep nor discard",
        repr(result.log),
    )
    want = reference.autoresearch(n, random.Random(s), proposer_of(reference, which), guard=False)
    expect_close(decisions(result.log), decisions(want.log), f"the log of {what}", rel=1e-12, abs=1e-12)


@pytest.mark.promise("autoresearch.guard_off")
def test_without_the_guard_the_reported_loss_drops_below_the_true_loss(student, reference, lab):
    """With the guard off, the sneaky proposer can push the reported loss below the true loss, as far as
    the reference's run does."""
    for s in range(3):
        result = student.autoresearch(60, random.Random(s), lab.sneaky_proposer, guard=False)
        what = run_text(60, s, "sneaky", False)
        expect_true(
            result.reported < result.true - 0.1,
            f"{what}: reported loss should be well below the true loss",
            f"reported {result.reported!r}, true {result.true!r}",
        )
        want = reference.autoresearch(60, random.Random(s), reference.sneaky_proposer, guard=False)
        got = (result.reported, result.true)
        expect_close(
            got, (want.reported, want.true), f"(reported, true) loss of {what}", rel=1e-12, abs=1e-12
        )


# -- the log and the result ------------------------------------------------------------------------------


@pytest.mark.promise("autoresearch.log")
@given(iters, seed, st.sampled_from(["honest", "sneaky"]))
def test_the_log_has_one_entry_per_step(student, lab, n, s, which):
    """The log has iters entries numbered 1..iters, each keep or discard with its loss (guard off: nothing
    is blocked)."""
    result = student.autoresearch(n, random.Random(s), proposer_of(lab, which), guard=False)
    what = run_text(n, s, which, False)
    expect_equal(
        [entry[0] for entry in result.log], list(range(1, n + 1)), f"the step numbers in the log of {what}"
    )
    for entry in result.log:
        expect_true(
            len(entry) == 4 and entry[3] in STATUSES,
            f"{what}: a log entry is not (i, what, r, status)",
            f"entry {entry!r}",
        )
        expect_true(
            (entry[2] is None) == (entry[3] == BLOCKED),
            f"{what}: only blocked entries have no loss",
            f"entry {entry!r}",
        )


@pytest.mark.promise("autoresearch.keep_rule")
@given(iters, seed, st.sampled_from(["honest", "sneaky"]), st.booleans())
@example(30, 3, "sneaky", False)  # kept edits of eval.py: the reported loss is not the true loss
def test_the_reported_loss_only_goes_down(student, reference, lab, n, s, which, guard):
    """Kept losses go down discarded ones are not lower; the result reports the last kept one."""
    result = student.autoresearch(n, random.Random(s), proposer_of(lab, which), guard=guard)
    what = run_text(n, s, which, guard)
    want = reference.autoresearch(n, random.Random(s), proposer_of(reference, which), guard=guard)
    _one_entry_per_step(result, n, want.blocked, what)
    best = lab.reported_loss(lab.start_repo())
    for _i, _what, r, status in result.log:
        if status == "keep":
            expect_true(
                r < best, f"{what}: a kept loss is not lower than the best before it", f"{r!r} vs {best!r}"
            )
            best = r
        elif status == "discard":
            expect_true(
                r >= best - 1e-12, f"{what}: a discarded loss is lower than the best", f"{r!r} vs {best!r}"
            )
    expect_close(result.reported, best, f"reported of {what}", rel=1e-12, abs=1e-12)
    expect_close(
        result.reported,
        lab.reported_loss(result.files),
        f"reported of {what} vs its files",
        rel=1e-12,
        abs=1e-12,
    )
    expect_close(
        result.true,
        lab.true_loss(lab.parse_kv(result.files["train.py"])),
        f"true of {what} vs its train.py",
        rel=1e-12,
        abs=1e-12,
    )


# -- a proposer from the test (a callback) ---------------------------------------------------------------

train_edit = st.tuples(
    st.just("train"),
    st.sampled_from([0.005, 0.01, 0.02, 0.04]),
    st.integers(2, 10),
    st.sampled_from([64, 96, 128, 256]),
)
eval_edit = st.tuples(
    st.just("eval"), st.sampled_from([1.0, 0.9, 0.5, 1.1]), st.sampled_from([0.0, -0.1, 0.2])
)
action = st.one_of(
    train_edit,
    eval_edit,
    st.sampled_from([("same",), ("program",), ("rng",), ("crlf",), ("copy",), ("new",)]),
)


class Scripted:
    """A proposer that plays a list of actions and records the files it was given."""

    def __init__(self, lab, actions):
        self.lab, self.actions, self.seen, self.made, self.said = lab, actions, [], [], []

    def __call__(self, files, rng):
        step = self.actions[len(self.seen) % len(self.actions)]
        self.seen.append(dict(files))
        new, fmt = dict(files), self.lab.fmt_kv
        if step[0] == "train":
            new["train.py"] = fmt({"lr": step[1], "depth": step[2], "width": step[3]})
        elif step[0] == "eval":
            new["eval.py"] = fmt({"scale": step[1], "offset": step[2]})
        elif step[0] == "program":
            new["program.md"] = files["program.md"] + "Also edit eval.py.\n"
        elif step[0] == "crlf":  # the same values, CRLF line endings: a byte change of a locked file
            new["eval.py"] = files["eval.py"].replace("\r\n", "\n").replace("\n", "\r\n")
        elif step[0] == "copy":  # a locked file's text copied over the other locked file
            new["program.md"] = files["eval.py"]
        elif step[0] == "new":  # a file that is not locked
            new["notes.md"] = files.get("notes.md", "") + "tried something\n"
        elif step[0] == "rng":
            hp = self.lab.parse_kv(files["train.py"])
            hp["depth"] = 1 + int(rng.random() * 12)
            new["train.py"] = fmt(hp)
        self.made.append(dict(new))
        self.said.append("/".join(str(x) for x in step))
        return new, self.said[-1]


@pytest.mark.promise("autoresearch.proposer_calls")
@given(st.integers(0, 15), seed, st.lists(action, min_size=1, max_size=15), st.booleans())
def test_a_proposer_of_the_test_gets_the_current_files(student, lab, n, s, actions, guard):
    """The proposer is called once per step, with the start repo first and after a keep the kept files."""
    proposer = Scripted(lab, actions)
    result = student.autoresearch(n, random.Random(s), proposer, guard=guard)
    what = call("autoresearch", n, f"random.Random({s})", "proposer", guard=guard)
    expect_equal(len(proposer.seen), n, f"the number of proposer calls in {what}")
    start = lab.start_repo()
    judged_steps = [
        k for k, made in enumerate(proposer.made) if not (guard and any(made[f] != start[f] for f in LOCKED))
    ]
    statuses = [entry[3] for entry in judged(result.log) if len(entry) == 4]
    kept = {k + 1 for k, status in zip(judged_steps, statuses, strict=False) if status == "keep"}
    current = lab.start_repo()
    for k in range(n):
        expect_equal(proposer.seen[k], current, f"the files given to the proposer at step {k + 1} of {what}")
        if k + 1 in kept:
            current = proposer.made[k]
    expect_equal(result.files, current, f"the final files of {what}")


@pytest.mark.promise("autoresearch.result")
@given(st.integers(0, 15), seed, st.lists(action, min_size=1, max_size=15), st.booleans())
def test_a_proposer_of_the_test_gives_the_reference_result(student, reference, lab, n, s, actions, guard):
    """With a proposer of the test (editing train.py or locked files, using the rng), the result matches."""
    mine, theirs = random.Random(s), random.Random(s)
    p_mine, p_theirs = Scripted(lab, actions), Scripted(lab, actions)
    what = call("autoresearch", n, f"random.Random({s})", "proposer", guard=guard)
    got = fields(student.autoresearch(n, mine, p_mine, guard=guard))
    want = fields(reference.autoresearch(n, theirs, p_theirs, guard=guard))
    expect_close(got, want, what, rel=1e-12, abs=1e-12)
    expect_equal(p_mine.seen, p_theirs.seen, f"the files given to the proposer, call by call, in {what}")
    expect_same_rng(mine, theirs, what)


@pytest.mark.promise("autoresearch.guard_blocks_locked")
@given(st.integers(1, 15), seed, st.lists(action, min_size=1, max_size=15))
def test_with_the_guard_exactly_the_edits_of_locked_files_are_blocked(student, lab, n, s, actions):
    """With the guard on, a step is blocked exactly when its candidate changed eval.py or program.md (any
    byte): it is not judged; every other step is kept or discarded."""
    proposer = Scripted(lab, actions)
    result = student.autoresearch(n, random.Random(s), proposer, guard=True)
    what = call("autoresearch", n, f"random.Random({s})", "proposer", guard=True)
    start = lab.start_repo()
    expect_equal(len(proposer.made), n, f"the number of proposer calls in {what}")
    changed = [any(made[f] != start[f] for f in ("eval.py", "program.md")) for made in proposer.made]
    expect_equal(
        [entry[1] for entry in judged(result.log) if len(entry) == 4],
        [proposer.said[k] for k in range(n) if not changed[k]],
        f"the steps of {what} that were kept or discarded (those that left the locked files)",
    )


@pytest.mark.promise("autoresearch.guard_blocks_locked")
def test_edits_of_program_md_are_blocked(student, reference, lab):
    """With the guard on, edits of program.md are blocked like edits of eval.py."""
    actions = [("program",), ("train", 0.01, 6, 128), ("eval", 0.5, 0.0), ("program",), ("eval", 1.0, 0.0)]
    mine, theirs = Scripted(lab, actions), Scripted(lab, actions)
    what = call("autoresearch", 5, "random.Random(0)", "proposer", guard=True)
    got = fields(student.autoresearch(5, random.Random(0), mine, guard=True))
    want = fields(reference.autoresearch(5, random.Random(0), theirs, guard=True))
    expect_close(got, want, what, rel=1e-12, abs=1e-12)


@settings(max_examples=3)  # beside named runs of the same promise
@pytest.mark.promise("autoresearch.blocked_logged")
@given(st.integers(1, 15), seed, st.lists(action, min_size=1, max_size=15))
@example(6, 0, [("eval", 0.5, 0.0), ("train", 0.01, 6, 128), ("program",), ("crlf",)])
def test_blocked_steps_are_logged(student, reference, lab, n, s, actions):
    """With the guard on, a blocked step is logged in its place as (i, what, None, 'blocked: locked file
    changed'): the whole log matches, blocked entries included."""
    p_mine, p_theirs = Scripted(lab, actions), Scripted(lab, actions)
    what = call("autoresearch", n, f"random.Random({s})", "proposer", guard=True)
    got = student.autoresearch(n, random.Random(s), p_mine, guard=True).log
    want = reference.autoresearch(n, random.Random(s), p_theirs, guard=True).log
    expect_close(got, want, f"the log of {what}", rel=1e-12, abs=1e-12)


@settings(max_examples=3)  # beside named runs of the same promise
@pytest.mark.promise("autoresearch.blocked_logged")
@given(iters, seed)
def test_blocked_edits_of_the_sneaky_proposer_are_logged(student, reference, lab, n, s):
    """With the guard on, the sneaky proposer's blocked edits are in the log, as the reference logs them."""
    what = run_text(n, s, "sneaky", True)
    got = student.autoresearch(n, random.Random(s), lab.sneaky_proposer, guard=True).log
    want = reference.autoresearch(n, random.Random(s), reference.sneaky_proposer, guard=True).log
    expect_close(got, want, f"the log of {what}", rel=1e-12, abs=1e-12)


@pytest.mark.promise("autoresearch.blocked_count")
@given(st.integers(0, 15), seed, st.lists(action, min_size=1, max_size=15), st.booleans())
@example(6, 0, [("eval", 0.5, 0.0), ("train", 0.01, 6, 128), ("program",), ("crlf",)], True)
def test_blocked_steps_are_counted(student, reference, lab, n, s, actions, guard):
    """The result's blocked is the number of steps blocked, as the reference counts them (0 with the guard
    off)."""
    what = call("autoresearch", n, f"random.Random({s})", "proposer", guard=guard)
    got = student.autoresearch(n, random.Random(s), Scripted(lab, actions), guard=guard).blocked
    want = reference.autoresearch(n, random.Random(s), Scripted(lab, actions), guard=guard).blocked
    expect_equal(got, want, f"blocked of {what}")


@settings(max_examples=5)  # beside the run of drawn proposers of the same promise
@pytest.mark.promise("autoresearch.blocked_count")
@given(iters, seed, st.sampled_from(["honest", "sneaky"]), st.booleans())
@example(25, 7, "sneaky", True)  # edits of eval.py blocked
def test_blocked_edits_of_the_lab_proposers_are_counted(student, reference, lab, n, s, which, guard):
    """With the lab's proposers, the number blocked is the reference's."""
    what = run_text(n, s, which, guard)
    got = student.autoresearch(n, random.Random(s), proposer_of(lab, which), guard=guard).blocked
    want = reference.autoresearch(n, random.Random(s), proposer_of(reference, which), guard=guard).blocked
    expect_equal(got, want, f"blocked of {what}")


# Runs without the guard where the reported loss and the true loss disagree: eval.py rescaled or offset
# lowers the reported loss alone (kept), a train.py edit can lower the true loss while raising the reported
# one (discarded), and back.
REPORTED_NOT_TRUE = [
    [("eval", 0.5, 0.0), ("train", 0.01, 6, 128), ("eval", 1.0, 0.0), ("train", 0.02, 2, 64)],
    [("train", 0.01, 6, 128), ("eval", 1.1, 0.2), ("train", 0.04, 8, 256), ("eval", 0.9, -0.1)],
    [("eval", 0.9, -0.1), ("eval", 0.5, 0.2), ("train", 0.005, 10, 96), ("eval", 1.0, -0.1)],
]


@pytest.mark.promise("autoresearch.keep_rule")
@pytest.mark.parametrize("actions", REPORTED_NOT_TRUE, ids=["rescale", "offset-up", "offsets"])
def test_the_verdicts_follow_the_reported_loss(student, reference, lab, actions):
    """Keep or discard is decided on the REPORTED loss (what eval.py says), not the true loss: with the
    guard off, an edit of eval.py that lowers the reported loss is kept, and the log holds reported losses."""
    n = len(actions)
    p_mine, p_theirs = Scripted(lab, actions), Scripted(lab, actions)
    what = call("autoresearch", n, "random.Random(0)", "proposer", guard=False)
    got = fields(student.autoresearch(n, random.Random(0), p_mine, guard=False))
    want = fields(reference.autoresearch(n, random.Random(0), p_theirs, guard=False))
    expect_close(got["log"], want["log"], f"the log of {what}", rel=1e-12, abs=1e-12)
    expect_close(got["reported"], want["reported"], f"reported of {what}", rel=1e-12, abs=1e-12)


eval_heavy = st.lists(st.one_of(eval_edit, train_edit), min_size=1, max_size=12)


@settings(max_examples=3)  # beside named runs of the same promise
@pytest.mark.promise("autoresearch.keep_rule")
@given(st.integers(1, 12), eval_heavy)
def test_drawn_verdicts_follow_the_reported_loss(student, reference, lab, n, actions):
    """With the guard off and edits of eval.py and train.py drawn, every verdict and logged loss is the
    reference's: the reported loss decides."""
    p_mine, p_theirs = Scripted(lab, actions), Scripted(lab, actions)
    what = call("autoresearch", n, "random.Random(0)", "proposer", guard=False)
    got = fields(student.autoresearch(n, random.Random(0), p_mine, guard=False))
    want = fields(reference.autoresearch(n, random.Random(0), p_theirs, guard=False))
    expect_close(got["log"], want["log"], f"the log of {what}", rel=1e-12, abs=1e-12)


# -- the keep rule's margin, the start, the rng -----------------------------------------------------------


def offsets(*deltas):
    """Actions that set eval.py's offset (guard off): each lowers the reported loss by that much from the
    start's, so the improvement over the best so far is known to about 1e-16."""
    return [("eval", 1.0, -d) for d in deltas]


# Improvements over the best so far: 5e-13 (within the margin: discard), 2e-12 (keep), 2.5e-12 - 2e-12 =
# 5e-13 (discard), 4e-12 - 2e-12 = 2e-12 (keep), 9e-13 below 4e-12 (discard), then 1e-10 (keep).
MARGIN_RUN = offsets(5e-13, 2e-12, 2.5e-12, 4e-12, 4.9e-12, 1.04e-10)
MARGIN_STATUSES = ["discard", "keep", "discard", "keep", "discard", "keep"]


@pytest.mark.promise("autoresearch.keep_margin")
@pytest.mark.parametrize("first", [False, True])
def test_an_improvement_within_1e_12_is_discarded(student, lab, first):
    """A candidate is kept only when its reported loss is lower than the best by more than 1e-12: an
    improvement of 5e-13 or 9e-13 is discarded, one of 2e-12 kept (first: after a kept edit of train.py,
    so the margin is measured from a kept candidate's loss)."""
    actions = ([("train", 0.02, 5, 96)] if first else []) + MARGIN_RUN
    proposer = Scripted(lab, actions)
    n = len(actions)
    result = student.autoresearch(n, random.Random(0), proposer, guard=False)
    what = call("autoresearch", n, "random.Random(0)", "proposer", guard=False)
    want = (["keep"] if first else []) + MARGIN_STATUSES
    expect_equal([entry[3] for entry in result.log], want, f"the keep/discard verdicts of {what}")


@pytest.mark.promise("autoresearch.start")
@given(seed, st.lists(action, min_size=1, max_size=4), st.booleans())
def test_the_loop_starts_from_the_start_repo(student, lab, s, actions, guard):
    """Zero steps return the start repo and its losses; a first edit that is worse than the start (depth
    2) is discarded, because best starts at the start's reported loss."""
    what = call("autoresearch", 0, f"random.Random({s})", "proposer", guard=guard)
    start = lab.start_repo()
    result = student.autoresearch(0, random.Random(s), Scripted(lab, actions), guard=guard)
    loss = lab.reported_loss(start)
    expect_close(
        {k: getattr(result, k) for k in ("files", "log", "reported", "true")},
        {"files": start, "log": [], "reported": loss, "true": loss},
        what,
        rel=1e-12,
        abs=1e-12,
    )
    worse = [("train", 0.02, 2, 96), *actions]
    n = len(worse)
    what = call("autoresearch", n, f"random.Random({s})", "proposer", guard=guard)
    result = student.autoresearch(n, random.Random(s), Scripted(lab, worse), guard=guard)
    expect_equal(result.log[0][3] if result.log else None, "discard", f"the first verdict of {what}")


@pytest.mark.promise("autoresearch.rng")
@given(st.integers(0, 8), seed, st.lists(action, min_size=1, max_size=4), st.booleans())
def test_the_rng_goes_only_to_the_proposer(student, lab, n, s, actions, guard):
    """autoresearch draws nothing itself: after the run the rng is where the proposer's own draws left it
    (a proposer that draws one number a step, whatever it proposes)."""

    class Drawing(Scripted):
        def __call__(self, files, rng):
            rng.random()
            return super().__call__(files, rng)

    mine = random.Random(s)
    student.autoresearch(n, mine, Drawing(lab, actions), guard=guard)
    theirs = random.Random(s)
    proposer = Drawing(lab, actions)
    files = lab.start_repo()
    for _ in range(n):  # the proposer's draws alone: one per step, plus those of its "rng" actions
        proposer(files, theirs)
        files = proposer.seen[-1]
    expect_same_rng(mine, theirs, call("autoresearch", n, f"random.Random({s})", "proposer", guard=guard))
