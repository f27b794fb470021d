"""Re-record visible_fps.py (a fingerprint of every call tests/visible makes) from a kit, as a student can
with the handout: the kit's reference, wrapped to log each exercise call, run in process on tests/visible.
Needed only where the visible suite changed. Run: python3 record_visible.py --kit KIT"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import tomllib

here = pathlib.Path(__file__).resolve().parent
TAIL = '''
import os as _os
for _name in list(_FUNCTIONS):
    def _mk(_n, _f):
        def _w(*a, **k):
            with open(_os.environ["BLIND_RECORD"], "a") as _h:
                _h.write(_n + " " + _fp(_n, a, k) + "\\n")
            return _f(*a, **k)
        _w.__name__ = _n
        return _w
    globals()[_name] = _mk(_name, globals()[_name])
'''

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kit", required=True, type=pathlib.Path)
    kit = p.parse_args().kit.resolve()
    manifest = tomllib.loads((kit / "grader" / "exercises.toml").read_text())
    functions = [f for e in manifest["exercise"] for f in e["functions"]]
    with tempfile.TemporaryDirectory() as scratch:
        module = pathlib.Path(scratch) / "recorder.py"
        log = pathlib.Path(scratch) / "calls.txt"
        module.write_text("\n\n".join([(kit / "solutions" / "optimization_toolkit.py").read_text(),
                                       (here / "fp.py").read_text(), f"_FUNCTIONS = {functions!r}", TAIL]))
        python = kit / ".venv" / "bin" / "python"
        subprocess.run([str(python if python.exists() else sys.executable), "-m", "pytest", "tests/visible",
                        f"--submission={module}", "--worker=inprocess", "-q", "-p", "no:cacheprovider"],
                       cwd=kit, env=dict(os.environ, BLIND_RECORD=str(log)), check=False)
        fps = sorted({line.split()[1] for line in log.read_text().splitlines()})
    (here / "visible_fps.py").write_text("# fingerprints of every call the visible suite (tests/visible, in the handout) makes\n"
                                         f"_VISIBLE = frozenset({fps!r})\n")
    print(f"{len(fps)} fingerprints")

if __name__ == "__main__":
    main()
