"""The OS layers, each on its own and with the audit hook switched off (as a submission can switch it
off): a uid per concurrent worker, a kit those uids cannot read, Landlock, nothing written that outlives
the worker, the per-exercise and per-run time budgets, a worker out of step with the protocol ended, the
reference answering in a process of its own, and what the machine's layers are said to be."""

from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest

from grader.runtime.protocol import CallTimedOut, SubmissionError
from grader.runtime.worker import load_module
from grader.sandbox import isolation, seccomp
from grader.sandbox.sandbox import Limits
from grader.sandbox.student import Student, sandboxed_student
from tests.kit.conftest import KIT, visible_checks

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
EXERCISES = {"softmax": 8, "add_score": 9, "sft_grad": 14, "exact_kl": 16}
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid layer exists only as root")
with_landlock = pytest.mark.skipif(isolation.machine_layers().landlock == 0, reason="no Landlock here")


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(REFERENCE, "isolation_test_reference")


@pytest.fixture
def layers_off(monkeypatch):
    """Switch layers off for this test: the audit hook always (a submission can), others as asked."""

    def switch(*names: str) -> None:
        monkeypatch.setenv(isolation.LAYERS_OFF, ",".join(("audit_hook", *names)))

    switch()
    return switch


def open_student(ref, softmax_body: str, limits: Limits | None = None) -> tuple[Student, object]:
    """The reference with softmax replaced by `softmax_body` (an attack run at each call)."""
    body = "\n".join("    " + line for line in softmax_body.strip().splitlines())
    source = REFERENCE.read_text() + f"\n\ndef softmax(xs):\n    import os\n{body}\n"
    return sandboxed_student(source, ref, ref, EXERCISES, limits=limits)


def test_the_switch_for_tests_turns_layers_off_and_refuses_unknown_names(monkeypatch):
    monkeypatch.setenv(isolation.LAYERS_OFF, "landlock,audit_hook,seccomp,cgroup")
    layers = isolation.machine_layers()
    assert layers.landlock == 0 and not layers.audit_hook and not layers.seccomp and layers.cgroup == 0
    monkeypatch.setenv(isolation.LAYERS_OFF, "uid")  # the uid layer is the machine's, never a switch
    with pytest.raises(isolation.IsolationError, match="unknown layers"):
        isolation.machine_layers()


def test_without_any_os_layer_the_summary_warns_in_one_line():
    bare = isolation.Layers(uid=False, landlock=0, namespaces=False, rlimits=True, audit_hook=True)
    assert not bare.contained and bare.as_data()["contained"] is False
    warning = bare.summary().splitlines()[1]
    assert warning.startswith("WARNING") and "not contained" in warning
    held = replace(bare, landlock=7)
    assert held.contained and "Landlock ABI 7" in held.summary() and "WARNING" not in held.summary()
    filtered = replace(bare, seccomp=True, cgroup=1)
    assert not filtered.contained  # neither keeps files from the worker
    assert "seccomp filter, memory cgroup v1" in filtered.summary()
    assert filtered.as_data()["seccomp"] is True and filtered.as_data()["cgroup"] == 1


@as_root
def test_concurrent_workers_each_get_a_uid_of_their_own_and_cannot_signal_each_other(ref, layers_off):
    layers_off("landlock")  # the uid layer alone must hold
    attack = "return [float(os.getuid()), float(os.getpid())]"
    first, first_box = open_student(ref, attack)
    second, second_box = open_student(ref, "import signal\nos.kill(int(xs[0]), signal.SIGKILL)\nreturn [1.0]")
    try:
        uid, pid = first.softmax([0.0])
        assert uid in isolation.worker_uids() and uid != 0
        with pytest.raises(PermissionError):
            second.softmax([pid])
        assert first.softmax([0.0])[1] == pid  # still the same worker: the signal never reached it
        assert second_box.lease.uid != first_box.lease.uid
    finally:
        first.close()
        second.close()


@as_root
def test_the_kit_is_unreadable_by_worker_uids(ref, layers_off, tmp_path):
    layers_off("landlock", "mounts")  # the uid layer alone (the mount layer hides /tmp, where tmp_path is)
    kit = tmp_path / "kit"
    (kit / "examples").mkdir(parents=True)
    (kit / "examples" / "full.py").write_text("the answers")
    os.chmod(kit, 0o755)
    os.chmod(kit / "examples", 0o755)
    os.chmod(kit / "examples" / "full.py", 0o644)
    package = tmp_path / "site" / "grader"
    package.mkdir(parents=True)
    (package / "exercises.toml").write_text("points")
    os.chmod(tmp_path, 0o755)
    os.chmod(tmp_path / "site", 0o755)
    os.chmod(package, 0o755)
    isolation.protect_kit(kit, package)
    assert stat.S_IMODE(os.stat(kit).st_mode) & 0o007 == 0o001  # others may pass through, not list
    student, _ = open_student(ref, "return [float(len(open(xs[0]).read()))]")
    try:
        for secret in (kit / "examples" / "full.py", package / "exercises.toml"):
            with pytest.raises(PermissionError):
                student.softmax([str(secret)])
    finally:
        student.close()


@with_landlock
def test_landlock_alone_keeps_the_worker_to_its_scratch_folder_and_the_stdlib(ref, layers_off, tmp_path):
    layers_off("mounts")  # which would hide /tmp, where tmp_path is
    readable = tmp_path / "world-readable.txt"
    readable.write_text("not for the worker")
    os.chmod(tmp_path, 0o755)
    os.chmod(readable, 0o644)
    attack = "return [float(len(open(xs[0]).read()))]"
    student, sandbox = open_student(ref, attack)
    try:
        for outside in (str(readable), "/etc/passwd", f"/proc/{os.getpid()}/cmdline"):
            with pytest.raises(PermissionError):
                student.softmax([outside])
        assert student.softmax([os.path.join(os.__file__)])[0] > 0  # the stdlib stays readable
    finally:
        student.close()


@as_root
def test_nothing_a_worker_writes_outlives_it_at_any_depth(ref, layers_off, tmp_path):
    # with Landlock the writes fail outright, with the mount layer they land in the worker's own scratch
    # (test_kit_mounts): the sweep must hold without either
    layers_off("landlock", "mounts")
    shared = Path("/tmp") / f"optlab-shared-{os.getpid()}"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o1777)  # a folder of root's that anyone may write into
    places = [shared / "left.txt", Path("/tmp/optlab-left/deep/er.txt"), Path("/var/tmp/optlab-left.txt")]
    more = (Path("/dev/shm/optlab-left"), Path("/run/lock/optlab-left"))
    places += [place for place in more if place.parent.is_dir()]
    attack = (
        "for path in xs:\n"
        "    os.makedirs(os.path.dirname(path), exist_ok=True)\n"
        "    open(path, 'w').write('for the next submission')\n"
        "return [1.0]"
    )
    student, _ = open_student(ref, attack)
    try:
        assert student.softmax([str(p) for p in places]) == [1.0]
        assert all(p.exists() for p in places)
    finally:
        student.close()
    try:
        assert [p for p in places if p.exists()] == []
        assert not Path("/tmp/optlab-left").exists()
        assert shared.is_dir()  # root's folder stays
    finally:
        shared.rmdir() if shared.exists() and not any(shared.iterdir()) else None


def test_a_slow_exercise_spends_only_its_own_budget(ref, layers_off):
    # sleeping costs no CPU time: the exercise's wall-clock backstop (here its CPU time, once) cuts it
    limits = Limits(call_seconds=0.5, wall_factor=2.0, exercise_seconds=1.5, backstop_factor=1.0)
    student, _ = open_student(ref, "import time\ntime.sleep(0.9)\nreturn [1.0]", limits)
    try:
        with pytest.raises(CallTimedOut) as first:  # 0.9 s of a 1.0 s wall bound: returns
            assert student.softmax([0.0]) == [1.0]
            student.softmax([0.0])  # 1.8 s > 1.5 s: cut at the exercise's budget
        assert first.value.scope == "exercise"
        with pytest.raises(CallTimedOut, match="timed out earlier"):
            student.softmax([0.0])
        assert student.exact_kl([0.5, 0.5], [0.5, 0.5]) == 0.0  # another exercise has its own budget
    finally:
        student.close()


def test_the_run_budget_is_no_exercises_own_timeout(ref, layers_off):
    limits = Limits(call_seconds=0.5, wall_factor=4.0, run_seconds=0.6, backstop_factor=1.0)
    student, _ = open_student(ref, "import time\ntime.sleep(1.0)\nreturn [1.0]", limits)
    try:
        with pytest.raises(CallTimedOut) as timeout:
            student.softmax([0.0])
        assert timeout.value.scope == "run"
        with pytest.raises(CallTimedOut, match="grading time limit") as later:
            student.softmax([0.0])
        assert later.value.scope == "run"  # not "timed out earlier": the exercise is not blamed
    finally:
        student.close()


def test_a_worker_whose_request_the_grader_cannot_read_is_ended(ref, layers_off):
    # The worker writes a request straight into its pipe that no codec turns into a value (an int too
    # long to convert), then waits for the answer. Answering on would put the protocol out of step.
    attack = (
        "if xs[0] == 1.0:\n"
        "    import gc\n"
        "    link = next(o for o in gc.get_objects() if type(o).__name__ == 'PipeLink')\n"
        "    huge = b'1' * 5000\n"
        '    request = b\'{"op": "reference", "function": "exact_kl", "args": [\'\n'
        "    link._writer.write(request + huge + b']}\\n')\n"
        "    link.receive()\n"
        "return [xs[0]]"
    )
    student, sandbox = open_student(ref, attack)
    try:
        with pytest.raises(SubmissionError, match="not a message"):
            student.softmax([1.0])
        assert student.softmax([2.0]) == [2.0]  # a fresh worker, in step
        assert sandbox.restarts == 2
    finally:
        student.close()


def test_the_reference_answers_in_a_process_of_its_own(ref, layers_off):
    # sft_grad's reference calls add_score (another exercise): the worker's call to it is answered by
    # the reference, in a sandbox of its own that the worker asks directly: the grader serves nothing.
    source = REFERENCE.read_text() + (
        "\n\ndef sft_grad(policy, data):\n"
        "    import os\n"
        "    g = [[[0.0] * policy.V for _ in range(policy.T)] for _ in range(policy.S)]\n"
        "    add_score(g, policy, 0, 0, 1, 1.0)\n"
        "    return g, os.getpid()\n"
    )
    student, sandbox = sandboxed_student(source, ref, ref, EXERCISES)
    served = []
    sandbox.serve_request = lambda request: served.append(request) or student.serve(request)
    try:
        policy = ref.TabPolicy()
        g, worker_pid = student.sft_grad(policy, [])
        expected = [[[0.0] * 3 for _ in range(2)] for _ in range(3)]
        ref.add_score(expected, policy, 0, 0, 1, 1.0)
        assert g == expected
        answering = sandbox.reference.sandbox
        assert answering is not None and answering.worker_pid not in (os.getpid(), worker_pid)
        assert served == []
    finally:
        student.close()


def test_grade_names_the_layers_in_its_output_and_results_and_warns_where_none_holds(
    tmp_path, monkeypatch, capsys
):
    from grader import cli

    submission = tmp_path / "optimization_toolkit.py"
    submission.write_text("def softmax(xs):\n    return [1.0]\n")
    out = tmp_path / "results.json"
    assert cli.main(["grade", str(submission), "-o", str(out), "--exercise", "8"]) == 0
    layers = isolation.machine_layers()
    assert json.loads(out.read_text())["extra_data"]["isolation"] == layers.as_data()
    assert capsys.readouterr().out.startswith(layers.summary())

    bare = isolation.Layers(uid=False, landlock=0, namespaces=False, rlimits=True, audit_hook=True)
    monkeypatch.setattr(cli, "machine_layers", lambda: bare)
    assert cli.main(["grade", str(submission), "-o", str(out), "--exercise", "8"]) == 0
    assert "WARNING: no OS layer holds here" in capsys.readouterr().out


NOBODY = 65534


def copy_kit_for(uid: int, into: Path) -> Path:
    """A copy of the kit's grading files that `uid` owns (the checkout itself is closed to others)."""
    import shutil

    kit = into / "kit"
    for part in ("grader", "solutions", "tests"):
        shutil.copytree(KIT / part, kit / part, ignore=shutil.ignore_patterns("__pycache__", "kit"))
    shutil.copy(KIT / "pyproject.toml", kit)
    for folder, _, files in os.walk(into):
        os.chown(folder, uid, uid)
        for name in files:
            os.chown(os.path.join(folder, name), uid, uid)
    os.chmod(into, 0o755)
    return kit


@as_root
@pytest.mark.parametrize("off", ["", "landlock"], ids=["landlock", "no-os-layer"])
def test_grading_as_a_user_who_is_not_root(off):
    """The fallback of a student's or TA's own machine, for real: no uid layer; Landlock where the kernel
    has it, else a one-line warning; the grade is the same."""
    import shutil
    import subprocess
    import sys
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="optlab-not-root-"))  # pytest's own tmp_path is root's alone
    kit = copy_kit_for(NOBODY, tmp_path)
    submission = kit / "mine.py"
    submission.write_text((KIT / "solutions" / "optimization_toolkit.py").read_text())
    os.chown(submission, NOBODY, NOBODY)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), isolation.LAYERS_OFF: off}

    def become_nobody() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    try:
        done = subprocess.run(
            [sys.executable, "-m", "grader", "grade", "mine.py", "-o", "results.json", "--exercise", "8"],
            cwd=kit, env=env, preexec_fn=become_nobody, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        document = json.loads((kit / "results.json").read_text())
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    layers = document["extra_data"]["isolation"]
    assert layers["uid"] is False and layers["namespaces"] is False and layers["cgroup"] == 0
    assert layers["seccomp"] is seccomp.available()  # the filter needs no privilege
    assert layers["landlock"] == (0 if off else isolation.machine_layers().landlock)
    assert ("WARNING: no OS layer holds here" in done.stdout) == (off == "landlock")
    assert document["score"] == document["extra_data"]["points_possible"] > 0


def sysv_shm_ids() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[1]) for line in lines}


@as_root
def test_sysv_ipc_of_a_worker_without_namespaces_is_removed(ref, layers_off):
    """As in Docker (no CAP_SYS_ADMIN, so no IPC namespace): a shared memory segment the worker made
    would outlive it; the sweep of its uid removes it (the seccomp filter, off here, refuses shmget)."""
    layers_off("landlock", "namespaces", "seccomp")
    attack = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        "return [float(libc.shmget(0, 4096, 0o1000 | 0o666))]  # IPC_PRIVATE, IPC_CREAT"
    )
    student, sandbox = open_student(ref, attack)
    try:
        (made,) = student.softmax([0.0])
        assert made >= 0 and int(made) in sysv_shm_ids()  # in the machine's own IPC namespace
    finally:
        student.close()
    assert int(made) not in sysv_shm_ids()


@as_root
@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv (util-linux) to drop CAP_SYS_ADMIN")
def test_sysv_ipc_of_a_worker_is_removed_by_a_root_without_cap_sys_admin():
    """As a container's root (Docker's and Podman's default capabilities: no CAP_SYS_ADMIN), IPC_RMID on
    a worker uid's segment gives EPERM: the sweep removes it as the uid itself, and checks it is gone."""
    lease = isolation.UidLease()
    try:
        made = subprocess.run(
            [sys.executable, "-I", "-S", "-c",
             "import ctypes; print(ctypes.CDLL(None).shmget(0, 4096, 0o1000 | 0o600))"],  # IPC_CREAT
            user=lease.uid, group=lease.uid, extra_groups=[], cwd="/", capture_output=True, text=True,
            check=True,
        )  # fmt: skip
        ident = int(made.stdout)
        assert ident >= 0 and ident in sysv_shm_ids()
        sweep = subprocess.run(
            ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--",
             sys.executable, "-c",
             f"from grader.sandbox import isolation; isolation.remove_sysv_ipc({lease.uid})"],
            cwd=KIT, capture_output=True, text=True,
        )  # fmt: skip
        assert sweep.returncode == 0, sweep.stderr
        assert ident not in sysv_shm_ids()
    finally:
        lease.release()


@pytest.mark.parametrize("off", ["", "landlock,namespaces"], ids=["every-layer", "uid-and-rlimits-only"])
def test_a_worker_cannot_lift_its_own_limits(ref, layers_off, off):
    """With the hook off, the worker tries to raise each hard limit back (more memory, CPU, processes,
    file size): the kernel refuses every one, and a thread still cannot start."""
    layers_off(*[name for name in off.split(",") if name])
    attack = (
        "import resource, threading\n"
        "lifted = []\n"
        "for name in ('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE'):\n"
        "    which = getattr(resource, name)\n"
        "    soft, hard = resource.getrlimit(which)\n"
        "    try:\n"
        "        resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
        "        lifted.append(name)\n"
        "    except (ValueError, OSError):\n"
        "        pass\n"
        "try:\n"
        "    threading.Thread(target=print).start()\n"
        "    lifted.append('a thread')\n"
        "except RuntimeError:\n"
        "    pass\n"
        "return lifted"
    )
    student, _ = open_student(ref, attack)
    try:
        assert student.softmax([0.0]) == []
    finally:
        student.close()


@as_root
def test_a_uid_a_process_runs_under_is_passed_over_and_never_killed(monkeypatch):
    """Issue 25: a grader leased uids from its own lease folder, first free first, and killed every process
    of the uid at lease and release: one in a container killed the host's worker of the same uid (the
    reference scored 70.98 to 99.8). Now a uid that a visible process runs under is passed over, and a
    lease kills nothing it did not start."""
    first = isolation.worker_uids()[0]
    monkeypatch.setenv(isolation.WORKER_UIDS_VARIABLE, f"{first}-{first + 1}")
    foreign = subprocess.Popen(["sleep", "60"], user=first, group=first, extra_groups=[])
    try:
        for _ in range(3):
            lease = isolation.UidLease()
            assert lease.uid == first + 1
            lease.release()
        assert foreign.poll() is None  # another grader's worker, say: alive
    finally:
        foreign.kill()
        foreign.wait()
    monkeypatch.setenv(isolation.WORKER_UIDS_VARIABLE, "0-10")
    with pytest.raises(isolation.IsolationError, match="not a range of uids"):
        isolation.worker_uids()


def _pid_namespaces() -> bool:
    """Whether `unshare --pid` works here (root with CAP_SYS_ADMIN: not in a default container)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = ["unshare", "--pid", "--fork", "--mount-proc", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.mark.skipif(not _pid_namespaces(), reason="needs root and unshare --pid (CAP_SYS_ADMIN)")
def test_graders_with_their_own_leases_in_separate_pid_namespaces_never_disturb_each_other(tmp_path):
    """Issue 25: two kit instances on one kernel with separate lease folders, one of them in a PID
    namespace of its own (a container beside the host): both grade the reference at once, again and
    again, and both get every point every time. On main both leased 64100 first and the host's sweep
    killed the other's worker."""
    out = {name: tmp_path / f"{name}.json" for name in ("host", "inner")}
    command = {
        name: [sys.executable, "-m", "grader", "--root", str(KIT), "grade", str(KIT / "solutions" /
               "optimization_toolkit.py"), "-o", str(path), "--exercise", "8", "--exercise", "12"]
        for name, path in out.items()
    }  # fmt: skip
    command["inner"] = ["unshare", "--pid", "--fork", "--mount-proc", *command["inner"]]
    for _ in range(5):
        runs = {
            name: subprocess.Popen(
                command[name],
                env={**os.environ, isolation.LEASES_VARIABLE: str(tmp_path / f"{name}-leases")},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for name in out
        }
        for name, run in runs.items():
            printed, _ = run.communicate(timeout=300)
            assert run.returncode == 0, printed[-2000:]
            document = json.loads(out[name].read_text())
            assert document["score"] == document["extra_data"]["points_possible"], (name, printed[-2000:])


@pytest.mark.skipif(not _pid_namespaces(), reason="needs root and unshare --pid (CAP_SYS_ADMIN)")
def test_three_kits_grading_at_once_with_their_own_leases_leave_each_other_intact(tmp_path):
    """Issue 33: kits that name separate lease folders grade at once on one machine (a pytest session of
    the visible suite, again and again, beside two `grader batch` runs, each batch in a PID namespace of
    its own, so it sees none of the others' workers), drawing from 20 uids: every test passes and every
    total is the quiet run's (the reference full, the stub 0). On main a lease swept the uid's "stale"
    scratch tmpfs, which was another kit's live sandbox: its `work` folder vanished under it
    (FileNotFoundError), and its tests failed."""
    first = isolation.worker_uids()[0]
    uids = f"{first}-{first + 19}"
    stub = (KIT / "student" / "optimization_toolkit.py").read_text()
    batches = {}
    for name in ("left", "right"):
        source = tmp_path / f"{name}-submissions"
        source.mkdir()
        for index in range(2):
            (source / f"full{index}.py").write_text(REFERENCE.read_text())
        (source / "stub.py").write_text(stub)
        command = [sys.executable, "-m", "grader", "--root", str(KIT), "batch", str(source), "-j", "1",
                   "-o", str(tmp_path / f"{name}.csv"), "--exercise", "8", "--exercise", "12"]  # fmt: skip
        env = {**os.environ, isolation.WORKER_UIDS_VARIABLE: uids,
               isolation.LEASES_VARIABLE: str(tmp_path / f"{name}-leases")}  # fmt: skip
        batches[name] = subprocess.Popen(
            command, cwd=KIT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    session = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/visible",
               f"--submission={REFERENCE}"]  # fmt: skip
    env = {**os.environ, isolation.WORKER_UIDS_VARIABLE: uids,
           isolation.LEASES_VARIABLE: str(tmp_path / "session-leases")}  # fmt: skip
    sessions = []
    while any(batch.poll() is None for batch in batches.values()) or len(sessions) < 2:
        run = subprocess.run(session, cwd=KIT, env=env, capture_output=True, text=True, timeout=300)
        sessions.append(run)
        assert run.returncode == 0, run.stdout[-3000:]
        assert f"{visible_checks()} passed" in run.stdout, run.stdout[-3000:]
    for name, batch in batches.items():
        printed, _ = batch.communicate(timeout=600)
        assert batch.returncode == 0, printed[-3000:]
        rows = {row["file"]: row for row in csv.DictReader((tmp_path / f"{name}.csv").open())}
        totals = {file: float(row["percent_correct"]) for file, row in rows.items()}
        assert totals == {"full0.py": 1.0, "full1.py": 1.0, "stub.py": 0.0}, printed[-3000:]
    print(f"{len(sessions)} pytest sessions of the visible suite beside two batches of 3 gradings")
