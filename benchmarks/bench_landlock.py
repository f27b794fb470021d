"""Benchmark of the worker's Landlock ruleset: prints figures, asserts nothing.

    .venv/bin/python benchmarks/bench_landlock.py [--repeat N] [--starts N]

- the kernel's ABI and the rule count of the worker's ruleset;
- the time to build it in the grader (the first build reads /proc/self/maps; later ones reuse that);
- the start of a bare worker (`python -S -c pass`) without and with the ruleset enforced after fork.
Each time is the median of its runs on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.sandbox import landlock  # noqa: E402  (the kit's own tree, not an installed copy

INTERPRETER = os.path.realpath(sys.executable)


def milliseconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="ruleset builds")
    parser.add_argument("--starts", type=int, default=30, help="worker starts each way")
    args = parser.parse_args()
    abi = landlock.abi_version()
    print(f"Landlock ABI of this kernel: {abi} (the module knows up to {landlock.KNOWN_ABI})")
    if abi == 0:
        print("no Landlock here: nothing to measure")
        return
    with tempfile.TemporaryDirectory() as home:
        scratch, runtime = Path(home, "work"), Path(home, "runtime")
        scratch.mkdir()
        runtime.mkdir()

        started = time.perf_counter()
        ruleset = landlock.worker_ruleset(scratch, runtime)
        first = (time.perf_counter() - started) * 1000
        print(f"rules: {ruleset.rules} ({len(landlock.interpreter_paths())} interpreter paths)")
        ruleset.close()
        print(f"ruleset build, first (reads /proc/self/maps): {first:.2f} ms")
        build = milliseconds(lambda: landlock.worker_ruleset(scratch, runtime).close(), args.repeat)
        print(f"ruleset build, later (median of {args.repeat}): {build:.3f} ms")

        command = [INTERPRETER, "-S", "-c", "pass"]

        def start(preexec) -> None:
            subprocess.run(command, cwd=scratch, preexec_fn=preexec, check=True)

        with landlock.worker_ruleset(scratch, runtime) as ruleset:
            ways = {"plain": None, "noop": lambda: None, "confined": ruleset.enforce}
            start(ruleset.enforce)  # warm the page cache the same for all
            times: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(args.starts):  # interleaved, so a drift of the machine hits all alike
                for name, preexec in ways.items():
                    times[name].append(milliseconds(lambda p=preexec: start(p), 1))
            plain, noop, confined = (statistics.median(times[name]) for name in ways)
        print(f"worker start `python -S -c pass`, median of {args.starts}:")
        print(f"  no preexec          {plain:7.2f} ms")
        print(f"  a no-op preexec     {noop:7.2f} ms  (preexec_fn alone: no vfork)")
        print(f"  Landlock enforced   {confined:7.2f} ms  ({confined - noop:+.2f} ms against the no-op)")


if __name__ == "__main__":
    main()
