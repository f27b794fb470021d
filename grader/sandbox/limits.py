"""The bounds on one worker (`Limits`): time, memory, disk, files, output and messages.

The bounds on one worker (`Limits`): CPU and wall-clock time per call, exercise and sandbox, memory,
disk, files, output and messages. Read by the sandbox, its confinement and the reference's worker.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds on one worker. Seconds are wall-clock unless named cpu."""

    # CPU time decides every budget (a loaded machine or a neighbour costs no points): the worker's, the
    # reference worker's on its behalf, and the grader's decoding of its answers
    call_seconds: float = 3.0  # one call's
    import_seconds: float = 10.0  # the worker's, to import the module
    wall_factor: float = 4.0  # and at most this many times a call's in wall-clock time
    # and this many times the import's, an exercise's or the sandbox's: a backstop for code that sleeps,
    # generous enough for CPU-bound code on a machine loaded tenfold (a neighbour must never cost points)
    backstop_factor: float = 10.0
    exercise_seconds: float = 20.0  # one exercise's calls in one sandbox (one suite)
    run_seconds: float = 300.0  # the whole sandbox: every worker it started, idle time included
    memory_bytes: int = 1 << 30  # address space and data (rlimits); resident memory (a cgroup, where made)
    cpu_seconds: int = 300
    file_bytes: int = 16 << 20
    scratch_bytes: int = 64 << 20  # what the worker may hold on disk (its scratch folder's quota)
    scratch_files: int = 4096  # and how many files and folders
    open_files: int = 64
    output_bytes: int = 1 << 20  # what is kept of the worker's stdout+stderr
    message_bytes: int = 4 << 20  # one message from the worker (decoded, 4 MB of JSON is at most ~100 MB)
    callbacks: int = 1000  # requests one call may send the grader (a test's proposer: 60 at most)
    callback_bytes: int = 8 << 20  # and their size in all (what the test's callables may keep of them)
