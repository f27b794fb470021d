"""The worker: the only place where submitted code runs. It loads the submission and serves calls into it.

For each call it decodes the arguments into the submission's own classes, and, while the call runs,
points the exercise functions that the called one's reference body calls (the request's "reference"
list, from the reference's call graph; never one of the called function's own exercise) at the
reference (a request to the reference's own worker, or to the grader in a run in the test process), so
that one bug costs points once. It reports back only the changes to the arguments the request names as
"mutable"; other changes stay in the worker. The same module runs the reference's worker
(`answer_worker`), and a worker in the test process for debugging, behind the same JSON messages.
"""

from __future__ import annotations

import importlib.util
import mmap
import os
import select
import signal
import sys
import time
import types
from collections.abc import Callable, Iterable
from pathlib import Path

from grader.runtime.audit import Confinement
from grader.runtime.codec import Codec, CodecError, dumps, loads
from grader.runtime.protocol import (
    CALL_COUNT,
    IMPORT_FAILED,
    Link,
    failure_answer,
    perform,
    place_call,
    raise_answer,
)


def load_module(path: Path, name: str) -> types.ModuleType:
    """Execute the file at `path` as a fresh module called `name` (registered, as dataclasses need)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


class Worker:
    """Serves requests from the grader for one submission module.

    `exercise_of` maps each exercise function to its exercise id; `grader` is the link back to the
    grader, used for callables the test passed and for reference answers (when `isolate` is on), unless
    `reference` (the reference's own worker) answers those.
    """

    def __init__(
        self,
        path: Path,
        exercise_of: dict[str, int],
        grader: Link,
        isolate: bool = True,
        broken: dict[str, str] | None = None,
        reference: Link | None = None,
        name: str | None = None,
    ):
        self.path = Path(path)
        self.name = name or self.path.stem  # what the submission is imported as (the lab's module's name)
        self.broken = broken or {}  # definitions intake dropped for a syntax error: name -> where
        self.exercise_of = exercise_of
        self.grader = grader
        # the reference's answers (from its own worker where `reference` is given, else the grader's),
        # each distinct request asked once
        self.answers = RememberedAnswers(reference or grader)
        self.isolate = isolate
        self.module: types.ModuleType | None = None
        self.import_error: dict | None = None
        try:
            self.module = load_module(self.path, self.name)
        except BaseException as exc:  # noqa: BLE001 - whatever the import did, it is reported per call
            self.import_error = raise_answer(exc, str(self.path))
        self.codec = Codec(self.module or types.ModuleType(self.name), make_proxy=self._callback_proxy)

    def handle(self, message: dict) -> dict:
        """Answer one request of the grader."""
        if message.get("op") != "call":
            return failure_answer(f"unknown request {message.get('op')!r}")
        name = str(message.get("function"))
        if self.import_error is not None:
            error = self.import_error
            return failure_answer(f"{IMPORT_FAILED}{error['type']}: {error['message']}{error['where']}")
        fn = vars(self.module).get(name)
        if not callable(fn):
            if name in self.broken:
                why = self.broken[name]
                return failure_answer(f"{name}() could not be graded: it has a syntax error ({why})")
            return failure_answer(f"the submission does not define {name}()")
        try:
            with self._isolated(self._others(name, message.get("reference"))):
                return perform(self.codec, fn, message, str(self.path))
        finally:
            self.codec.forget_callables()

    def answer_reference(self, message: dict, writable: list[str] | None) -> dict:
        """Answer a reference request (this worker runs the reference): the answer names no line of it."""
        fn = vars(self.module).get(str(message.get("function"))) if self.module is not None else None
        if not callable(fn):
            return failure_answer(f"the reference has no {message.get('function')}()")
        try:
            return perform(self.codec, fn, message, None, writable)
        finally:
            self.codec.forget_callables()

    def _others(self, name: str, wanted: object) -> Iterable[str]:
        """The functions the reference answers for during this call: those the grader named, if they
        are exercise functions of another exercise than the called one's."""
        if not self.isolate or not isinstance(wanted, list):
            return ()
        mine = self.exercise_of.get(name)
        return [f for f in wanted if isinstance(f, str) and self.exercise_of.get(f, mine) != mine]

    def _isolated(self, names: Iterable[str]) -> _Patched:
        return _Patched(vars(self.module), {n: self._reference_proxy(n) for n in names})

    def _reference_proxy(self, name: str) -> Callable:
        def by_reference(*args, **kwargs):
            request = {"op": "reference", "function": name}
            return place_call(self.codec, self.answers, request, args, kwargs)

        by_reference.__name__ = by_reference.__qualname__ = name
        return by_reference

    def _callback_proxy(self, handle: int) -> Callable:
        def call_back(*args, **kwargs):
            return place_call(self.codec, self.grader, {"op": "callback", "handle": handle}, args, kwargs)

        return call_back


class RememberedAnswers:
    """The link for reference requests: each distinct request (function and encoded arguments) is asked
    once; the same request again gets the answer it got. The reference is a pure function of its
    arguments (their encoded state, a `random.Random`'s included), so the answer would be the same; a
    softmax asked for the same policy row by every step of a gradient then costs one round trip to the
    reference's worker instead of one per step.

    It holds only answers the reference already gave this worker, for calls allowed along the
    reference's call graph, which the submission saw as they came back: nothing it could not have kept
    itself. Requests holding a callback (whose answers depend on the caller's code) are always asked, and
    only "return" answers are kept, at most LIMIT characters of requests in all (then it starts afresh)."""

    LIMIT = 4 << 20

    def __init__(self, link: Link):
        self.link = link
        self._answers: dict[str, dict] = {}
        self._size = 0

    def send(self, message: dict) -> dict:
        key = dumps(message)
        if '"$callback"' in key:
            return self.link.send(message)
        if (answer := self._answers.get(key)) is not None:
            return answer
        answer = self.link.send(message)
        if answer.get("op") == "return":
            size = len(key) + getattr(self.link, "last_size", len(key))
            if self._size + size > self.LIMIT:
                self._answers.clear()
                self._size = 0
            self._answers[key] = answer
            self._size += size
        return answer


class _Patched:
    """Temporarily replaces names in a module's globals, restoring what was there (or its absence)."""

    def __init__(self, namespace: dict, replacements: dict):
        self.namespace, self.replacements = namespace, replacements
        self.saved: dict = {}

    def __enter__(self) -> None:
        for name, value in self.replacements.items():
            if name in self.namespace:
                self.saved[name] = self.namespace[name]
            self.namespace[name] = value

    def __exit__(self, *exc_info) -> None:
        for name in self.replacements:
            if name in self.saved:
                self.namespace[name] = self.saved[name]
            else:
                self.namespace.pop(name, None)


class PipeLink:
    """The worker's end of its two pipes: one JSON message per line, each way."""

    def __init__(self, read_fd: int, write_fd: int, limit: int = -1, poll_seconds: float = 0.0):
        self._read_fd = read_fd
        self._readable = select.poll() if hasattr(select, "poll") else None  # Windows: no poll of a pipe
        if self._readable is not None:
            self._readable.register(read_fd, select.POLLIN)
        self._buffer = bytearray()
        self._writer = os.fdopen(write_fd, "wb", buffering=0)
        self._limit = limit  # the longest message read (in bytes); -1: any
        self._poll = poll_seconds  # how long the pipe is polled before this process sleeps
        self.last_size = 0

    def receive(self) -> dict | None:
        """The other side's next message; None once it has gone. A message this side cannot read (or
        longer than its limit) ends the worker: answering on would put every later answer out of step
        with its question."""
        line = self._line()
        if not line:
            return None
        self.last_size = len(line)  # what RememberedAnswers counts against its limit
        try:
            return loads(line.decode("utf-8"))
        except (CodecError, UnicodeDecodeError):
            raise SystemExit(3) from None

    def _line(self) -> bytes:
        """The next line, newline included; b"" once the other side has gone."""
        searched = 0
        while (end := self._buffer.find(b"\n", searched)) < 0:
            if 0 <= self._limit < len(self._buffer):
                raise SystemExit(3)
            searched = len(self._buffer)
            if not (chunk := self._chunk()):
                return b""
            self._buffer += chunk
        if 0 <= self._limit < end:
            raise SystemExit(3)
        line = bytes(self._buffer[: end + 1])
        del self._buffer[: end + 1]
        return line

    def _chunk(self) -> bytes:
        """The next bytes from the pipe, polled for a while before this process sleeps for them."""
        spin_until = time.perf_counter() + self._poll
        while self._readable is not None and not self._readable.poll(0) and time.perf_counter() < spin_until:
            pass
        return os.read(self._read_fd, 1 << 16)

    def post(self, message: dict) -> None:
        self._writer.write(dumps(message).encode("utf-8") + b"\n")

    def send(self, message: dict) -> dict:
        """A request of the worker's own (reference answer, callback): its answer is the next message."""
        self.post(message)
        answer = self.receive()
        if answer is None:
            raise SystemExit(0)  # the grader has gone: nothing left to answer
        return answer


class _ReferencePipes(PipeLink):
    """The submission worker's pipes to the reference's worker. Where that worker has ended, the request
    fails (so does the call under way), and `ended` says so: the call's answer tells the grader, which
    then starts both afresh."""

    ended = False

    def send(self, message: dict) -> dict:
        try:
            self.post(message)
            answer = self.receive()
        except OSError:
            answer = None
        if answer is None:
            self.ended = True
            return failure_answer("the reference's worker ended before it answered")
        return answer


class _NoCallbacks:
    """The reference worker's link for the callables a request holds: it calls none of them back."""

    def send(self, message: dict) -> dict:
        return failure_answer("the reference does not call back a callable of the submission")


class CallEnded(Exception):
    """The call a reference request came in ended before the reference answered it."""


class _WhileTheCallIsOpen:
    """Stops the reference's work on a request once the call it came in has ended: every CHECK seconds of
    this process's CPU time (a profiling timer, silent while it waits), the shared page is read, and a
    change since the request was read raises CallEnded inside the reference's code (its answer then says
    so). The reference is the kit's own code: it does not catch it."""

    CHECK = 0.005

    def __init__(self, shared: mmap.mmap):
        self.shared = shared
        self.seen = b""
        signal.signal(signal.SIGPROF, self._check)

    def __enter__(self) -> bytes:
        self.seen = self.shared[: CALL_COUNT.stop]
        signal.setitimer(signal.ITIMER_PROF, self.CHECK, self.CHECK)
        return self.seen

    def __exit__(self, *exc_info) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        self.seen = b""

    def _check(self, signum, frame) -> None:
        if self.seen and self.shared[: CALL_COUNT.stop] != self.seen:
            self.seen = b""  # raised once
            raise CallEnded("the call that asked ended before the reference answered")


def answer_worker(config: dict, grader: PipeLink) -> None:
    """The reference worker's main loop: answer one submission worker's reference requests, each only
    where the grader's shared byte names an open call whose reference body calls that function
    (grader.sandbox.reference_worker.ReferenceWorker), and only while that call is open. Its arguments may
    name only functions of that call's graph, and their objects are built through their classes' constructors
    (grader.runtime.codec). Ends when the submission worker has gone, or sends a message this side cannot read
    or longer than `message_bytes`."""
    reference = Worker(Path(config["module"]), {}, _NoCallbacks(), isolate=False, name=config["module_name"])
    reference.codec.construct = True
    read_fd, write_fd = config["answer_fds"]
    requests = PipeLink(read_fd, write_fd, config["message_bytes"], config["poll_seconds"])
    open_call = mmap.mmap(config["call_fd"], CALL_COUNT.stop, mmap.MAP_SHARED, mmap.PROT_READ)
    functions, answers, writable = config["functions"], config["answers"], config["writable"]
    call_open = _WhileTheCallIsOpen(open_call)
    grader.post({"op": "ready"})
    while (message := requests.receive()) is not None:
        try:
            with call_open as seen:
                index, name = seen[0] - 1, str(message.get("function"))
                allowed = answers[functions[index]] if 0 <= index < len(functions) else ()
                if message.get("op") == "reference" and name in allowed:
                    reference.codec.functions = frozenset(allowed)
                    answer = reference.answer_reference(message, writable.get(name))
                else:
                    answer = raise_answer(LookupError(f"the reference does not answer {name} here"))
        except CallEnded as ended:  # raised between the reference's answer and the timer's end
            answer = raise_answer(ended)
        requests.post(answer)


def _report_where_importing(link: PipeLink, module: Path) -> Callable[[], None]:
    """After half a second of the import's CPU time, then every second, tell the grader which line of the
    module it is at (a module that never finishes importing is then named at its line); returns what stops
    the reports. Where there is no CPU timer (Windows), nothing is reported."""
    if not hasattr(signal, "setitimer"):
        return lambda: None

    def report(signum, frame) -> None:
        while frame is not None and frame.f_code.co_filename != str(module):  # its innermost frame there
            frame = frame.f_back  # (no source line is read: a frame's number is enough)
        if frame is not None:
            try:
                link.post(
                    {"op": "importing", "where": f" (line {frame.f_lineno}, in {frame.f_code.co_name})"}
                )
            except Exception:  # noqa: BLE001 - a report is a courtesy; the deadline holds without it
                pass

    signal.signal(signal.SIGPROF, report)
    signal.setitimer(signal.ITIMER_PROF, 0.5, 1.0)  # within the shortest import budget the tests use (1 s)

    def stop() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    return stop


def serve(config: dict) -> None:
    """The worker process's main loop: confine this process, import the submission, answer each request.

    `config`: read_fd, write_fd, module (path), module_name (what it is imported as), scratch, read_roots,
    exercise_of, isolate, broken, audit_hook (whether to install the tripwire), poll_seconds
    (grader.sandbox.sandbox.poll_seconds), and reference_fds (the pipes to the reference's worker) where
    there is one; a reference's worker has answer_fds instead (`answer_worker`).
    """
    if config.get("stdio"):  # a plain worker (no sandbox): the pipes are stdin and stdout, moved aside
        config = dict(config, read_fd=os.dup(0), write_fd=os.dup(1))
        os.dup2(2, 1)  # what the submission prints goes where stderr goes: the output file
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if config["audit_hook"]:  # a tripwire for honest mistakes; the OS layers are the boundary
        Confinement(config["scratch"], config["read_roots"]).install()
    link = PipeLink(config["read_fd"], config["write_fd"], poll_seconds=config["poll_seconds"])
    if "answer_fds" in config:
        answer_worker(config, link)
        return
    pipes = config.get("reference_fds")
    reference = _ReferencePipes(pipes[0], pipes[1], poll_seconds=config["poll_seconds"]) if pipes else None
    module, exercise_of = Path(config["module"]), config["exercise_of"]
    stop_reporting = _report_where_importing(link, module)
    try:
        worker = Worker(
            module, exercise_of, link, config["isolate"], config["broken"], reference, config["module_name"]
        )
    finally:
        stop_reporting()
    link.post({"op": "ready"})
    while (message := link.receive()) is not None:
        answer = worker.handle(message)
        if reference is not None and reference.ended:
            answer["reference_ended"] = True
        for stream in (sys.stdout, sys.stderr):  # what the call printed reaches the grader's log now
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a stream the submission replaced or closed
                pass
        link.post(answer)
