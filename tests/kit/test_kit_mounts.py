"""The worker's disk and what of the filesystem it sees (issue 23, items 4 and 5): a disk quota in every
deployment (a tmpfs of its own where the machine allows mounts, the grader's watchdog elsewhere), the
world-writable folders its own, /proc showing nothing of the grader, and, with the uid layer alone, no
path to another student's submission.

Each attack runs with the audit hook off (a submission can switch it off) and with the layers switched
off one at a time, as the deployments have them: every layer (a laptop as root, CI); Landlock without
the mount layer (Docker's default: no CAP_SYS_ADMIN); the uid and rlimits alone (Docker on a kernel
without Landlock).
"""

from __future__ import annotations

import csv
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import types
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.grading import intake
from grader.runtime.protocol import SubmissionError
from grader.runtime.worker import load_module
from grader.sandbox import isolation, mounts
from grader.sandbox.sandbox import Limits
from grader.sandbox.student import Student, sandboxed_student
from tests.kit.conftest import KIT

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
STUB = (KIT / "student" / "optimization_toolkit.py").read_text(encoding="utf-8")
EXERCISES = {"softmax": 8, "group_advantages": 12}
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="the uid and mount layers exist only as root")
MOUNTS = mounts.mounts_allowed(isolation.SHARED_WRITABLE)
with_mounts = pytest.mark.skipif(not MOUNTS, reason="no mounts here (not root, no CAP_SYS_ADMIN)")
MB = 1 << 20
# the deployments: which layers are off (the audit hook always is)
DEPLOYMENTS = {
    "every-layer": "",
    "no-mounts": "mounts",  # Docker's default: Landlock, no CAP_SYS_ADMIN
    "uid-and-rlimits": "landlock,mounts,namespaces",  # Docker on a kernel without Landlock
    "mounts-without-landlock": "landlock",  # a laptop as root whose kernel has no Landlock
}

# softmax(["verb", argument]) runs the attack; its return value is what the attacker learns.
ATTACKS = '''

import os as _os


def _fill(where, megabytes):
    """Write `megabytes` MB in files of 8 MB (under RLIMIT_FSIZE) into `where`."""
    chunk = b"x" * (8 << 20)
    written = 0
    try:
        for index in range(megabytes // 8):
            with open(_os.path.join(where, f"fill-{index}"), "wb") as handle:
                handle.write(chunk)
            written += 8
    except OSError as error:
        return f"stopped after {written} MB: {error}"
    return f"wrote {written} MB"


def _files(where, count):
    made = 0
    try:
        for index in range(count):
            open(_os.path.join(where, f"f{index}"), "w").close()
            made += 1
    except OSError as error:
        return f"stopped after {made} files: {error}"
    return f"made {made} files"


def _hidden(where, megabytes):
    """Files held open after removing them: on disk, in no folder."""
    chunk, kept = b"x" * (8 << 20), []
    for index in range(megabytes // 8):
        path = _os.path.join(where, f"hidden-{index}")
        handle = open(path, "wb")
        _os.unlink(path)
        handle.write(chunk)
        handle.flush()
        kept.append(handle)
    return f"holds {len(kept) * 8} MB"


def _write(path, text):
    try:
        with open(path, "w") as handle:
            handle.write(text)
        return "WROTE"
    except OSError as error:
        return f"REFUSED:{error}"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return "READ:" + handle.read().replace(b"\\0", b" ").decode("utf-8", "replace")
    except OSError as error:
        return f"DENIED:{error}"


def _list(path):
    try:
        return "LISTED:" + " ".join(sorted(_os.listdir(path)))
    except OSError as error:
        return f"DENIED:{error}"


def _umount(path):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return repr([libc.umount2(path.encode(), 2), ctypes.get_errno()])


def _own_tmpfs(megabytes):
    """A user and mount namespace of its own, a tmpfs of any size in it, filled."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    uid = _os.getuid()
    if libc.unshare(0x10000000 | 0x00020000) != 0:
        return f"REFUSED:unshare errno {ctypes.get_errno()}"
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {uid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError as error:
        return f"REFUSED:{error}"
    if libc.mount(b"tmpfs", b"/var/tmp", b"tmpfs", 0, None) != 0:
        return f"REFUSED:mount errno {ctypes.get_errno()}"
    return _fill("/var/tmp", megabytes)


_ATTACKS = {"own-tmpfs": _own_tmpfs, "fill": _fill, "files": _files, "hidden": _hidden, "write": _write,
            "read": _read, "list": _list, "umount": _umount}
_honest_softmax = softmax


def softmax(xs):
    if isinstance(xs[0], str):
        return _ATTACKS[xs[0]](*xs[1:])
    return _honest_softmax(xs)
'''


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(REFERENCE, "mounts_test_reference")


@pytest.fixture
def deployment(monkeypatch, request) -> str:
    """Switch the layers of the deployment named by the test's parameter off (the audit hook always)."""
    off = DEPLOYMENTS[request.param]
    monkeypatch.setenv(isolation.LAYERS_OFF, ",".join(filter(None, ("audit_hook", off))))
    return request.param


def open_student(ref, limits: Limits | None = None) -> tuple[Student, object]:
    source = REFERENCE.read_text() + ATTACKS
    return sandboxed_student(source, ref, ref, EXERCISES, limits=limits)


def disk_use(folder: Path) -> int:
    """Bytes allocated beneath `folder`."""
    total = 0
    for where, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(where, name)).st_blocks * 512
            except OSError:
                pass
    return total


# -- disk and inodes --------------------------------------------------------------------------------


@as_root
@pytest.mark.parametrize("deployment", ["every-layer", "no-mounts", "uid-and-rlimits"], indirect=True)
@pytest.mark.parametrize("attack", [("fill", ".", 1024), ("files", ".", 100_000), ("hidden", ".", 512)])
def test_a_submission_that_fills_its_disk_is_ended_at_its_quota(ref, deployment, attack):
    """On main: 1 GB (or 100,000 files, or 512 MB held open after removal) written, the call returned.
    Now: the call ends with the quota's message (or, on the tmpfs, the kernel's "No space left on
    device" to the submission); what stays on disk is bounded (the tmpfs's 64 MB, or what the watchdog
    let pass between two readings); the next call runs in a worker whose disk is empty again."""
    limits = Limits()
    student, sandbox = open_student(ref, limits)
    try:
        # ended by the grader at its quota, or (a tmpfs of the quota's size) refused by the kernel
        with pytest.raises(Exception, match="quota of its scratch folder|No space left on device") as ended:
            student.softmax(list(attack))
        if "quota" in str(ended.value):
            assert isinstance(ended.value, SubmissionError)
            quota = (f"{limits.scratch_bytes // MB} MB", f"{limits.scratch_files} files")
            assert any(f"wrote {what} or more" in str(ended.value) for what in quota)
        used, files = disk_use(sandbox.work), sum(len(names) for _, _, names in os.walk(sandbox.work))
        if sandbox.layers.mounts:  # the tmpfs: never past the quota
            assert used <= limits.scratch_bytes and files < limits.scratch_files
        else:  # what passed between two walks (here 6 to 20 MB, or 150 to 900 files): less than attempted
            assert used < attack[2] * MB if attack[0] != "files" else files < attack[2]
        # the rest of the grading: a fresh worker (of another exercise), its scratch empty again
        scores = [1.0, 2.0, 3.0]
        assert student.group_advantages(scores) == pytest.approx(ref.group_advantages(scores))
        assert disk_use(sandbox.work) < MB
    finally:
        student.close()


@as_root
@pytest.mark.parametrize("deployment", ["uid-and-rlimits"], indirect=True)
def test_without_landlock_or_mounts_what_the_worker_writes_in_shared_folders_counts(ref, deployment):
    """The uid layer alone lets the worker write in /dev/shm (memory): the watchdog counts what its uid
    owns there. On main: 512 MB written into /dev/shm."""
    student, _ = open_student(ref)
    try:
        with pytest.raises(SubmissionError, match="quota of its scratch folder"):
            student.softmax(["fill", "/dev/shm", 512])
    finally:
        student.close()


@as_root
@with_mounts
def test_the_scratch_of_a_grader_killed_mid_grading_is_unmounted_at_the_next_lease(tmp_path):
    """A killed grader closes nothing: its workers die with it (the parent-death signal), its scratch
    tmpfs stays mounted until its uid is leased again, which detaches it and removes its folder."""
    script = tmp_path / "grader.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(KIT)!r})\n"
        "from pathlib import Path\n"
        "from grader.sandbox.student import sandboxed_student\n"
        "from grader.runtime.worker import load_module\n"
        f"ref = load_module(Path({str(REFERENCE)!r}), 'r')\n"
        f"student, sandbox = sandboxed_student(Path({str(REFERENCE)!r}).read_text(), ref, ref, {{}})\n"
        "print(sandbox.lease.uid, sandbox.work, flush=True)\n"
        "sys.stdin.read()\n"
    )
    grader = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    assert grader.stdout is not None
    uid_text, work_text = grader.stdout.readline().split()
    uid, work = int(uid_text), Path(work_text)
    grader.kill()
    grader.wait()
    assert work in mounted_tmpfs()
    leases = []
    try:
        while not leases or leases[-1].uid != uid:
            leases.append(isolation.UidLease())
    finally:
        for lease in leases:
            lease.release()
    assert work not in mounted_tmpfs()
    assert not work.parent.exists()


@as_root
@with_mounts
def test_a_grader_of_another_lease_folder_never_takes_or_sweeps_a_live_sandbox(ref, tmp_path, monkeypatch):
    """Issue 33: a grader naming a lease folder of its own (another kit on the machine) drew the uid of a
    live sandbox whose worker was not running (before its first call, between two starts) and swept its
    scratch tmpfs as a killed grader's: the sandbox's `work` folder vanished under it (145 visible
    tests failed with FileNotFoundError). Now that uid is not drawn (the machine's lease is taken too),
    and a sweep of the uid, whoever makes it, leaves a sandbox its grader holds alone."""
    student, sandbox = open_student(ref)
    try:
        uid = sandbox.lease.uid
        assert sandbox.work in mounted_tmpfs() and not sandbox.running()
        monkeypatch.setenv(isolation.LEASES_VARIABLE, str(tmp_path / "leases"))
        monkeypatch.setenv(isolation.WORKER_UIDS_VARIABLE, f"{uid}-{uid}")
        with pytest.raises(isolation.IsolationError, match="in use"):
            isolation.UidLease()
        isolation.sweep_uid(uid)  # as a grader that drew the uid without the machine's lease would
        assert sandbox.work in mounted_tmpfs()
        monkeypatch.undo()  # this kit's own uids again, for the reference's worker
        assert student.softmax([0.0, 0.0]) == [0.5, 0.5]
    finally:
        student.close()
    assert not sandbox.home.exists()


def mounted_tmpfs() -> set[Path]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return {Path(line.split()[4]) for line in lines if " - tmpfs " in line}


@as_root
@pytest.mark.parametrize("deployment", ["uid-and-rlimits", "mounts-without-landlock"], indirect=True)
def test_a_file_system_of_its_own_in_a_user_namespace_is_no_way_around_the_quota(ref, deployment):
    """Where Landlock does not refuse mounts (and no seccomp filter refuses the namespace), a worker can
    make a user and mount namespace and fill a tmpfs of any size (half the machine's memory). On main:
    512 MB written. Now: ended as soon as the grader sees its user namespace (or refused outright)."""
    student, _ = open_student(ref)
    try:
        try:
            outcome = student.softmax(["own-tmpfs", 512])
        except SubmissionError as error:
            outcome = str(error)
        assert outcome.startswith("REFUSED") or "made a user namespace of its own" in outcome
    finally:
        student.close()


# -- the world-writable folders and /proc -------------------------------------------------------------


@as_root
@with_mounts
@pytest.mark.parametrize("folder", list(isolation.SHARED_WRITABLE))
def test_the_world_writable_folders_are_the_workers_own(ref, monkeypatch, folder):
    """With the mount layer and no Landlock, a file written in /tmp (and the like) lands in the worker's
    own scratch: the machine's folder never sees it. On main: written into the machine's folder."""
    if not os.path.isdir(folder) or os.path.islink(folder):
        pytest.skip(f"no {folder} here")
    monkeypatch.setenv(isolation.LAYERS_OFF, "audit_hook,landlock")
    name = f"optlab-mounts-{uuid.uuid4().hex}"
    student, sandbox = open_student(ref)
    try:
        assert student.softmax(["write", f"{folder}/{name}", "planted"]) == "WROTE"
        assert not os.path.exists(f"{folder}/{name}")  # checked while the worker lives: no sweep yet
        assert (sandbox.work / name).read_text() == "planted"  # its own scratch, in its quota
    finally:
        student.close()


@as_root
@with_mounts
def test_no_other_folder_anyone_may_write_is_writable(ref, monkeypatch):
    """A folder of root's that anyone may write (1777, like /var/crash or a course's drop box), outside
    the five covered: the worker's view is read-only everywhere but its scratch. On main, with Landlock
    off: written."""
    monkeypatch.setenv(isolation.LAYERS_OFF, "audit_hook,landlock")
    shared = Path(tempfile.mkdtemp(prefix="optlab-anyone-", dir="/var/lib"))
    os.chmod(shared, 0o1777)
    student, _ = open_student(ref)
    try:
        assert student.softmax(["write", f"{shared}/planted", "x"]).startswith("REFUSED")
        assert student.softmax(["write", "/dev/null", "x"]) == "WROTE"  # devices stay writable
        assert list(shared.iterdir()) == []
    finally:
        student.close()
        shutil.rmtree(shared, ignore_errors=True)


@as_root
@with_mounts
@pytest.mark.parametrize("off", ["landlock", ""], ids=["mounts-alone", "with-landlock"])
def test_proc_shows_the_worker_nothing_of_the_grader(ref, monkeypatch, off):
    """On main, with Landlock off: the grader's command line (and every process's) read from /proc."""
    monkeypatch.setenv(isolation.LAYERS_OFF, ",".join(filter(None, ("audit_hook", off))))
    student, _ = open_student(ref)
    try:
        assert student.softmax(["read", f"/proc/{os.getpid()}/cmdline"]).startswith("DENIED")
        assert student.softmax(["read", "/proc/1/cmdline"]).startswith("DENIED")
        listed = student.softmax(["list", "/proc"])
        if off == "landlock":  # with Landlock, /proc is not even listed; without, it is empty (issue 33:
            assert listed == "LISTED:", listed  # not even its own /proc/self, a probe of the page cache)
    finally:
        student.close()


@as_root
@with_mounts
def test_the_worker_cannot_unmount_its_view(ref, monkeypatch):
    """Not root after setuid: umount refused (EPERM). In a user namespace of its own the mounts it was
    given are locked (EINVAL), and the grader ends it (test_a_file_system_of_its_own_in_a_user_...)."""
    monkeypatch.setenv(isolation.LAYERS_OFF, "audit_hook,landlock")
    student, _ = open_student(ref)
    try:
        for target in ("/tmp", "/proc"):
            assert student.softmax(["umount", target]) == repr([-1, errno.EPERM])
    finally:
        student.close()


# -- the batch: another student's file through /proc --------------------------------------------------

THIEF = '''

import importlib.util as _thief_import
import os as _thief_os
import sys as _thief_sys


def _thief_candidates():
    """Every path named on a command line in /proc, and what lies beside it."""
    seen = set()
    for pid in _thief_os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                words = handle.read().split(b"\\0")
        except OSError:
            continue
        for word in words:
            text = word.decode("utf-8", "replace").split("=", 1)[-1]
            if not text.startswith("/"):
                continue
            folders = [text, _thief_os.path.dirname(text)]
            for folder in list(folders):  # and one level below each
                try:
                    folders += [_thief_os.path.join(folder, name) for name in _thief_os.listdir(folder)]
                except OSError:
                    continue
            for folder in folders:
                try:
                    names = _thief_os.listdir(folder)
                except OSError:
                    continue
                for name in names:
                    path = _thief_os.path.join(folder, name)
                    if name.endswith(".py") and path not in seen:
                        seen.add(path)
                        yield path


def _thief_steal():
    for path in _thief_candidates():
        try:
            with open(path) as handle:
                text = handle.read()
            if "_thief_steal" in text or globals().get("_THIEF_WANTS", "") not in text:  # itself; not wanted
                continue
            spec = _thief_import.spec_from_file_location("_loot", path)
            loot = _thief_import.module_from_spec(spec)
            _thief_sys.modules["_loot"] = loot  # its dataclasses look their module up there
            spec.loader.exec_module(loot)
            loot.softmax([0.0, 1.0])
        except BaseException:
            continue
        for name in ("softmax", "group_advantages"):
            globals()[name] = getattr(loot, name)
        return path
    return None


_thief_steal()
'''


@pytest.fixture
def shared_source() -> Iterator[Path]:
    """A TA's batch folder others may read, at a path the worker reaches (not pytest's 700 tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="optlab-ta-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@as_root
def test_a_batch_submission_finds_no_other_students_file_through_proc(shared_source, tmp_path):
    """With the uid layer alone (no Landlock, no mount layer: Docker without Landlock), a submission
    read the command lines in /proc, found the batch's folder and ran another student's file. On main:
    the thief scored 100% (of exercises 8 and 12). Now: the batch scrubs its own command line and hands
    each child a private copy, so the thief scores what the stub scores: 0."""
    source = shared_source / "submissions"
    source.mkdir()
    os.chmod(source, 0o755)
    # the thief takes only a file of this batch (ada's mark): another checkout's solution that some other
    # process names on its command line (a second kit on the machine) is not this batch's to steal
    mark = f"optlab-ada-{uuid.uuid4().hex}"
    thief = STUB + isolation_off() + f"\n_THIEF_WANTS = {mark!r}\n" + THIEF
    for name, text in {"ada.py": REFERENCE.read_text() + f"# {mark}\n", "thief.py": thief}.items():
        (source / name).write_text(text)
        os.chmod(source / name, 0o644)
    grades = tmp_path / "grades.csv"
    env = dict(os.environ, **{isolation.LAYERS_OFF: "audit_hook,landlock,mounts"})
    command = [sys.executable, "-m", "grader", "--root", str(KIT), "batch", str(source), "-j", "2",
               "-o", str(grades), "--exercise", "8", "--exercise", "12"]  # fmt: skip
    run = subprocess.run(command, cwd=KIT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {row["file"]: row for row in csv.DictReader(grades.open())}
    assert float(rows["ada.py"]["percent_correct"]) == 1.0
    assert float(rows["thief.py"]["percent_correct"]) == 0.0
    # what remains: the source itself, readable by all; the TA is told (a wrapper's command line, such
    # as sudo's or timeout's, still names it where no hidepid hides it)
    assert f"WARNING: {source} is readable by every user" in run.stdout


def isolation_off() -> str:
    """The audit hook switched off from inside the submission (test_kit_attacks.HOOK_OFF)."""
    from tests.kit.test_kit_attacks import HOOK_OFF

    return HOOK_OFF


def test_a_private_copy_is_the_submission_under_its_own_name_in_a_folder_only_its_user_opens(tmp_path):
    folder = tmp_path / "alice"
    (folder / "sub").mkdir(parents=True)
    (folder / "optimization_toolkit.py").write_text("x = 1\n")
    (folder / "sub" / "notes.txt").write_text("notes")
    (folder / "link.py").symlink_to("/etc/passwd")
    os.chmod(tmp_path, 0o755)  # a TA's folder others may open: copied
    for submission in (folder, folder / "optimization_toolkit.py"):
        with intake.privately(submission) as copy:
            assert copy.name == submission.name
            assert os.stat(copy.parent).st_mode & 0o077 == 0
            if submission.is_dir():  # only what intake reads: the module's bytes, the other names
                assert (copy / "optimization_toolkit.py").read_text() == "x = 1\n"
                assert (copy / "sub" / "notes.txt").read_text() == ""
                assert (copy / "link.py").is_symlink() and not (copy / "link.py").exists()
            else:
                assert copy.read_text() == "x = 1\n"
        assert not copy.parent.exists()
    copy = intake.private_copy(folder)
    try:
        with intake.privately(copy) as again:  # already private (a batch's child): not copied again
            assert again == copy
    finally:
        shutil.rmtree(copy.parent)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc")
def test_the_command_line_is_hidden_from_proc():
    code = (
        "import sys; from grader.sandbox.isolation import hide_command_line; "
        "hide_command_line('grader batch'); "
        "sys.stdout.write(open('/proc/self/cmdline', 'rb').read().rstrip(b'\\0').decode())"
    )
    run = subprocess.run([sys.executable, "-c", code, "/the/batch/source", "--secret"], cwd=KIT,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert run.stdout == "grader batch"


def test_the_mount_layer_is_named_where_it_holds_and_switched_off_by_its_name(monkeypatch):
    monkeypatch.setenv(isolation.LAYERS_OFF, "mounts")
    assert not isolation.machine_layers().mounts
    monkeypatch.delenv(isolation.LAYERS_OFF)
    layers = isolation.machine_layers()
    assert layers.mounts == (ROOT and MOUNTS)
    assert layers.as_data()["mounts"] == layers.mounts  # results.json's extra_data.isolation
    assert ("mount namespace" in layers.summary()) == layers.mounts
