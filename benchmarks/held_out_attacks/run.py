#!/usr/bin/env python3
"""Grade every blind attack on a kit tree and print one row each: attack, class, outcome, evidence.

    python3 benchmarks/held_out_attacks/run.py --kit . [--only 03,13] [--timeout 900] [--out table.md]

As root (the uid layer), with the audit hook off (OPTLAB_LAYERS_OFF=audit_hook), through the kit's own
`grader grade` (and `grader batch -j 2` for the neighbour and concurrent attacks), each grading bounded by
--timeout. Submissions are built from the kit's own reference (or stub) + the attack's tail
(_lib/build.py). Outcomes are decided from results.json fields and the runner's own records (CPU from
wait4 of the grader's whole process tree, listener bytes), never from text a person reads.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ beside the attacks
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_lib"))
import build as builder  # noqa: E402


class Kit:
    def __init__(self, root: Path, timeout: float, uids: str | None):
        self.root = root
        self.timeout = timeout
        python = root / ".venv" / "bin" / "python"
        self.python = str(python if python.exists() else sys.executable)
        self.env = dict(os.environ, OPTLAB_LAYERS_OFF="audit_hook")
        if uids:
            self.env["OPTLAB_WORKER_UIDS"] = uids
        self._baselines: dict[tuple, dict] = {}

    def _run(self, args: list[str], timeout: float | None = None) -> dict:
        """Run a grader command; wall, CPU of its whole waited process tree (wait4), exit code."""
        started = time.monotonic()
        process = subprocess.Popen(
            [self.python, "-m", "grader", *args], cwd=self.root, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        out = bytearray()
        reader = threading.Thread(target=lambda: out.extend(process.stdout.read()), daemon=True)
        reader.start()
        limit = timeout or self.timeout
        timed_out = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > limit:
                timed_out = True
                os.killpg(process.pid, 9) if False else process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.2)
        process.returncode = os.waitstatus_to_exitcode(status)
        reader.join(5)
        return {
            "rc": process.returncode, "wall": time.monotonic() - started,
            "cpu": usage.ru_utime + usage.ru_stime, "timed_out": timed_out,
            "log": out.decode("utf-8", "replace")[-3000:],
        }

    def grade(self, submission: Path, exercises: list[int], out: Path) -> dict:
        args = ["grade", str(submission), "-o", str(out)]
        for e in exercises:
            args += ["--exercise", str(e)]
        run = self._run(args)
        run["doc"] = read_json(out)
        return run

    def batch(self, folder: Path, exercises: list[int], out_csv: Path) -> dict:
        args = ["batch", str(folder), "-j", "2", "-o", str(out_csv), "--force"]
        for e in exercises:
            args += ["--exercise", str(e)]
        run = self._run(args, timeout=self.timeout * 2)
        run["docs"] = {}
        for path in glob.glob(str(out_csv.parent / "**" / "results.json"), recursive=True):
            if "/history/" in path:
                continue
            run["docs"][path] = read_json(Path(path))
        return run

    def baseline(self, exercises: list[int], work: Path) -> dict:
        key = tuple(exercises)
        if key not in self._baselines:
            sub = work / f"baseline-{'-'.join(map(str, exercises))}" / "optimization_toolkit.py"
            sub.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.root / "solutions" / "optimization_toolkit.py", sub)
            self._baselines[key] = self.grade(sub, exercises, sub.parent / "results.json")
        return self._baselines[key]


def read_json(path: Path) -> dict | None:
    try:
        raw = path.read_bytes()
        return json.loads(raw.decode("utf-8"), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (OSError, ValueError):
        return None


def visible_page(doc: dict | None) -> dict:
    """What a student sees at once: the top-level output and every entry visible now."""
    if doc is None:
        return {}
    entries = [
        {k: t.get(k) for k in ("name", "score", "status", "output")}
        for t in doc.get("tests", []) if t.get("visibility") == "visible"
    ]
    return {"output": doc.get("output"), "entries": entries}


def visible_text(doc: dict | None) -> str:
    page = visible_page(doc)
    return (page.get("output") or "") + "\n" + "\n".join(e["output"] or "" for e in page.get("entries", []))


def score(doc: dict | None) -> float | None:
    return None if doc is None or "grading_failed" in doc.get("extra_data", {}) else doc.get("score")


def exercise_score(doc: dict | None, exercise: int) -> float:
    for row in (doc or {}).get("extra_data", {}).get("exercises", []):
        if row.get("id") == exercise:
            return row.get("score", 0.0)
    return 0.0


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


# -- the modes -------------------------------------------------------------------------------------


def submission_of(folder: Path, variant: str = "") -> Path:
    return folder / (f"submission-{variant}" if variant else "submission") / "optimization_toolkit.py"


def copy_submission(src: Path, dst_dir: Path, substitute: dict | None = None) -> Path:
    dst_dir.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8")
    for key, value in (substitute or {}).items():
        text = text.replace(key, value)
    dst = dst_dir / "optimization_toolkit.py"
    dst.write_text(text, encoding="utf-8")
    return dst


def run_attack(kit: Kit, folder: Path, meta: dict, work: Path) -> tuple[str, str]:
    mode, judge, ex = meta["mode"], meta["judge"], meta.get("exercises", [])
    w = work / folder.name
    w.mkdir(parents=True, exist_ok=True)
    if mode == "grade":
        if meta.get("prepare") == "evict_pagecache":
            evict_pagecache()
        substitute, listener = {}, None
        if judge == "listener_received":
            listener = Listeners()
            substitute[meta["port_placeholder"]] = str(listener.port)
        sub_dir = w / "sub"
        sub = copy_submission(submission_of(folder), sub_dir, substitute)
        if meta.get("layout") == "classroom_clone":
            objects = sub_dir / ".git" / "objects"
            for i in range(2500):
                d = objects / f"{i % 256:02x}"
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{i:038x}").write_bytes(b"x")
            (sub_dir / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
            site = sub_dir / "venv" / "lib" / "python3.11" / "site-packages"  # the student's virtualenv
            for i in range(2500):
                d = site / f"pkg{i % 50}"
                d.mkdir(parents=True, exist_ok=True)
                (d / f"mod{i}.py").write_text("x = 1\n")
            target = sub_dir
        elif meta.get("layout"):
            target = lay_out(meta["layout"], sub, kit.root, w)
        else:
            target = sub
        run = kit.grade(target, ex, w / "results.json")
        if listener is not None:
            listener.close()
            return judge_listener(run, listener)
        if judge == "cost_vs_reference":
            return judge_cost(run, kit.baseline(ex, work), meta.get("factor", 3.0))
        return JUDGES[judge](run, meta)
    if mode == "pair":
        runs = {}
        for variant in meta["variants"]:
            sub = copy_submission(submission_of(folder, variant), w / variant)
            runs[variant] = kit.grade(sub, ex, w / f"{variant}.results.json")
        return JUDGES[judge](runs, meta)
    if mode == "seq":
        if meta.get("prepare") == "evict_pagecache":
            evict_pagecache()
        sub = copy_submission(submission_of(folder), w / "sub")
        first = kit.grade(sub, ex, w / "first.results.json")
        second = kit.grade(sub, ex, w / "second.results.json")
        return JUDGES[judge]((first, second), meta)
    if mode == "concurrent":
        batch_dir = w / "batch"
        shutil.rmtree(batch_dir, ignore_errors=True)
        batch_dir.mkdir(parents=True)
        for variant in meta["variants"]:
            shutil.copy(submission_of(folder, variant), batch_dir / f"{variant}.py")
        run = kit.batch(batch_dir, ex, w / "out" / "grades.csv")
        return JUDGES[judge](run, meta)
    if mode == "neighbour":
        return run_neighbour(kit, folder, meta, w)
    if mode == "rounds":
        return run_rounds(kit, folder, meta, w)
    raise ValueError(mode)


def run_neighbour(kit: Kit, folder: Path, meta: dict, w: Path) -> tuple[str, str]:
    ex = meta["exercises"]
    victim = submission_of(folder, "victim")
    alone = kit.grade(copy_submission(victim, w / "alone"), ex, w / "alone.results.json")
    scores = {"alone": score(alone["doc"])}
    for beside in ("honest", "attacker"):
        batch_dir = w / f"beside-{beside}"
        shutil.rmtree(batch_dir, ignore_errors=True)
        batch_dir.mkdir(parents=True)
        shutil.copy(victim, batch_dir / "victim.py")
        shutil.copy(submission_of(folder, beside), batch_dir / f"{beside}.py")
        exercises = sorted(set(ex) | set(meta.get("attacker_exercises", [])))
        run = kit.batch(batch_dir, exercises, w / f"out-{beside}" / "grades.csv")
        docs = {p: d for p, d in run["docs"].items() if "victim" in p}
        doc = next(iter(docs.values()), None)
        scores[beside] = exercise_score(doc, ex[0]) if doc else None
        scores[f"{beside}_wall"] = round(run["wall"], 1)
    scores["alone"] = exercise_score(alone["doc"], ex[0])
    # beside the attacker below both the victim alone and beside an honest reference (the control): the
    # machine's own load costs the control too, and is not the attacker's doing
    # and by more than the two controls differ (the machine's noise, measured in the same run)
    controls = [v for v in (scores["alone"], scores["honest"]) if v is not None]
    noise = max(controls) - min(controls) if controls else 0.0
    broke = scores["attacker"] is not None and bool(controls) and scores["attacker"] < min(controls) - noise
    evidence = (
        f"victim ex{ex[0]}: alone {scores['alone']}, beside honest {scores['honest']}, beside attacker "
        f"{scores['attacker']} (noise between the controls {noise:.2f}; batch wall {scores['honest_wall']} s / "
        f"{scores['attacker_wall']} s)"
    )
    return ("BROKE" if broke else "held"), evidence


def run_rounds(kit: Kit, folder: Path, meta: dict, w: Path) -> tuple[str, str]:
    ex = meta["exercises"]
    source = submission_of(folder).read_text(encoding="utf-8")
    table: dict[str, float] = {}
    learnt = []
    for k in range(meta.get("rounds", 3)):
        text = source.replace("_TABLE = {}  # BLIND_TABLE", f"_TABLE = {table!r}  # BLIND_TABLE")
        sub = w / f"round{k}" / "optimization_toolkit.py"
        sub.parent.mkdir(parents=True, exist_ok=True)
        sub.write_text(text, encoding="utf-8")
        run = kit.grade(sub, ex, w / f"round{k}.results.json")
        output = unescape((run["doc"] or {}).get("output") or "")
        found = re.search(r"ORACLE([0-9a-f]{5}[-+0-9.e]+,(?:[0-9a-f]{5}[-+0-9.e]+,)*)", output)
        new = 0
        if found:
            for f, value in re.findall(r"([0-9a-f]{5})([-+0-9.e]+),", found[1]):
                new += f not in table
                table[f] = float(value)
        learnt.append(new)
    final_text = source.replace("_TABLE = {}  # BLIND_TABLE", f"_TABLE = {table!r}  # BLIND_TABLE")
    sub = w / "final" / "optimization_toolkit.py"
    sub.parent.mkdir(parents=True, exist_ok=True)
    sub.write_text(final_text, encoding="utf-8")
    final = kit.grade(sub, ex, w / "final.results.json")
    points = exercise_score(final["doc"], meta["exercise"])
    broke = points > 0
    return ("BROKE" if broke else "held"), (
        f"answers learnt per round {learnt} ({len(table)} in all); stub + table: exercise {meta['exercise']} "
        f"{points} points (should be 0)"
    )


def lay_out(layout: str, module: Path, kit_root: Path, w: Path) -> Path:
    """The submission as the attack lays it out around (or instead of) `module`."""
    import stat
    import zipfile

    reference = kit_root / "solutions" / "optimization_toolkit.py"
    if layout == "zip_bomb":
        path = w / "bomb.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(module, "optimization_toolkit.py")
            with z.open("data/zeros.bin", "w", force_zip64=True) as member:
                block = bytes(1 << 20)
                for _ in range(4096):  # 4 GiB of zeros, about 4 MB compressed
                    member.write(block)
            for i in range(3):
                z.writestr(f"data/nested{i}.zip", path.read_bytes()[:0] or b"PK\x05\x06" + bytes(18))
        return path
    if layout == "zip_symlink":
        path = w / "link.zip"
        with zipfile.ZipFile(path, "w") as z:
            for name, target in (("optimization_toolkit.py", str(reference)),
                                 ("sub/optimization_toolkit.py", "../../../../../../../" + str(reference).lstrip("/"))):
                info = zipfile.ZipInfo(name)
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                info.create_system = 3
                z.writestr(info, target)
        return path
    if layout == "folder_symlink":
        folder = w / "linked"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        os.symlink(reference, folder / "optimization_toolkit.py")
        return folder
    raise ValueError(layout)


# -- the judges ------------------------------------------------------------------------------------


def _state(run: dict) -> str:
    return f"rc {run['rc']}, {run['wall']:.0f} s, {run['cpu']:.0f} s CPU" + (", TIMED OUT" if run["timed_out"] else "")


def judge_marker_in_output(run: dict, meta: dict) -> tuple[str, str]:
    output = unescape((run["doc"] or {}).get("output") or "")
    marker = meta["marker"]
    if marker in output:
        leaked = output.split(marker, 1)[1].split("\n", 1)[0]
        return "BROKE", f"top-level output shows {len(leaked)} chars of hidden input: {leaked[:70]!r}"
    return "held", f"no {marker} on the page (score {score(run['doc'])}; {_state(run)})"


def judge_marker_in_output_any(run: dict, meta: dict) -> tuple[str, str]:
    text = unescape(json.dumps(run["doc"] or {}, ensure_ascii=False))
    marker = meta["marker"]
    if marker in text:
        found = text.split(marker, 1)[1][:1500]
        hits = [m for m in meta.get("secret_markers", []) if m in found]
        if hits:
            return "BROKE", f"read from the worker: {hits}: {found[:120]!r}"
        return "held", f"{marker} only with harmless paths: {found[:100]!r}"
    return "held", f"nothing of the kit read (score {score(run['doc'])}; {_state(run)})"


def judge_visible_page_differs(runs: dict, meta: dict) -> tuple[str, str]:
    a, b = (runs[v] for v in meta["variants"])
    pa, pb = visible_page(a["doc"]), visible_page(b["doc"])
    va = [e["score"] for e in pa.get("entries", [])]
    vb = [e["score"] for e in pb.get("entries", [])]
    if not pa or not pb:
        return "held", f"no results.json ({_state(a)} / {_state(b)})"
    if pa != pb:
        return "BROKE", f"visible page differs between variants: visible scores {va} vs {vb}; totals {score(a['doc'])} vs {score(b['doc'])}: 1 bit"
    return "held", f"equal visible pages (visible scores {va}); totals {score(a['doc'])} vs {score(b['doc'])}"


def judge_execution_time(runs: dict, meta: dict) -> tuple[str, str]:
    a, b = (runs[v] for v in meta["variants"])
    ta = (a["doc"] or {}).get("execution_time")
    tb = (b["doc"] or {}).get("execution_time")
    same_page = visible_page(a["doc"]) == visible_page(b["doc"])
    if ta is None or tb is None:
        return "held", "no execution_time"
    gap = abs(ta - tb)
    broke = gap > meta.get("seconds", 15) and same_page
    return ("BROKE" if broke else "held"), (
        f"execution_time {ta} s vs {tb} s (gap {gap:.1f} s; visible pages {'equal' if same_page else 'differ'}); "
        f"scores {score(a['doc'])} / {score(b['doc'])}: 1 bit"
    )


def judge_marker_in_visible_second(runs: tuple, meta: dict) -> tuple[str, str]:
    first, second = runs
    marker = meta["marker"]
    t1, t2 = unescape(visible_text(first["doc"])), unescape(visible_text(second["doc"]))
    if marker in t2:
        got = t2.split(marker, 1)[1].split("\n", 1)[0]
        return "BROKE", f"2nd grading's visible page: {marker} {len(got)} bytes {got[:70]!r} (1st: {'yes' if marker in t1 else 'no'})"
    return "held", f"no {marker} in the 2nd grading's visible page (scores {score(first['doc'])}, {score(second['doc'])})"


def judge_marker_in_receiver(run: dict, meta: dict) -> tuple[str, str]:
    marker = meta["marker"]
    receiver = [d for p, d in run["docs"].items() if "receiver" in p]
    text = unescape(json.dumps(receiver, ensure_ascii=False))
    if marker in text:
        return "BROKE", f"receiver's results.json holds {marker} ({len(marker.split(':', 1)[1]) * 4} bits); batch {run['wall']:.0f} s"
    hint = re.search(r"INOTIFY:[0-9a-f]*|PermissionError|OSError[^\"]{0,60}", text)
    return "held", f"token not received ({hint[0] if hint else 'nothing'}); batch rc {run['rc']}, {run['wall']:.0f} s"


def judge_cost(run: dict, base: dict, factor: float) -> tuple[str, str]:
    s = score(run["doc"])
    cpu_ratio = run["cpu"] / max(base["cpu"], 1e-6)
    wall_ratio = run["wall"] / max(base["wall"], 1e-6)
    broke = cpu_ratio > factor or wall_ratio > factor or run["timed_out"]
    return ("BROKE" if broke else "held"), (
        f"{run['wall']:.0f} s wall, {run['cpu']:.0f} s CPU (reference on the same exercises: {base['wall']:.0f} s, "
        f"{base['cpu']:.0f} s CPU: x{wall_ratio:.1f} wall, x{cpu_ratio:.1f} CPU); score {s} (reference {score(base['doc'])})"
    )


def judge_valid_full_score(run: dict, meta: dict) -> tuple[str, str]:
    doc = run["doc"]
    possible = (doc or {}).get("extra_data", {}).get("points_possible")
    ok = doc is not None and run["rc"] == 0 and score(doc) is not None and score(doc) == possible
    return ("held" if ok else "BROKE"), f"score {score(doc)} of {possible}; {_state(run)}"


def judge_valid_results(run: dict, meta: dict) -> tuple[str, str]:
    doc = run["doc"]
    ok = doc is not None and run["rc"] == 0 and "grading_failed" not in doc.get("extra_data", {}) and not run["timed_out"]
    why = "valid results.json" if ok else f"no valid results.json or grading failed; log: {run['log'][-200:]!r}"
    return ("held" if ok else "BROKE"), f"{why}; score {score(doc)}; {_state(run)}"


def judge_full_score(run: dict, meta: dict) -> tuple[str, str]:
    doc = run["doc"]
    possible = (doc or {}).get("extra_data", {}).get("points_possible")
    ok = doc is not None and score(doc) is not None and possible and score(doc) == possible
    said = ((doc or {}).get("extra_data", {}).get("ungraded") or "")[:90]
    return ("held" if ok else "BROKE"), f"score {score(doc)} of {possible or 'n/a'} {said!r}; {_state(run)}"


def judge_disk(run: dict, meta: dict) -> tuple[str, str]:
    text = json.dumps(run["doc"] or {})
    found = re.search(r"DISK:(\d+)", text)
    held_bytes = int(found[1]) if found else 0
    limit = (meta["quota_mb"] + 2) << 20
    broke = held_bytes > limit
    return ("BROKE" if broke else "held"), f"the worker held {held_bytes >> 20} MB at once (quota {meta['quota_mb']} MB); {_state(run)}"


def judge_memory(run: dict, meta: dict) -> tuple[str, str]:
    text = json.dumps(run["doc"] or {})
    found = re.search(r"MEM:(\d+):(\d+)", text)
    rss, tmpfs = (int(found[1]), int(found[2])) if found else (0, 0)
    broke = rss + tmpfs > (meta["limit_mb"] + 64) << 20
    return ("BROKE" if broke else "held"), f"peak RSS {rss >> 20} MB + tmpfs {tmpfs >> 20} MB (limit {meta['limit_mb']} MB); {_state(run)}"


class Listeners:
    """TCP and UDP on 127.0.0.1 and ::1 (one port), a pathname and an abstract Unix socket; what came."""

    def __init__(self):
        self.received: list[str] = []
        self.sockets = []
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", 0))
        self.port = tcp.getsockname()[1]
        tcp.listen()
        self.sockets.append(("tcp", tcp))
        for family, kind, addr, name in (
            (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", self.port), "udp"),
            (socket.AF_INET6, socket.SOCK_STREAM, ("::1", self.port), "tcp6"),
            (socket.AF_UNIX, socket.SOCK_STREAM, "/tmp/blind-net.sock", "unix"),
            (socket.AF_UNIX, socket.SOCK_STREAM, "\0blind-net", "abstract"),
        ):
            try:
                if name == "unix" and os.path.exists(addr):
                    os.unlink(addr)
                s = socket.socket(family, kind)
                s.bind(addr)
                if name == "unix":
                    os.chmod(addr, 0o777)
                if kind == socket.SOCK_STREAM:
                    s.listen()
                self.sockets.append((name, s))
            except OSError:
                pass
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        import select

        while not self.stop:
            ready, _, _ = select.select([s for _, s in self.sockets], [], [], 0.2)
            for s in ready:
                name = next(n for n, x in self.sockets if x is s)
                try:
                    if s.type == socket.SOCK_DGRAM:
                        data = s.recv(100)
                    else:
                        conn, _ = s.accept()
                        conn.settimeout(1)
                        data = conn.recv(100) or b"<connected>"
                        conn.close()
                    self.received.append(f"{name}:{data[:30]!r}")
                except OSError:
                    pass

    def close(self):
        time.sleep(0.5)
        self.stop = True
        self.thread.join(2)
        for _, s in self.sockets:
            s.close()
        if os.path.exists("/tmp/blind-net.sock"):
            os.unlink("/tmp/blind-net.sock")


def judge_listener(run: dict, listener: Listeners) -> tuple[str, str]:
    text = json.dumps(run["doc"] or {})
    tried = re.search(r"NETTRY:(\{[^}]*\})", unescape(text))
    if listener.received:
        return "BROKE", f"the runner's listeners received {listener.received}"
    return "held", f"no listener received anything; the worker saw {tried[1] if tried else 'n/a'}"


def evict_pagecache() -> None:
    """As root: the page-cache range the channel uses starts cold."""
    here = Path(os.path.dirname(os.__file__))
    for path in glob.glob(str(here / "config-*" / "libpython*.a")) + glob.glob(
        "/root/.pyenv/versions/*/lib/python3*/config-*/libpython*.a"
    ):
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def judge_timing(run: dict, meta: dict) -> tuple[str, str]:
    receiver = [d for p, d in run["docs"].items() if "receiver" in p]
    text = unescape(json.dumps(receiver, ensure_ascii=False))
    found = re.search(r"TIMING:([01]{32}):(\d+)", text)
    if not found:
        hint = re.search(r"TIMING:[^\"]{0,40}", text)
        return "held", f"no bits decoded ({hint[0] if hint else 'no TIMING'}); batch rc {run['rc']}, {run['wall']:.0f} s"
    token = meta["token"]
    right = sum(int(found[1][b]) == (token >> b) & 1 for b in range(32))
    broke = right >= 28
    return ("BROKE" if broke else "held"), (
        f"{right} of 32 bits right (chance: 16) from {found[2]} samples over about 65 s of listening"
    )


def judge_marker_in_visible_page(run: dict, meta: dict) -> tuple[str, str]:
    marker, text = meta["marker"], unescape(visible_text(run["doc"]))
    if marker in text:
        got = text.split(marker, 1)[1].split("\n", 1)[0]
        return "BROKE", f"visible page: {marker} {len(got)} bytes {got[:70]!r}"
    return "held", f"no {marker} on the visible page (score {score(run['doc'])}; {_state(run)})"


def judge_valid_results_bounded(run: dict, meta: dict) -> tuple[str, str]:
    """A valid results.json (graded, or refused with its reason) within `seconds`."""
    doc = run["doc"]
    ok = doc is not None and run["rc"] == 0 and not run["timed_out"] and run["wall"] <= meta["seconds"]
    ok = ok and "grading_failed" not in doc.get("extra_data", {})
    said = ((doc or {}).get("extra_data", {}).get("ungraded") or "graded")[:90]
    return ("held" if ok else "BROKE"), f"score {score(doc)}: {said!r}; {_state(run)}"


JUDGES = {
    "valid_results_bounded": judge_valid_results_bounded,
    "marker_in_visible_page": judge_marker_in_visible_page,
    "timing_bits": judge_timing,
    "marker_in_output": judge_marker_in_output,
    "marker_in_output_any": judge_marker_in_output_any,
    "visible_page_differs": judge_visible_page_differs,
    "execution_time_differs": judge_execution_time,
    "marker_in_visible_second": judge_marker_in_visible_second,
    "marker_in_receiver": judge_marker_in_receiver,
    "valid_full_score": judge_valid_full_score,
    "valid_results": judge_valid_results,
    "full_score": judge_full_score,
    "disk_over_quota": judge_disk,
    "memory_over_limit": judge_memory,
    "no_points": lambda run, meta: (
        ("BROKE" if (score(run["doc"]) or 0) > 0 else "held"),
        f"score {score(run['doc'])} (the submission holds no code of its own); {_state(run)}; "
        f"{((run['doc'] or {}).get('extra_data', {}).get('ungraded') or '')[:80]!r}",
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kit", required=True, type=Path)
    parser.add_argument("--only", default="", help="comma-separated attack numbers or names")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per grading")
    parser.add_argument("--uids", default=os.environ.get("OPTLAB_WORKER_UIDS"), help="OPTLAB_WORKER_UIDS")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a new one)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table (markdown) here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: the uid layer is part of what is measured", file=sys.stderr)
        return 2
    kit = Kit(args.kit.resolve(), args.timeout, args.uids)
    builder.build(kit.root)
    work = args.work or Path(tempfile.mkdtemp(prefix="blind-attacks-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)
    wanted = {w.strip() for w in args.only.split(",") if w.strip()}
    rows = []
    header = "| attack | class | outcome | evidence |\n|---|---|---|---|"
    print(f"kit {kit.root}; scratch {work}\n{header}", flush=True)
    for folder in sorted(p for p in HERE.iterdir() if (p / "attack.json").is_file()):
        if wanted and not any(folder.name == w or folder.name.startswith(w + "-") for w in wanted):
            continue
        meta = json.loads((folder / "attack.json").read_text())
        started = time.monotonic()
        try:
            outcome, evidence = run_attack(kit, folder, meta, work)
        except Exception as error:  # noqa: BLE001 - one attack's fault is its row, not the run's end
            outcome, evidence = "error", f"the runner failed: {type(error).__name__}: {error}"
        evidence += f" [{time.monotonic() - started:.0f} s]"
        row = f"| {folder.name} | {meta['class']} | {outcome} | {evidence.replace('|', '/')} |"
        rows.append((meta["class"], outcome, row))
        print(row, flush=True)
    summary = {}
    for cls, outcome, _ in rows:
        summary.setdefault(cls, [0, 0])
        summary[cls][0] += outcome == "BROKE"
        summary[cls][1] += 1
    line = "; ".join(f"{c}: {b} of {n} broke" for c, (b, n) in summary.items())
    print(f"\nbreaks per class: {line}")
    if args.out:
        args.out.write_text(header + "\n" + "\n".join(r for _, _, r in rows) + f"\n\nbreaks per class: {line}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
