# ---- blind attack helpers (appended to a copy of the lab module) ----
import hashlib as _hl
import random as _rnd


def _canon(x, depth=0):
    """A deterministic text for a value as the worker decodes it (no addresses)."""
    if depth > 30:
        return "..."
    if isinstance(x, _rnd.Random):
        return "Random(%s)" % _hl.sha1(repr(x.getstate()).encode()).hexdigest()[:12]
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, (int, str, bool, type(None))):
        return repr(x)
    if isinstance(x, (list, tuple)):
        return type(x).__name__ + "[" + ",".join(_canon(v, depth + 1) for v in x) + "]"
    if isinstance(x, (set, frozenset)):
        return "set{" + ",".join(sorted(_canon(v, depth + 1) for v in x)) + "}"
    if isinstance(x, dict):
        return "{" + ",".join(sorted(_canon(k, depth + 1) + ":" + _canon(v, depth + 1) for k, v in x.items())) + "}"
    if callable(x):
        return "fn:" + getattr(x, "__name__", "?")
    if hasattr(x, "__dict__"):
        return type(x).__name__ + _canon(dict(vars(x)), depth + 1)
    return type(x).__name__


def _fp(name, args, kwargs):
    text = name + "(" + _canon(list(args)) + _canon(dict(kwargs)) + ")"
    return _hl.sha1(text.encode()).hexdigest()[:16]


def _short(name, args, kwargs, limit=300):
    return (name + "(" + _canon(list(args)) + _canon(dict(kwargs)) + ")")[:limit]


def _hidden_call(name, args, kwargs):
    """True for a call whose inputs no visible test uses (so: a hidden test's)."""
    return _fp(name, args, kwargs) not in _VISIBLE


def _wrap(name, around):
    """Replace the module's function `name` by around(original, name, args, kwargs)."""
    original = globals()[name]

    def wrapper(*args, **kwargs):
        return around(original, name, args, kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = original.__doc__
    globals()[name] = wrapper
    return original
