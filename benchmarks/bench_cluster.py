"""Benchmark of `grader batch --cluster`: throughput with 1 and 2 Dask workers (one thread each, on this
machine, loopback) against the local pool at -j 1 and -j 2, on the same submissions; and the cluster
path's overhead per submission beyond its grading. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_cluster.py [--count 30] [--exercise N ...]

The submissions are bench_batch.py's mix (a quarter correct, a third partial, a quarter stubs, the rest
broken). Each run grades the same folder into its own output folder, so nothing is skipped. The
scheduler and workers are started as the cluster test starts them (tests/kit/test_kit_cluster.py).

Overhead per submission beyond its grading, for a run with S slots (-j S, or S one-thread workers):
S x wall / N - the mean wall time of a grading's child (batch.json's seconds, measured where it ran).
It is what each submission costs on top of its `grader grade` child: for the cluster, the parcel, the
scheduler's round trips, the client's polling and the writing of its files; for the pool, its polling.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from benchmarks.bench_batch import load, make_class, run_batch  # noqa: E402
from tests.kit.test_kit_cluster import Cluster  # noqa: E402


def child_seconds(out: Path) -> tuple[float, int]:
    """The mean wall time of a grading's child, and how many did not complete."""
    records = [json.loads(p.read_text()) for p in (out / "grades-results").glob("*/batch.json")]
    return statistics.fmean(r["seconds"] for r in records), sum(r["status"] != "completed" for r in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--exercise", action="append", default=[], help="grade only exercise N")
    args = parser.parse_args()
    exercises = [f"--exercise={n}" for n in args.exercise]
    print(f"machine: {os.cpu_count()} CPUs; load average (1/5/15 min) at start: {load()}")
    with tempfile.TemporaryDirectory(prefix="optlab-bench-cluster-") as scratch:
        top = Path(scratch)
        source = top / "class"
        source.mkdir()
        mix = make_class(source, args.count)
        print(f"{args.count} submissions: {', '.join(f'{n} {kind}' for kind, n in mix.items())}")
        print(f"exercises: {', '.join(args.exercise) or 'all'}\n")
        runs = [("local pool -j 1", 1), ("local pool -j 2", 2), ("Dask, 1 worker", 1), ("Dask, 2 workers", 2)]
        for index, (name, slots) in enumerate(runs):
            out = top / f"run{index}"
            if name.startswith("Dask"):
                (top / f"cluster{index}").mkdir()
                cluster = Cluster(top / f"cluster{index}")
                try:
                    for worker in range(slots):
                        cluster.worker(f"w{worker}")
                    wall = run_batch(source, out, ["--cluster", cluster.address], exercises)
                finally:
                    left = cluster.close()
                    assert not left, f"processes left: {left}"
            else:
                wall = run_batch(source, out, ["-j", str(slots)], exercises)
            child, failed = child_seconds(out)
            overhead = slots * wall / args.count - child
            print(f"{name:16}: {wall:7.1f} s wall, {60 * args.count / wall:5.1f} submissions/min; "
                  f"a grading's child {child:5.2f} s; overhead per submission {overhead:5.2f} s "
                  f"({failed} not completed; load {load()})", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
