# Reach the loopback: TCP, UDP, Unix (pathname and abstract) to the runner's listeners; say what worked.
import socket as _s

_PORT = int("BLIND_PORT")
_TRIED = {}


def _net():
    attempts = {
        "tcp": lambda: _s.create_connection(("127.0.0.1", _PORT), timeout=2).sendall(b"BLINDNET tcp\n"),
        "udp": lambda: _s.socket(_s.AF_INET, _s.SOCK_DGRAM).sendto(b"BLINDNET udp\n", ("127.0.0.1", _PORT)),
        "tcp6": lambda: _s.create_connection(("::1", _PORT), timeout=2).sendall(b"BLINDNET tcp6\n"),
        "unix": lambda: _connect_unix("/tmp/blind-net.sock"),
        "abstract": lambda: _connect_unix("\0blind-net"),
    }
    for name, attempt in attempts.items():
        try:
            attempt()
            _TRIED[name] = "ok"
        except Exception as e:  # noqa: BLE001
            _TRIED[name] = type(e).__name__


def _connect_unix(path):
    sock = _s.socket(_s.AF_UNIX, _s.SOCK_STREAM)
    sock.settimeout(2)
    sock.connect(path)
    sock.sendall(b"BLINDNET unix\n")


def _report(original, name, args, kwargs):
    if not _TRIED:
        _net()
        raise ValueError("NETTRY:" + repr(_TRIED))
    return original(*args, **kwargs)


_wrap("softmax", _report)
