"""The reference module as the kit reads it: its exact source, its syntax tree, its top-level functions."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import LocatedError

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class ModuleSourceError(LocatedError):
    """A Python module that cannot be read or does not parse."""


@dataclass(frozen=True)
class Reference:
    """A parsed module: `path` is how errors name it, `source` its exact text."""

    path: str
    source: str
    tree: ast.Module = field(repr=False)

    def functions(self) -> dict[str, tuple[FunctionNode, ...]]:
        """Top-level `def`s by name, in source order (a name defined twice maps to both)."""
        found: dict[str, tuple[FunctionNode, ...]] = {}
        for node in self.tree.body:
            if isinstance(node, FunctionNode):
                found[node.name] = (*found.get(node.name, ()), node)
        return found

    def parameters(self) -> dict[str, tuple[str, ...]]:
        """Each top-level function's parameter names, in order (its last definition's)."""
        return {
            name: tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))
            for name, (*_, node) in self.functions().items()
        }


def parse_reference(source: str, path: str) -> Reference:
    """Parse `source`; a syntax error becomes a one-line ModuleSourceError naming `path` and the line."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        raise ModuleSourceError(path, error.lineno, f"syntax error: {error.msg}") from None
    return Reference(path, source, tree)


def read_reference(file: Path, path: str) -> Reference:
    """Read `file` byte-exactly as UTF-8 (line endings kept) and parse it; errors name `path`."""
    try:
        source = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ModuleSourceError(path, None, "no such file") from None
    except UnicodeDecodeError as error:
        raise ModuleSourceError(path, None, f"not UTF-8 ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ModuleSourceError(path, None, f"cannot read: {error.strerror}") from None
    return parse_reference(source, path)
