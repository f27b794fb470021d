"""Backups a batch never rotates out: what it replaces, kept under the time it was written.

Backups a batch never rotates out: a grades.csv or results.json about to be replaced is first moved (or
copied) into a history folder, named after the time it was written (UTC, to the second):
`grades.20261205T031200Z.csv`, with `-2`, `-3`, ... for another of the same second. Nothing here ever
deletes a backup; the newest one is the file the last replacement kept.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path


def stamped(path: Path, folder: Path) -> Path:
    """The free name in `folder` for a backup of `path`, after the time `path` was last written."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(path.stat().st_mtime))
    candidate = folder / f"{path.stem}.{stamp}{path.suffix}"
    number = 1
    while candidate.exists():
        number += 1
        candidate = folder / f"{path.stem}.{stamp}-{number}{path.suffix}"
    return candidate


def keep(path: Path, folder: Path, move: bool = False) -> Path | None:
    """Keep `path` in `folder` under its time (moved, or copied with its time); where it is; None where
    there is no file to keep."""
    if not path.is_file():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    target = stamped(path, folder)
    if move:
        os.replace(path, target)
    else:
        shutil.copy2(path, target)
    return target


def backups(folder: Path, stem: str, suffix: str) -> list[Path]:
    """The backups of `stem` + `suffix` in `folder`, newest first."""
    found = [p for p in folder.glob(f"{stem}.*{suffix}") if p.is_file()] if folder.is_dir() else []
    return sorted(found, key=_order, reverse=True)


def newest(folder: Path, stem: str, suffix: str) -> Path | None:
    """The newest backup of `stem` + `suffix` in `folder`, or None."""
    found = backups(folder, stem, suffix)
    return found[0] if found else None


def _order(path: Path) -> tuple[str, int]:
    """A backup's time stamp, then its number within that second."""
    stamp = path.name.split(".")[-2]
    when, _, number = stamp.partition("-")
    return when, int(number) if number.isdigit() else 1
