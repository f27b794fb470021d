"""The `student` object: the tests' handle on a submission. ``student.softmax([1.0, 2.0])`` calls the
submission's function through the codec and the worker, and reads as if the call were local: the value
comes back as the lab's own types (the reference's classes when grading), and arguments the call
mutated (a policy, a gradient table, a Meter, a `random.Random`) are updated in the caller's objects.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.codec import Codec, dumps, loads
from grader.protocol import Link, perform, place_call, raise_answer
from grader.worker import Worker


class Student:
    """Calls into one submission. `lab` is the module whose classes values are decoded into;
    `reference`, when given, answers the worker's requests for other exercises' functions."""

    def __init__(self, link: Link, lab: types.ModuleType, reference: types.ModuleType | None = None):
        self._link = link
        self._codec = Codec(lab, issue_callbacks=True)
        self._reference = reference
        self.decodes_into = lab

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return place_call(self._codec, self._link, {"op": "call", "function": name}, args, kwargs)
            finally:
                self._codec.forget_callables()

        call.__name__ = call.__qualname__ = name
        return call

    def serve(self, message: dict) -> dict:
        """Answer a request the worker sends while one of our calls is open."""
        op = message.get("op")
        if op == "reference" and self._reference is not None:
            fn = getattr(self._reference, str(message.get("function")), None)
            if callable(fn):
                return perform(self._codec, fn, message)
        if op == "callback":
            fn = self._codec.callbacks.get(message.get("handle"))
            if fn is not None:
                return perform(self._codec, fn, message)
        return raise_answer(LookupError(f"the grader cannot serve {op!r} {message.get('function', '')}"))


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
) -> Student:
    """A Student whose worker runs in this process (the handout, and the suites until the sandbox).

    With no `lab`, values are decoded into the submission's own module (a student's local run).
    """
    student: Student | None = None
    worker = Worker(
        submission, exercise_of, _JSONLink(lambda m: student.serve(m)), isolate=reference is not None
    )
    student = Student(_JSONLink(worker.handle), lab or worker.module or types.ModuleType("empty"), reference)
    return student
