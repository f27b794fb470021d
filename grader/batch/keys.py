"""The grading key: what a kept grading was graded with, and the run key.

The grading key hashes the submission's content, the kit's version, the hashes of its inventory, manifest
and reference, and the options that change a grade; the run key is the same without the manifest's scoring
keys (a change of points alone runs nothing).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

from grader import __version__
from grader.assignment.inventory import INVENTORY
from grader.assignment.manifest import SCORING_KEYS
from grader.batch.outcomes import (
    BatchOptions,
)
from grader.batch.roster import Entry, content_hash
from grader.layout import MANIFEST, REFERENCE


def kit_of(root: Path) -> dict:
    """Which kit grades at `root`: its version and the hashes of its inventory, manifest and reference."""
    hashes = {name: _file_hash(root / path) for name, path in _KIT_FILES.items()}
    return {"kit_version": __version__, **hashes}


def kit_identity(root: Path, options: BatchOptions) -> dict:
    """Everything but the submission that a grading key depends on."""
    return {
        **kit_of(root),
        "exercises": sorted(options.exercises),
        "call_timeout": options.call_timeout,
    }


def run_identity(root: Path, options: BatchOptions) -> dict:
    """Everything but the submission that running the suites depends on: the kit identity with the
    manifest read without its scoring keys (points alone change no check's outcome)."""
    return {**kit_identity(root, options), "manifest": _running_manifest_hash(root / MANIFEST)}


def _running_manifest_hash(path: Path) -> str | None:
    """A hash of the manifest without its scoring keys (grader.assignment.manifest.SCORING_KEYS) nor its
    comments."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    exercises = data.get("exercise", [])
    if isinstance(exercises, list):
        data["exercise"] = [
            {k: v for k, v in e.items() if k not in SCORING_KEYS} if isinstance(e, dict) else e
            for e in exercises
        ]
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def grading_key(entry: Entry, kit: dict) -> str:
    """The key a grading of `entry` is kept under: its content hash with the kit's identity."""
    text = json.dumps({"submission": content_hash(entry.path), **kit}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_KIT_FILES = {"inventory": INVENTORY, "manifest": MANIFEST, "reference": REFERENCE}


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
