"""The C library, one object of the kit's own, for the OS layers set up through ctypes.

The C library, for the OS layers the grader sets up through ctypes (Landlock, mounts, seccomp, the
parent-death signal): one object of the kit's own, so that the return types set here (syscall a long,
prctl an int) never leak into other ctypes users.
"""

from __future__ import annotations

import ctypes
import sys
from functools import lru_cache


@lru_cache(maxsize=1)
def c_library() -> ctypes.CDLL | None:
    """The C library, errno kept for ctypes.get_errno; None off Linux or where it cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        library = ctypes.CDLL(None, use_errno=True)
        library.syscall.restype = ctypes.c_long
        library.prctl.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return library
