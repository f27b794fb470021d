"""Channels between gradings (issue 33, item 2), as a worker's code: appended to the reference, each is
run by `softmax(["verb", *arguments])`, which answers what the worker saw or "REFUSED <errno>".

The medium is the page cache every process of the kernel shares: a page of a stdlib file nobody else
reads is one bit, set by a one-byte read, cleared by eviction, read back by a probe. `send` sets bits
(clearing first where it can); each `probe_*` reads them back its own way; the rest try the calls the
filter refuses (inotify, fanotify, KSM). Used by tests/kit/test_kit_seccomp.py and
benchmarks/bench_channels.py.
"""

from __future__ import annotations

PAGE = 4096
WINDOW = 16  # fault-around maps up to 64 KiB around a fault: 16 pages, the first of each touched

CHANNELS = r'''

import ctypes as _ch_ctypes
import mmap as _ch_mmap
import os as _ch_os
import time as _ch_time

_CH_LIBC = _ch_ctypes.CDLL(None, use_errno=True)
_CH_PAGE = 4096
_CH_WINDOW = 16
_CH_X86 = _ch_os.uname().machine == "x86_64"
_CH_NR = {  # x86_64, aarch64
    "cachestat": (451, 451), "mincore": (27, 232), "readahead": (187, 213), "fanotify_init": (300, 262),
    "inotify_init1": (294, 26), "inotify_add_watch": (254, 27), "getrusage": (98, 165),
    "io_setup": (206, 0), "io_submit": (209, 2), "io_getevents": (208, 4),
}


def _ch_syscall(name, *args):
    number = _CH_NR[name][0 if _CH_X86 else 1]
    result = _CH_LIBC.syscall(number, *args)
    if result < 0:
        raise OSError(_ch_ctypes.get_errno(), name)
    return result


def _ch_refused(error):
    return f"REFUSED {error.errno}"


def _ch_send(path, bits):
    """Clear the file's pages where fadvise is allowed, then set a page for each 1 (a fault on a mapping
    of the file that reads nothing around it)."""
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        try:
            _ch_os.posix_fadvise(fd, 0, 0, _ch_os.POSIX_FADV_DONTNEED)
            cleared = "CLEARED"
        except OSError as error:
            cleared = _ch_refused(error)
        address = _ch_libc_map(fd, _ch_os.fstat(fd).st_size)  # MADV_RANDOM: nothing read around a page
        for index, bit in enumerate(bits):
            if bit == "1":
                _ch_touch(address, _ch_page(index))
    finally:
        _ch_os.close(fd)
    return cleared


_CH_STRIDE = [1]


def _ch_stride(pages):
    """Space the bits `pages` apart (where a read loads the pages around it, a bit needs room)."""
    _CH_STRIDE[0] = pages
    return pages


def _ch_page(index):
    """The page of a file that carries bit `index`: the first page of each 64 KiB window is left out
    (the fault-around probe touches it), and bits lie `_CH_STRIDE` apart."""
    if _CH_STRIDE[0] > 1:
        return index * _CH_STRIDE[0] + 1
    return index + index // (_CH_WINDOW - 1) + 1


def _ch_probe(path, count, how):
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        try:  # no readahead around a probe's read: it would set the neighbours' bits
            _ch_os.posix_fadvise(fd, 0, 0, _ch_os.POSIX_FADV_RANDOM)
        except OSError:
            pass
        return "".join(how(fd, _ch_page(i)) for i in range(count))
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


def _ch_nowait(fd, page):
    try:
        _ch_os.preadv(fd, [bytearray(1)], page * _CH_PAGE, _ch_os.RWF_NOWAIT)
        return "1"
    except BlockingIOError:
        return "0"


def _ch_mapped_timing(path, count):
    """Touch each carrying page of a mapping (MADV_RANDOM: nothing read around it) and time the fault:
    a page read from disk takes 50 us and more, one in memory a few."""
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        address = _ch_libc_map(fd, _ch_os.fstat(fd).st_size)
        bits = []
        for i in range(count):
            started = _ch_time.perf_counter_ns()
            _ch_touch(address, _ch_page(i))
            bits.append("1" if _ch_time.perf_counter_ns() - started < 15_000 else "0")
        return "".join(bits)
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


_CH_U16, _CH_U32, _CH_U64 = _ch_ctypes.c_uint16, _ch_ctypes.c_uint32, _ch_ctypes.c_uint64


class _ChIocb(_ch_ctypes.Structure):
    _fields_ = [("data", _CH_U64), ("key", _CH_U32), ("rw_flags", _ch_ctypes.c_int32), ("opcode", _CH_U16),
                ("reqprio", _ch_ctypes.c_int16), ("fildes", _CH_U32), ("buf", _CH_U64), ("nbytes", _CH_U64),
                ("offset", _ch_ctypes.c_int64), ("reserved2", _CH_U64), ("flags", _CH_U32),
                ("resfd", _CH_U32)]


def _ch_aio(path, count):
    """Linux AIO (io_submit) reads with RWF_NOWAIT in the iocb: the preadv2 probe by another door."""
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        context = _ch_ctypes.c_ulong(0)
        _ch_syscall("io_setup", 8, _ch_ctypes.byref(context))
        buffer = _ch_ctypes.create_string_buffer(1)
        events = (_ch_ctypes.c_int64 * 4)()  # data, obj, res, res2
        bits = []
        for i in range(count):
            block = _ChIocb(fildes=fd, buf=_ch_ctypes.addressof(buffer), nbytes=1,
                            offset=_ch_page(i) * _CH_PAGE, rw_flags=8)  # IOCB_CMD_PREAD, RWF_NOWAIT
            pointer = _ch_ctypes.pointer(block)
            _ch_syscall("io_submit", context, 1, _ch_ctypes.byref(pointer))
            _ch_syscall("io_getevents", context, 1, 1, events, None)
            bits.append("1" if events[2] >= 0 else "0")
        return "".join(bits)
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


def _ch_timing(fd, page):
    started = _ch_time.perf_counter_ns()
    _ch_os.pread(fd, 1, page * _CH_PAGE)
    return "1" if _ch_time.perf_counter_ns() - started < 15_000 else "0"  # a read from disk: 50 us and up


class _ChRange(_ch_ctypes.Structure):
    _fields_ = [("off", _ch_ctypes.c_uint64), ("len", _ch_ctypes.c_uint64)]


def _ch_cachestat(fd, page):
    span, stat = _ChRange(page * _CH_PAGE, _CH_PAGE), (_ch_ctypes.c_uint64 * 5)()
    _ch_syscall("cachestat", fd, _ch_ctypes.byref(span), stat, 0)
    return "1" if stat[0] else "0"  # nr_cache


def _ch_libc_map(fd, size):
    mmap_ = _CH_LIBC.mmap
    mmap_.restype = _ch_ctypes.c_void_p
    mmap_.argtypes = [_ch_ctypes.c_void_p, _ch_ctypes.c_size_t, _ch_ctypes.c_int, _ch_ctypes.c_int,
                      _ch_ctypes.c_int, _ch_ctypes.c_long]
    hint = _ch_ctypes.c_void_p(0x7E0000000000)  # 64 KiB aligned: fault-around windows are file windows
    address = mmap_(hint, size, 1, 2, fd, 0)  # PROT_READ, MAP_PRIVATE
    if address in (None, _ch_ctypes.c_void_p(-1).value):
        raise OSError(_ch_ctypes.get_errno(), "mmap")
    # MADV_RANDOM: no read-around a fault (where the filter allows the advice)
    _CH_LIBC.madvise(_ch_ctypes.c_void_p(address), _ch_ctypes.c_size_t(size), 1)
    return address


def _ch_touch(address, page):
    _ch_ctypes.c_char.from_address(address + page * _CH_PAGE).value


def _ch_window_touched(address, page):
    """Touch the first page of `page`'s 64 KiB window: the fault maps the window's cached pages too."""
    _ch_touch(address, page - page % _CH_WINDOW)


def _ch_mincore(path, count):
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        size = _ch_os.fstat(fd).st_size
        address = _ch_libc_map(fd, size)
        vector = (_ch_ctypes.c_ubyte * (size // _CH_PAGE + 1))()
        for i in range(count):  # (since Linux 5.0 mincore says only what is mapped, for a file the
            _ch_window_touched(address, _ch_page(i))  # caller cannot write: fault-around maps it)
        _ch_syscall("mincore", _ch_ctypes.c_void_p(address), _ch_ctypes.c_size_t(size), vector)
        return "".join("1" if vector[_ch_page(i)] & 1 else "0" for i in range(count))
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


def _ch_rusage():
    class Usage(_ch_ctypes.Structure):
        _fields_ = [("times", _ch_ctypes.c_long * 4), ("counts", _ch_ctypes.c_long * 14)]

    usage = Usage()
    _ch_syscall("getrusage", 0, _ch_ctypes.byref(usage))
    return usage.counts[5]  # ru_majflt (after maxrss, ixrss, idrss, isrss, minflt)


def _ch_faults(path, count):
    """Touch each carrying page of a mapping: a major fault (a read from disk) where it was not cached."""
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        size = _ch_os.fstat(fd).st_size
        address = _ch_libc_map(fd, size)
        bits = []
        for i in range(count):
            before = _ch_rusage()
            _ch_touch(address, _ch_page(i))
            bits.append("0" if _ch_rusage() > before else "1")
        return "".join(bits)
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


def _ch_pagemap(path, count):
    """Touch the first page of each 64 KiB window: the fault maps the window's cached pages with it
    (fault-around); /proc/self/pagemap's present bit then says which were cached, none of them read."""
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        size = _ch_os.fstat(fd).st_size
        address = _ch_libc_map(fd, size)
        with open("/proc/self/pagemap", "rb") as pagemap:
            bits = []
            for i in range(count):
                page = _ch_page(i)
                _ch_window_touched(address, page)
                pagemap.seek((address // _CH_PAGE + page) * 8)
                entry = int.from_bytes(pagemap.read(8), "little")
                bits.append("1" if entry >> 63 else "0")
        return "".join(bits)
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


def _ch_madvise(path, advice):
    fd = _ch_os.open(path, _ch_os.O_RDONLY)
    try:
        mapping = _ch_mmap.mmap(fd, 0, prot=_ch_mmap.PROT_READ)
        try:
            mapping.madvise(advice)
            return "ADVISED"
        finally:
            mapping.close()
    except OSError as error:
        return _ch_refused(error)
    finally:
        _ch_os.close(fd)


def _ch_call(what):
    try:
        what()
        return "ALLOWED"
    except OSError as error:
        return _ch_refused(error)


def _ch_inotify(folder):
    def watch():
        fd = _ch_syscall("inotify_init1", 0)
        _ch_syscall("inotify_add_watch", fd, folder.encode(), 0x20)  # IN_OPEN
        _ch_os.close(fd)
    return _ch_call(watch)


_CH_WATCH = []


def _ch_watch(folder):
    """Watch `folder` for files opened in it, across calls (the events are read by `events`)."""
    try:
        fd = _ch_syscall("inotify_init1", 0o4000)  # IN_NONBLOCK
        _ch_syscall("inotify_add_watch", fd, folder.encode(), 0x20)  # IN_OPEN
    except OSError as error:
        return _ch_refused(error)
    _CH_WATCH.append(fd)
    return "WATCHING"


def _ch_events():
    """The names of the files opened in the watched folder since `watch`, in order."""
    if not _CH_WATCH:
        return []
    names = []
    while True:
        try:
            data = _ch_os.read(_CH_WATCH[0], 65536)
        except BlockingIOError:
            return names
        at = 0
        while at < len(data):
            length = int.from_bytes(data[at + 12 : at + 16], "little")
            name = data[at + 16 : at + 16 + length].rstrip(b"\0").decode()
            if name and name not in names:
                names.append(name)
            at += 16 + length


def _ch_open_files(folder, names):
    for name in names:
        with open(_ch_os.path.join(folder, name), "rb"):
            pass
    return "OPENED"


def _ch_fanotify():
    return _ch_call(lambda: _ch_os.close(_ch_syscall("fanotify_init", 0x200, 0)))  # FAN_REPORT_FID


def _ch_ksm():
    def merge():
        if _CH_LIBC.prctl(67, 1, 0, 0, 0) != 0:  # PR_SET_MEMORY_MERGE
            raise OSError(_ch_ctypes.get_errno(), "prctl")
    return _ch_call(merge)


def _ch_readahead(path):
    def ahead():
        fd = _ch_os.open(path, _ch_os.O_RDONLY)
        try:
            _ch_syscall("readahead", fd, _ch_ctypes.c_long(0), _ch_ctypes.c_size_t(_CH_PAGE))
        finally:
            _ch_os.close(fd)
    return _ch_call(ahead)


def _ch_allocate():
    """What glibc's allocator and Python do with anonymous memory, which must keep working: a large
    block freed (munmap), heap trimmed (MADV_DONTNEED), an anonymous mapping advised away."""
    block = bytearray(64 << 20)
    del block
    mapping = _ch_mmap.mmap(-1, 1 << 20, flags=_ch_mmap.MAP_PRIVATE | _ch_mmap.MAP_ANONYMOUS)
    mapping.madvise(_ch_mmap.MADV_DONTNEED)
    if hasattr(_ch_mmap, "MADV_FREE"):
        mapping.madvise(_ch_mmap.MADV_FREE)
    mapping.close()
    _CH_LIBC.malloc_trim(0)
    return "ALLOCATED"


def _ch_send_files(folder, names, bits):
    """Set a bit per file: its first page read (and, with readahead, the file around it)."""
    for name, bit in zip(names, bits):
        if bit == "1":
            with open(_ch_os.path.join(folder, name), "rb") as handle:
                handle.read(1)
    return "SENT"


def _ch_probe_files(folder, names):
    """Time the first byte of each file: from disk where nobody read it, from memory where one did."""
    bits = []
    for name in names:
        fd = _ch_os.open(_ch_os.path.join(folder, name), _ch_os.O_RDONLY)
        try:
            started = _ch_time.perf_counter_ns()
            _ch_os.pread(fd, 1, 0)
            bits.append("1" if _ch_time.perf_counter_ns() - started < 15_000 else "0")
        finally:
            _ch_os.close(fd)
    return "".join(bits)


_CH_VERBS = {
    "send_files": _ch_send_files,
    "probe_files": _ch_probe_files,
    "stride": _ch_stride,
    "send": _ch_send,
    "probe_nowait": lambda path, count: _ch_probe(path, count, _ch_nowait),
    "probe_timing": lambda path, count: _ch_probe(path, count, _ch_timing),
    "probe_cachestat": lambda path, count: _ch_probe(path, count, _ch_cachestat),
    "probe_mincore": _ch_mincore,
    "probe_aio": _ch_aio,
    "probe_mapped_timing": _ch_mapped_timing,
    "probe_faults": _ch_faults,
    "probe_pagemap": _ch_pagemap,
    "madvise": _ch_madvise,
    "inotify": _ch_inotify,
    "watch": _ch_watch,
    "events": _ch_events,
    "open_files": _ch_open_files,
    "fanotify": _ch_fanotify,
    "ksm": _ch_ksm,
    "readahead": _ch_readahead,
    "allocate": _ch_allocate,
}


def softmax(xs):
    verb, *arguments = xs
    return _CH_VERBS[verb](*arguments)
'''
