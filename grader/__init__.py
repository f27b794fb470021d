"""optlab-kit: the autograder kit of the optimizing-agents lab (manifest, stubs, grading, packaging)."""

import sys

__version__ = "0.1.0"
MIN_PYTHON = (3, 11)  # pyproject.toml's requires-python (a kit test holds them equal); the handout's too

# Before any module of the kit is imported: on an older Python their imports fail in a traceback.
if sys.version_info < MIN_PYTHON:
    _needed, _this = ".".join(map(str, MIN_PYTHON)), ".".join(map(str, sys.version_info[:2]))
    sys.exit(f"optlab: this needs Python {_needed} or newer, and this is Python {_this}: use a newer one")
