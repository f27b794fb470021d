"""The kit's error types: problems in the instructor's input, each reported to the user as one line."""

from __future__ import annotations


class KitError(Exception):
    """A problem with the kit's input (manifest, reference, tree); its str is one line for the CLI."""


class LocatedError(KitError):
    """A problem at a place in a file: str is `path:LINE: problem` (or `path: problem` without a line)."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = " ".join(problem.split())
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {self.problem}")
