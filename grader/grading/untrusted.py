"""Text a submission controls, made safe to show: on the student's page and to the TA.

Text a submission controls, made safe to show: on the student's page (`shown`: markdown, no controls)
and to the TA (`printable`: a terminal, report.html, grades.csv; escapes shown, not obeyed). What a
submission printed is also marked line by line (`PrintedLines`), so that no line of it can pass for the
grader's own ("grader: score 100 / 100, hidden checks included", "isolation: ..."). Every text a
submission chose reaches a reader through here.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import TextIO

MAX_SHOWN_CHARS = 120
_MARKDOWN = frozenset("\\`*[]<>|~&")  # what makes markdown mid-line: escaped wherever it appears
_UNSHOWN = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))  # controls, bidi and zero-width, separators


def shown(text: str, limit: int = MAX_SHOWN_CHARS, markdown: bool = True) -> str:
    """Text a submission chose (a file or member name, a declared encoding, an exception's message), as
    it may appear in a message the student sees: control characters (ANSI escapes, and line breaks
    unless `markdown` is off, where lines and tabs are kept), format characters (right-to-left
    overrides and other bidi controls, zero-width characters) and line separators removed; for
    markdown, its punctuation escaped with a backslash (no fake "**Score: 100 / 100**", no link, no
    HTML, no table cell), and `_` too unless it sits inside a word (where it cannot emphasize); at most
    `limit` characters. Every submission-chosen text of a message goes through here."""
    kept = "".join(
        c for c in str(text) if unicodedata.category(c) not in _UNSHOWN or (not markdown and c in "\n\t")
    )
    if len(kept) > limit:
        kept = kept[: limit - 3] + "..."
    if not markdown:
        return kept
    out = []
    for i, c in enumerate(kept):
        inside_word = 0 < i < len(kept) - 1 and kept[i - 1].isalnum() and kept[i + 1].isalnum()
        out.append("\\" + c if c in _MARKDOWN or (c == "_" and not inside_word) else c)
    return "".join(out)


_ESCAPED = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))  # controls, bidi and zero-width, surrogates, separators
_ASCII_CONTROLS = {True: re.compile("[\x00-\x08\x0b-\x1f\x7f]"), False: re.compile("[\x00-\x1f\x7f]")}
ESCAPED_NOTE = (
    "control characters and escape sequences in text from submissions are shown escaped (ESC as \\x1b), "
    "never passed on"
)


def printable(text: str, lines: bool = True) -> str:
    """Text a submission controls (what it printed, a file or folder name, an exception's message, a
    name in an export), as a terminal, report.html or grades.csv may show it to a TA: every control
    character (ESC, which starts the sequences that clear a screen, set a window's title or write the
    clipboard; CR, which rewrites a line; the C1 controls), format character (bidi overrides,
    zero-width) and line separator is written as Python would escape it ("\\x1b", "\\u202e"), so
    that it does nothing and is still seen. With `lines`, newlines and tabs are kept (CRLF as a
    newline); without, they are escaped too (one line). Whoever shows the result says once, where
    anything was escaped, that it was (ESCAPED_NOTE). Every such text shown to a TA goes through here."""
    text = str(text)
    if lines:
        text = text.replace("\r\n", "\n")
    if text.isascii():  # the usual case, without a look at each character
        return _ASCII_CONTROLS[lines].sub(lambda found: _escape(found[0]), text)
    return "".join(
        _escape(c) if unicodedata.category(c) in _ESCAPED and not (lines and c in "\n\t") else c for c in text
    )


def quoted(name: str) -> str:
    """A submission-chosen name, quoted for a message the student sees (`shown`)."""
    return f"'{shown(name)}'"


def in_words(items: list[str], limit: int = 5) -> str:
    """Items as a message lists them: "a", "a and b", "a, b and c", "a, b, c, d, e and 2 more"."""
    if len(items) > limit:
        return f"{', '.join(items[:limit])} and {len(items) - limit} more"
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _escape(character: str) -> str:
    return character.encode("unicode_escape").decode("ascii")


PRINTED_MARK = "│ "  # begins every line a submission printed, wherever it is shown


class PrintedLines:
    """What a submission printed, marked line by line as it arrives (in pieces that may end mid-line):
    each line begins with PRINTED_MARK, so none of it can pass for a line of the grader's own."""

    def __init__(self) -> None:
        self._mid_line = False  # whether the last piece ended inside a line

    def mark(self, text: str) -> str:
        """`text`, already escaped (printable: its only line break is "\\n"), with every line it begins
        marked."""
        if not text:
            return text
        pieces = text.split("\n")
        out = []
        for i, line in enumerate(pieces):
            last = i == len(pieces) - 1
            begins_line = not (i == 0 and self._mid_line) and not (last and not line)
            if begins_line:
                out.append(PRINTED_MARK if line else PRINTED_MARK.rstrip())
            out.append(line if last else line + "\n")
        self._mid_line = not text.endswith("\n")
        return "".join(out)


def marked(text: str) -> str:
    """Everything a submission printed, escaped (printable) and marked line by line, for a TA's terminal
    or the student's page."""
    return PrintedLines().mark(printable(text))


class Terminal:
    """A command's output to a TA: text that may hold what a submission controls is printed escaped; the
    first time anything on a stream is escaped, a line says so first (once per stream, per command)."""

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self._told: set[str] = set()  # the streams told that something was escaped

    def forget(self) -> None:
        """A new command: each stream is told again, the first time something is escaped."""
        self._told.clear()

    def say(self, text: str, lines: bool = False, file: TextIO | None = None) -> None:
        """Print `text`, escaped: one line, unless `lines` keeps its newlines."""
        out = file if file is not None else sys.stdout
        escaped = printable(text, lines)
        if escaped != text:
            self.note_escaped(out)
        print(escaped, file=out)

    def say_printed(self, text: str, file: TextIO | None = None) -> None:
        """Print what a submission printed: escaped, and every line marked (PRINTED_MARK)."""
        out = file if file is not None else sys.stdout
        escaped = printable(text)
        if escaped != text.replace("\r\n", "\n"):
            self.note_escaped(out)
        print(PrintedLines().mark(escaped), file=out)

    def note_escaped(self, out: TextIO) -> None:
        """The line that says, once per stream, that text from submissions was escaped."""
        stream = "stderr" if out is sys.stderr else "stdout"
        if stream not in self._told:
            self._told.add(stream)
            print(f"{self.prog}: note: {ESCAPED_NOTE}", file=out)
