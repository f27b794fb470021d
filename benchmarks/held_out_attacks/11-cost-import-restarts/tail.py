# Import spends 8 s of CPU (under the 10 s import bound); every function's first call loops until its
# 3 s of CPU are gone: the worker is killed, and the next exercise's call starts (and imports) a new one.
import time as _time

_c = _time.process_time()
while _time.process_time() - _c < 8.0:
    pass


def _loop(original, name, args, kwargs):
    while True:
        pass


for _n in ("softmax", "add_score", "reinforce_grad", "group_advantages", "call_cost", "breakeven_calls", "cheapest"):
    _wrap(_n, _loop)
