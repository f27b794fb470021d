"""The handout's own conftest.py: the lab's pytest.ini, read from any folder.

The handout's own conftest.py (shipped at the handout folder's root): the lab's pytest.ini is read
whichever folder `python -m pytest` runs from and whichever form `--submission` takes.

pytest picks its configuration file from the command's paths before any plugin has said that
`--submission` takes a value, so in `python -m pytest --submission ../mine.py` it counts `../mine.py` as a
test path and looks for a configuration above it: none, or another project's (its settings, its
conftest.py). This file is loaded anyway when the handout's tests are collected: it makes the handout's
`grader` importable, registers the plugin (so `--submission PATH` is read as an option), and, where
pytest read another configuration than this folder's pytest.ini, runs the same command again with `-c`
naming it, once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HANDOUT = Path(__file__).resolve().parent
HANDOUT_INI = HANDOUT / "pytest.ini"
RERUN = "OPTLAB_HANDOUT_RERUN"  # set in the command run again: it never runs again itself

if str(HANDOUT) not in sys.path:  # the handout's grader, whatever pytest.ini's `pythonpath` did
    sys.path.insert(0, str(HANDOUT))
pytest_plugins = ["grader.pytest_plugin"]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Run the command again with this folder's pytest.ini where pytest read another (or none)."""
    if (config.inipath and config.inipath.resolve() == HANDOUT_INI) or os.environ.get(RERUN):
        return
    args = ["-c", str(HANDOUT_INI), *config.invocation_params.args]
    if config.inipath:  # another project's settings were read: say so (none read: nothing to say)
        print(f"optlab: pytest read {config.inipath}, not this lab's pytest.ini: running again with it")
        sys.stdout.flush()
    code = subprocess.call([sys.executable, "-m", "pytest", *args], env={**os.environ, RERUN: "1"})
    sys.stderr.flush()
    os._exit(code)  # nothing of this run has started: no session, no worker, no output to flush
