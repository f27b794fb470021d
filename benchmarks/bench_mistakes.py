"""The corpus of mistakes graded two ways on the same sample: each mistake alone, and as grade_corpus
grades (mistakes whose exercises do not meet together, one submission each group). Prints the CPU
seconds of each (this process's children: every grading's workers and pytest sessions) and whether
every mistake's points agree.

    .venv/bin/python benchmarks/bench_mistakes.py [--per-exercise 2]
"""

from __future__ import annotations

import argparse
import resource
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from grader.authoring.mistakes import (
    grade_corpus,
    grade_mistake,
    reach,
    read_kit_corpus,
    recorded_calls,
    touches_module_state,
)

KIT = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-exercise", type=int, default=2, help="mistakes of each exercise (default 2)")
    args = parser.parse_args()
    mistakes, _ = read_kit_corpus(KIT)
    sample = [m for e in range(1, 21) for m in [m for m in mistakes if m.exercise == e][: args.per_exercise]]
    reached = reach(KIT, recorded_calls(KIT) or {})
    every = set(range(1, 21))  # a mistake naming module state: graded on every exercise, as grade_corpus does
    plan = [
        (m, sorted(every if touches_module_state(m) else {m.exercise, *reached.get(m.function, set())}))
        for m in sample
    ]
    start = _children_cpu()
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        alone = list(pool.map(grade_mistake, [KIT] * len(plan), *zip(*plan, strict=True)))
    alone_cpu = _children_cpu() - start
    start = _children_cpu()
    together = grade_corpus(KIT, sample, 2, reached=reached)
    together_cpu = _children_cpu() - start
    agree = sum(a.earned == t.earned for a, t in zip(alone, together, strict=True))
    for a, t in zip(alone, together, strict=True):
        if a.earned != t.earned:
            print(f"{a.mistake.id}: alone {a.earned} {a.failed}, together {t.earned} {t.failed}")
    print(
        f"{len(sample)} mistakes: alone {alone_cpu:.0f} s CPU, together {together_cpu:.0f} s CPU "
        f"({alone_cpu / together_cpu:.1f}x less); points agree for {agree} of {len(sample)}"
    )


if __name__ == "__main__":
    main()
