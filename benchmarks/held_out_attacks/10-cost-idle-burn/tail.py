# CPU no deadline reads: from import on, a wall-clock interval timer whose handler burns 45 ms of every
# 50 ms, in every worker (the one started ahead for the next suite too), between calls as during them.
import signal as _signal
import time as _time


def _burn(signum, frame):
    end = _time.monotonic() + 0.045
    while _time.monotonic() < end:
        pass


_signal.signal(_signal.SIGALRM, _burn)
_signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)
