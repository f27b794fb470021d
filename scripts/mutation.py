"""Mutation testing of the suites with cosmic-ray: how many small mutants of the reference's exercise
functions (an operator, a comparison, a constant, a branch) the suites catch.

    .venv/bin/python scripts/mutation.py [--exercise N ...] [--jobs 2] [--out mutation-report.json]

Per exercise, cosmic-ray mutates a COPY of the reference (the pristine reference stays the reference,
so hidden comparisons are not made against the mutant itself), only inside that exercise's function
bodies (docstrings excluded, cr-filter-lines), and runs that exercise's visible and hidden tests against
each mutant; the failures it reports tell whether the visible suite alone caught it too. Prints both
kill rates and every survivor (the mutated line and the operator) for the review in docs/mutation.md.
Needs `pip install -e .[mutation]`.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.assignment.manifest import Exercise, load_manifest  # noqa: E402
from grader.assignment.reference import read_reference  # noqa: E402
from grader.layout import MANIFEST, REFERENCE  # noqa: E402

MUTANT = Path("mutant/optimization_toolkit.py")


def body_lines(source: str, functions: tuple[str, ...]) -> list[str]:
    """Line ranges ("a-b") of the bodies of `functions`, without their docstrings."""
    ranges = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            if body:
                ranges.append(f"{body[0].lineno}-{node.end_lineno}")
    return ranges


def test_files(exercise: Exercise) -> list[str]:
    """The exercise's test files, named one by one (cosmic-ray runs the command without a shell)."""
    found = sorted(
        p.relative_to(KIT).as_posix()
        for suite in ("visible", "hidden")
        for p in (KIT / "tests" / suite).glob(f"test_ex{exercise.id:02d}_*.py")
    )
    if not found:
        raise SystemExit(f"mutation: exercise {exercise.id} has no test files")
    return found


def config_text(exercise: Exercise, ranges: list[str]) -> str:
    files = " ".join(test_files(exercise))
    command = (
        f"{sys.executable} -m pytest -q -rf --tb=no -p no:cacheprovider --worker=inprocess "
        f"--submission={MUTANT} --reference={REFERENCE} {files}"
    )
    return "\n".join([
        "[cosmic-ray]",
        f'module-path = "{MUTANT}"',
        "timeout = 60.0",
        "excluded-modules = []",
        f"test-command = {json.dumps(command)}",
        "",
        "[cosmic-ray.distributor]",
        'name = "local"',
        "",
        "[cosmic-ray.filters.line-filter]",
        f"lines = {{ {json.dumps(str(MUTANT))} = {json.dumps(ranges)} }}",
        "",
    ])  # fmt: skip


def run_session(tree: Path, exercise: Exercise, ranges: list[str]) -> dict:
    """One cosmic-ray session in the work tree `tree`; the outcome of every mutant."""
    config = tree / f"cr-{exercise.id}.toml"
    session = tree / f"cr-{exercise.id}.sqlite"
    config.write_text(config_text(exercise, ranges))
    cr = Path(sys.executable).parent
    baseline = subprocess.run(
        [str(cr / "cosmic-ray"), "baseline", str(config)], cwd=tree, capture_output=True
    )
    if baseline.returncode != 0:  # the unmutated copy must pass, or every mutant would look killed
        raise SystemExit(f"mutation: exercise {exercise.id}: the tests fail on the unmutated reference")
    for command in (
        [cr / "cosmic-ray", "init", config, session, "--force"],
        [cr / "cr-filter-lines", "--config", config, session],
        [cr / "cosmic-ray", "exec", config, session],
    ):
        subprocess.run([str(c) for c in command], cwd=tree, check=True, capture_output=True)
    dump = subprocess.run(
        [str(cr / "cosmic-ray"), "dump", str(session)], cwd=tree, check=True, capture_output=True, text=True
    )
    outcomes = []
    for line in dump.stdout.splitlines():
        item, result = json.loads(line)
        if result is None or result.get("worker_outcome") == "skipped":
            continue
        mutation = item["mutations"][0]
        outcomes.append({
            "line": mutation["start_pos"][0],
            "operator": mutation["operator_name"],
            "occurrence": mutation["occurrence"],
            "outcome": result.get("test_outcome") or result.get("worker_outcome"),
            "visible_killed": "FAILED tests/visible/" in (result.get("output") or ""),
        })  # fmt: skip
    return {"exercise": exercise.id, "mutants": outcomes}


def work_tree(base: Path, index: int) -> Path:
    """A copy of the kit's files that cosmic-ray may mutate (the real tree is never touched)."""
    tree = base / f"tree-{index}"
    for name in ("grader", "solutions", "tests", "pyproject.toml"):
        source = KIT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tree / name)
    (tree / MUTANT).parent.mkdir()
    shutil.copy2(KIT / REFERENCE, tree / MUTANT)
    return tree


def summary(sessions: list[dict], source_lines: list[str]) -> dict:
    mutants = [m for s in sessions for m in s["mutants"]]
    killed = sum(m["outcome"] == "killed" for m in mutants)
    by_visible = sum(m["visible_killed"] for m in mutants)
    survivors = [
        {"exercise": s["exercise"], **m, "code": source_lines[m["line"] - 1].strip()}
        for s in sessions
        for m in s["mutants"]
        if m["outcome"] != "killed"
    ]
    return {"both": (killed, len(mutants)), "visible": (by_visible, len(mutants)), "survivors": survivors}


def main() -> None:
    parser = argparse.ArgumentParser(description="Mutation testing of the suites (cosmic-ray).")
    parser.add_argument("--exercise", type=int, action="append", help="only exercise N (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=KIT / "mutation-report.json")
    args = parser.parse_args()
    reference = read_reference(KIT / REFERENCE, REFERENCE.as_posix())
    manifest = load_manifest(KIT / MANIFEST, reference)
    exercises = [e for e in manifest.exercises if not args.exercise or e.id in args.exercise]
    jobs = list(exercises)
    with tempfile.TemporaryDirectory(prefix="optlab-mutation-") as scratch:
        trees = [work_tree(Path(scratch), i) for i in range(args.jobs)]

        def one(index: int) -> list[dict]:
            mine = jobs[index :: args.jobs]
            return [run_session(trees[index], e, body_lines(reference.source, e.functions)) for e in mine]

        with ThreadPoolExecutor(args.jobs) as pool:
            sessions = [s for part in pool.map(one, range(args.jobs)) for s in part]
    report = summary(sessions, reference.source.splitlines())
    args.out.write_text(json.dumps({"sessions": sessions, **report}, indent=1))
    (kb, nb), (kv, nv) = report["both"], report["visible"]
    print(f"visible + hidden: {kb} of {nb} mutants killed ({kb / max(nb, 1):.1%})")
    print(f"visible alone:    {kv} of {nv} mutants killed ({kv / max(nv, 1):.1%})")
    print(f"survivors ({len(report['survivors'])}):")
    for s in report["survivors"]:
        print(f"  ex {s['exercise']:2d} line {s['line']:4d} {s['operator']} #{s['occurrence']}: {s['code']}")
    print(f"report: {args.out}")


if __name__ == "__main__":
    main()
