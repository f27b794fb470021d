# Every function's first call in a worker spends 0.5 s of CPU and sleeps until 8 s have passed (within
# the 3 s of CPU and 12 s of wall a call may take), then answers right: full points, at a high cost.
import time as _time

_SEEN = set()


def _slow(original, name, args, kwargs):
    if name not in _SEEN:
        _SEEN.add(name)
        start = _time.monotonic()
        cpu = _time.process_time()
        while _time.process_time() - cpu < 0.5:
            pass
        _time.sleep(max(0.0, 8.0 - (_time.monotonic() - start)))
    return original(*args, **kwargs)


for _n in ("softmax", "add_score", "reinforce_grad", "group_advantages", "call_cost", "breakeven_calls", "cheapest"):
    _wrap(_n, _slow)
