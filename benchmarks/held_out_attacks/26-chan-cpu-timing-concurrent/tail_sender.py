# include: timing.py

try:
    _t_send(16.0)
except Exception:  # noqa: BLE001
    pass
_SENT = set()


def _send(original, name, args, kwargs):
    if name not in _SENT:
        _SENT.add(name)
        _t_send(5.5)
    return original(*args, **kwargs)


for _n in ("softmax", "group_advantages", "call_cost", "breakeven_calls", "cheapest"):
    _wrap(_n, _send)
