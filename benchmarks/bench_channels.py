"""Channels between gradings (issue 33, item 2): what one grading's worker can pass to a later one, under
another uid, through what the kernel shares, per probe; and what remains, in bits per second.

Each round: the grader (root, unfiltered) evicts a stdlib file's pages (so the page cache starts as a
fresh machine's, where nothing read them); a sender worker sets one page per 1 bit of a random message
(a one-byte read; it first clears the file with POSIX_FADV_DONTNEED where it may); its sandbox is
closed; a receiver worker, a new sandbox under another uid, reads the bits back with one probe. The
figure is the bits that got through beyond chance (n * (1 - H(e)), e the share of bits wrong; 0 where
the probe was refused) and that over the receiver's call time. inotify is measured with both workers
alive at once: the receiver watches a stdlib folder, the sender opens a message's files there.

    .venv/bin/python benchmarks/bench_channels.py [--bits 120] [--rounds 3] [--probes nowait,timing]

Run as root (uid layer); `OPTLAB_LAYERS_OFF=seccomp` shows the probes without the filter (as on main,
where none of these calls was filtered; main's /proc was a hidepid proc, where pagemap worked: measure
main itself with this script copied into a checkout of it). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import sysconfig
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.runtime.worker import load_module  # noqa: E402
from grader.sandbox import isolation  # noqa: E402
from grader.sandbox.limits import Limits  # noqa: E402
from grader.sandbox.student import sandboxed_student  # noqa: E402
from tests.kit.channels import CHANNELS  # noqa: E402

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
MEDIUM = Path(sysconfig.get_paths()["stdlib"]) / "pydoc_data" / "topics.py"  # 740 KB nothing imports
FOLDER = Path(sysconfig.get_paths()["stdlib"]) / "email"  # inotify: a folder of 30-odd modules
FILES = Path(sysconfig.get_paths()["stdlib"]) / "idlelib"  # 60 modules nothing but IDLE imports
PROBES = ("nowait", "cachestat", "mincore", "faults", "pagemap", "timing", "mapped_timing")
LIMITS = Limits(call_seconds=20.0)


def worker():
    ref = load_module(REFERENCE, "bench_channels_reference")
    return sandboxed_student(REFERENCE.read_text() + CHANNELS, ref, ref, {"softmax": 8}, limits=LIMITS)


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def capacity(sent: str, got: str) -> float:
    """Bits through a binary symmetric channel of the measured error rate (0 for a refused probe)."""
    if len(got) != len(sent):
        return 0.0
    errors = sum(a != b for a, b in zip(sent, got, strict=True)) / len(sent)
    if errors in (0.0, 1.0):
        return float(len(sent))
    entropy = -errors * math.log2(errors) - (1 - errors) * math.log2(1 - errors)
    return len(sent) * (1 - entropy)


def page_cache_round(probe: str, bits: int, stride: int) -> tuple[str, float, float]:
    message = "".join(random.choice("01") for _ in range(bits))
    evict(MEDIUM)
    sender, _ = worker()
    try:
        sender.softmax(["stride", stride])
        cleared = sender.softmax(["send", str(MEDIUM), message])
    finally:
        sender.close()
    receiver, _ = worker()
    try:
        receiver.softmax(["stride", stride])  # started, imported: the probe's call alone is timed
        started = time.perf_counter()
        got = receiver.softmax([f"probe_{probe}", str(MEDIUM), bits])
        seconds = time.perf_counter() - started
    finally:
        receiver.close()
    passed = capacity(message, got)
    shown = got if got.startswith("REFUSED") else f"{passed:.0f} of {bits} bits"
    return f"{shown} (the sender's fadvise: {cleared})", passed, seconds


def files_round(bits: int) -> tuple[str, float, float]:
    """What the filter leaves: a bit per file nothing else reads (its first byte read, or not), timed
    back. Where a fault or read loads the pages around it (no fadvise, no MADV_RANDOM), a file of up to
    the device's read-ahead is one bit, set once, cleared only by memory pressure."""
    names = sorted(p.name for p in FILES.glob("*.py"))[:bits]
    message = "".join(random.choice("01") for _ in names)
    for name in names:
        evict(FILES / name)
    sender, _ = worker()
    try:
        sender.softmax(["send_files", str(FILES), names, message])
    finally:
        sender.close()
    receiver, _ = worker()
    try:
        receiver.softmax(["allocate"])
        started = time.perf_counter()
        got = receiver.softmax(["probe_files", str(FILES), names])
        seconds = time.perf_counter() - started
    finally:
        receiver.close()
    passed = capacity(message, got)
    return f"{passed:.0f} of {len(names)} bits", passed, seconds


def inotify_round(bits: int) -> tuple[str, float, float]:
    names = sorted(p.name for p in FOLDER.glob("*.py"))[:bits]
    message = "".join(random.choice("01") for _ in names)
    receiver, _ = worker()
    sender, _ = worker()
    try:
        watching = receiver.softmax(["watch", str(FOLDER)])
        started = time.perf_counter()
        opened = [name for name, bit in zip(names, message, strict=True) if bit == "1"]
        sender.softmax(["open_files", str(FOLDER), opened])
        seen = set(receiver.softmax(["events"]))
        seconds = time.perf_counter() - started
    finally:
        sender.close()
        receiver.close()
    got = "".join("1" if n in seen else "0" for n in names)
    passed = capacity(message, got) if watching == "WATCHING" else 0.0
    shown = watching if watching != "WATCHING" else f"{passed:.0f} of {len(names)} bits"
    return shown, passed, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stride", type=int, default=1, help="pages between two bits (1: adjacent)")
    parser.add_argument("--probes", default=",".join((*PROBES, "files", "inotify")))
    options = parser.parse_args()
    off = {n for n in os.environ.get(isolation.LAYERS_OFF, "").split(",") if n}
    os.environ[isolation.LAYERS_OFF] = ",".join(sorted(off | {"audit_hook"}))  # a submission switches it off
    print(isolation.machine_layers().summary().splitlines()[0])
    pages = MEDIUM.stat().st_size // 4096
    if options.bits * options.stride >= pages:
        parser.error(f"{options.bits} bits {options.stride} pages apart do not fit in {pages} pages")
    print(f"medium: {MEDIUM} ({pages} pages); {options.bits} bits a round, {options.stride} page(s) apart")
    for probe in options.probes.split(","):
        for round_ in range(options.rounds):
            if probe == "inotify":
                shown, passed, seconds = inotify_round(options.bits)
            elif probe == "files":
                shown, passed, seconds = files_round(options.bits)
            else:
                shown, passed, seconds = page_cache_round(probe, options.bits, options.stride)
            rate = passed / seconds if seconds > 0 else 0.0
            timed = f"receiver {seconds * 1000:.0f} ms: {rate:,.0f} bit/s"
            print(f"{probe:13} round {round_ + 1}: {shown}; {timed}")


if __name__ == "__main__":
    main()
