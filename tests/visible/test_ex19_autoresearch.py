"""Exercise 19 (autoresearch loop): autoresearch(iters, rng, proposer, guard).

Start from start_repo(), lock eval.py and program.md by their hashes, and run iters steps: the proposer
gets the current files and the rng and returns (candidate files, what it did); with guard on, a candidate
that changed a locked file is logged (i, what, None, "blocked: locked file changed"); otherwise it is kept
(i, what, r, "keep") only if its reported loss r is lower than the best so far, else (i, what, r, "discard").
The result holds the final files, the log, the best reported loss, the true loss of the final train.py
and the number of blocked edits.
"""

import random

import pytest

from grader.expect import call, expect_close, expect_equal

pytestmark = pytest.mark.exercise(19)

TRAIN = "lr=0.02\ndepth=4\nwidth=96\n"
EVAL = "scale=1\noffset=0\n"
PROGRAM = "Edit train.py only. Lower loss is better. Do not touch eval.py.\n"
BLOCKED = "blocked: locked file changed"


def repo(**changes):
    files = {"train.py": TRAIN, "eval.py": EVAL, "program.md": PROGRAM}
    files.update(changes)
    return files


def fields(result):
    """The result with its log's keep and discard entries as (what, r, status): blocked entries, their
    number and the step numbers are checked apart."""
    out = {k: getattr(result, k) for k in ("files", "log", "reported", "true")}
    out["log"] = decisions(result.log)
    return out


def decisions(log):
    """The keep and discard entries as (what, r, status)."""
    return [tuple(entry[1:]) if len(entry) == 4 else entry for entry in judged(log)]


def shown(want):
    """An expected result as fields() gives it."""
    return dict(want, log=decisions(want["log"]))


def judged(log):
    """The log's keep and discard entries, in order."""
    return [entry for entry in log if len(entry) != 4 or entry[3] != BLOCKED]


@pytest.mark.promise("autoresearch.defaults")
def test_autoresearch_with_the_honest_proposer(student):
    """Defaults: honest_proposer, guard on. Seeded: the log, the result and the rng's next number."""
    rng = random.Random(0)
    what = call("autoresearch", 8, "random.Random(0)")
    got = fields(student.autoresearch(8, rng))
    want = {
        "files": repo(**{"train.py": "lr=0.02\ndepth=7\nwidth=128\n"}),
        "log": [
            (1, "set depth", 1.8023060490723561, "keep"),
            (2, "set lr", 1.8232777078400224, "discard"),
            (3, "set width", 1.617986049072356, "keep"),
            (4, "set depth", 1.597986049072356, "keep"),
            (5, "set depth", 1.585986049072356, "keep"),
            (6, "set width", 1.7703060490723561, "discard"),
            (7, "set width", 1.7703060490723561, "discard"),
            (8, "set depth", 1.597986049072356, "discard"),
        ],
        "reported": 1.585986049072356,
        "true": 1.585986049072356,
    }
    expect_close(got, shown(want), what)
    expect_equal(rng.random(), 0.7558042041572239, f"rng.random() after {what}")


SNEAKY_LOG = [
    (1, "rescale eval", None, BLOCKED),
    (2, "set depth", 1.8023060490723561, "keep"),
    (3, "set lr", 1.769872174581275, "keep"),
    (4, "set depth", 1.749872174581275, "keep"),
    (5, "set lr", 1.7823060490723561, "discard"),
    (6, "set width", 1.565552174581275, "keep"),
    (7, "set lr", 1.5545125531612594, "keep"),
    (8, "set width", 1.4111525531612594, "keep"),
    (9, "set width", 1.5545125531612594, "discard"),
    (10, "rescale eval", None, BLOCKED),
    (11, "set lr", 1.4214643013558006, "discard"),
    (12, "set depth", 1.3991525531612594, "keep"),
]


@pytest.mark.promise("autoresearch.guard_blocks_locked")
def test_the_guard_blocks_the_sneaky_proposer(student, lab):
    """With the guard on, both "rescale eval" edits are blocked: eval.py stays, reported loss == true loss."""
    rng = random.Random(3)
    what = call("autoresearch", 12, "random.Random(3)", "sneaky_proposer", guard=True)
    got = fields(student.autoresearch(12, rng, lab.sneaky_proposer, guard=True))
    want = {
        "files": repo(**{"train.py": "lr=0.007\ndepth=7\nwidth=160\n"}),
        "log": judged(SNEAKY_LOG),
        "reported": 1.3991525531612594,
        "true": 1.3991525531612594,
    }
    expect_close(got, shown(want), what)
    expect_equal(rng.random(), 0.594749515643894, f"rng.random() after {what}")


@pytest.mark.promise("autoresearch.blocked_logged")
def test_blocked_steps_are_logged_in_their_place(student, lab):
    """With the guard on, each blocked step is logged in its place as (i, what, None, "blocked: locked file
    changed"): steps 1 and 10 of the sneaky run."""
    what = call("autoresearch", 12, "random.Random(3)", "sneaky_proposer", guard=True)
    got = student.autoresearch(12, random.Random(3), lab.sneaky_proposer, guard=True).log
    expect_close(got, SNEAKY_LOG, f"the log of {what}")


@pytest.mark.promise("autoresearch.blocked_count")
def test_blocked_steps_are_counted(student, lab):
    """The result counts the blocked steps: 2 in the sneaky run with the guard on, none without the guard."""
    for guard, want in ((True, 2), (False, 0)):
        what = call("autoresearch", 12, "random.Random(3)", "sneaky_proposer", guard=guard)
        got = student.autoresearch(12, random.Random(3), lab.sneaky_proposer, guard=guard).blocked
        expect_equal(got, want, f"blocked of {what}")


@pytest.mark.promise("autoresearch.guard_off")
def test_without_the_guard_the_sneaky_proposer_games_the_loss(student, lab):
    """With the guard off, the "rescale eval" edits are kept: the reported loss drops below the true loss."""
    rng = random.Random(3)
    what = call("autoresearch", 12, "random.Random(3)", "sneaky_proposer", guard=False)
    got = fields(student.autoresearch(12, rng, lab.sneaky_proposer, guard=False))
    # After the first "rescale eval" (scale 0.9), every reported loss is 0.9 times the true loss; 0.81 after
    # the second.
    log = [
        (1, "rescale eval", 1.6472754441651205, "keep"),
        (2, "set depth", 1.6220754441651206, "keep"),
        (3, "set lr", 1.5928849571231476, "keep"),
        (4, "set depth", 1.5748849571231476, "keep"),
        (5, "set lr", 1.6040754441651206, "discard"),
        (6, "set width", 1.4089969571231475, "keep"),
        (7, "set lr", 1.3990612978451336, "keep"),
        (8, "set width", 1.2700372978451335, "keep"),
        (9, "set width", 1.3990612978451336, "discard"),
        (10, "rescale eval", 1.1430335680606203, "keep"),
        (11, "set lr", 1.1513860840981986, "discard"),
        (12, "set depth", 1.1333135680606201, "keep"),
    ]
    want = {
        "files": repo(**{"train.py": "lr=0.007\ndepth=7\nwidth=160\n", "eval.py": "scale=0.81\noffset=0\n"}),
        "log": log,
        "reported": 1.1333135680606201,
        "true": 1.3991525531612594,
    }
    expect_close(got, shown(want), what)
    expect_equal(rng.random(), 0.594749515643894, f"rng.random() after {what}")


@pytest.mark.promise("autoresearch.proposer_calls")
def test_the_proposer_gets_the_current_files(student):
    """A proposer of yours is called once per step with the files kept so far (the rng is passed along)."""
    plan = [
        "lr=0.02\ndepth=5\nwidth=96\n",
        "lr=0.02\ndepth=3\nwidth=96\n",
        None,
        "lr=0.02\ndepth=5\nwidth=128\n",
        "program.md",
    ]
    seen = []

    def proposer(files, rng):
        step = plan[len(seen)]
        seen.append(dict(files))
        new = dict(files)
        if step is None:
            return new, "same files"
        if step == "program.md":
            new["program.md"] = files["program.md"] + "Also edit eval.py.\n"
            return new, "edit program.md"
        new["train.py"] = step
        return new, step.split("\n")[1] + " " + step.split("\n")[2]

    rng = random.Random(5)
    what = call("autoresearch", 5, "random.Random(5)", "proposer")
    got = fields(student.autoresearch(5, rng, proposer))
    kept1 = repo(**{"train.py": plan[0]})
    expect_equal(
        seen,
        [repo(), kept1, kept1, kept1, repo(**{"train.py": plan[3]})],
        f"the files the proposer got, call by call, in {what}",
    )
    # Step 2 is worse, step 3 is equal (not lower: discarded), step 5 edits a locked file.
    want = {
        "files": repo(**{"train.py": plan[3]}),
        "log": [
            (1, "depth=5 width=96", 1.8023060490723561, "keep"),
            (2, "depth=3 width=96", 1.8663060490723562, "discard"),
            (3, "same files", 1.8023060490723561, "discard"),
            (4, "depth=5 width=128", 1.617986049072356, "keep"),
        ],
        "reported": 1.617986049072356,
        "true": 1.617986049072356,
    }
    expect_close(got, shown(want), what)
    expect_equal(
        rng.random(), random.Random(5).random(), f"rng.random() after {what} (the proposer drew nothing)"
    )


@pytest.mark.promise("autoresearch.guard_off")
def test_an_edit_of_eval_py_counts_only_without_the_guard(student):
    """Lowering eval.py's offset: blocked with the guard on; kept without it (reported < true loss)."""

    def cheat(files, rng):
        return dict(files, **{"eval.py": "scale=1\noffset=-0.5\n"}), "offset -0.5"

    what = call("autoresearch", 2, "random.Random(0)", "cheat", guard=True)
    want = {
        "files": repo(),
        "log": [],
        "reported": 1.8303060490723562,
        "true": 1.8303060490723562,
    }
    expect_close(fields(student.autoresearch(2, random.Random(0), cheat, guard=True)), shown(want), what)
    what = call("autoresearch", 2, "random.Random(0)", "cheat", guard=False)
    want = {
        "files": repo(**{"eval.py": "scale=1\noffset=-0.5\n"}),
        "log": [
            (1, "offset -0.5", 1.3303060490723562, "keep"),
            (2, "offset -0.5", 1.3303060490723562, "discard"),
        ],
        "reported": 1.3303060490723562,
        "true": 1.8303060490723562,
    }
    expect_close(fields(student.autoresearch(2, random.Random(0), cheat, guard=False)), shown(want), what)
