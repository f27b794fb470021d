"""Compiling a submission's module text in a bounded child, and salvaging what compiles.

Compiling a submission's module text, and salvaging it where it does not compile: every top-level
block that compiles is kept on its own lines (line numbers unchanged), the rest blanked out and said in
notes. The compiler runs on text a student chose, so grading compiles in a child process of its own with
its own bounds (`compiled`); `compiled_here` is that child's work. Nothing submitted runs here.
"""

from __future__ import annotations

import codeop
import json
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from grader.errors import KitError
from grader.grading.untrusted import in_words, quoted
from grader.layout import GRADER_PACKAGE

# Characters salvage compiles, at most, each compile counting COMPILE_COST more: a bound, the same on
# every machine, so that a hostile file (thousands of unclosed brackets, millions of one-line broken
# blocks) costs seconds, not hours. Real files need a few million at most. Past it, what is left of the
# file is judged as one block.
SALVAGE_BUDGET = 20_000_000
COMPILE_COST = 1_000  # a compile's own cost, in characters: 2.6 million broken lines took over 100 s
# Lines that continue the statement above them even though they start at column 0.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_DEFINITION = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+([^\W\d]\w*)")
_INCOMPLETE_INPUT = "incomplete input"  # the message compile() gives under PyCF_ALLOW_INCOMPLETE_INPUT


Compiled = tuple[str, dict[str, str], list[str], "str | None"]  # source, broken, notes, syntax_error


def compiled_here(text: str, found_as: str) -> Compiled:
    """The module's text compiled, in this process: itself when it compiles, else salvaged."""
    original = _compile_problem(text, found_as)
    if original is None:
        return text, {}, [], None
    source, broken, salvage_notes = _salvage(text, found_as)
    return source, broken, salvage_notes, _with_code(original, text)


# Compiling a submission is the grader's own work on text a student chose, so it runs in a process of its
# own with its own bounds: CPython's compiler has crashed the grader (3.11: a segmentation fault on a
# comprehension of 60,000 `for` clauses, 948 KB) and spent hundreds of MB and seconds on what 1 MB holds.
COMPILE_MEMORY = 2 << 30  # the compiling process's address space
COMPILE_SECONDS = 60  # its CPU time; a real module takes well under a second, a hostile one a few
_COMPILER = (
    "import json, resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    "resource.setrlimit(resource.RLIMIT_CPU, ({seconds}, {seconds}))\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from grader.grading.compiling import compiled_here\n"
    "asked = json.load(sys.stdin)\n"
    "json.dump(compiled_here(asked['text'], asked['found_as']), sys.stdout)\n"
)


class TooComplex(Exception):
    """The compiling process died or overran: what the student is told, after the file's name."""


def compiled_apart(text: str, found_as: str) -> Compiled:
    """`compiled_here` in a child process bounded by COMPILE_MEMORY and COMPILE_SECONDS (of CPU; twice
    that of wall-clock time). A child that crashes, runs out of memory or time is TooComplex; one
    that cannot be started, or fails otherwise, is the grader's problem (KitError)."""
    import subprocess
    import sys

    kit = str(GRADER_PACKAGE.resolve().parent)
    code = _COMPILER.format(memory=COMPILE_MEMORY, seconds=COMPILE_SECONDS)
    asked = json.dumps({"text": text, "found_as": found_as})
    command = [sys.executable, "-I", "-S", "-c", code, kit]
    try:
        run = subprocess.run(
            command, input=asked, capture_output=True, text=True, timeout=2 * COMPILE_SECONDS, cwd="/"
        )
    except subprocess.TimeoutExpired:
        raise TooComplex(f"took Python's compiler more than {2 * COMPILE_SECONDS} s") from None
    except OSError as error:
        raise KitError(f"the grader could not start a process to compile the submission: {error}") from None
    if run.returncode == 0:
        source, broken, notes, syntax_error = json.loads(run.stdout)
        return source, broken, notes, syntax_error
    if run.returncode < 0 or "MemoryError" in run.stderr:  # a crash, the CPU or memory limit
        raise TooComplex(
            "is too large or too deeply nested for Python's compiler (it crashed or ran out of memory)"
        )
    raise KitError(f"compiling the submission failed in the grader: {run.stderr.strip()[-500:]}")


def compiled(text: str, found_as: str) -> Compiled:
    """The module's text compiled: itself when it compiles, else salvaged; on POSIX in a bounded child
    process (`compiled_apart`). Raises TooComplex where the compiler crashed or overran its bounds."""
    return compiled_apart(text, found_as) if os.name == "posix" else compiled_here(text, found_as)


# --- salvage ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class _Block:
    start: int  # index of its first line
    end: int  # index after its last line


_Dropped = tuple[_Block, _Problem]


def _compile_problem(source: str, filename: str, first_line: int = 1, flags: int = 0) -> _Problem | None:
    """Why `source` (the file's lines from `first_line` on) does not compile, or None when it does."""
    try:
        with warnings.catch_warnings():
            # A warning (an invalid escape, `is` with a literal) is not an error, even under -W error.
            warnings.simplefilter("ignore")
            compile(source, filename, "exec", flags, dont_inherit=True)
    except SyntaxError as error:
        return _Problem(first_line - 1 + (error.lineno or 1), _shift_lines(error.msg, first_line - 1))
    except (RecursionError, MemoryError):
        # The compiler runs out of stack on very deep expressions: too deep for Python, not invalid syntax.
        return _Problem(first_line, "too deeply nested to compile")
    return None


def _shift_lines(message: str, offset: int) -> str:
    # A block is compiled alone, so the "line N" inside messages ("detected at line 3") counts from it.
    return re.sub(r"\bline (\d+)", lambda m: f"line {int(m.group(1)) + offset}", message)


def _with_code(problem: _Problem, text: str) -> str:
    lines = text.split("\n")
    code = lines[problem.line - 1].strip() if 0 < problem.line <= len(lines) else ""
    if not code:
        return str(problem)
    return f"{problem} (`{code if len(code) <= 60 else code[:57] + '...'}`)"


def _salvage(text: str, filename: str) -> tuple[str, dict[str, str], list[str]]:
    """The text with every top-level block that does not compile blanked out (line numbers unchanged),
    the dropped definitions with their own errors, and the notes that say so."""
    lines = text.split("\n")
    salvager = _Salvager(lines, filename)
    kept, dropped = salvager.triage()
    source = salvager.reassemble(kept, dropped)
    broken = _broken(lines, kept, dropped)
    return source, broken, _salvage_notes(lines, broken, dropped, filename)


class _Salvager:
    """Sorts a module's top-level blocks into those that compile and those that do not."""

    def __init__(self, lines: list[str], filename: str):
        self.lines = lines
        self.filename = filename
        self.blocks = _top_level_blocks(lines)
        self.budget = SALVAGE_BUDGET

    def triage(self) -> tuple[list[_Block], list[_Dropped]]:
        kept: list[_Block] = []
        dropped: list[_Dropped] = []
        i = 0
        while i < len(self.blocks):
            if self.budget <= 0:  # the rest as one block: one compile more, whatever it holds
                problem = self._problem(i, len(self.blocks) - 1)
                unit = _Block(self.blocks[i].start, self.blocks[-1].end)
                kept.append(unit) if problem is None else dropped.append((unit, problem))
                break
            own = self._problem(i, i)
            stop, problem = (i + 1, None) if own is None else self._join(i, own)
            unit = _Block(self.blocks[i].start, self.blocks[stop - 1].end)
            if problem is None:
                kept.append(unit)
            else:
                dropped.append((unit, problem))
            i = stop
        return kept, dropped

    def _join(self, i: int, own: _Problem) -> tuple[int, _Problem | None]:
        """Block i does not compile alone; it may end early because a string or a bracket holds a
        column-0 line (a docstring's text, black's `) -> int:`). Join the blocks that follow while the text
        stays incomplete. Returns where the unit ends (it is blocks i..stop-1) and its problem, None when
        the join compiles."""
        if not _incomplete(self._problem(i, i, incomplete=True)):
            return i + 1, own  # broken, not merely unfinished
        for last in range(i + 1, len(self.blocks)):
            if self.budget <= 0:
                break
            problem = self._problem(i, last, incomplete=True)
            if problem is None:
                return last + 1, None
            if _incomplete(problem):
                continue
            # Block i was still open when block `last` broke the join: when `last` is a fine start of
            # code, block i is what is wrong (an unclosed bracket); else `last` continued it.
            fresh = self._problem(last, last, incomplete=True)
            if fresh is None or _incomplete(fresh):
                return last, own
            return last + 1, problem
        # Still open at the end of the file (an unclosed string): what follows it is probably code.
        return i + 1, own

    def _problem(self, first: int, last: int, incomplete: bool = False) -> _Problem | None:
        """Why blocks first..last do not compile together, with the file's line numbers; or None."""
        start = self.blocks[first].start
        return self._compile("\n".join(self.lines[start : self.blocks[last].end]), start + 1, incomplete)

    def reassemble(self, kept: list[_Block], dropped: list[_Dropped]) -> str:
        """The kept blocks back on their own lines. A block that compiles alone but not with the others (a
        __future__ import after another statement) is dropped too, until the whole compiles."""
        while kept:
            source = _assemble(self.lines, kept)
            problem = self._compile(source, 1)
            if problem is None:
                return source
            if self.budget <= 0:
                dropped.extend((block, problem) for block in kept)
                kept.clear()
                break
            culprit = max((b for b in kept if b.start < problem.line), key=lambda b: b.start, default=kept[0])
            kept.remove(culprit)
            dropped.append((culprit, problem))
        return _assemble(self.lines, kept)

    def _compile(self, text: str, first_line: int, incomplete: bool = False) -> _Problem | None:
        self.budget -= len(text) + COMPILE_COST
        # in codeop since Python 3.9, but not in its type stubs
        flags = codeop.PyCF_ALLOW_INCOMPLETE_INPUT if incomplete else 0  # type: ignore[attr-defined]
        return _compile_problem(text, self.filename, first_line, flags)


def _incomplete(problem: _Problem | None) -> bool:
    return problem is not None and problem.message == _INCOMPLETE_INPUT


def _top_level_blocks(lines: list[str]) -> list[_Block]:
    """The module cut before each line that starts a top-level statement; decorators go with what they
    decorate, and else/elif/except/finally with the statement they continue."""
    starts = [0]
    decorating = False
    for i, line in enumerate(lines):
        if not _starts_statement(line):
            continue
        if not decorating and i > 0:
            starts.append(i)
        decorating = line.startswith("@")
    ends = starts[1:] + [len(lines)]
    return [_Block(start, end) for start, end in zip(starts, ends, strict=True)]


def _starts_statement(line: str) -> bool:
    return bool(line) and not line[0].isspace() and not line.startswith("#") and not _CONTINUATION.match(line)


def _assemble(lines: list[str], kept: Iterable[_Block]) -> str:
    out = [""] * len(lines)
    for block in kept:
        out[block.start : block.end] = lines[block.start : block.end]
    return "\n".join(out)


def _broken(lines: list[str], kept: list[_Block], dropped: list[_Dropped]) -> dict[str, str]:
    """Dropped definitions by name, unless a later kept block defines the name again: as in Python, the
    last definition is the one that counts."""
    events: list[tuple[int, str | None, _Problem | None]]
    events = [(block.start, _defined_name(lines, block), None) for block in kept]
    events += [(block.start, _defined_name(lines, block), problem) for block, problem in dropped]
    broken: dict[str, str] = {}
    for _, name, problem in sorted(events, key=lambda event: event[0]):
        if name is not None:
            broken.pop(name, None)
            if problem is not None:
                broken[name] = str(problem)
    return broken


def _defined_name(lines: list[str], block: _Block) -> str | None:
    """The name a block defines when it is a def or class statement (its decorators aside)."""
    for line in lines[block.start : block.end]:
        if _starts_statement(line) and not line.startswith("@"):
            match = _DEFINITION.match(line)
            return match.group(1) if match else None
    return None


def _salvage_notes(
    lines: list[str], broken: dict[str, str], dropped: list[_Dropped], filename: str
) -> list[str]:
    notes = []
    if broken:
        items = in_words([f"{name} ({where})" for name, where in broken.items()])
        why = "it has a syntax error" if len(broken) == 1 else "they have syntax errors"
        notes.append(f"Could not grade {items}: {why}; the rest of {quoted(filename)} was graded.")
    # What `broken` does not tell: dropped statements, and definitions that a later one replaces anyway.
    others = [(b, p) for b, p in dropped if broken.get(_defined_name(lines, b) or "") != str(p)]
    if others:
        spans = in_words([_span(lines, block, problem) for block, problem in _coalesced(others)])
        notes.append(f"Left out {spans} of {quoted(filename)} because of a syntax error.")
    return notes


def _coalesced(dropped: Iterable[_Dropped]) -> list[_Dropped]:
    """Adjacent dropped blocks as one, with the first one's problem."""
    merged: list[_Dropped] = []
    for block, problem in sorted(dropped, key=lambda item: item[0].start):
        if merged and merged[-1][0].end == block.start:
            merged[-1] = (_Block(merged[-1][0].start, block.end), merged[-1][1])
        else:
            merged.append((block, problem))
    return merged


def _span(lines: list[str], block: _Block, problem: _Problem) -> str:
    last = max((i for i in range(block.start, block.end) if lines[i].strip()), default=block.start)
    where = f"line {block.start + 1}" if last == block.start else f"lines {block.start + 1}-{last + 1}"
    detail = problem.message if problem.line == block.start + 1 == last + 1 else str(problem)
    return f"{where} ({detail})"
