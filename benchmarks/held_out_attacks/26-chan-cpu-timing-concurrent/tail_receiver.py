# include: timing.py

try:
    _t_listen(20.0)
except Exception:  # noqa: BLE001
    pass
_HEARD = set()


def _receive(original, name, args, kwargs):
    if name not in _HEARD:
        _HEARD.add(name)
        if name == "breakeven_calls":  # a visible check of another exercise's budget than the listening
            raise ValueError("TIMING:%s:%d" % (_t_decode(), sum(len(v) for v in _T_COUNTS.values())))
        _t_listen(9.0)
    return original(*args, **kwargs)


for _n in ("softmax", "group_advantages", "call_cost", "breakeven_calls"):
    _wrap(_n, _receive)
