"""Intake, the first stage of grading: a .py file, a folder or a zip turned into the module to run.

Intake, the first stage of grading: turn whatever a student submitted (a .py file, a folder, a zip) into
the module text to run. It finds the lab module (`chosen_module`, the rule every grading uses), decodes it
and compiles it (grader.grading.compiling: in a bounded process; when the module does not compile, every
top-level block that does is kept). Intake only reads and compiles: nothing submitted runs here.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import re
import stat
import tempfile
import tokenize
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

from grader.errors import KitError
from grader.grading.compiling import TooComplex, compiled
from grader.grading.untrusted import in_words, quoted, shown
from grader.layout import MODULE
from grader.sandbox.mounts import remove_tree

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
# Text codecs for domain names, not files: punycode decodes in quadratic time (1 MB: over 120 s of the
# grader's CPU) and raises UnicodeError, not UnicodeDecodeError, on what it cannot read (a traceback).
_NOT_FOR_SOURCE = frozenset(("punycode", "idna"))

Reader = Callable[[], bytes]


@dataclass(frozen=True)
class Submission:
    """The module to grade, as intake found it."""

    source: str  # the module text to run (LF, no BOM); salvaged, same line numbers, when the original fails
    found_as: str  # where it came from inside the submission, e.g. "hw5/optimization_toolkit (1).py"
    notes: tuple[str, ...]  # what intake did that the student should know, one sentence each
    broken: dict[str, str]  # top-level def/class name -> "line 12: invalid syntax", for definitions dropped
    syntax_error: str | None  # the original's first syntax error, "line 12: invalid syntax (`code`)", or None


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
    wanted = f"{module_name}.py"
    found_as, data = chosen_module(path, module_name)
    try:
        if len(data) > MAX_MODULE_BYTES:
            raise _Unreadable(
                f"{quoted(found_as)} is larger than 1 MB, more than a lab module needs",
                "with your code alone",
            )
        text, decoding_notes = _decode(data, found_as)
    except _Unreadable as error:
        raise _refused(error, wanted) from error
    notes = [] if _base(found_as) == wanted else [f"Graded {quoted(found_as)} as {wanted}."]
    notes += decoding_notes
    try:
        source, broken, salvage_notes, syntax_error = compiled(text, found_as)
    except TooComplex as error:
        raise IntakeError(f"{quoted(found_as)} {error}: submit {wanted} with plainer code") from None
    return Submission(source, found_as, tuple(notes + salvage_notes), broken, syntax_error)


def chosen_module(path: Path, module_name: str = MODULE) -> tuple[str, bytes]:
    """The lab module of the submission at `path`, chosen by intake's rule (the one every grading uses):
    its path inside the submission (posix) and its bytes, unread beyond it. Raises IntakeError when no
    module can be chosen or read."""
    path = Path(path)
    wanted = f"{module_name}.py"
    if not path.exists():  # named by its name, never where it lies (a private copy's random folder)
        raise IntakeError(f"{quoted(path.name)} does not exist: submit {wanted}")
    try:
        with _members(path) as (members, where):
            found_as = _choose(list(members), module_name, where)
            return found_as, members[found_as]()
    except _Unreadable as error:
        raise _refused(error, wanted) from error


def _refused(error: _Unreadable, wanted: str) -> IntakeError:
    return IntakeError(f"{error}: submit {' '.join(filter(None, (wanted, error.remedy)))}")


# --- the files of a submission ---------------------------------------------------------------------------


@contextlib.contextmanager
def _members(path: Path) -> Iterator[tuple[dict[str, Reader], str]]:
    """The submission's files by their path inside it (posix), each with a reader of its bytes, and how
    to name the submission in a message."""
    if path.is_dir():
        yield _folder_members(path), "the submission"
    elif not path.is_file():
        raise _Unreadable(
            f"{quoted(path.name)} is neither a file nor a folder (a pipe, a device or a socket)"
        )
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
        for name, kind in listing(root / folder, MAX_MEMBERS + 1 - seen):
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


def listing(folder: Path, limit: int) -> list[tuple[str, str]]:
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
            raise _Unreadable(f"{quoted(info.filename)} in {label} is larger than 5 MB", "on its own")
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
    what = f"{quoted(info.filename)} in {label}"
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
            raise _Unreadable(f"{quoted(name)} is not a regular file", "as a regular file")
        with stream:
            return _read_capped(stream, quoted(name))
    except OSError as error:
        raise _Unreadable(f"could not read {quoted(name)} ({error.strerror})", "again") from error


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
    MAX_MEMBERS + 1 names and 50 MB. `copy_as_read` makes a copy of it, `grader.batch.roster` hashes it."""
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
    return in_words([quoted(name) for name in names])


# --- decoding --------------------------------------------------------------------------------------------


def _decode(data: bytes, found_as: str) -> tuple[str, list[str]]:
    """The module's text (LF line endings, no BOM) and notes on what decoding had to repair."""
    encoding, body, notes = _encoding(data, found_as)
    not_text = _Unreadable(f"{quoted(found_as)} is not a text file", "as Python source")
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as error:
        text = body.decode(encoding, "replace")
        if _looks_binary(text):
            raise not_text from error
        line = _lf(body[: error.start].decode(encoding, "replace")).count("\n") + 1
        notes.append(
            f"Line {line} of {quoted(found_as)} has bytes that are not valid {_display(encoding)} "
            f"(they were replaced by \ufffd): save the file as UTF-8."
        )
    if "\x00" in text:
        raise not_text
    text = _lf(text.removeprefix("\ufeff"))
    if not text.strip():
        raise _Unreadable(f"{quoted(found_as)} is empty", "with your code in it")
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
        file, unknown = quoted(found_as), quoted(names[0])
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


def private_copy(submission: Path) -> Path:
    """`submission` (a file or a folder) copied under its own name into a fresh folder only this user
    may open: the path a grading is handed, so that a worker that learns it (from a command line in
    /proc, where no hidepid hides them) can read nothing there, and nothing of the source it came from.
    The copy holds only what intake reads (grader.grading.intake's `copy_as_read`: the module's bytes, the
    other names, nothing else), so that making it costs what reading the submission costs, whatever the
    submission holds (issue 23: a folder with a device node filled the disk; a 4 GB sparse file took
    68 s and 4 GB; 200,000 files took 43 s). The caller removes the copy's folder (`copy.parent`)."""
    folder = Path(tempfile.mkdtemp(prefix="optlab-submission-"))  # mode 700
    copy = folder / (submission.name or "submission")
    try:
        copy_as_read(submission, copy)
    except BaseException:
        remove_tree(folder)
        raise
    return copy


@contextlib.contextmanager
def privately(submission: Path) -> Iterator[Path]:
    """`submission` itself where it lies in a folder only this user may open (a batch's child is handed
    one), else a `private_copy` of it while the block runs."""
    if _private_folder(submission.resolve().parent):
        yield submission
        return
    copy = private_copy(submission)
    try:
        yield copy
    finally:
        remove_tree(copy.parent)


def _private_folder(folder: Path) -> bool:
    try:
        info = os.stat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077
