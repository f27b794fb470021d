# include: pagecache.py

_PC_FIRST_PAGE = 9001  # a range of its own (attack 05 uses 7919)

# Within one grading: the hidden suite's worker writes its first hidden input into the page cache; every
# visible call first looks for it and, when it is there, fails with it (a visible entry shows the text).
# Today the suites run one after the other, so the visible calls end before any hidden one; where they
# run at once (issue 33's plan: two CPUs, two workers), this is a channel from the hidden worker to the
# visible page of the same grading.
_STATE = {}


def _look():
    try:
        fd = _pc_open()
    except (OSError, TypeError):
        return None
    try:
        if _pc_read_bytes(fd, _PC_FIRST_PAGE, 2) != _PC_MAGIC:
            return None
    finally:
        _os.close(fd)
    return _pc_read()


def _within(original, name, args, kwargs):
    hidden = _hidden_call(name, args, kwargs)
    if hidden and not _STATE.get("sent"):
        _STATE["sent"] = True
        try:
            _pc_write((name + ":" + _short(name, args, kwargs, 150)).encode())
        except Exception:  # noqa: BLE001
            pass
    if not hidden:
        found = _look()
        if found is not None:
            raise ValueError("PCLEAK:" + found.decode("utf-8", "replace"))
    return original(*args, **kwargs)


for _n in ("p_correct", "ucb_choice", "softmax", "group_advantages", "call_cost", "breakeven_calls", "cheapest",
           "guard_ok", "file_hash", "exact_kl", "dgm_weights", "choose_parent", "kl_k3", "clip_flows"):
    _wrap(_n, _within)
