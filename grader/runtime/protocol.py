"""The call protocol: how one function call crosses between the grader and a worker, either way.

A call is a request ``{"op": "call" | "reference" | "callback", ..., "args": [...], "kwargs": {...}}``
with codec-encoded values, and optionally ``"mutable": [keys]``: the arguments (by position or keyword)
whose changes the caller takes back, the lab's contract mutations (grader.assignment.contract); without it,
every argument. The side that runs it answers ``{"op": "return", "value": ..., "mutated": {...}, "changed":
[...]}`` (the new state of every such argument the call changed, keyed by position or keyword, and the
keys of the other arguments it changed, whose changes stay with it) or ``{"op":
"raise", "type": ..., "message": ..., "where": ...}``. While a call is open, the side running it may
send requests of its own (a worker asks the grader for the reference's answer, or calls back a callable
the test passed); the caller serves them before it reads the answer. Both sides use these two halves,
`perform` and `place_call`; only the transport (`Link.send`) differs.
"""

from __future__ import annotations

import builtins
import re
import traceback
import types
from collections.abc import Callable, Collection
from typing import Any, Literal, Protocol

from grader.runtime.codec import Codec, CodecError, update_in_place

# How long either side polls its pipe for the other's message before it sleeps until one comes: most
# answers take well under a millisecond, and a process that sleeps (and, on a virtual machine, the idle CPU
# under it) takes about as long again to wake; polling for this long makes a round trip 3 to 5 times faster.
SPIN_SECONDS = 200e-6

# The page the grader shares with the reference's worker (grader.sandbox.reference_worker.ReferenceWorker):
# byte 0 names the open call (0: none); these four bytes count the calls opened and closed (little-endian,
# wrapping).
CALL_COUNT = slice(4, 8)

# How a call's failure says that the module never imported (grader.runtime.worker, grader.sandbox.sandbox):
# every check then fails the same way, and a run says it once, as a headline (`import_headline`).
IMPORT_FAILED = "the submission could not be imported: "
IMPORT_TIMED_OUT = "the module did not finish importing: "
STANDARD_LIBRARY_ONLY = "only Python's standard library is available when your module is graded"


class SubmissionError(Exception):
    """The submission could not answer a call: it crashed, is missing a function, or sent garbage.

    An Exception (never a BaseException), so that whatever the submission raised, even SystemExit or
    pytest's Skipped, fails the test that made the call instead of stopping or skipping it.
    """


TimeScope = Literal["call", "exercise", "run"]  # whose time ran out: the call's, its exercise's, the run's
TIME_SCOPES: tuple[TimeScope, ...] = ("call", "exercise", "run")


class CallTimedOut(SubmissionError):
    """The call did not return in time; its worker was killed. `scope` says whose time ran out: only a
    "call" or "exercise" timeout is the exercise's own; "run" is the whole run's budget."""

    def __init__(self, message: str, scope: TimeScope = "call"):
        super().__init__(message)
        self.scope = scope


class Link(Protocol):
    """One side's view of the other: `send` delivers a request and returns the final answer to it."""

    def send(self, message: dict) -> dict: ...


def place_call(
    codec: Codec,
    link: Link,
    request: dict,
    args: tuple,
    kwargs: dict,
    writable: Collection[str] | None = None,
    changed: list[str] | None = None,
) -> Any:
    """Encode a call, send it, write the callee's mutations back into `args`/`kwargs`, return its value.

    With `writable`, only the arguments under those keys (position or keyword) take the callee's changes
    (the lab's contract mutations; never a frozen dataclass): whatever else the callee did to its copies
    stays there, so the caller's objects are as they were before the call; the keys of those other
    changed arguments are added to `changed`, where given.
    """
    __tracebackhide__ = True
    message = dict(
        request, args=[codec.encode(a) for a in args], kwargs={k: codec.encode(v) for k, v in kwargs.items()}
    )
    if writable is not None:
        message["mutable"] = sorted(writable)
    answer = link.send(message)
    if answer.get("op") == "raise":
        raise rebuild_exception(codec.module, answer)
    if answer.get("op") != "return":
        op = _cut(answer.get("op"), 40)
        raise SubmissionError(f"the worker sent a message that is not an answer (op {op!r})")
    mutated = answer.get("mutated")
    try:
        for key, state in (mutated if type(mutated) is dict else {}).items():
            if writable is not None and key not in writable:
                continue  # not a mutation of the lab's contract: dropped
            if key.isdigit() and int(key) < len(args):
                target = args[int(key)]
            elif key in kwargs:
                target = kwargs[key]
            else:
                continue
            update_in_place(target, codec.decode(state))
        value = codec.decode(answer.get("value"))
    except CodecError as error:  # a ValueError: never the call's own, which ``pytest.raises`` would take
        raise SubmissionError(f"the answer could not be read: {_cut(str(error), 200)}") from None
    if changed is not None and type(answer.get("changed")) is list:
        changed.extend(str(key) for key in answer["changed"])
    return value


def perform(
    codec: Codec,
    fn: Callable,
    message: dict,
    where_file: str | None = None,
    writable: Collection[str] | None = None,
) -> dict:
    """Run `fn` on the decoded arguments of `message` and build the answer (value, mutations or error).

    Only the arguments under the keys `writable` (else the request's "mutable", else all) are reported
    with their new state when changed; other changed arguments are only named ("changed"), their changes
    stay here."""
    if writable is None and isinstance(message.get("mutable"), list):
        writable = {str(key) for key in message["mutable"]}
    try:
        args = [codec.decode(a) for a in message.get("args", [])]
        kwargs = {k: codec.decode(v) for k, v in message.get("kwargs", {}).items()}
    except Exception as exc:  # a malformed request is an error of the call, not of this process
        return raise_answer(exc, where_file)
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - whatever the callee raised is the call's answer
        return raise_answer(exc, where_file)
    try:
        sent = {str(i): a for i, a in enumerate(message.get("args", []))} | message.get("kwargs", {})
        now = {str(i): a for i, a in enumerate(args)} | kwargs
        mutated, changed = {}, []
        for key, arg in now.items():
            if (state := codec.encode(arg)) != sent[key]:
                if writable is None or key in writable:
                    mutated[key] = state
                else:
                    changed.append(key)  # outside the contract: named, never sent back
        answer = {"op": "return", "value": codec.encode(value), "mutated": mutated}
        return answer | {"changed": changed} if changed else answer
    except BaseException as exc:  # noqa: BLE001 - an unencodable result is the call's error
        return raise_answer(exc, where_file)


def raise_answer(exc: BaseException, where_file: str | None = None) -> dict:
    """The answer that reports `exc`: its type name, its message and where in `where_file` it was raised."""
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "<the exception's message could not be read>"
    return {
        "op": "raise",
        "type": type(exc).__name__,
        "message": message[:MESSAGE_CHARS],
        "where": _where(exc, where_file),
    }


def failure_answer(message: str, timed_out: str | None = None) -> dict:
    """The answer for a call that failed outside the submission's own code (it could not be imported,
    has no such function, died, or ran out of time: `timed_out` is then one of TIME_SCOPES)."""
    answer = {"op": "raise", "type": "SubmissionError", "message": message, "where": ""}
    if timed_out is not None:
        answer["timed_out"] = timed_out
    return answer


def rebuild_exception(module: types.ModuleType, answer: dict) -> Exception:
    """An exception of this side to raise for a `raise` answer: the same built-in or lab type where one
    exists (so ``pytest.raises(ValueError)`` works), else a SubmissionError that names the type."""
    # cut before anything formats them: a hostile worker's answer may carry megabytes here
    name, message = _cut(answer.get("type"), 100), _cut(answer.get("message"))
    where = _cut(answer.get("where"), 200)
    if (scope := answer.get("timed_out")) is not None:
        return CallTimedOut(message, scope if scope in TIME_SCOPES else "call")
    if name == "SubmissionError":
        return SubmissionError(message + where)
    for home in (builtins, module):
        cls = getattr(home, name, None)
        if (
            isinstance(cls, type)
            and issubclass(cls, Exception)
            and (home is builtins or cls.__module__ == module.__name__)
        ):
            try:
                exc = cls(message)
            except Exception:  # noqa: BLE001 - a built-in that wants other arguments
                break
            exc.add_note(f"raised by the submission{where}")
            return exc
    return SubmissionError(f"{name}: {message}{where}" if message else f"{name}{where}")


MESSAGE_CHARS = 2000  # the longest exception message that crosses, either way


def _cut(value: object, limit: int = MESSAGE_CHARS) -> str:
    """A field of an answer as text of at most `limit` characters (a string cut first, anything else a
    short placeholder: never formatted whole)."""
    if value is None:
        return ""
    text = value[: limit + 1] if isinstance(value, str) else f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_WHERE = re.compile(r" ?\(line (?P<line>\d+), in [^)]*\)")  # what `_where` writes


def _where(exc: BaseException, where_file: str | None) -> str:
    if where_file is None:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == where_file]
    if not frames:
        return ""
    last = frames[-1]
    return f" (line {last.lineno}, in {last.name})"


def import_headline(failure: str, module_file: str = "optimization_toolkit.py") -> str | None:
    """One line that says why the module never imported, and where in `module_file`, from the text of a
    call's failure (None when the failure is not that): what a run shows once, above its verdict."""
    timed_out = IMPORT_TIMED_OUT in failure
    marker = IMPORT_TIMED_OUT if timed_out else IMPORT_FAILED
    if marker not in failure:
        return None
    why = (failure.split(marker, 1)[1].strip().splitlines() or [""])[0]
    what = "did not finish importing" if timed_out else "could not be imported"
    where = "" if timed_out else f" in {module_file}"
    if (found := _WHERE.search(why)) is not None:
        why, where = why[: found.start()].rstrip(), f" at line {found['line']} of {module_file}"
    hint = f" ({STANDARD_LIBRARY_ONLY})" if why.startswith("ModuleNotFoundError") else ""
    return f"Your module {what}{where}: {why}{hint}. No check could call it."
