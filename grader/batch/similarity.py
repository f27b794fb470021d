"""Similarity of submissions' exercise code, for TAs: never part of a grade, never shown to students.

The library is copydetect (PyPI `copydetect`, MIT): the winnowing fingerprints of MOSS over Pygments
tokens, with boilerplate removal, in pure Python (numpy). Chosen over pycode-similar (AST diffs of
function pairs, unmaintained since 2020, no boilerplate), JPlag (Java) and Dolos (Node.js), which need
another runtime, and MOSS itself, a web service that would send students' code off the machine.

Only the exercise functions of each submission are compared (as intake reads the module, salvaged where
it does not compile), and the stub's exercise functions are boilerplate: the docstrings and scaffolding
every student starts from do not count, and docstrings and the stub's comments are left out of what is
compared and shown (the stub's docstrings were highlighted as shared code). A pair is listed when the code
one of them shares with the other is at least `threshold` of its own exercise code; `similarity.html`
shows each such pair side by side, the shared spans highlighted with a little context and the rest
folded away. Names and code reach the page through grader.grading.untrusted.printable: a control
character or bidi override in a submission's code (Trojan Source) is shown escaped, not obeyed.
"""

from __future__ import annotations

import ast
import html
import io
import itertools
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.assignment.manifest import Manifest
from grader.batch.roster import Entry
from grader.errors import KitError
from grader.grading.intake import read_submission
from grader.grading.untrusted import ESCAPED_NOTE, printable

NOISE_TOKENS = 25  # copydetect's defaults: matches shorter than this many tokens are noise,
GUARANTEE_TOKENS = 30  # matches at least this long are always found
THRESHOLD = 0.5
SIMILARITY_HTML = "similarity.html"
MODULE_FILE = "optimization_toolkit.py"  # the name Pygments reads the language from


class SimilarityUnavailable(KitError):
    """copydetect is not installed."""


@dataclass(frozen=True)
class Pair:
    """Two submissions whose exercise code overlaps."""

    first: str
    second: str
    shares: tuple[float, float]  # the share of each one's exercise code found in the other, 0..1
    tokens: int  # tokens in common
    views: tuple[str, str]  # each one's exercise code, as HTML, the shared parts highlighted

    @property
    def similarity(self) -> float:
        return max(self.shares)


def exercise_code(source: str, functions: Sequence[str]) -> str:
    """The definitions of `functions` in `source` at any depth (under `if`, `try`, `with`, in a class or
    another function: issue 33, a copy indented under `if True:` was never compared), and of functions
    bound to their names (`softmax = _mine`), each dedented, in file order; a definition inside one
    already taken is part of it ("" where none parses)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        return ""
    lines = source.splitlines(keepends=True)
    kept = []
    for node in _definitions(tree, frozenset(functions) | _aliased(tree, functions)):
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        kept.append(textwrap.dedent("".join(lines[start : node.end_lineno])))
    return "\n".join(kept)


def without_stub_text(code: str, scaffolding: frozenset[str]) -> str:
    """`code` without its docstrings and without the comment lines the stub has too: text every student
    starts from, which a match must not highlight as shared (the stub's docstrings were marked as copied
    code in every pair)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines = code.splitlines(keepends=True)
    dropped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]) and _alone(body[0], lines):
            dropped.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return "".join(
        line
        for number, line in enumerate(lines, 1)
        if number not in dropped and not (line.strip().startswith("#") and line.strip() in scaffolding)
    )


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _alone(node: ast.stmt, lines: list[str]) -> bool:
    """Whether nothing but `node` stands on its lines (a docstring can share a line with code)."""
    end = node.end_lineno or node.lineno
    before = lines[node.lineno - 1][: node.col_offset]
    after = lines[end - 1][node.end_col_offset :] if node.end_col_offset is not None else ""
    return not before.strip() and not after.strip()


def _stub_lines(stub_code: str) -> frozenset[str]:
    return frozenset(line.strip() for line in stub_code.splitlines() if line.strip())


def _aliased(tree: ast.AST, functions: Sequence[str]) -> frozenset[str]:
    """Names of functions an exercise function is bound to (`softmax = _mine`: a copy under other names,
    bound back at the end, was another way to hide it)."""
    return frozenset(
        node.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
        and any(isinstance(target, ast.Name) and target.id in functions for target in node.targets)
    )  # fmt: skip


def _definitions(tree: ast.AST, functions: frozenset[str]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The outermost definitions named in `functions`, however deep, in file order (a walk with a stack
    of its own: no recursion, whatever the nesting)."""
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in functions:
            found.append(node)
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def compare(
    entries: Sequence[Entry], manifest: Manifest, stub: str, threshold: float = THRESHOLD
) -> tuple[list[Pair], list[str]]:
    """The pairs of `entries` at or above `threshold`, most similar first; and the entries that were not
    compared (no readable module, or no exercise code)."""
    try:
        from copydetect import CodeFingerprint, compare_files
        from copydetect.utils import highlight_overlap
    except ImportError:
        raise SimilarityUnavailable("similarity needs copydetect: pip install -e '.[batch]'") from None

    def fingerprint(code: str, boilerplate: list | None = None):
        window = GUARANTEE_TOKENS - NOISE_TOKENS + 1
        return CodeFingerprint(
            MODULE_FILE, NOISE_TOKENS, window, boilerplate=boilerplate, fp=io.StringIO(code)
        )

    functions = manifest.functions
    stub_code = exercise_code(stub, functions) if stub else ""
    scaffolding = _stub_lines(stub_code)
    boilerplate = list(fingerprint(without_stub_text(stub_code, scaffolding)).hashes) if stub else []
    prints, left_out = {}, []
    for entry in entries:
        try:
            code = exercise_code(read_submission(entry.path, manifest.module).source, functions)
        except KitError:  # no module (IntakeError), or none could be compiled here: not compared
            code = ""
        code = without_stub_text(code, scaffolding)
        if code.strip():
            prints[entry.file] = fingerprint(code, boilerplate)
        else:
            left_out.append(entry.file)
    pairs = []
    for (a, first), (b, second) in itertools.combinations(prints.items(), 2):
        tokens, shares, slices = compare_files(first, second)
        if tokens and max(shares) >= threshold:
            views = tuple(
                highlight_overlap(fp.raw_code, s, "<mark>", "</mark>", escape_html=True)[0]
                for fp, s in zip((first, second), slices, strict=True)
            )
            pairs.append(Pair(a, b, (float(shares[0]), float(shares[1])), int(tokens), views))
    pairs.sort(key=lambda p: (-p.similarity, p.first, p.second))
    return pairs, left_out


def write_similarity(path: Path, pairs: Sequence[Pair], left_out: Sequence[str], title: str) -> Path:
    """similarity.html: the pairs, each side by side with the shared code highlighted; names and code
    with their control characters escaped (said once, at the top, where there were any)."""

    def e(text: str) -> str:
        return html.escape(printable(text, lines=False))

    views = [tuple(printable(view) for view in pair.views) for pair in pairs]  # already HTML-escaped
    names = [*(n for pair in pairs for n in (pair.first, pair.second)), *left_out]
    escaped = any(printable(n, False) != n for n in names) or any(
        v != original
        for pair, shown in zip(pairs, views, strict=True)
        for v, original in zip(shown, pair.views, strict=True)
    )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>{_STYLE}</style>",
        f"</head><body><h1>{e(title)}</h1>",
        "<p>Exercise code only, the stub's scaffolding removed. For TAs: never part of a grade, never shown "
        "to students. A high share is a reason to look, not a finding.</p>",
        f"<p>{len(pairs)} pair(s) at or above the threshold.</p>",
        f"<p>Note: {e(ESCAPED_NOTE)}.</p>" if escaped else "",
    ]
    for index, (pair, shown) in enumerate(zip(pairs, views, strict=True), 1):
        parts.append(
            f"<h2 id='pair-{index}'>{e(pair.first)} &amp; {e(pair.second)}: "
            f"{100 * pair.shares[0]:.0f}% / {100 * pair.shares[1]:.0f}% ({pair.tokens} tokens in common)</h2>"
            "<div class='pair'>"
            + "".join(
                f"<div><h3>{e(name)}</h3>{folded(view)}</div>"
                for name, view in zip((pair.first, pair.second), shown, strict=True)
            )  # fmt: skip
            + "</div>"
        )
    if left_out:
        parts.append(f"<p>Not compared (no exercise code read): {e(', '.join(left_out))}</p>")
    parts.append("</body></html>\n")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


CONTEXT_LINES = 2  # lines shown around each shared span; longer runs of unshared code are folded


def folded(view: str, context: int = CONTEXT_LINES) -> str:
    """A highlighted view as preformatted blocks: the shared spans (the lines a <mark> touches) with
    `context` lines around them, and each longer run of code the pair does not share folded away. A
    folded run never holds a mark, so every block's HTML is whole."""
    lines = view.split("\n")
    shared, inside = [], False
    for line in lines:
        shared.append(inside or "<mark>" in line or "</mark>" in line)
        opened, closed = line.rfind("<mark>"), line.rfind("</mark>")
        inside = opened > closed if max(opened, closed) >= 0 else inside
    near = [any(shared[max(0, i - context) : i + context + 1]) for i in range(len(lines))]
    blocks = []
    for shown, run in itertools.groupby(zip(near, lines, strict=True), key=lambda pair: pair[0]):
        text = "\n".join(line for _, line in run)
        count = text.count("\n") + 1
        blocks.append(
            f"<pre>{text}</pre>"
            if shown or count <= 2 * context
            else f"<details><summary>{count} lines not shared</summary><pre>{text}</pre></details>"
        )
    return "".join(blocks)


# Two columns that share the page's width whatever the code's longest line: a grid track of "1fr" is at
# least as wide as its content (a long line pushed the right column past a 1280 px window); minmax(0, 1fr)
# and min-width: 0 keep each half, and its <pre> scrolls sideways instead.
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1em; }
.pair > div { min-width: 0; }
pre { background: #f7f7f7; padding: .5em; overflow-x: auto; max-width: 100%; font-size: 85%; }
mark { background: #ffd86b; }
"""
