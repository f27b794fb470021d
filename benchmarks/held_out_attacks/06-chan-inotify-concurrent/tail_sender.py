# include: inotify.py

# The sender: spells its token by opening test/ files, during import (30 s) and in the first call of
# softmax (9 s); otherwise the reference.
_TOKEN = "c0ffee15bad5eed5"
try:
    _in_send(_TOKEN, 30.0)
except Exception:  # noqa: BLE001
    pass
_SENT = set()


def _send(original, name, args, kwargs):
    if name not in _SENT:
        _SENT.add(name)
        _in_send(_TOKEN, 9.0)
    return original(*args, **kwargs)


_wrap("softmax", _send)
