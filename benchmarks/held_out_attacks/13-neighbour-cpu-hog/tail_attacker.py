# The neighbour: every worker burns CPU from import on (a SIGALRM handler, 45 ms of every 50 ms), and the
# first group_advantages call of each worker sleeps 11 s, so the grading lasts as long as the victim's.
# Every answer is the reference's.
import signal as _signal
import time as _time


def _burn(signum, frame):
    end = _time.monotonic() + 0.045
    while _time.monotonic() < end:
        pass


_signal.signal(_signal.SIGALRM, _burn)
_signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)
_SEEN = set()


def _stay(original, name, args, kwargs):
    if name not in _SEEN:
        _SEEN.add(name)
        _time.sleep(11.0)
    return original(*args, **kwargs)


_wrap("group_advantages", _stay)
