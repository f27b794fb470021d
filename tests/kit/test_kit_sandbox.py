"""The sandbox on its own: CPU-time deadlines, a module that cannot import is not tried again, and a
scratch folder the worker user could not reach is a clear error, not a silent zero."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import replace
from pathlib import Path

import pytest

from grader.runtime.protocol import SPIN_SECONDS, CallTimedOut, SubmissionError
from grader.runtime.worker import load_module
from grader.sandbox import isolation
from grader.sandbox import sandbox as sandbox_module
from grader.sandbox.deadlines import cpu_time
from grader.sandbox.sandbox import GRADINGS_AT_ONCE, Limits, SandboxError
from grader.sandbox.student import sandboxed_student
from tests.kit.conftest import KIT

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
LIMITS = Limits(call_seconds=1.0, import_seconds=1.0)
NOT_ROOT = replace(isolation.machine_layers(), uid=False, namespaces=False, mounts=False)  # a student's


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(REFERENCE, "sandbox_test_reference")


def open_student(ref, tail: str):
    return sandboxed_student(
        REFERENCE.read_text() + "\n\n" + tail, ref, ref, {"softmax": 8, "exact_kl": 16}, limits=LIMITS
    )


def test_an_endless_loop_is_stopped_by_its_cpu_time_and_the_exercise_fails_fast(ref):
    student, sandbox = open_student(ref, "def softmax(xs):\n    while True:\n        pass\n")
    try:
        with pytest.raises(CallTimedOut, match="CPU time"):
            student.softmax([0.0])
        with pytest.raises(CallTimedOut, match="timed out earlier"):
            student.softmax([1.0])
        assert student.exact_kl([0.5, 0.5], [0.5, 0.5]) == 0.0  # a fresh worker answers the rest
        assert sandbox.restarts == 2
    finally:
        student.close()


def test_code_that_sleeps_is_stopped_by_the_wall_clock(ref):
    student, sandbox = open_student(ref, "import time\ndef softmax(xs):\n    time.sleep(60)\n")
    try:
        with pytest.raises(CallTimedOut, match="still running after 4 s"):
            student.softmax([0.0])
    finally:
        student.close()


def test_a_module_that_cannot_import_is_not_imported_again(ref):
    student, sandbox = open_student(ref, "while True:\n    pass\n")
    try:
        with pytest.raises(CallTimedOut, match="did not finish importing"):
            student.softmax([0.0])
        with pytest.raises(CallTimedOut, match="did not finish importing"):
            student.exact_kl([1.0], [1.0])
        assert sandbox.restarts == 1
    finally:
        student.close()


def test_an_import_that_floods_its_progress_reports_is_ended(ref, monkeypatch):
    """The worker reports the line its import is at once per CPU second; messages already waiting are
    read without a look at the deadline (a worker started ahead may have said hello long ago), so a
    module that wrote such reports itself, faster than the grader reads them, would keep the grader
    reading for good: no more than the import's budget of them is read."""
    student, sandbox = open_student(ref, "")
    read = []

    def flood(deadline, waiting_only=False):
        read.append(1)
        if len(read) > 1000:
            raise RuntimeError("the grader kept reading progress reports")
        return {"op": "importing", "where": " (line 5, in <module>)"}

    try:
        sandbox.spawn()
        monkeypatch.setattr(sandbox.pipe, "receive", flood)
        with pytest.raises(SubmissionError, match="the worker did not start"):
            student.softmax([0.0])
        assert len(read) <= LIMITS.import_seconds + 3
    finally:
        student.close()


def test_a_module_that_never_imports_is_named_at_the_line_it_was_at(ref):
    student, sandbox = open_student(ref, "def _spin():\n    while True:\n        pass\n_spin()\n")
    try:
        with pytest.raises(CallTimedOut, match=r"did not finish importing: .*\(line \d+, in _spin\)"):
            student.softmax([0.0])
    finally:
        student.close()


SLOW_IMPORT = """
import time as _time
_until = _time.process_time() + 1.5
while _time.process_time() < _until:  # 1.5 s of CPU time at import: over the 1 s budget
    pass
"""


def test_a_worker_started_ahead_has_the_same_import_budget(ref):
    """The worker is spawned, the grader busy elsewhere long enough for the import to finish: the import
    still used more CPU time than its budget, and fails as it would have with the grader waiting."""
    student, sandbox = open_student(ref, SLOW_IMPORT)
    try:
        sandbox.spawn()
        deadline = time.monotonic() + 30
        while cpu_time(sandbox.worker_pid) < 1.5 and time.monotonic() < deadline:
            time.sleep(0.1)  # the import runs meanwhile (the grader is not waiting for it)
        time.sleep(0.5)
        with pytest.raises(CallTimedOut, match="did not finish importing"):
            student.softmax([0.0])
    finally:
        student.close()


def test_a_worker_started_ahead_and_read_late_is_ready_if_its_import_kept_to_its_cpu_time(ref):
    """The grader comes back to a worker it started ahead after longer than the import's wall bound: the
    hello waiting in the pipe counts (the deadline of a hello is checked only while none is waiting)."""
    student, sandbox = open_student(ref, "")
    try:
        sandbox.spawn()
        time.sleep(LIMITS.import_seconds * LIMITS.backstop_factor + 0.5)  # the grader busy elsewhere
        assert student.softmax([0.0, 0.0]) == [0.5, 0.5]
        assert sandbox.restarts == 1
    finally:
        student.close()


def test_closing_removes_the_scratch_folder_and_the_worker(ref):
    student, sandbox = open_student(ref, "")
    student.softmax([0.0])
    pid = sandbox.worker_pid
    student.close()
    assert not sandbox.home.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_crash_during_a_call_is_named(ref):
    student, sandbox = open_student(ref, "import os\ndef softmax(xs):\n    os._exit(7)\n")
    try:
        with pytest.raises(SubmissionError, match="exit code 7"):
            student.softmax([0.0])
    finally:
        student.close()


def test_a_worker_whose_death_was_read_is_not_signalled_again(ref, monkeypatch):
    """Issue 25's review: a worker that died in a call was reaped (its exit code read for the message)
    and then its process group was killed by pid: by then the pid may be another process's (pid_max is
    32,768 here). A reaped worker's group is never signalled; a live one's is."""
    signalled = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: signalled.append(pid))
    for tail, says, killed in [
        ("import os\ndef softmax(xs):\n    os._exit(7)\n", "exit code 7", False),
        ("def softmax(xs):\n    while True:\n        pass\n", "CPU time", True),
    ]:
        student, sandbox = open_student(ref, tail)
        try:
            assert sandbox.start() is None
            worker = sandbox.worker_pid
            with pytest.raises(SubmissionError, match=says):
                student.softmax([0.0])
            assert (worker in signalled) is killed
        finally:
            student.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the worker as another user")
def test_a_scratch_folder_closed_to_the_worker_user_is_refused(ref, monkeypatch):
    monkeypatch.setenv(isolation.LAYERS_OFF, "mounts")  # with the mount layer, sandboxes live in /run
    closed = Path(tempfile.mkdtemp(prefix="optlab-closed-"))  # mode 0700
    monkeypatch.setattr(tempfile, "tempdir", str(closed))
    try:
        with pytest.raises(SandboxError, match="cannot reach"):
            open_student(ref, "")
    finally:
        closed.rmdir()


def test_a_worker_does_not_outlive_a_grader_that_is_killed(tmp_path):
    # The grader (here a child python) opens a sandbox, starts a call that never ends, and is killed.
    script = tmp_path / "grader.py"
    script.write_text(
        "import sys, types\n"
        f"sys.path.insert(0, {str(KIT)!r})\n"
        "from pathlib import Path\n"
        "from grader.sandbox.student import sandboxed_student\n"
        "from grader.runtime.worker import load_module\n"
        f"ref = load_module(Path({str(REFERENCE)!r}), 'r')\n"
        f"src = Path({str(REFERENCE)!r}).read_text()\n"
        "src += '\\ndef softmax(xs):\\n    while True:\\n        pass\\n'\n"
        "student, sandbox = sandboxed_student(src, ref, ref, {'softmax': 8})\n"
        "student.softmax([0.0])\n"
    )
    grader = subprocess.Popen([sys.executable, str(script)])
    worker = None
    for _ in range(200):  # wait until its worker runs
        time.sleep(0.05)
        worker = next((p for p in _children(grader.pid)), None)
        if worker:
            break
    assert worker is not None
    for _ in range(200):  # and until it is inside the endless call, past its start-up
        if cpu_time(worker) > 0.5:
            break
        time.sleep(0.05)
    grader.kill()
    grader.wait()
    for _ in range(100):
        if not Path(f"/proc/{worker}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{worker}").exists(), "the worker outlived its grader"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(stat[1]) == pid:
            out.append(int(entry))
    return out


@pytest.mark.skipif(os.geteuid() != 0, reason="the network namespace is asked for only as root")
def test_a_container_that_refuses_a_network_namespace_still_grades(ref, monkeypatch):
    """Docker and Gradescope run as root without CAP_SYS_ADMIN: unshare fails, the worker still runs."""

    def refused() -> None:
        raise PermissionError(1, "Operation not permitted")

    assert isolation.machine_layers().namespaces  # this machine allows them: the probe must see it
    monkeypatch.setattr(isolation, "unshare_function", lambda: refused)
    isolation.namespaces_allowed.cache_clear()
    try:
        assert not isolation.machine_layers().namespaces
        student, sandbox = open_student(ref, "")
        try:
            assert student.exact_kl([0.5, 0.5], [0.5, 0.5]) == 0.0
        finally:
            student.close()
    finally:
        isolation.namespaces_allowed.cache_clear()


def _refuse_address_space(real_setrlimit):
    def setrlimit(which, limits):
        if which == resource.RLIMIT_AS:
            raise ValueError("current limit exceeds maximum limit")  # as macOS answers
        real_setrlimit(which, limits)

    return setrlimit


def test_a_limit_the_os_refuses_is_skipped_on_a_students_own_machine(ref, monkeypatch):
    """Not root (a student's laptop, macOS): the call deadlines still hold, the tests still run."""
    monkeypatch.setattr(isolation, "machine_layers", lambda: NOT_ROOT)
    monkeypatch.setattr(resource, "setrlimit", _refuse_address_space(resource.setrlimit))
    student, sandbox = open_student(ref, "")
    try:
        assert student.exact_kl([0.5, 0.5], [0.5, 0.5]) == 0.0
    finally:
        student.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root grades with every limit required")
def test_grading_as_root_refuses_to_run_a_worker_without_its_limits(ref, monkeypatch):
    monkeypatch.setattr(resource, "setrlimit", _refuse_address_space(resource.setrlimit))
    student, sandbox = open_student(ref, "")
    try:
        with pytest.raises(SandboxError, match="could not be started and confined"):
            student.exact_kl([0.5, 0.5], [0.5, 0.5])
    finally:
        student.close()


def test_what_a_call_printed_survives_the_kill_of_its_timeout(ref):
    """The worker runs unbuffered: a print just before an endless loop is in the instructor's log."""
    student, sandbox = open_student(
        ref, "def softmax(xs):\n    print('about to loop', xs)\n    while True:\n        pass\n"
    )
    try:
        with pytest.raises(CallTimedOut):
            student.softmax([0.5])
        assert "about to loop [0.5]" in sandbox.output()
    finally:
        student.close()


def test_pipes_are_polled_only_where_the_grading_has_two_cpus_to_itself(tmp_path, monkeypatch):
    monkeypatch.delenv(GRADINGS_AT_ONCE, raising=False)
    monkeypatch.setattr(sandbox_module, "usable_cpus", lambda: 2.0)
    assert sandbox_module.poll_seconds() == SPIN_SECONDS
    monkeypatch.setenv(GRADINGS_AT_ONCE, "2")  # a batch at -j 2 on 2 CPUs: polling would take the other's
    assert sandbox_module.poll_seconds() == 0.0
    monkeypatch.setenv(GRADINGS_AT_ONCE, "not a number")
    assert sandbox_module.poll_seconds() == SPIN_SECONDS
    monkeypatch.setattr(sandbox_module, "usable_cpus", lambda: 0.5)  # Gradescope's half a CPU
    assert sandbox_module.poll_seconds() == 0.0


def test_the_cgroup_quota_bounds_the_usable_cpus(tmp_path):
    cpu_max = tmp_path / "cpu.max"
    affinity = len(os.sched_getaffinity(0))
    cpu_max.write_text("50000 100000\n")
    assert sandbox_module.usable_cpus(cpu_max) == min(affinity, 0.5)
    cpu_max.write_text("max 100000\n")
    assert sandbox_module.usable_cpus(cpu_max) == affinity
    assert sandbox_module.usable_cpus(tmp_path / "absent") == affinity


def test_a_pipe_link_refuses_a_message_one_byte_over_its_limit():
    from grader.runtime.worker import PipeLink

    read_end, write_end = os.pipe()
    link = PipeLink(read_end, os.open(os.devnull, os.O_WRONLY), limit=11)
    os.write(write_end, b'{"op":"x1"}\n{"op":"x12"}\n')  # 11 and 12 bytes before the newline
    assert link.receive() == {"op": "x1"}
    with pytest.raises(SystemExit):
        link.receive()
    os.close(write_end)
