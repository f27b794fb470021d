"""`grader batch --cluster`: a Dask scheduler and two workers, started here as separate processes on
loopback, grade as the local pool does (grades.csv and results.json the same, timing aside); a worker lost
mid-batch costs nothing; a worker with another kit gets no submission and is named; a client stopped with
Ctrl-C resumes; a bad address is one line. Every process is torn down and checked gone.
Exercises 8 and 12 only, four submissions (a file, a folder, a zip), to keep it quick.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import grader.batch.cluster
from grader.batch.children import processes_below
from grader.batch.cluster import ClusterError, Parcel, pack, unpack
from grader.batch.roster import Entry, content_hash
from tests.kit.conftest import KIT
from tests.kit.test_kit_batch import SELECTION, batch, rows

EXAMPLES = KIT / "examples" / "submissions"
START_SECONDS = 60.0  # for a scheduler or a worker to come up
BATCH_SECONDS = 300.0  # for a whole batch of four, on a loaded 2-core machine


def submissions(into: Path) -> Path:
    """Four submissions: two files, a zip and a folder."""
    into.mkdir()
    for name in ("ada_full.py", "cam_broken.py", "dana_submission.zip"):
        shutil.copy(EXAMPLES / name, into / name)
    (into / "eve").mkdir()
    shutil.copy(EXAMPLES / "ben_partial.py", into / "eve" / "optimization_toolkit.py")
    return into


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The same four, graded by the local pool: what the cluster must give."""
    top = tmp_path_factory.mktemp("local")
    source = submissions(top / "in")
    code, _, err = batch(str(source), "-o", str(top / "grades.csv"), "-j", "2", *SELECTION)
    assert code == 0, err
    return {"source": source, "grades": top / "grades.csv", "results": top / "grades-results"}


class Cluster:
    """A scheduler and workers, each a process group of its own on loopback."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self.file = top / "scheduler.json"
        self.processes: dict[str, subprocess.Popen] = {}
        self._start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0")
        self.address = self._wait_for(lambda: json.loads(self.file.read_text())["address"])

    def worker(self, name: str, kit: Path = KIT) -> str:
        """Start a worker whose `grader` is the kit at `kit`; its address once it has joined."""
        self._start(name, "worker", "--nthreads", "1", "--no-nanny", "--name", name, kit=kit)
        return self._wait_for(lambda: self.workers()[name])

    def workers(self) -> dict[str, str]:
        """name -> address of the workers the scheduler has now."""
        from distributed import Client

        with Client(self.address, timeout=10, set_as_default=False) as client:
            info = client.scheduler_info(n_workers=-1)["workers"]
        return {str(w["name"]): address for address, w in info.items()}

    def lose(self, name: str) -> None:
        """The worker's machine gone: SIGKILL to it and everything below it (its gradings too)."""
        process = self.processes.pop(name)
        tree = [pid for pid, _, _ in processes_below(process.pid)]
        for pid in [process.pid, *tree]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=30)

    def gradings(self, *names: str) -> list[int]:
        """The `grader grade` processes running below these workers (default: all)."""
        found = []
        for name, process in self.processes.items():
            if names and name not in names:
                continue
            for pid, _, _ in processes_below(process.pid):
                with contextlib.suppress(OSError):
                    if b"grade\0" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        found.append(pid)
        return found

    def close(self) -> list[int]:
        """Stop every process (SIGTERM to its group, then SIGKILL); the ids of any still alive."""
        every = {p.pid for p in self.processes.values()}
        for process in self.processes.values():
            every |= {pid for pid, _, _ in processes_below(process.pid)}
        # workers before the scheduler: a worker whose scheduler is gone waits to reconnect, not to stop
        for which in (signal.SIGTERM, signal.SIGKILL):
            for process in reversed(self.processes.values()):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, which)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
        for pid in every:  # below a worker: its gradings, in sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        return [pid for pid in every if Path(f"/proc/{pid}").exists() and not _zombie(pid)]

    def _start(self, name: str, *args: str, kit: Path = KIT) -> None:
        command = [sys.executable, "-m", "dask", *args, "--scheduler-file", str(self.file), "--no-dashboard"]
        self.processes[name] = subprocess.Popen(
            command, cwd=kit, stdin=subprocess.DEVNULL, start_new_session=True,
            stdout=open(self.top / f"{name}.log", "wb"), stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(kit)},  # this kit's grader, whatever the venv points at
        )  # fmt: skip

    def _wait_for(self, what):  # noqa: ANN001, ANN202 - a probe and its answer
        deadline = time.monotonic() + START_SECONDS
        while True:
            with contextlib.suppress(Exception):
                return what()
            if time.monotonic() > deadline:
                logs = {p.name: p.read_text(errors="replace")[-2000:] for p in self.top.glob("*.log")}
                raise AssertionError(f"the cluster did not come up: {logs}")
            time.sleep(0.3)


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return True


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    started = Cluster(tmp_path)
    try:
        yield started
    finally:
        assert started.close() == [], "processes left behind"


def same_as_local(local: dict, grades: Path) -> None:
    """grades.csv and every results.json as the local pool's, timing aside."""
    assert rows(grades) == rows(local["grades"])
    results = grades.parent / "grades-results"
    names = sorted(p.name for p in local["results"].iterdir())
    assert sorted(p.name for p in results.iterdir()) == names
    for name in names:
        ours, theirs = (
            json.loads((r / name / "results.json").read_text()) for r in (results, local["results"])
        )
        for document in (ours, theirs):
            document.pop("execution_time")
        assert ours == theirs, name


def run_client(cluster: Cluster, source: Path, grades: Path) -> subprocess.Popen:
    """`grader batch --cluster` in a process of its own (to be killed or interrupted)."""
    command = [sys.executable, "-m", "grader", "--root", str(KIT), "batch", str(source), "-o", str(grades)]
    return subprocess.Popen(
        [*command, "--cluster", cluster.address, *SELECTION],
        cwd=grades.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(KIT)},
    )  # fmt: skip


def records(grades: Path) -> dict[str, dict]:
    folder = grades.parent / "grades-results"
    return {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/batch.json")}


# -- the cases ----------------------------------------------------------------------------------------


def test_the_cluster_grades_as_the_local_pool_does(cluster: Cluster, local: dict, tmp_path: Path) -> None:
    addresses = {cluster.worker("one"), cluster.worker("two")}
    grades = tmp_path / "out" / "grades.csv"
    code, out, err = batch(str(local["source"]), "-o", str(grades), "--cluster", cluster.address, *SELECTION)
    assert code == 0, err
    assert "2 worker(s) with this kit, 2 grading(s) at once" in out
    assert "4 submissions: 4 scored, 0 not scored; 4 graded now, 0 kept from an earlier run" in out
    same_as_local(local, grades)
    assert {r["worker"] for r in records(grades).values()} <= addresses
    code, out, _ = batch(str(local["source"]), "-o", str(grades), "--cluster", cluster.address, *SELECTION)
    assert code == 0 and "0 graded now, 4 kept from an earlier run" in out  # resumed: nothing sent


def test_a_worker_lost_mid_grading_costs_nothing(cluster: Cluster, local: dict, tmp_path: Path) -> None:
    cluster.worker("one")
    cluster.worker("two")
    grades = tmp_path / "out" / "grades.csv"
    grades.parent.mkdir()
    client = run_client(cluster, local["source"], grades)
    deadline = time.monotonic() + START_SECONDS
    while not cluster.gradings("one") and time.monotonic() < deadline and client.poll() is None:
        time.sleep(0.1)
    lost = cluster.workers()["one"]
    assert cluster.gradings("one"), "worker one was not grading"
    cluster.lose("one")  # mid-grading
    out, err = client.communicate(timeout=BATCH_SECONDS)
    assert client.returncode == 0, err
    assert "4 submissions: 4 scored, 0 not scored; 4 graded now" in out
    same_as_local(local, grades)
    assert lost not in {r["worker"] for r in records(grades).values()}  # its work was graded again


def test_a_worker_of_another_kit_gets_nothing_and_is_named(
    cluster: Cluster, local: dict, tmp_path: Path
) -> None:
    other = tmp_path / "other-kit"  # this kit's grader, manifest and reference; an inventory changed
    shutil.copytree(KIT / "grader", other / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(KIT / "solutions", other / "solutions")
    (other / "tests").mkdir()
    (other / "tests" / "inventory.json").write_text((KIT / "tests" / "inventory.json").read_text() + "\n")
    odd = cluster.worker("odd", kit=other)
    grades = tmp_path / "out" / "grades.csv"
    code, _, err = batch(str(local["source"]), "-o", str(grades), "--cluster", cluster.address, *SELECTION)
    assert code == 2 and "Traceback" not in err
    assert f"worker {odd} has another kit" in err and "install kit version" in err
    assert "error: no worker of the Dask scheduler at" in err and not grades.exists()

    good = cluster.worker("good")
    code, out, err = batch(str(local["source"]), "-o", str(grades), "--cluster", cluster.address, *SELECTION)
    assert code == 0, err
    assert err.count(f"worker {odd} has another kit") == 1
    assert "1 worker(s) with this kit" in out
    same_as_local(local, grades)
    assert {r["worker"] for r in records(grades).values()} == {good}


def test_a_client_interrupted_resumes(cluster: Cluster, local: dict, tmp_path: Path) -> None:
    cluster.worker("one")
    grades = tmp_path / "out" / "grades.csv"
    grades.parent.mkdir()
    client = run_client(cluster, local["source"], grades)
    deadline = time.monotonic() + BATCH_SECONDS
    while not records(grades) and time.monotonic() < deadline and client.poll() is None:
        time.sleep(0.1)
    client.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C would
    out, err = client.communicate(timeout=60)
    assert client.returncode == 130 and "interrupted after" in err, err
    finished = records(grades)
    assert 1 <= len(finished) < 4
    interrupted = [row for row in rows(grades).values() if row["grading_status"].startswith("interrupted")]
    assert len(interrupted) == 4 - len(finished)
    deadline = time.monotonic() + 30  # the cancelled grading is stopped on its worker too
    while cluster.gradings() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.gradings() == []

    code, out, err = batch(str(local["source"]), "-o", str(grades), "--cluster", cluster.address, *SELECTION)
    assert code == 0, err
    assert f"{4 - len(finished)} graded now, {len(finished)} kept from an earlier run" in out
    same_as_local(local, grades)
    with open(grades, newline="", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == 4  # each once


def test_a_worker_that_never_answers_costs_a_bound_not_a_hang(
    cluster: Cluster, local: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.worker("frozen")
    monkeypatch.setattr(grader.batch.cluster, "RESULT_MARGIN", 0.0)  # the client's bound: twice --timeout
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(local["source"] / "ada_full.py", source)
    grades = tmp_path / "out" / "grades.csv"
    args = ["-o", str(grades), "--cluster", cluster.address, "--timeout", "5", *SELECTION]
    client = threading.Thread(target=lambda: ended.append(batch(str(source), *args)), daemon=True)
    ended: list[tuple[int, str, str]] = []
    client.start()
    deadline = time.monotonic() + START_SECONDS
    while not cluster.gradings("frozen") and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(cluster.processes["frozen"].pid, signal.SIGSTOP)  # alive to the scheduler, answering nothing
    client.join(timeout=BATCH_SECONDS)
    assert ended and ended[0][0] == 0, ended
    status = rows(grades)["ada_full.py"]["grading_status"]
    assert status == "timed out: no result came back from the cluster within 10 s"
    assert records(grades)["ada_full.py"]["status"] == "timed out"  # tried again on the next run


def test_the_last_worker_lost_stops_the_batch_as_ctrl_c_does(
    cluster: Cluster, local: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.worker("only")
    monkeypatch.setattr(grader.batch.cluster, "NO_WORKER_SECONDS", 3.0)
    grades = tmp_path / "out" / "grades.csv"
    args = ["-o", str(grades), "--cluster", cluster.address, *SELECTION]
    client = threading.Thread(target=lambda: ended.append(batch(str(local["source"]), *args)), daemon=True)
    ended: list[tuple[int, str, str]] = []
    client.start()
    deadline = time.monotonic() + START_SECONDS
    while not cluster.gradings("only") and time.monotonic() < deadline:
        time.sleep(0.05)
    cluster.lose("only")  # mid-grading, and no other worker
    client.join(timeout=BATCH_SECONDS)
    assert ended, "the batch did not end"
    code, out, err = ended[0]
    assert code == 130 and "no worker with this kit left for 3 s" in err, err
    statuses = [row["grading_status"] for row in rows(grades).values()]  # written for what finished
    assert len(statuses) == 4 and any(s.startswith("interrupted: ") for s in statuses)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("nonsense", "nonsense: not a scheduler's address"),
        ("tcp://127.0.0.1:9", "no Dask scheduler reached at tcp://127.0.0.1:9 within"),
    ],
)
def test_a_scheduler_not_reached_is_one_line(
    local: dict, tmp_path: Path, address: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grader.batch.cluster, "CONNECT_SECONDS", 3.0)
    code, _, err = batch(str(local["source"]), "-o", str(tmp_path / "grades.csv"), "--cluster", address)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_without_dask_the_cluster_is_one_line(
    local: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the cluster extra were not installed
    code, _, err = batch(str(local["source"]), "-o", str(tmp_path / "grades.csv"), "--cluster", "tcp://h:1")
    assert code == 2 and "grader batch --cluster needs Dask: install the kit's cluster extra" in err
    assert len(err.strip().splitlines()) == 1


def test_a_parcel_carries_the_files_the_grading_key_covers(tmp_path: Path) -> None:
    source = submissions(tmp_path / "in")
    for entry in (Entry("eve", source / "eve"), Entry("dana.zip", source / "dana_submission.zip")):
        unpacked = unpack(pack(entry), tmp_path / "out" / entry.file)
        assert unpacked.name == entry.path.name and content_hash(unpacked) == content_hash(entry.path)
    climbing = Parcel("x", "x", {"../outside.py": b"x = 1\n"})
    with pytest.raises(ClusterError, match="outside its submission"):
        unpack(climbing, tmp_path / "climb")
    assert not (tmp_path / "climb" / "outside.py").exists()


def test_jobs_and_a_cluster_are_one_or_the_other(tmp_path: Path) -> None:
    code, out, err = batch(str(tmp_path), "-j", "2", "--cluster", "tcp://127.0.0.1:9")  # argparse's refusal
    assert code == 2 and out == ""
    assert err.startswith("grader: error: argument --cluster: not allowed with argument -j/--jobs")
