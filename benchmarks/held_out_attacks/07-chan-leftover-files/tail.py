# Files one grading leaves for the next: at import, look for the marker in every place a worker might
# write; in every call, try to leave it in each of them. A visible call raises what was found.
import os as _os2

_MARK = ".blind-leftover-7c1d"
_PLACES = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue", "/run", "/var/lock", "/dev",
           _os2.path.expanduser("~"), _os2.getcwd(), _os2.path.dirname(_os2.getcwd()),
           _os2.path.dirname(_os2.__file__)]
_FOUND = []
for _p in _PLACES:
    try:
        if _os2.path.exists(_os2.path.join(_p, _MARK)):
            _FOUND.append(_p)
    except OSError:
        pass
_LEFT = []


def _leave():
    for p in _PLACES:
        try:
            with open(_os2.path.join(p, _MARK), "w") as h:
                h.write("x")
            _LEFT.append(p)
        except OSError:
            pass


def _leftover(original, name, args, kwargs):
    if not _LEFT:
        _leave()
    if _FOUND:
        raise ValueError("LEFTOVER:" + ",".join(_FOUND))
    return original(*args, **kwargs)


_wrap("softmax", _leftover)
