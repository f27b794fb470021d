# The victim: honest and slow. Every group_advantages call spends 0.02 s of CPU before it answers right.
import time as _vtime


def _victim(original, name, args, kwargs):
    c = _vtime.process_time()
    while _vtime.process_time() - c < 0.02:
        pass
    return original(*args, **kwargs)


_wrap("group_advantages", _victim)
