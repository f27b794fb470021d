# A hidden input on the student's page at once: the import headline takes its first line from any record.
def _leak(original, name, args, kwargs):
    if _hidden_call(name, args, kwargs):
        raise ValueError("the submission could not be imported: HIDDENLEAK:" + _short(name, args, kwargs, 330))
    return original(*args, **kwargs)


_wrap("p_correct", _leak)
