"""Intake, the first stage of grading: turn whatever a student submitted (a .py file, a folder, a zip) into
the module text to run. It finds the lab module, decodes it and compiles it; when the module does not
compile, it keeps every top-level block that does. Intake only reads and compiles: nothing submitted
runs here.
"""

from __future__ import annotations

import codecs
import codeop
import contextlib
import io
import json
import os
import re
import stat
import tokenize
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

from grader.errors import KitError
from grader.layout import MODULE
from grader.untrusted import shown

MAX_MEMBERS = 2000  # a zip's members, a folder's entries (files, folders, links: each one it holds)
MAX_FOLDER_DEPTH = 64  # folders inside folders
MAX_MEMBER_BYTES = 5 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024  # what a zip unpacks to, and the zip file itself
# The module itself: the reference is 70 KB. Compiling it is the grader's own work, in its own process:
# 5 MB of calls or decorators took 1.8 GB and 8 s to compile (twice a grading), 1 MB 350 MB and 2 s.
MAX_MODULE_BYTES = 1024 * 1024

# Files that are obviously not the lab module, whatever else the submission holds.
NOT_THE_MODULE = {"__init__.py", "conftest.py", "setup.py", "sitecustomize.py", "usercustomize.py"}
SKIPPED_FOLDERS = {"__MACOSX", "__pycache__"}
# Folders of version control and of environments, never read and not counted against MAX_MEMBERS: a
# GitHub Classroom clone holds its .git, a student's folder often a venv beside the module (issue 33:
# such a folder was refused as holding more than 2,000 files). A folder holding a pyvenv.cfg is a venv,
# whatever its name (counted as one entry, its own name: so what an attacker can name stays bounded).
UNREAD_FOLDERS = frozenset(
    (".git", ".hg", ".svn", "venv", ".venv", "__pycache__", "node_modules", "__MACOSX")
)
VENV_MARK = "pyvenv.cfg"

# Characters salvage compiles, at most, each compile counting COMPILE_COST more: a bound, the same on
# every machine, so that a hostile file (thousands of unclosed brackets, millions of one-line broken
# blocks) costs seconds, not hours. Real files need a few million at most. Past it, what is left of the
# file is judged as one block.
SALVAGE_BUDGET = 20_000_000
COMPILE_COST = 1_000  # a compile's own cost, in characters: 2.6 million broken lines took over 100 s

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
# UTF-32 first: the UTF-32 LE BOM begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_COOKIE = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)([-\w.]+)")  # PEP 263, on line 1 or 2
# Lines that continue the statement above them even though they start at column 0.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_DEFINITION = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+([^\W\d]\w*)")
# Text codecs for domain names, not files: punycode decodes in quadratic time (1 MB: over 120 s of the
# grader's CPU) and raises UnicodeError, not UnicodeDecodeError, on what it cannot read (a traceback).
_NOT_FOR_SOURCE = frozenset(("punycode", "idna"))
_INCOMPLETE_INPUT = "incomplete input"  # the message compile() gives under PyCF_ALLOW_INCOMPLETE_INPUT

Reader = Callable[[], bytes]


@dataclass(frozen=True)
class Submission:
    """The module to grade, as intake found it."""

    source: str  # the module text to run (LF, no BOM); salvaged, same line numbers, when the original fails
    found_as: str  # where it came from inside the submission, e.g. "hw5/optimization_toolkit (1).py"
    notes: tuple[str, ...]  # what intake did that the student should know, one sentence each
    broken: dict[str, str]  # top-level def/class name -> "line 12: invalid syntax", for definitions dropped
    syntax_error: str | None  # the original's first syntax error, "line 12: invalid syntax (`code`)", or None


def _q(name: str) -> str:
    """A submission-chosen name, quoted for a message."""
    return f"'{shown(name)}'"


class IntakeError(KitError):
    """A submission that cannot be graded at all; its str is one sentence for the student: what is wrong
    and what to do. `kind` and `files` say it as data, for whoever speaks to a TA ("several modules":
    .py files of which none is the module; "no module": no .py file that could be)."""

    def __init__(self, message: str, kind: str = "", files: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.files = tuple(files)


class _Unreadable(Exception):
    """What is wrong with the submission's files, found below read_submission, which turns it into an
    IntakeError that says what to submit instead; `remedy` finishes "submit <the module> ..."."""

    def __init__(self, problem: str, remedy: str = "") -> None:
        super().__init__(problem)
        self.remedy = remedy


def read_submission(path: Path, module_name: str = MODULE) -> Submission:
    """The lab module inside the submission at `path` (a .py file, a folder or a zip), decoded and
    compiled, or salvaged when it does not compile. Raises IntakeError when nothing can be graded."""
    path = Path(path)
    wanted = f"{module_name}.py"
    if not path.exists():  # named by its name, never where it lies (a private copy's random folder)
        raise IntakeError(f"{_q(path.name)} does not exist: submit {wanted}")
    try:
        with _members(path) as (members, where):
            found_as = _choose(list(members), module_name, where)
            data = members[found_as]()
        if len(data) > MAX_MODULE_BYTES:
            raise _Unreadable(
                f"{_q(found_as)} is larger than 1 MB, more than a lab module needs", "with your code alone"
            )
        text, decoding_notes = _decode(data, found_as)
    except _Unreadable as error:
        raise IntakeError(f"{error}: submit {' '.join(filter(None, (wanted, error.remedy)))}") from error
    notes = [] if _base(found_as) == wanted else [f"Graded {_q(found_as)} as {wanted}."]
    notes += decoding_notes
    try:
        compiled = _compiled_apart(text, found_as) if os.name == "posix" else compiled_here(text, found_as)
    except _TooComplex as error:
        raise IntakeError(f"{_q(found_as)} {error}: submit {wanted} with plainer code") from None
    source, broken, salvage_notes, syntax_error = compiled
    return Submission(source, found_as, tuple(notes + salvage_notes), broken, syntax_error)


Compiled = tuple[str, dict[str, str], list[str], "str | None"]  # source, broken, notes, syntax_error


def compiled_here(text: str, found_as: str) -> Compiled:
    """The module's text compiled, in this process: itself when it compiles, else salvaged."""
    original = _compile_problem(text, found_as)
    if original is None:
        return text, {}, [], None
    source, broken, salvage_notes = _salvage(text, found_as)
    return source, broken, salvage_notes, _with_code(original, text)


# Compiling a submission is the grader's own work on text a student chose, so it runs in a process of its
# own with its own bounds: CPython's compiler has crashed the grader (3.11: a segmentation fault on a
# comprehension of 60,000 `for` clauses, 948 KB) and spent hundreds of MB and seconds on what 1 MB holds.
COMPILE_MEMORY = 2 << 30  # the compiling process's address space
COMPILE_SECONDS = 60  # its CPU time; a real module takes well under a second, a hostile one a few
_COMPILER = (
    "import json, resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    "resource.setrlimit(resource.RLIMIT_CPU, ({seconds}, {seconds}))\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from grader.intake import compiled_here\n"
    "asked = json.load(sys.stdin)\n"
    "json.dump(compiled_here(asked['text'], asked['found_as']), sys.stdout)\n"
)


class _TooComplex(Exception):
    """The compiling process died or overran: what the student is told, after the file's name."""


def _compiled_apart(text: str, found_as: str) -> Compiled:
    """`compiled_here` in a child process bounded by COMPILE_MEMORY and COMPILE_SECONDS (of CPU; twice
    that of wall-clock time). A child that crashes, runs out of memory or time is _TooComplex; one
    that cannot be started, or fails otherwise, is the grader's problem (KitError)."""
    import subprocess
    import sys

    kit = str(Path(__file__).resolve().parents[1])
    code = _COMPILER.format(memory=COMPILE_MEMORY, seconds=COMPILE_SECONDS)
    asked = json.dumps({"text": text, "found_as": found_as})
    command = [sys.executable, "-I", "-S", "-c", code, kit]
    try:
        run = subprocess.run(
            command, input=asked, capture_output=True, text=True, timeout=2 * COMPILE_SECONDS, cwd="/"
        )
    except subprocess.TimeoutExpired:
        raise _TooComplex(f"took Python's compiler more than {2 * COMPILE_SECONDS} s") from None
    except OSError as error:
        raise KitError(f"the grader could not start a process to compile the submission: {error}") from None
    if run.returncode == 0:
        source, broken, notes, syntax_error = json.loads(run.stdout)
        return source, broken, notes, syntax_error
    if run.returncode < 0 or "MemoryError" in run.stderr:  # a crash, the CPU or memory limit
        raise _TooComplex(
            "is too large or too deeply nested for Python's compiler (it crashed or ran out of memory)"
        )
    raise KitError(f"compiling the submission failed in the grader: {run.stderr.strip()[-500:]}")


# --- the files of a submission ---------------------------------------------------------------------------


@contextlib.contextmanager
def _members(path: Path) -> Iterator[tuple[dict[str, Reader], str]]:
    """The submission's files by their path inside it (posix), each with a reader of its bytes, and how
    to name the submission in a message."""
    if path.is_dir():
        yield _folder_members(path), "the submission"
    elif not path.is_file():
        raise _Unreadable(f"{_q(path.name)} is neither a file nor a folder (a pipe, a device or a socket)")
    elif _is_zip(path) or path.suffix.lower() == ".zip":  # a damaged zip is named as one
        with _open_zip(path) as archive:
            yield _zip_members(archive, shown(path.name)), shown(path.name)
    else:
        # A file given directly is taken whatever its name: the hidden-file rule is for what lies inside.
        yield {path.name: partial(_read_file, path, path.name)}, "the submission"


def _folder_members(root: Path) -> dict[str, Reader]:
    return {
        name: partial(_read_file, root / name, name, within=root)
        for kind, name in _walk(root)
        if kind == FILE and not any(_skipped(part) for part in name.split("/"))
    }


FOLDER, FILE, OTHER = "folder", "file", "other"  # what `_walk` finds: OTHER is a link, pipe, device, socket


def _walk(root: Path) -> Iterator[tuple[str, str]]:
    """Every entry of the folder `root` as (kind, its path inside it, posix), depth first and by name,
    without looking inside hidden and system folders or following links: files (regular ones), folders
    and others (links, pipes, devices, sockets: never opened). Past MAX_MEMBERS entries or
    MAX_FOLDER_DEPTH, _Unreadable, raised after the entry that goes past is yielded (so that a copy
    made of what is yielded is refused as the original is). Its work is bounded by the same limits: a
    folder of a million files is read no further than its first MAX_MEMBERS + 1 names."""
    seen = 0
    stack = [""]
    while stack:
        folder = stack.pop()
        below: list[str] = []
        for name, kind in _listing(root / folder, MAX_MEMBERS + 1 - seen):
            path = f"{folder}/{name}" if folder else name
            seen += 1
            yield kind, path
            if seen > MAX_MEMBERS:
                raise _Unreadable(
                    f"the submission holds more than {MAX_MEMBERS} files and folders", "on its own"
                )
            if kind == FOLDER and path.count("/") + 1 > MAX_FOLDER_DEPTH:
                raise _Unreadable(
                    f"the submission nests folders more than {MAX_FOLDER_DEPTH} deep", "on its own"
                )
            if kind == FOLDER and not _skipped(name) and not _environment(root / path):
                below.append(path)
        stack.extend(reversed(below))


def _listing(folder: Path, limit: int) -> list[tuple[str, str]]:
    """At most `limit` entries of `folder` (name, kind), by name, without its UNREAD_FOLDERS (at most
    one each: they cost no entry); none where it cannot be listed."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in UNREAD_FOLDERS:
                        continue
                    found.append((entry.name, FOLDER))
                elif entry.is_file(follow_symlinks=False):
                    found.append((entry.name, FILE))
                else:
                    found.append((entry.name, OTHER))
                if len(found) >= limit:
                    break
    except OSError:
        return []
    return sorted(found)


def _environment(folder: Path) -> bool:
    """Whether `folder` is a virtual environment (it holds a pyvenv.cfg): not read below its name."""
    try:
        return stat.S_ISREG(os.lstat(folder / VENV_MARK).st_mode)
    except OSError:
        return False


def _is_zip(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return stream.read(4) in _ZIP_MAGIC
    except OSError as error:
        raise _Unreadable(f"could not read {shown(path.name)} ({error.strerror})", "again") from error


@contextlib.contextmanager
def _open_zip(path: Path) -> Iterator[zipfile.ZipFile]:
    """The zip at `path`, its size and its directory's claimed member count checked before zipfile
    reads the directory (which it holds in memory whole: a million members, 560 MB and 9 s)."""
    _check_zip_size(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise _Unreadable(f"{shown(path.name)} is not a readable zip file", "on its own") from error
    with archive:
        yield archive


def _check_zip_size(path: Path) -> None:
    label = shown(path.name)
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            end = zipfile._EndRecData(stream)  # type: ignore[attr-defined]  # the end record, as zipfile reads it
    except OSError as error:
        raise _Unreadable(f"could not read {label} ({error.strerror})", "again") from error
    if size > MAX_TOTAL_BYTES:
        raise _Unreadable(f"{label} is larger than 50 MB", "on its own")
    # A directory entry takes 46 bytes and its name: MAX_MEMBERS members of long names fit in 1 MB each.
    if end and (end[zipfile._ECD_ENTRIES_TOTAL] > MAX_MEMBERS or end[zipfile._ECD_SIZE] > MAX_MEMBERS * 1024):  # type: ignore[attr-defined]
        raise _Unreadable(f"{label} holds more than {MAX_MEMBERS} files", "on its own")


def _zip_members(archive: zipfile.ZipFile, label: str) -> dict[str, Reader]:
    """The members of a zip, read in memory only: nothing is extracted, so a name like ../../x.py is just
    a name. The headers are checked against the limits here; the bytes again while reading."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Unreadable(f"{label} holds more than {MAX_MEMBERS} files", "on its own")
    files = [info for info in infos if not info.is_dir()]
    for info in files:
        if info.file_size > MAX_MEMBER_BYTES:
            raise _Unreadable(f"{_q(info.filename)} in {label} is larger than 5 MB", "on its own")
    if sum(info.file_size for info in files) > MAX_TOTAL_BYTES:
        raise _Unreadable(f"{label} unpacks to more than 50 MB", "on its own")
    members: dict[str, Reader] = {}
    for info in files:
        name = _member_name(info.filename)
        if name and not any(_skipped(part) for part in name.split("/")):
            # A later member of the same name wins, as it would when unzipping.
            members[name] = partial(_read_member, archive, info, label)
    return members


def _member_name(filename: str) -> str:
    """A zip member's path inside the submission: posix, relative, without `.` and `..` parts."""
    parts = filename.replace("\\", "/").split("/")
    return "/".join(part for part in parts if part not in ("", ".", ".."))


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_FOLDERS or name in UNREAD_FOLDERS


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, label: str) -> bytes:
    what = f"{_q(info.filename)} in {label}"
    if info.flag_bits & 0x1:
        raise _Unreadable(f"{what} is password-protected", "without a password")
    try:
        with archive.open(info) as stream:
            return _read_capped(stream, what)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError, zlib.error) as error:
        raise _Unreadable(f"{what} is damaged and cannot be read", "again") from error


def _read_file(path: Path, name: str, within: Path | None = None) -> bytes:
    try:
        stream = _open_regular(path, within)
        if stream is None:
            raise _Unreadable(f"{_q(name)} is not a regular file", "as a regular file")
        with stream:
            return _read_capped(stream, _q(name))
    except OSError as error:
        raise _Unreadable(f"could not read {_q(name)} ({error.strerror})", "again") from error


_NO_WAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # POSIX: Windows has neither
_NO_LINK = getattr(os, "O_NOFOLLOW", 0)


def _open_regular(path: Path, within: Path | None = None) -> IO[bytes] | None:
    """`path` opened for reading where it is a regular file, else None: a pipe or a device is never read
    (a pipe would wait for ever, a device never end), nor, for a file `within` a submission's folder, a
    link (it could point at the solutions) at any step of its path below that folder, even one put in
    a file's or a folder's place since it was listed (each step is opened from the one above it, without
    following links, where the OS can). OSError as open() raises (ELOOP for a link)."""
    if within is None or os.open not in os.supports_dir_fd:
        descriptor = os.open(path, os.O_RDONLY | _NO_WAIT | (_NO_LINK if within else 0))
    else:
        descriptor = _open_below(within, path.relative_to(within).parts)
    stream = open(descriptor, "rb")
    if stat.S_ISREG(os.fstat(descriptor).st_mode):
        return stream
    stream.close()
    return None


def _open_below(root: Path, parts: tuple[str, ...]) -> int:
    """The file root/parts... opened one step at a time, no step a link."""
    folder = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_WAIT)
    try:
        for part in parts[:-1]:
            step = os.open(
                part, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_LINK | _NO_WAIT, dir_fd=folder
            )
            os.close(folder)
            folder = step
        return os.open(parts[-1], os.O_RDONLY | _NO_LINK | _NO_WAIT, dir_fd=folder)
    finally:
        os.close(folder)


def _read_capped(stream: IO[bytes], what: str) -> bytes:
    """All of `stream`, refusing more than MAX_MEMBER_BYTES whatever a header claimed."""
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(64 * 1024):
        size += len(chunk)
        if size > MAX_MEMBER_BYTES:
            raise _Unreadable(f"{what} is larger than 5 MB", "on its own")
        chunks.append(chunk)
    return b"".join(chunks)


# --- what intake reads of a submission, alone -------------------------------------------------------------


def as_read(path: Path, module_name: str = MODULE) -> Iterator[tuple[str, str, bytes]]:
    """What intake reads of the submission at `path`, and nothing more, as (kind, path inside it, bytes):
    a file given alone (a .py, a zip) as FILE "" with its bytes up to one past intake's limit for it; a
    folder as its entries in `_walk`'s order, folders and others (links, pipes, devices) by name alone,
    files by name with no bytes but for the one file intake grades. Bounded as intake is: at most
    MAX_MEMBERS + 1 names and 50 MB. `copy_as_read` makes a copy of it, `grader.roster` hashes it."""
    if path.is_dir():
        files = []
        try:
            for kind, name in _walk(path):
                yield kind, name, b""
                if kind == FILE and not any(_skipped(part) for part in name.split("/")):
                    files.append(name)
            chosen = _choose(files, module_name, "the submission")
        except (IntakeError, _Unreadable):
            return  # the names alone say why intake refuses it
        yield FILE, chosen, _head(path / chosen, MAX_MEMBER_BYTES + 1, within=path)
    elif path.is_file():
        limit = MAX_TOTAL_BYTES if _is_zip(path) or path.suffix.lower() == ".zip" else MAX_MEMBER_BYTES
        yield FILE, "", _head(path, limit + 1)
    else:
        yield OTHER, "", b""


def copy_as_read(path: Path, copy: Path, module_name: str = MODULE) -> None:
    """Make at `copy` (which must not exist) a copy of the submission at `path` that intake reads as it
    reads the original, made only of what intake reads of it (`as_read`): the same module, notes and
    refusals, at a cost in time and disk bounded by intake's limits whatever `path` holds (sparse files
    of terabytes, devices, pipes, a million files). Names stand for what is not read: files as empty
    files, links, pipes and devices as links to nowhere."""
    if path.is_dir():
        copy.mkdir()
    for kind, name, data in as_read(path, module_name):
        target = copy / name if name else copy  # a folder's entries come after the folder that holds them
        if kind == FOLDER:
            target.mkdir()
        elif kind == FILE:
            target.write_bytes(data)
        elif name:
            target.symlink_to("/nonexistent/optlab-not-copied")
        else:
            os.mkfifo(target)  # a submission given as a pipe or a device: intake says it is neither


def _head(path: Path, limit: int, within: Path | None = None) -> bytes:
    """At most `limit` bytes of the regular file at `path` (b"" where it is none or cannot be read)."""
    try:
        stream = _open_regular(path, within)
        if stream is None:
            return b""
        with stream:
            return stream.read(limit)
    except OSError:
        return b""


# --- choosing the module ---------------------------------------------------------------------------------


def _choose(names: list[str], module_name: str, where: str) -> str:
    """The member that is the lab module (see the module's rules), or an IntakeError saying why none is."""
    wanted = f"{module_name}.py"
    python = sorted((name for name in names if name.lower().endswith(".py")), key=_depth_then_name)
    exact = [name for name in python if _base(name) == wanted]
    if exact:
        return _shallowest(exact, f"found several {wanted} in {where}")
    candidates = [name for name in python if not _obviously_other(_base(name))]
    lookalikes = [name for name in candidates if _looks_like_the_lab(_base(name), module_name)]
    if lookalikes:
        return _shallowest(lookalikes, f"found several files that could be {wanted} in {where}")
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise IntakeError(
            f"found several .py files in {where} and none is named {wanted} ({_listed(candidates)}): "
            f"submit one file named {wanted}",
            "several modules", tuple(candidates),
        )  # fmt: skip
    if python:
        message = f"found no lab module in {where}, only {_listed(python)}: submit {wanted}"
        raise IntakeError(message, "no module", tuple(python))
    if not names:
        raise IntakeError(f"found no files in {where}: submit {wanted}")
    others = sorted(names, key=_depth_then_name)
    notebook = any(name.lower().endswith(".ipynb") for name in names)
    hint = " (from Jupyter: File > Download as > Python (.py))" if notebook else ""
    message = f"found no .py file in {where}, only {_listed(others)}: submit {wanted}{hint}"
    raise IntakeError(message, "no module", tuple(others))


def _shallowest(names: list[str], several: str) -> str:
    depth = min(name.count("/") for name in names)
    top = [name for name in names if name.count("/") == depth]
    if len(top) > 1:
        raise IntakeError(f"{several} ({_listed(top)}): submit only one", "several modules", tuple(top))
    return top[0]


def _obviously_other(base: str) -> bool:
    base = base.lower()
    return base in NOT_THE_MODULE or base.startswith("test_") or base.endswith("_test.py")


def _looks_like_the_lab(base: str, module_name: str) -> bool:
    """`optimization_toolkit (1).py`, `-2`, `_v2`, ` copy`, other case: how browsers and Gradescope rename."""
    stem = re.escape(module_name).replace("_", "[-_ ]")
    return re.fullmatch(rf"{stem}(?:[-_ ]*(?:\(\d+\)|v?\d+|copy))*\.py", base, re.IGNORECASE) is not None


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _depth_then_name(name: str) -> tuple[int, str]:
    return name.count("/"), name


def _listed(names: list[str]) -> str:
    return _and([_q(name) for name in names])


# --- decoding --------------------------------------------------------------------------------------------


def _decode(data: bytes, found_as: str) -> tuple[str, list[str]]:
    """The module's text (LF line endings, no BOM) and notes on what decoding had to repair."""
    encoding, body, notes = _encoding(data, found_as)
    not_text = _Unreadable(f"{_q(found_as)} is not a text file", "as Python source")
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as error:
        text = body.decode(encoding, "replace")
        if _looks_binary(text):
            raise not_text from error
        line = _lf(body[: error.start].decode(encoding, "replace")).count("\n") + 1
        notes.append(
            f"Line {line} of {_q(found_as)} has bytes that are not valid {_display(encoding)} "
            f"(they were replaced by \ufffd): save the file as UTF-8."
        )
    if "\x00" in text:
        raise not_text
    text = _lf(text.removeprefix("\ufeff"))
    if not text.strip():
        raise _Unreadable(f"{_q(found_as)} is empty", "with your code in it")
    return _declared_utf8(text), notes


def _encoding(data: bytes, found_as: str) -> tuple[str, bytes, list[str]]:
    """The codec to read `data` with, the bytes to decode (without a BOM), and notes."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, data[len(bom) :], []
    utf16 = _utf16_by_nuls(data)
    if utf16:
        return utf16, data, []
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        b"".decode(encoding)  # a cookie may name a codec that is not a text encoding (rot13)
        if codecs.lookup(encoding).name in _NOT_FOR_SOURCE:
            raise LookupError(encoding)
    except (SyntaxError, LookupError):
        # An unknown coding cookie, or first lines that are not UTF-8: read UTF-8 and replace what is not.
        head = data.replace(b"\r", b"\n").split(b"\n", 2)[:2]
        names = [match.group(2) for _, match in _cookies([line.decode("latin-1") for line in head])]
        if not names:
            return "utf-8", data, []
        file, unknown = _q(found_as), _q(names[0])
        note = (
            f"{file} declares an encoding ({unknown}) that Python does not know or that is not for source "
            "files, so it was read as UTF-8."
        )
        return "utf-8", data, [note]
    return encoding, data, []


def _declared_utf8(text: str) -> str:
    """The text with a coding cookie for another encoding made to say utf-8. The text is decoded already,
    and whoever runs it may write it to a file as UTF-8, which Python would read in the declared one."""
    lines = text.split("\n", 2)
    for i, match in _cookies(lines[:2]):
        if not _is_utf8(match.group(2)):
            lines[i] = f"{match.group(1)}utf-8{lines[i][match.end(2) :]}"
    return "\n".join(lines)


def _cookies(lines: list[str]) -> Iterator[tuple[int, re.Match[str]]]:
    for i, line in enumerate(lines):
        match = _COOKIE.match(line)
        if match:
            yield i, match


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _utf16_by_nuls(data: bytes) -> str | None:
    """UTF-16 without a BOM, when the NULs make it obvious: ASCII text has a NUL in every other byte."""
    sample = data[:4096]
    pairs = len(sample) // 2
    if pairs < 4:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd >= 0.9 * pairs and even <= pairs // 100:
        return "utf-16-le"
    if even >= 0.9 * pairs and odd <= pairs // 100:
        return "utf-16-be"
    return None


def _looks_binary(text: str) -> bool:
    # Real source with a few stray bytes (a cp1252 comment) stays well under this; images and archives don't.
    return "\x00" in text or text.count("\ufffd") > 0.3 * len(text)


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _display(encoding: str) -> str:
    return encoding.upper().removesuffix("-SIG")


# --- compiling and salvage -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class _Block:
    start: int  # index of its first line
    end: int  # index after its last line


_Dropped = tuple[_Block, _Problem]


def _compile_problem(source: str, filename: str, first_line: int = 1, flags: int = 0) -> _Problem | None:
    """Why `source` (the file's lines from `first_line` on) does not compile, or None when it does."""
    try:
        with warnings.catch_warnings():
            # A warning (an invalid escape, `is` with a literal) is not an error, even under -W error.
            warnings.simplefilter("ignore")
            compile(source, filename, "exec", flags, dont_inherit=True)
    except SyntaxError as error:
        return _Problem(first_line - 1 + (error.lineno or 1), _shift_lines(error.msg, first_line - 1))
    except (RecursionError, MemoryError):
        # The compiler runs out of stack on very deep expressions: too deep for Python, not invalid syntax.
        return _Problem(first_line, "too deeply nested to compile")
    return None


def _shift_lines(message: str, offset: int) -> str:
    # A block is compiled alone, so the "line N" inside messages ("detected at line 3") counts from it.
    return re.sub(r"\bline (\d+)", lambda m: f"line {int(m.group(1)) + offset}", message)


def _with_code(problem: _Problem, text: str) -> str:
    lines = text.split("\n")
    code = lines[problem.line - 1].strip() if 0 < problem.line <= len(lines) else ""
    if not code:
        return str(problem)
    return f"{problem} (`{code if len(code) <= 60 else code[:57] + '...'}`)"


def _salvage(text: str, filename: str) -> tuple[str, dict[str, str], list[str]]:
    """The text with every top-level block that does not compile blanked out (line numbers unchanged),
    the dropped definitions with their own errors, and the notes that say so."""
    lines = text.split("\n")
    salvager = _Salvager(lines, filename)
    kept, dropped = salvager.triage()
    source = salvager.reassemble(kept, dropped)
    broken = _broken(lines, kept, dropped)
    return source, broken, _salvage_notes(lines, broken, dropped, filename)


class _Salvager:
    """Sorts a module's top-level blocks into those that compile and those that do not."""

    def __init__(self, lines: list[str], filename: str):
        self.lines = lines
        self.filename = filename
        self.blocks = _top_level_blocks(lines)
        self.budget = SALVAGE_BUDGET

    def triage(self) -> tuple[list[_Block], list[_Dropped]]:
        kept: list[_Block] = []
        dropped: list[_Dropped] = []
        i = 0
        while i < len(self.blocks):
            if self.budget <= 0:  # the rest as one block: one compile more, whatever it holds
                problem = self._problem(i, len(self.blocks) - 1)
                unit = _Block(self.blocks[i].start, self.blocks[-1].end)
                kept.append(unit) if problem is None else dropped.append((unit, problem))
                break
            own = self._problem(i, i)
            stop, problem = (i + 1, None) if own is None else self._join(i, own)
            unit = _Block(self.blocks[i].start, self.blocks[stop - 1].end)
            if problem is None:
                kept.append(unit)
            else:
                dropped.append((unit, problem))
            i = stop
        return kept, dropped

    def _join(self, i: int, own: _Problem) -> tuple[int, _Problem | None]:
        """Block i does not compile alone; it may end early because a string or a bracket holds a
        column-0 line (a docstring's text, black's `) -> int:`). Join the blocks that follow while the text
        stays incomplete. Returns where the unit ends (it is blocks i..stop-1) and its problem, None when
        the join compiles."""
        if not _incomplete(self._problem(i, i, incomplete=True)):
            return i + 1, own  # broken, not merely unfinished
        for last in range(i + 1, len(self.blocks)):
            if self.budget <= 0:
                break
            problem = self._problem(i, last, incomplete=True)
            if problem is None:
                return last + 1, None
            if _incomplete(problem):
                continue
            # Block i was still open when block `last` broke the join: when `last` is a fine start of
            # code, block i is what is wrong (an unclosed bracket); else `last` continued it.
            fresh = self._problem(last, last, incomplete=True)
            if fresh is None or _incomplete(fresh):
                return last, own
            return last + 1, problem
        # Still open at the end of the file (an unclosed string): what follows it is probably code.
        return i + 1, own

    def _problem(self, first: int, last: int, incomplete: bool = False) -> _Problem | None:
        """Why blocks first..last do not compile together, with the file's line numbers; or None."""
        start = self.blocks[first].start
        return self._compile("\n".join(self.lines[start : self.blocks[last].end]), start + 1, incomplete)

    def reassemble(self, kept: list[_Block], dropped: list[_Dropped]) -> str:
        """The kept blocks back on their own lines. A block that compiles alone but not with the others (a
        __future__ import after another statement) is dropped too, until the whole compiles."""
        while kept:
            source = _assemble(self.lines, kept)
            problem = self._compile(source, 1)
            if problem is None:
                return source
            if self.budget <= 0:
                dropped.extend((block, problem) for block in kept)
                kept.clear()
                break
            culprit = max((b for b in kept if b.start < problem.line), key=lambda b: b.start, default=kept[0])
            kept.remove(culprit)
            dropped.append((culprit, problem))
        return _assemble(self.lines, kept)

    def _compile(self, text: str, first_line: int, incomplete: bool = False) -> _Problem | None:
        self.budget -= len(text) + COMPILE_COST
        # in codeop since Python 3.9, but not in its type stubs
        flags = codeop.PyCF_ALLOW_INCOMPLETE_INPUT if incomplete else 0  # type: ignore[attr-defined]
        return _compile_problem(text, self.filename, first_line, flags)


def _incomplete(problem: _Problem | None) -> bool:
    return problem is not None and problem.message == _INCOMPLETE_INPUT


def _top_level_blocks(lines: list[str]) -> list[_Block]:
    """The module cut before each line that starts a top-level statement; decorators go with what they
    decorate, and else/elif/except/finally with the statement they continue."""
    starts = [0]
    decorating = False
    for i, line in enumerate(lines):
        if not _starts_statement(line):
            continue
        if not decorating and i > 0:
            starts.append(i)
        decorating = line.startswith("@")
    ends = starts[1:] + [len(lines)]
    return [_Block(start, end) for start, end in zip(starts, ends, strict=True)]


def _starts_statement(line: str) -> bool:
    return bool(line) and not line[0].isspace() and not line.startswith("#") and not _CONTINUATION.match(line)


def _assemble(lines: list[str], kept: Iterable[_Block]) -> str:
    out = [""] * len(lines)
    for block in kept:
        out[block.start : block.end] = lines[block.start : block.end]
    return "\n".join(out)


def _broken(lines: list[str], kept: list[_Block], dropped: list[_Dropped]) -> dict[str, str]:
    """Dropped definitions by name, unless a later kept block defines the name again: as in Python, the
    last definition is the one that counts."""
    events: list[tuple[int, str | None, _Problem | None]]
    events = [(block.start, _defined_name(lines, block), None) for block in kept]
    events += [(block.start, _defined_name(lines, block), problem) for block, problem in dropped]
    broken: dict[str, str] = {}
    for _, name, problem in sorted(events, key=lambda event: event[0]):
        if name is not None:
            broken.pop(name, None)
            if problem is not None:
                broken[name] = str(problem)
    return broken


def _defined_name(lines: list[str], block: _Block) -> str | None:
    """The name a block defines when it is a def or class statement (its decorators aside)."""
    for line in lines[block.start : block.end]:
        if _starts_statement(line) and not line.startswith("@"):
            match = _DEFINITION.match(line)
            return match.group(1) if match else None
    return None


def _salvage_notes(
    lines: list[str], broken: dict[str, str], dropped: list[_Dropped], filename: str
) -> list[str]:
    notes = []
    if broken:
        items = _and([f"{name} ({where})" for name, where in broken.items()])
        why = "it has a syntax error" if len(broken) == 1 else "they have syntax errors"
        notes.append(f"Could not grade {items}: {why}; the rest of {_q(filename)} was graded.")
    # What `broken` does not tell: dropped statements, and definitions that a later one replaces anyway.
    others = [(b, p) for b, p in dropped if broken.get(_defined_name(lines, b) or "") != str(p)]
    if others:
        spans = _and([_span(lines, block, problem) for block, problem in _coalesced(others)])
        notes.append(f"Left out {spans} of {_q(filename)} because of a syntax error.")
    return notes


def _coalesced(dropped: Iterable[_Dropped]) -> list[_Dropped]:
    """Adjacent dropped blocks as one, with the first one's problem."""
    merged: list[_Dropped] = []
    for block, problem in sorted(dropped, key=lambda item: item[0].start):
        if merged and merged[-1][0].end == block.start:
            merged[-1] = (_Block(merged[-1][0].start, block.end), merged[-1][1])
        else:
            merged.append((block, problem))
    return merged


def _span(lines: list[str], block: _Block, problem: _Problem) -> str:
    last = max((i for i in range(block.start, block.end) if lines[i].strip()), default=block.start)
    where = f"line {block.start + 1}" if last == block.start else f"lines {block.start + 1}-{last + 1}"
    detail = problem.message if problem.line == block.start + 1 == last + 1 else str(problem)
    return f"{where} ({detail})"


def _and(items: list[str], limit: int = 5) -> str:
    if len(items) > limit:
        return f"{', '.join(items[:limit])} and {len(items) - limit} more"
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
