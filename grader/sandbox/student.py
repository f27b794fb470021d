"""The `student` object: the tests' handle on a submission. ``student.softmax([1.0, 2.0])`` calls the
submission's function through the codec and a worker, and reads as if the call were local: the value
comes back as the lab's own types (the reference's classes when grading), and the arguments the call
mutated that the lab's contract lets it mutate (a policy, a gradient table, a Meter, a `random.Random`:
grader.assignment.contract, derived from the reference) are updated in the caller's objects; any other change
the submission made to its copies is dropped. In a student's own run (no reference) every mutation comes
back, as in a local call.

After a call times out, the other functions of the same exercise fail at once ("timed out earlier")
for the rest of the run, so one endless loop costs one timeout per exercise, not one per test.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.layout import MODULE
from grader.runtime.codec import Codec, dumps, loads
from grader.runtime.protocol import (
    CallTimedOut,
    Link,
    failure_answer,
    perform,
    place_call,
    raise_answer,
)
from grader.runtime.worker import Worker
from grader.sandbox.reference_worker import ReferenceWorker
from grader.sandbox.sandbox import Limits, Sandbox


class Student:
    """Calls into one submission. `decodes_into` is the module whose classes values are decoded into;
    `reference`, when given, answers the worker's requests for other exercises' functions along its own
    call graph, and `contract` (grader.assignment.contract; derived from `reference` when not given) says
    which those are and which arguments take a call's mutations."""

    def __init__(
        self,
        lab: types.ModuleType,
        reference: types.ModuleType | None = None,
        exercise_of: dict[str, int] | None = None,
        timed_out: set[int] | None = None,
        contract: dict | None = None,
    ):
        self.link: Link | None = None
        self.decodes_into = lab
        self._codec = Codec(lab, issue_callbacks=True)
        self._reference = reference
        # Where the reference answers reference requests: here (a run in this process), or in a process of
        # its own that the worker asks directly (a sandboxed run; the grader then serves none of them).
        self.reference_answers_here = reference is not None
        self._exercise_of = exercise_of or {}
        self._timed_out = timed_out if timed_out is not None else set()
        self._open_call: str | None = None  # the function whose call is under way
        # The arguments (by position or keyword) the last call changed outside the lab's contract: their
        # changes stay with the submission, so a test asks here whether its inputs were changed. Always
        # empty in a student's own run, where every change comes back as in a local call.
        self.last_changed: list[str] = []
        self.called: set[str] = set()  # the functions called since the last test took the record
        # With --record-calls: the domain features (grader.assignment.domain) of each call's arguments, as
        # they are before the call, and those drawn since the last test took the record
        self.observe: Callable[[str, tuple, dict], set[str]] | None = None
        self.drawn: set[str] = set()
        if contract is None and reference is not None:
            from grader.assignment.contract import module_contract  # grading only: not in the student handout

            contract = module_contract(reference, self._exercise_of)
        self._contract = contract

    def __repr__(self) -> str:
        return "<the submission>"

    def close(self) -> None:
        """Close the submission's worker (and with it the reference's, if one started)."""
        close = getattr(self.link, "close", None)  # a Link need not have one
        if close is not None:
            close()

    def __getattr__(self, name: str) -> Callable:
        # Only the lab's functions: a probe such as hypothesis's `_repr_pretty_` must not become a call.
        if name.startswith("__") or not (
            name in self._exercise_of or callable(getattr(self.decodes_into, name, None))
        ):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # a failing test shows its own line, not the grader's plumbing
            return self._call(name, args, kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    def _call(self, name: str, args: tuple, kwargs: dict) -> Any:
        __tracebackhide__ = True
        exercise = self._exercise_of.get(name)
        if exercise in self._timed_out:
            raise CallTimedOut(f"not called: exercise {exercise} timed out earlier in this run")
        assert self.link is not None, "the submission is called before its link is set"
        self._open_call = name
        self.last_changed = []
        self.called.add(name)
        if self.observe is not None:
            self.drawn |= self.observe(name, args, kwargs)
        request = {"op": "call", "function": name, "reference": self._answered(name)}
        try:
            return place_call(
                self._codec, self.link, request, args, kwargs, self._writable(name), self.last_changed
            )
        except CallTimedOut as timeout:
            if exercise is not None and timeout.scope != "run":  # the run's time is no exercise's own
                self._timed_out.add(exercise)
            raise
        finally:
            self._open_call = None
            self._codec.forget_callables()
            if (settled := getattr(self.link, "settled", None)) is not None:
                settled()  # the time its answer took here is the call's (grader.sandbox.sandbox)

    def serve(self, message: dict) -> dict:
        """Answer a request the worker sends while one of our calls is open."""
        op = message.get("op")
        name = str(message.get("function"))
        if op == "reference" and self.reference_answers_here and self._may_answer(self._open_call, name):
            return perform(self._codec, getattr(self._reference, name), message, None, self._writable(name))
        if op == "callback":
            fn = self._codec.callbacks.get(message.get("handle", -1))  # handles are never negative
            if fn is not None:
                return perform(self._codec, fn, message)
        return raise_answer(LookupError(f"the grader cannot serve {op!r} {message.get('function', '')}"))

    def _may_answer(self, open_call: str | None, name: str) -> bool:
        """The reference answers only along its own call graph: a function of another exercise that the
        open call's reference body calls (never the one graded, never an oracle it does not use)."""
        exercise = self._exercise_of.get(name)
        return (
            open_call is not None
            and exercise is not None
            and exercise != self._exercise_of.get(open_call)
            and name in self._answered(open_call)
            and callable(getattr(self._reference, name, None))
        )

    def reference_worker(self, limits: Limits | None = None) -> ReferenceWorker | None:
        """The reference in a process of its own that answers the worker's reference requests along the
        same call graph as `serve` (None without a reference)."""
        if self._reference is None or self._contract is None:
            return None
        if self._reference.__file__ is None:
            raise ValueError(f"{self._reference.__name__} has no source file to run in a sandbox")
        source = Path(self._reference.__file__).read_text(encoding="utf-8")
        opens = self._contract.get("answers", {})
        answers = {f: [n for n in self._answered(f) if self._may_answer(f, n)] for f in opens}
        answered = {n for names in answers.values() for n in names}
        return ReferenceWorker(source, answers, {n: self._writable(n) for n in answered}, limits)

    def _answered(self, name: str) -> list[str]:
        """The functions the reference answers for while `name` runs (none in a student's own run)."""
        if self._reference is None or self._contract is None:
            return []
        return list(self._contract.get("answers", {}).get(name, []))

    def _writable(self, name: str) -> list[str] | None:
        """The keys of the arguments whose changes a call of `name` writes back; None: all of them."""
        if self._contract is None:
            return None
        mutates = self._contract.get("mutates", {}).get(name, {})
        return sorted(set(mutates) | {str(p) for p in mutates.values() if p is not None})


class _JSONLink:
    """A link to an object in this process that still passes every message as strict JSON text."""

    def __init__(self, serve: Callable[[dict], dict]):
        self._serve = serve

    def send(self, message: dict) -> dict:
        return loads(dumps(self._serve(loads(dumps(message)))))


def in_process_student(
    submission: Path,
    lab: types.ModuleType | None,
    reference: types.ModuleType | None,
    exercise_of: dict[str, int],
    timed_out: set[int] | None = None,
    broken: dict[str, str] | None = None,
    contract: dict | None = None,
) -> Student:
    """A Student whose worker runs in this process: for debugging a submission (pdb works), and for
    the kit's own tests of the protocol. No time limits. With no `lab`, values are decoded into the
    submission's own module."""
    holder: list[Student] = []
    worker = Worker(
        submission, exercise_of, _JSONLink(lambda m: holder[0].serve(m)), reference is not None, name=MODULE
    )
    student = Student(
        lab or worker.module or types.ModuleType("empty"), reference, exercise_of, timed_out, contract
    )
    student.link = _JSONLink(worker.handle)
    holder.append(student)
    return student


def sandboxed_student(
    module_source: str,
    lab: types.ModuleType,
    reference: types.ModuleType | None,
    exercise_of: dict[str, int],
    timed_out: set[int] | None = None,
    limits: Limits | None = None,
    broken: dict[str, str] | None = None,
    contract: dict | None = None,
) -> tuple[Student, Sandbox]:
    """A Student whose worker is a sandboxed process (grader.sandbox.sandbox), and its sandbox;
    `Student.close` closes both. The reference answers the worker's reference requests from a second sandbox,
    started beside the worker (grader.sandbox.reference_worker.ReferenceWorker): arguments the submission
    chose never run in the grader's own process, and never pass through it."""
    student = Student(lab, reference, exercise_of, timed_out, contract)
    answering = student.reference_worker(limits)
    student.reference_answers_here = False  # the worker asks `answering`; the grader serves no request
    sandbox = Sandbox(
        module_source, exercise_of, reference is not None, student.serve, limits, broken, answering
    )
    student.link = sandbox
    return student, sandbox


class _Unanswerable:
    """A link that answers every call with the same failure (a submission intake could not read)."""

    def __init__(self, message: str):
        self.message = message

    def send(self, message: dict) -> dict:
        return failure_answer(self.message)


def unanswerable_student(message: str) -> Student:
    """A Student for a submission that cannot be graded at all: every call fails with `message`."""
    student = Student(types.ModuleType("empty"))
    student.link = _Unanswerable(message)
    return student
