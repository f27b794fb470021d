"""The reference's worker: the reference in a sandbox of its own, answering one submission worker.

The reference's worker: the reference, in a sandbox of its own, answering one submission worker's
reference requests directly along the open call's call graph (`ReferenceWorker`).
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Callable

from grader.runtime.protocol import CALL_COUNT, failure_answer
from grader.sandbox.limits import Limits
from grader.sandbox.sandbox import Sandbox


class ReferenceWorker:
    """The reference, in a sandbox of its own, answering one submission worker's reference requests
    directly, through a pair of pipes between the two processes: the grader relays none of them.

    It answers only along the reference's call graph of the call under way (`answers`: for each function
    a call may be open in, the functions it may answer then), which the grader writes before each call
    into a byte of memory the two share, and clears after it: between calls it answers nothing. Beside
    that byte, a count of the calls opened and closed (`CALL_COUNT`): a request still being answered when
    its call ends is stopped there (the reference's worker checks the count while it computes), so the
    reference never works for a call that has ended. Only functions of the open call's graph cross as
    arguments, and objects are rebuilt through their constructors (grader.runtime.worker.answer_worker).
    Started beside its submission worker, it lives and dies with it: each new submission
    worker gets new pipes and so a new reference worker, and one that ended (a request it could not read
    or survive) takes its submission worker along at the next call that asks. Its work is bounded like
    any worker's (rlimits) and by the deadline of the call that waits for it."""

    def __init__(
        self,
        source: str,
        answers: dict[str, list[str]],
        writable: dict[str, list[str] | None],
        limits: Limits | None = None,
    ):
        self.functions = sorted(answers)  # the byte holds 1 + the open call's index here; 0: none open
        self._byte = {name: index + 1 for index, name in enumerate(self.functions)}
        if len(self.functions) > 255:
            raise ValueError("more functions than one byte can name")
        self.tables = {"functions": self.functions, "answers": answers, "writable": writable}
        self._source, self._limits = source, limits or Limits()
        self._call_fd, self._call = _shared_byte()
        self._calls = 0  # calls opened and closed, in the shared page's CALL_COUNT bytes
        self._ends: tuple[int, int] | None = None  # the reference worker's pipe ends, until it starts
        self.sandbox: Sandbox | None = None
        self._cpu_ended = 0.0  # CPU seconds of the reference workers that have ended
        self.cpu_left: Callable[[], float] | None = None  # the submission's sandbox's CPU time left

    def pair(self) -> tuple[int, int]:
        """New pipes for a new submission worker, whose ends are returned (answers to read, requests to
        write); whatever reference worker answered its predecessor ends."""
        self.end()
        requests_out, requests_in = os.pipe()
        answers_out, answers_in = os.pipe()
        self._ends = (requests_out, answers_in)
        return answers_out, requests_in

    def spawn(self) -> None:
        """Start the reference worker for the submission worker that took the last `pair`, without
        waiting for it (`open_call` waits)."""
        if self.sandbox is None and self._ends is not None:
            self.sandbox = _AnsweringSandbox(self._source, self._limits, self)
            self.sandbox.spawn()

    def open_call(self, function: str) -> dict | None:
        """Answer along `function`'s call graph until `close_call`, once the reference worker has started;
        a failure answer where it cannot start."""
        self.spawn()
        if self.sandbox is None:
            return failure_answer("the reference's worker has no submission worker to answer")
        if (failure := self.sandbox.start()) is not None:
            return failure
        self._count()
        self._call[0] = self._byte.get(function, 0)
        return None

    def close_call(self) -> None:
        self._call[0] = 0
        self._count()

    def _count(self) -> None:
        """A new call opened or the open one closed: whatever the reference's worker computes for an
        earlier one stops."""
        self._calls = (self._calls + 1) & 0xFFFFFFFF
        self._call[CALL_COUNT] = self._calls.to_bytes(4, "little")

    def ended(self) -> bool:
        """Whether a reference worker was started and has ended since."""
        return self.sandbox is not None and not self.sandbox.running()

    def answering(self) -> tuple[dict, tuple[int, ...]]:
        """The reference worker's config entries and the descriptors it takes (closed here once it has
        them): its ends of the pipes, and the shared byte (kept here for the next one)."""
        assert self._ends is not None, "a reference worker starts only for a submission worker"
        ends, self._ends = self._ends, None
        config = {"answer_fds": list(ends), "call_fd": self._call_fd, **self.tables}
        config["message_bytes"] = self._limits.message_bytes
        return config, ends

    def cpu_spent(self) -> float:
        """CPU seconds of every reference worker this one started (each answered its submission worker
        alone: their cost is that submission's)."""
        return self._cpu_ended + (self.sandbox.cpu_spent() if self.sandbox is not None else 0.0)

    def end(self) -> None:
        """End the reference worker, if one runs, and close what it has not taken."""
        self.close_call()
        if self.sandbox is not None:
            self.sandbox.close()
            self._cpu_ended += self.sandbox.cpu_spent()
            self.sandbox = None
        for fd in self._ends or ():
            os.close(fd)
        self._ends = None

    def close(self) -> None:
        self.end()
        self._call.close()
        os.close(self._call_fd)


class _AnsweringSandbox(Sandbox):
    """The reference worker's sandbox: its worker answers a submission worker's requests
    (grader.runtime.worker.answer_worker)."""

    def __init__(self, source: str, limits: Limits, reference: ReferenceWorker):
        super().__init__(source, {}, False, _no_requests, limits)
        self._answering = reference
        self._inherited = (reference._call_fd,)

    def cpu_left(self) -> float:
        """The submission's sandbox's: the reference works on its budget."""
        owner = self._answering.cpu_left
        return owner() if owner is not None else super().cpu_left()

    def _peer(self) -> tuple[dict, tuple[int, ...]]:
        return self._answering.answering()


def _no_requests(request: dict) -> dict:
    """The reference calls only itself: any request of its worker is refused."""
    return failure_answer(f"the reference's worker may not ask for {request.get('op')!r}")


def _shared_byte() -> tuple[int, mmap.mmap]:
    """A descriptor of one page of memory (no file of any folder) and this process's map of it."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("optlab-open-call")
    else:  # macOS: an unlinked temporary file
        fd = os.dup((handle := tempfile.TemporaryFile()).fileno())
        handle.close()
    os.ftruncate(fd, mmap.PAGESIZE)
    return fd, mmap.mmap(fd, mmap.PAGESIZE)
