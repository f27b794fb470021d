"""The stub generator: the student module is the reference with every exercise body replaced by a raise.

An exercise function keeps its decorators, signature and docstring; the rest of its body becomes
`raise NotImplementedError("exercise 6 (Pareto selection): implement _pareto")`. When the body holds
`# BEGIN SOLUTION` / `# END SOLUTION` markers, only the marked regions are replaced (by `# YOUR CODE HERE`
and the raise). Everything else in the module stays byte-identical.
"""

from __future__ import annotations

import ast
import bisect
import functools
import io
import itertools
import re
import tokenize
from dataclasses import dataclass

from grader.assignment.manifest import Exercise, Manifest
from grader.assignment.reference import FunctionNode, parse_reference
from grader.errors import LocatedError

_BEGIN = re.compile(r"#+\s*BEGIN\s+SOLUTION\s*", re.IGNORECASE)
_END = re.compile(r"#+\s*END\s+SOLUTION\s*", re.IGNORECASE)
_PLACEHOLDER = "# YOUR CODE HERE"


class StubError(LocatedError):
    """The reference cannot be turned into stubs (bad markers, a missing function); one line."""


def stub_message(exercise: Exercise, function: str) -> str:
    """The message of the NotImplementedError that the stub of `function` raises."""
    return f"exercise {exercise.id} ({exercise.title}): implement {function}"


def stub_statement(exercise: Exercise, function: str) -> str:
    """The statement that stands for the solution of `function` in the student module."""
    literal = stub_message(exercise, function).replace("\\", "\\\\").replace('"', '\\"')
    return f'raise NotImplementedError("{literal}")'


def stub_module(source: str, manifest: Manifest, path_for_errors: str) -> str:
    """The student module for reference `source`; problems raise StubError naming `path_for_errors`."""
    functions = parse_reference(source, path_for_errors).functions()
    lines = _Lines(source)
    markers = _markers(lines)
    edits: list[_Edit] = []
    claimed: list[_Marker] = []
    for name in manifest.functions:
        exercise = manifest.by_function(name)
        if name not in functions:
            problem = f"exercise {exercise.id} function {name!r} is not a top-level def"
            raise StubError(path_for_errors, 1, problem)
        for node in functions[name]:
            body = _Body(node, lines)
            inside = [marker for marker in markers if body.holds(marker.line)]
            statement = stub_statement(exercise, name)
            if inside:
                edits += _marked_edits(inside, statement, lines, path_for_errors)
            else:
                edits.append(body.whole_edit(statement))
            claimed += inside
    for marker in markers:
        if marker not in claimed:
            problem = f"{marker.kind} SOLUTION marker outside any exercise function body"
            raise StubError(path_for_errors, marker.line, problem)
    return _checked(source, edits, path_for_errors)


class _Lines:
    """The source as physical lines (as ast and tokenize count them), with offsets into the source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = io.StringIO(source, newline="").readlines()
        self.starts = [0, *itertools.accumulate(len(line) for line in self.lines)]

    def start(self, line: int) -> int:
        """Offset of the first character of `line` (1-based; one past the last line is the end)."""
        return self.starts[min(line, len(self.lines) + 1) - 1]

    def end(self, line: int) -> int:
        """Offset of the line break that ends `line` (the end of the source if it has none)."""
        return self.start(line) + len(self.text(line).rstrip("\r\n"))

    def text(self, line: int) -> str:
        return self.lines[line - 1] if line <= len(self.lines) else ""

    def newline(self, line: int) -> str:
        text = self.text(line)
        return text[len(text.rstrip("\r\n")) :]

    def at(self, line: int, byte_col: int) -> int:
        """Offset of an ast position (ast columns count UTF-8 bytes)."""
        return self.start(line) + len(self.text(line).encode("utf-8")[:byte_col].decode("utf-8"))

    def is_line_start(self, line: int, byte_col: int) -> bool:
        """Whether only whitespace stands before the ast position on its line."""
        return not self.source[self.start(line) : self.at(line, byte_col)].strip()

    @functools.cached_property
    def tokens(self) -> list[tokenize.TokenInfo]:
        return list(tokenize.generate_tokens(io.StringIO(self.source, newline="").readline))

    def tokens_from(self, line: int) -> list[tokenize.TokenInfo]:
        """The tokens that start on `line` or after it."""
        index = bisect.bisect_left(self.tokens, line, key=lambda token: token.start[0])
        return self.tokens[index:]


@dataclass(frozen=True)
class _Marker:
    kind: str  # "BEGIN" or "END"
    line: int
    indent: str


@dataclass(frozen=True)
class _Edit:
    """Replace source[start:end] by text; `line` is where it starts in the source (for errors)."""

    start: int
    end: int
    text: str
    line: int


def _markers(lines: _Lines) -> list[_Marker]:
    """Every comment alone on its line that is a BEGIN or END SOLUTION marker, in source order."""
    found = []
    for token in lines.tokens:
        if token.type != tokenize.COMMENT:
            continue
        line, col = token.start
        indent = token.line[:col]
        if indent.strip():
            continue
        for kind, pattern in (("BEGIN", _BEGIN), ("END", _END)):
            if pattern.fullmatch(token.string):
                found.append(_Marker(kind, line, indent))
    return found


class _Body:
    """An exercise function's body: what is kept (up to the docstring) and what the stub replaces."""

    def __init__(self, node: FunctionNode, lines: _Lines) -> None:
        self.lines = lines
        first = node.body[0]
        has_docstring = (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        )
        self.docstring = first if has_docstring else None
        self.statements = node.body[1:] if has_docstring else node.body
        if self.docstring:  # ast.parse sets every statement's end_lineno
            self.kept_line = first.end_lineno or first.lineno
        else:
            self.kept_line = _header_colon(node, lines)[0]
        self.last_line = _trailing_comments_end(node, lines)

    def holds(self, line: int) -> bool:
        """Whether `line` is in the replaceable part of the body (after the docstring)."""
        return self.kept_line < line <= self.last_line

    def whole_edit(self, statement: str) -> _Edit:
        """Replace every statement after the docstring by `statement` (add it if there are none)."""
        lines = self.lines
        if not self.statements:
            return self._after_docstring(statement)
        first = self.statements[0]
        start = lines.at(first.lineno, first.col_offset)
        if first.lineno == self.kept_line:  # on the line of the def's colon or the docstring's end
            return _Edit(start, lines.end(self.last_line), statement, first.lineno)
        indent = lines.source[lines.start(first.lineno) : start]
        text = indent + statement + lines.newline(self.last_line)
        return _Edit(lines.start(self.kept_line + 1), lines.start(self.last_line + 1), text, first.lineno)

    def _after_docstring(self, statement: str) -> _Edit:
        """A function that is only a docstring: add the statement after it."""
        lines, doc = self.lines, self.docstring
        assert doc is not None and doc.end_lineno is not None and doc.end_col_offset is not None
        if not lines.is_line_start(doc.lineno, doc.col_offset):  # def f(): "doc"
            at = lines.at(doc.end_lineno, doc.end_col_offset)
            return _Edit(at, at, f"; {statement}", doc.end_lineno)
        indent = lines.source[lines.start(doc.lineno) : lines.at(doc.lineno, doc.col_offset)]
        newline = lines.newline(doc.end_lineno)
        at = lines.start(doc.end_lineno + 1)
        text = indent + statement + newline if newline else "\n" + indent + statement
        return _Edit(at, at, text, doc.end_lineno)


def _header_colon(node: FunctionNode, lines: _Lines) -> tuple[int, int]:
    """(line, column) of the colon that ends the def's header."""
    after = (node.lineno, node.col_offset)
    if node.returns is not None:
        after = (node.returns.end_lineno or node.lineno, node.returns.end_col_offset or 0)
    after_offset = lines.at(*after)
    depth = 0
    for token in lines.tokens_from(node.lineno):
        if token.type != tokenize.OP:
            continue
        depth += token.string in "([{"
        depth -= token.string in ")]}"
        offset = lines.start(token.start[0]) + token.start[1]
        if token.string == ":" and depth == 0 and offset >= after_offset:
            return token.start
    raise AssertionError(f"no header colon for def {node.name}")  # ast parsed it, so there is one


def _trailing_comments_end(node: FunctionNode, lines: _Lines) -> int:
    """The function's last line, counting the indented comment lines that follow it (they belong to it)."""
    assert node.end_lineno is not None
    last = node.end_lineno
    for line in range(node.end_lineno + 1, len(lines.lines) + 1):
        text = lines.text(line)
        if text.strip() and not (text[:1].isspace() and text.lstrip().startswith("#")):
            break
        if text.strip():
            last = line
    return last


def _marked_edits(markers: list[_Marker], statement: str, lines: _Lines, path: str) -> list[_Edit]:
    """Replace each BEGIN..END SOLUTION region of one body by the placeholder comment and `statement`."""
    edits = []
    begin: _Marker | None = None
    for marker in markers:
        if marker.kind == "BEGIN" and begin is not None:
            problem = f"BEGIN SOLUTION inside the region opened at line {begin.line} (nested markers)"
            raise StubError(path, marker.line, problem)
        if marker.kind == "END" and begin is None:
            raise StubError(path, marker.line, "END SOLUTION without a BEGIN SOLUTION before it")
        if marker.kind == "BEGIN":
            begin = marker
            continue
        assert begin is not None
        end = lines.newline(marker.line)  # "" when the END marker is the file's last line
        text = begin.indent + _PLACEHOLDER + (end or "\n") + begin.indent + statement + end
        edits.append(_Edit(lines.start(begin.line), lines.start(marker.line + 1), text, begin.line))
        begin = None
    if begin is not None:
        raise StubError(path, begin.line, "BEGIN SOLUTION without an END SOLUTION in the same function")
    return edits


def _checked(source: str, edits: list[_Edit], path: str) -> str:
    """Apply the edits; the result must compile, else StubError at the edit nearest before the problem."""
    pieces: list[str] = []
    placed: list[tuple[int, _Edit]] = []  # (line of the output where the edit's text starts, edit)
    position, out_line = 0, 1
    for edit in sorted(edits, key=lambda edit: edit.start):
        kept = source[position : edit.start]
        out_line += kept.count("\n")
        placed.append((out_line, edit))
        out_line += edit.text.count("\n")
        pieces += [kept, edit.text]
        position = edit.end
    result = "".join([*pieces, source[position:]])
    try:
        compile(result, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        before = [edit for line, edit in placed if line <= (error.lineno or 1)]
        line = before[-1].line if before else error.lineno
        problem = f"the stubbed body does not compile: {error.msg} (line {error.lineno} of the stub)"
        raise StubError(path, line, problem) from None
    return result
