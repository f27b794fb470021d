"""The worker's audit hook: a tripwire for honest mistakes, not a boundary.

Inside the worker, Python itself refuses what a submission has no business doing: sockets, new
processes, signals to others, native code, and files outside its scratch folder (reading is allowed also
in the standard library and the worker's own code), so an honest mistake fails with a clear message.
It lives in the interpreter it watches, so code there can switch it off (patch this module through
sys.modules, reach the hook's object with gc), and its path checks resolve paths from the working folder
where `dir_fd` resolves them elsewhere. Neither matters: every guarantee of grading holds without it,
from the operating system's layers (grader.sandbox: isolation, landlock, sandbox), and the kit's
hostile tests run a second time with the hook not installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

# Events refused outright, matched by name or by the prefix before the first dot.
REFUSED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "os.setns", "os.unshare", "subprocess.Popen", "pty.spawn", "webbrowser.open", "sys.remote_exec",
})  # fmt: skip
REFUSED_PREFIXES = frozenset({"socket", "ctypes", "winreg", "_winapi", "urllib"})
# Importing is refused only for native code, which could step around everything else. A stray
# `import subprocess` or `import socket` stays harmless: using them is refused (events above, the
# kernel's process limit and, as root, an empty network namespace).
REFUSED_IMPORTS = frozenset({"ctypes", "_ctypes"})
# Events whose first argument is a path that is changed (written): only inside the scratch folder.
WRITE_EVENTS = frozenset({
    "os.mkdir", "os.remove", "os.rename", "os.rmdir", "os.symlink", "os.link", "os.truncate", "os.chmod",
    "os.chown", "os.utime", "os.chflags", "os.lchflags", "os.lchmod", "shutil.rmtree", "shutil.copyfile",
    "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move", "shutil.chown",
})  # fmt: skip
READ_EVENTS = frozenset({"os.listdir", "os.scandir", "os.chdir", "glob.glob", "os.walk"})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Confinement:
    """The hook's rules: where the worker may read and where it may write."""

    def __init__(self, scratch: str, read_roots: Iterable[str]):
        self.scratch = os.path.realpath(scratch)
        self.read_roots = tuple({os.path.realpath(r) for r in read_roots} | {self.scratch})
        self._busy = False

    def install(self) -> None:
        """Add the hook to this process, for good."""
        sys.addaudithook(self)

    def __call__(self, event: str, args: tuple) -> None:
        if self._busy:  # events raised while the hook itself works out a path
            return
        self._busy = True
        try:
            self._check(event, args)
        finally:
            self._busy = False

    def _check(self, event: str, args: tuple) -> None:
        if event in REFUSED_EVENTS or event.split(".", 1)[0] in REFUSED_PREFIXES:
            raise PermissionError(f"not allowed while grading: {event}")
        if event == "import" and args and str(args[0]).split(".", 1)[0] in REFUSED_IMPORTS:
            raise ImportError(f"not allowed while grading: import {args[0]}")
        if event == "open" and args:
            path, mode, flags = (list(args) + [None, None])[:3]
            if isinstance(path, int):
                return
            writing = any(c in (mode or "") for c in "wax+") or bool((flags or 0) & WRITE_FLAGS)
            self._check_path(path, writing)
        elif event in WRITE_EVENTS and args:
            self._check_path(args[0], writing=True)
            if event in (
                "os.rename",
                "os.symlink",
                "os.link",
                "shutil.copyfile",
                "shutil.copytree",
                "shutil.move",
            ):
                self._check_path(args[1], writing=True)
        elif event in READ_EVENTS and args:
            self._check_path(args[0] if args[0] is not None else ".", writing=False)

    def _check_path(self, path: Any, writing: bool) -> None:  # what the audited call was given
        if isinstance(path, int) or path is None:
            return
        real = os.path.realpath(os.fsdecode(path))
        roots = (self.scratch,) if writing else self.read_roots
        if not any(real == root or real.startswith(root + os.sep) for root in roots):
            verb = "writing" if writing else "reading"
            raise PermissionError(f"not allowed while grading: {verb} {os.fsdecode(path)}")
