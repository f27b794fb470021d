# include: pagecache.py

# Grading N's hidden worker writes the first hidden softmax input into the page cache; grading N+1's
# visible worker reads it at import and raises it in a visible check.
_RECEIVED = None
try:
    _RECEIVED = _pc_read()
except Exception:  # noqa: BLE001
    _RECEIVED = None
_SENT = {}


def _pc_attack(original, name, args, kwargs):
    if _RECEIVED is not None and not _SENT.get("shown"):
        _SENT["shown"] = True
        raise ValueError("PCLEAK:" + _RECEIVED.decode("utf-8", "replace"))
    if _hidden_call(name, args, kwargs) and not _SENT.get("sent"):
        _SENT["sent"] = True
        try:
            _pc_write(_short(name, args, kwargs, 150).encode())
        except Exception:  # noqa: BLE001
            pass
    return original(*args, **kwargs)


_wrap("softmax", _pc_attack)
