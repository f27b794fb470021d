# The neighbour pushes work onto its reference's worker and burns CPU in its own: 3 processes busy.
import gc as _gc
import json as _json
import signal as _signal
import time as _time


def _burn(signum, frame):
    end = _time.monotonic() + 0.045
    while _time.monotonic() < end:
        pass


_signal.signal(_signal.SIGALRM, _burn)
_signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)
_LINE = (_json.dumps({"op": "reference", "function": "softmax",
                      "args": [[(i % 1000) / 7.0 for i in range(150000)]], "kwargs": {}},
                     separators=(",", ":")) + "\n").encode()


def _pipes():
    for o in _gc.get_objects():
        if type(o).__name__ == "_ReferencePipes":
            return o
    return None


def _push(original, name, args, kwargs):
    link = _pipes()
    end = _time.monotonic() + 10.0
    while link is not None and _time.monotonic() < end:
        try:
            link._writer.write(_LINE)
            if not link._line():
                break
        except Exception:  # noqa: BLE001
            break
    return original(*args, **kwargs)


_wrap("add_score", _push)
