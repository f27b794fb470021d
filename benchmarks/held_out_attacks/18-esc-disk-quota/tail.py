# Write past the 64 MB scratch quota: files, a sparse file, many small files, /tmp and /dev/shm; keep
# them open after unlinking; report the most that was held at once, as the worker saw it.
import os as _o

_SEEN = {}


def _fill():
    held, fds, total = [], [], 0
    chunk = b"x" * (1 << 20)
    for where in (_o.getcwd(), "/tmp", "/dev/shm"):
        for i in range(120):
            try:
                fd = _o.open(_o.path.join(where, "blob%d" % i), _o.O_CREAT | _o.O_WRONLY, 0o600)
                for _ in range(4):
                    _o.write(fd, chunk)
                    total += len(chunk)
                fds.append(fd)
                _o.unlink(_o.path.join(where, "blob%d" % i))
            except OSError:
                break
    _SEEN["bytes"] = total
    try:
        st = _o.statvfs(_o.getcwd())
        _SEEN["fs_used"] = (st.f_blocks - st.f_bfree) * st.f_frsize
    except OSError:
        pass
    for fd in fds:
        _o.close(fd)


def _report(original, name, args, kwargs):
    if not _SEEN:
        _fill()
        raise ValueError("DISK:%d" % _SEEN.get("bytes", 0))
    return original(*args, **kwargs)


_wrap("softmax", _report)
