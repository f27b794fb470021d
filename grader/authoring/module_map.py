"""README's map of grader/: every subpackage and module with the first sentence of its docstring.

`grader build` writes it into README.md between two marker lines (`grader build --check` finds it stale,
as it finds docs/points.md), so the map is the package as it stands: a module added, moved or described
anew changes it, and a module without a docstring shows as one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from grader.errors import KitError

BEGIN = "<!-- the map of grader/: written by grader build from the docstrings (grader build --check) -->"
END = "<!-- the end of the map of grader/ -->"
NO_DOCSTRING = "(no docstring)"


class MapMarkersMissing(KitError):
    """README.md lacks the marker lines between which `grader build` writes the map of grader/."""


def summary(path: Path) -> str:
    """The first sentence of the module's docstring (its first paragraph's, up to a full stop)."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    end = re.search(r"\.(\s|$)", paragraph)
    return (paragraph[: end.start() + 1] if end else paragraph) or NO_DOCSTRING


def module_map(grader: Path) -> str:
    """The map, a nested list: grader/, its modules, then each subpackage and its modules."""
    lines = [f"- `grader/`: {summary(grader / '__init__.py')}"]
    lines += _modules(grader, "  ")
    for package in sorted(p for p in grader.iterdir() if (p / "__init__.py").is_file()):
        lines.append(f"  - `{package.name}/`: {summary(package / '__init__.py')}")
        lines += _modules(package, "    ")
    return "\n".join(lines) + "\n"


def _modules(folder: Path, indent: str) -> list[str]:
    modules = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
    return [f"{indent}- `{module.name}`: {summary(module)}" for module in modules]


def with_module_map(readme: str, grader: Path) -> str:
    """`readme` with the map between its marker lines written anew."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise MapMarkersMissing(f"README.md: the map of grader/ goes between {BEGIN} and {END}")
    return readme[: start + len(BEGIN)] + "\n" + module_map(grader) + readme[end:]
