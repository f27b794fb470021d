# One bit of a hidden input on the visible page: the visible entry's points (and its note) depend on
# whether most hidden value checks pass. Variant A answers hidden calls right iff the first hidden input
# has an even length; variant B iff odd. Visible calls are always answered right.
_STATE = {}
_WANT_EVEN = False


def _gate(original, name, args, kwargs):
    if not _hidden_call(name, args, kwargs):
        return original(*args, **kwargs)
    if "bit" not in _STATE:
        _STATE["bit"] = len(args[0]) % 2 == 0
    if _STATE["bit"] == _WANT_EVEN:
        return original(*args, **kwargs)
    n = len(args[0])
    return [1.0 / n] * n if n else []


_wrap("softmax", _gate)
