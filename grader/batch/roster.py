"""The roster of a batch: which submissions a source holds and who made them.

A source is a folder whose every entry (a file or a folder) is one submission, or Gradescope's "Export
Submissions" zip: a folder per submission (`submission_123456/`) beside one `submission_metadata.yml` that
maps each folder to its submitters (`:name:`, `:email:`, `:sid:`). The zip is unpacked into a scratch
folder first. Who made a submission comes only from the export's own metadata, at its root: a
`submission_metadata.yml` inside a student's folder is the student's file, never read (it could name
anyone); a plain folder without root metadata names its rows by their file and folder names alone. The
metadata is read by a small reader of the YAML that Gradescope writes (no YAML library). A submission's
content hash covers the bytes of its files (a metadata file aside), so a resubmission is graded again.
"""

from __future__ import annotations

import hashlib
import re
import stat
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.errors import KitError
from grader.grading.intake import as_read

METADATA = "submission_metadata.yml"
SKIPPED = {"__MACOSX", "__pycache__", ".DS_Store", "Thumbs.db"}
SUBMISSION_SUFFIXES = (".py", ".zip", ".ipynb")  # the module, a zip of it; a notebook gets told what to do
MAX_EXPORT_MEMBERS = 200_000
MAX_EXPORT_BYTES = 4 << 30  # what an export zip may unpack to, in all

_FIELDS = {"name", "email", "sid"}
_KEY = re.compile(r"^(?P<indent> *)(?P<dash>- +)?(?P<key>:?[^\s:][^:]*?):(?:\s+(?P<value>.*))?$")


class BatchSourceError(KitError):
    """A batch source that cannot be read (not a folder or zip, a broken zip, an unsafe export)."""


@dataclass(frozen=True)
class Submitter:
    """One student of a submission, as the export names them (None where it does not)."""

    name: str | None = None
    email: str | None = None
    sid: str | None = None


@dataclass(frozen=True)
class Entry:
    """One submission of the batch."""

    file: str  # its name in the source: "submission_123456", "alice.py"
    path: Path
    submitters: tuple[Submitter, ...] = ()


@dataclass(frozen=True)
class Roster:
    """What a source holds: its submissions, and the entries that cannot be one (name, why), each once."""

    entries: tuple[Entry, ...]
    skipped: tuple[tuple[str, str], ...]


def read_source(source: Path, scratch: Path, exclude: Iterable[Path] = ()) -> list[Entry]:
    """The submissions in `source` (see `scan_source`)."""
    return list(scan_source(source, scratch, exclude).entries)


def scan_source(source: Path, scratch: Path, exclude: Iterable[Path] = ()) -> Roster:
    """The submissions in `source` (a folder or an export zip, unpacked into `scratch`), by name, and
    what is skipped as no submission: hidden files and folders, `__MACOSX` and the like, and files other
    than .py, .zip and .ipynb (a README, notes, a .csv or .pdf). Paths in `exclude` (the batch's own
    outputs, when they sit inside the source) are neither. Entries' paths are absolute."""
    source = source.resolve()
    if source.is_dir():
        folder = source
    elif source.is_file() and zipfile.is_zipfile(source):
        folder = unpack_export(source, scratch.resolve())
    else:
        raise BatchSourceError(f"{source}: not a folder of submissions or a Gradescope export zip")
    folder = _export_root(folder)
    names = read_metadata(folder / METADATA) if (folder / METADATA).is_file() else {}
    _check_export(source, folder, names)
    outputs = {p.resolve() for p in exclude}
    entries, skipped = [], []
    for path in sorted(folder.iterdir(), key=lambda p: _natural(p.name)):
        if path.name == METADATA or path.resolve() in outputs:
            continue
        if why := _not_a_submission(path):
            skipped.append((path.name, why))
            continue
        entries.append(Entry(path.name, path, tuple(names.get(path.name, ()))))
    return Roster(tuple(entries), tuple(skipped))


def _not_a_submission(path: Path) -> str:
    """Why the entry at `path` cannot be a submission ("" if it can)."""
    if path.is_symlink():
        return "a link"
    if not path.is_file() and not path.is_dir():
        return "not a file or a folder (a pipe, a device or a socket)"
    if path.name in SKIPPED or path.name.startswith("."):
        return "a system or hidden file"
    if path.is_file() and path.suffix.lower() not in SUBMISSION_SUFFIXES:
        return "not a .py file, a .zip or a folder"
    return ""


_EXPORTED = re.compile(r"^submission_\d+$")  # how Gradescope's export names each submission's folder


def _check_export(source: Path, folder: Path, names: dict) -> None:
    """A Gradescope export must say who made its submissions: its submission_metadata.yml present, and
    naming some of its submission folders (else one BatchSourceError line that says what to do)."""
    inner = [p for p in folder.iterdir() if p.name not in SKIPPED and not p.name.startswith(".")]
    if len(inner) == 1 and inner[0].is_dir() and not (folder / METADATA).is_file():
        inside = [p for p in inner[0].iterdir() if p.is_dir() and _EXPORTED.match(p.name)]
        if inside:  # an export zip whose metadata is missing: its wrapper would be graded as one student
            raise BatchSourceError(
                f"{source}: a Gradescope export without {METADATA}: download it again "
                "(Review Grades > Export Submissions), or give the folder of submissions itself"
            )
    exported = [p.name for p in inner if p.is_dir() and _EXPORTED.match(p.name)]
    if (folder / METADATA).is_file() and exported and not set(names) & set(exported):
        raise BatchSourceError(
            f"{source}: its {METADATA} names none of its {len(exported)} submission folders (missing or "
            "malformed): download the export again"
        )


def unpack_export(archive: Path, into: Path) -> Path:
    """Unpack a zip into `into`; members with absolute or climbing paths, and links, are refused."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > MAX_EXPORT_MEMBERS:
                raise BatchSourceError(f"{archive}: more than {MAX_EXPORT_MEMBERS} files")
            if sum(m.file_size for m in members) > MAX_EXPORT_BYTES:
                raise BatchSourceError(f"{archive}: unpacks to more than {MAX_EXPORT_BYTES >> 30} GiB")
            for member in members:
                _unpack_member(zipped, member, into)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise BatchSourceError(f"{archive}: not a readable zip ({error})") from None
    return into


def _unpack_member(zipped: zipfile.ZipFile, member: zipfile.ZipInfo, into: Path) -> None:
    parts = PurePosixPath(member.filename.replace("\\", "/")).parts
    if not parts or member.filename.startswith("/") or ".." in parts or ":" in parts[0]:
        raise BatchSourceError(f"unsafe path in the export: {member.filename!r}")
    if stat.S_ISLNK(member.external_attr >> 16):
        return
    target = into.joinpath(*parts)
    if member.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipped.open(member) as source, open(target, "wb") as out:
        while chunk := source.read(1 << 20):
            out.write(chunk)


def _export_root(folder: Path) -> Path:
    """The folder holding the submissions: `folder`, or the one folder inside it that an export zip
    wraps them in (`assignment_123_export/`: its metadata beside `submission_<n>` folders; a student's
    own folder holding a metadata file is not an export)."""
    if (folder / METADATA).is_file():
        return folder
    inner = [p for p in folder.iterdir() if p.name not in SKIPPED and not p.name.startswith(".")]
    if len(inner) == 1 and inner[0].is_dir() and (inner[0] / METADATA).is_file():
        if any(p.is_dir() and _EXPORTED.match(p.name) for p in inner[0].iterdir()):
            return inner[0]
    return folder


# -- submission_metadata.yml ------------------------------------------------------------------------


def read_metadata(path: Path) -> dict[str, list[Submitter]]:
    """Folder name -> submitters, from a Gradescope `submission_metadata.yml` ("" for a file that lists
    `:submitters:` at its top, which the batch never reads from a submission's own folder)."""
    return parse_metadata(path.read_text(encoding="utf-8", errors="replace"))


def parse_metadata(text: str) -> dict[str, list[Submitter]]:
    """Parse the subset of YAML that Gradescope's export writes:

        submission_123:
          :submitters:
          - :name: Ada Lovelace
            :sid: '100'
            :email: ada@example.edu
          :created_at: 2024-01-01 10:00:00.000000000 -08:00

    Top-level keys are folders; under each, the `:submitters:` list of mappings. Everything else (scores,
    history, dates) is skipped. Values may be plain, 'single-' or "double-quoted"; ~ and null are None.
    """
    out: dict[str, list[Submitter]] = {}
    folder = ""
    block: int | None = None  # the indent of the `:submitters:` key being read, if any
    current: dict[str, str | None] | None = None
    level: int | None = None  # the indent of a folder's own keys (a deeper `:submitters:` is not its)
    for line in _lines(text):
        match = _KEY.match(line)
        if match is None:
            continue
        indent, key, value = len(match["indent"]), match["key"].lstrip(":"), match["value"]
        if match["dash"] is not None:
            indent += len(match["dash"])
        if indent == 0 and not match["dash"]:
            _flush(out, folder, current)
            current, block, level = None, None, None
            if key == "submitters":
                folder, block = "", 0
            else:
                folder = _scalar(match["key"]) or ""
            continue
        if level is None and not match["dash"]:
            level = indent
        if key == "submitters" and not match["dash"] and block is None and indent == level:
            _flush(out, folder, current)
            current, block = None, indent
            continue
        if block is None:
            continue
        if not match["dash"] and indent <= block:
            _flush(out, folder, current)
            current, block = None, None
            continue
        if match["dash"]:
            _flush(out, folder, current)
            current = {}
        if current is not None and key in _FIELDS:
            current[key] = _scalar(value)
    _flush(out, folder, current)
    return out


def _lines(text: str) -> Iterator[str]:
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if line.strip() and not line.lstrip().startswith("#") and line.strip() != "---":
            yield line


def _flush(out: dict[str, list[Submitter]], folder: str, current: dict[str, str | None] | None) -> None:
    if current is not None:
        out.setdefault(folder, []).append(Submitter(**current))


def _scalar(value: str | None) -> str | None:
    """A YAML scalar as text: quotes removed, ~ / null / empty as None."""
    if value is None:
        return None
    value = value.strip()
    if value in ("", "~", "null", "Null", "NULL"):
        return None
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        return re.sub(r'\\(["\\/])', r"\1", inner).replace("\\n", "\n").replace("\\t", "\t")
    return re.sub(r"\s+#.*$", "", value)


# -- content hash -----------------------------------------------------------------------------------


def content_hash(path: Path) -> str:
    """SHA-256 of what intake reads of a submission (grader.grading.intake's `as_read`: every name in it, and
    the bytes of the module it grades): what its grading depends on, read at the cost intake's limits
    allow (issue 23: all the bytes of every file were read, a pipe waited for ever, a device never
    ended, 200,000 files took 11 s)."""
    digest = hashlib.sha256()
    for kind, name, data in as_read(path):
        if PurePosixPath(name).name == METADATA:
            continue  # Gradescope's own file: what it says is not the student's work
        for part in (kind, name, str(len(data))):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _natural(name: str) -> list:
    """Sort key: "submission_9" before "submission_10"."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]
