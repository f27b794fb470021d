"""A worker's folders and uid, held by the grader for one sandbox's life.

`home` (open to pass through only) holds `work`, the worker's scratch folder (its module, its only writable
folder, its /tmp; with the mount layer, a tmpfs of the disk quota) and `runtime`, the worker's runtime
(read-only to the worker). As root, the uid the worker runs as is leased with them
(grader.sandbox.isolation.UidLease), and its disk use is measured by the quota (`quota`). Removing them
kills what is left of the uid and sweeps what it wrote anywhere.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
import tempfile
from pathlib import Path

from grader.errors import KitError
from grader.layout import GRADER_PACKAGE, MODULE_FILE, WORKER_RUNTIME, shipped_modules
from grader.sandbox import isolation, mounts
from grader.sandbox.limits import Limits


class SandboxError(KitError):
    """The sandbox cannot be set up on this machine (not a problem of the submission)."""


class NoQuota:
    """No disk quota (a plain worker: nothing confines it to its scratch folder to measure)."""

    breached = False

    def breach(self, pid: int | None) -> str | None:
        return None

    def reset(self) -> None:
        pass


class Scratch:
    """The folders of one sandbox's workers, and the uid they run as (`lease`, as root). `plain`: no
    sandbox on this system, a worker that nothing confines."""

    def __init__(self, module_source: str, layers: isolation.Layers, limits: Limits, plain: bool):
        self.layers, self.limits, self.plain = layers, limits, plain
        # with the mount layer, outside every world-writable folder: the worker's view covers those
        where = mounts.sandboxes() if layers.mounts else Path(tempfile.gettempdir())
        if layers.uid:
            check_reachable(where)
        self.lease = isolation.UidLease() if layers.uid else None
        self.home = Path(tempfile.mkdtemp(prefix="optlab-sandbox-", dir=where))
        # this grader's own until it closes: no other grader takes its scratch for a stale one
        self._held = mounts.hold_home(self.home) if layers.mounts else None
        self.work = self.home / "work"
        self.runtime = self.home / "runtime"
        self._module_source = module_source
        self._prepare()

    def _prepare(self) -> None:
        self.work.mkdir()
        self.runtime.mkdir()
        package = self.runtime / "grader"
        (package / WORKER_RUNTIME).mkdir(parents=True)
        (package / "__init__.py").write_text("", encoding="utf-8")  # the kit's own imports nothing here
        for name in shipped_modules((WORKER_RUNTIME,)):
            shutil.copyfile(GRADER_PACKAGE / f"{name}.py", package / f"{name}.py")
        if self.layers.mounts and self.lease is not None:  # the disk quota is the tmpfs's size
            limits = self.limits
            mounts.mount_scratch(self.work, self.lease.uid, limits.scratch_bytes, limits.scratch_files)
        self.write_module()
        os.chmod(self.home, 0o711)
        if self.lease is not None:
            os.chown(self.work, self.lease.uid, self.lease.uid)
            os.chmod(self.work, 0o700)

    def write_module(self) -> None:
        """The submission's module in the scratch folder, owned by the worker's uid."""
        module = self.work / MODULE_FILE
        module.write_text(self._module_source, encoding="utf-8")
        if self.lease is not None:
            os.chown(module, self.lease.uid, self.lease.uid)

    def quota(self) -> mounts.ScratchQuota | NoQuota:
        """The worker's disk quota as the grader measures it: the tmpfs's use where it has one; else
        its scratch folder, and where no layer keeps it there (neither Landlock nor the mount layer),
        what its uid owns in the world-writable folders."""
        if self.plain:
            return NoQuota()
        shared_uid = None
        if self.lease is not None and not self.layers.landlock and not self.layers.mounts:
            shared_uid = self.lease.uid
        return mounts.ScratchQuota(
            self.work, self.limits.scratch_bytes, self.limits.scratch_files, self.layers.mounts,
            shared_uid, isolation.SHARED_WRITABLE,
        )  # fmt: skip

    def start_afresh(self) -> None:
        """After a worker ended at its quota: sweep what its uid wrote (its scratch tmpfs stays) and write
        the module again, so the next worker starts on an empty disk."""
        if self.lease is not None:
            isolation.sweep_uid(self.lease.uid, stale_mounts=False)
        self.write_module()

    def read_roots(self) -> list[str]:
        """What the worker may read: the interpreter's stdlib, its runtime and two devices."""
        paths = sysconfig.get_paths()
        roots = {paths["stdlib"], paths["platstdlib"], str(self.runtime), "/dev/null", "/dev/urandom"}
        roots |= {p for p in sys.path if p.endswith((".zip", "lib-dynload"))}
        return sorted(roots)

    def remove(self) -> None:
        """Unmount the scratch tmpfs, kill what is left of the uid, and remove what it wrote."""
        if self.layers.mounts:
            mounts.unmount_scratch(self.work)
        if self.lease is not None:
            self.lease.release()  # kills what is left of the uid and sweeps what it wrote
            self.lease = None
        if self.plain:
            shutil.rmtree(self.home, ignore_errors=True)
        else:
            isolation.remove_tree(self.home)  # however deep the worker nested its scratch
        if self._held is not None:
            os.close(self._held)
            self._held = None


def check_reachable(folder: Path) -> None:
    """As root: the worker user must be able to pass through every folder above its scratch folder."""
    for step in (folder, *folder.parents):
        if not os.stat(step).st_mode & stat.S_IXOTH:
            raise SandboxError(
                f"the worker user cannot reach {folder}: {step} is closed to others "
                "(point TMPDIR at a folder others may pass through, such as /tmp)"
            )
