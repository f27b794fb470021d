"""Gradescope's results.json schema, as the kit's tests check it (see shared notes: otter-gradescope.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "simple_format", "md", "html", "ansi"}
MAX_BYTES = 1_000_000


def problems(path: Path, kit: bool = True) -> list[str]:
    """Everything wrong with the results.json at `path` (empty: it is valid).

    With `kit`, also what the kit's own documents promise beyond Gradescope's rules: a top-level score,
    and a score, a status and a name on every test. Without it (Otter's documents), only Gradescope's:
    a test may go without them (Otter's "Public Tests" summary does), but not every one of them.
    """
    raw = path.read_bytes()
    if len(raw) > MAX_BYTES:
        return [f"{len(raw)} bytes, over {MAX_BYTES}"]

    def refuse(constant: str) -> float:
        raise ValueError(f"non-standard JSON constant {constant}")

    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=refuse)
    except ValueError as error:
        return [f"not strict JSON: {error}"]
    out = []
    if not isinstance(doc, dict):
        return ["top level is not an object"]
    if kit or "score" in doc or not any(isinstance(t, dict) and "score" in t for t in doc.get("tests", [])):
        out += _number(doc, "score", "top level")
    if "execution_time" in doc:
        out += _number(doc, "execution_time", "top level")
    for key in ("output",):
        if key in doc and not isinstance(doc[key], str):
            out.append(f"top level: {key} is not a string")
    if doc.get("output_format", "text") not in FORMATS:
        out.append("top level: bad output_format")
    for key in ("visibility", "stdout_visibility"):
        if doc.get(key, "visible") not in VISIBILITIES:
            out.append(f"top level: bad {key}")
    tests = doc.get("tests", [])
    if not isinstance(tests, list):
        return out + ["tests is not a list"]
    if not tests and not doc.get("output"):
        out.append("no tests and no output: a silent zero")
    for i, test in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            out.append(f"{where} is not an object")
            continue
        if kit or "score" in test or "max_score" in test:
            out += _number(test, "score", where) + _number(test, "max_score", where)
        if isinstance(test.get("score"), int | float) and isinstance(test.get("max_score"), int | float):
            if not 0 <= test["score"] <= test["max_score"] + 1e-9:
                out.append(f"{where}: score outside 0..max_score")
        if (kit or "status" in test) and test.get("status") not in ("passed", "failed"):
            out.append(f"{where}: bad status")
        if (kit or "name" in test) and (not isinstance(test.get("name"), str) or not test["name"]):
            out.append(f"{where}: no name")
        if test.get("visibility", "visible") not in VISIBILITIES:
            out.append(f"{where}: bad visibility")
        if test.get("output_format", "text") not in FORMATS:
            out.append(f"{where}: bad output_format")
    if tests and isinstance(doc.get("score"), int | float):
        # Gradescope's top-level score overrides the tests' sum: the kit's is that sum less the visible
        # points the gate took, which each hidden entry states (grader.grading.results: never on the visible
        # page)
        total = sum(t.get("score", 0) for t in tests if isinstance(t, dict))
        total -= sum(_gated(t) for t in tests if isinstance(t, dict))
        if not math.isclose(total, doc["score"], abs_tol=1e-6):
            out.append(f"top-level score {doc['score']} is not the tests' sum less the gate's, {total}")
    return out


def _gated(test: dict) -> float:
    extra = test.get("extra_data")
    gated = extra.get("gated_visible_points", 0) if isinstance(extra, dict) else 0
    return gated if isinstance(gated, int | float) else 0


def _number(obj: dict, key: str, where: str) -> list[str]:
    value = obj.get(key)
    if type(value) not in (int, float) or not math.isfinite(value):
        return [f"{where}: {key} is not a finite number"]
    return []
