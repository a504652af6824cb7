"""A test-only model of power loss for stores written through shared memory maps.

While active, every successful flush (fdatasync of a segment, the checkpoint's write + fdatasync) records
what was durable at that moment.  ``crash_image`` then builds what a disk could hold after the power went
out: durable bytes stay; every 4 KiB page written since its last sync independently survives, is lost
(back to its durable content), or is torn at a random byte; files never synced read as zeros.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rocketstore.store import checkpoint as checkpoint_module
from rocketstore.store import mapped_file as mapped_file_module

PAGE = 4096


class PowerLossRecorder:
    def __init__(self) -> None:
        self.durable: dict[str, bytes] = {}

    @contextmanager
    def active(self) -> Iterator[PowerLossRecorder]:
        original_flush = mapped_file_module.MappedFile.flush
        original_checkpoint_flush = checkpoint_module.Checkpoint.flush
        recorder = self

        def flush(mf: mapped_file_module.MappedFile, least_pages: int = 0) -> int:
            before = mf.flushed
            snapshot = bytes(mf.buffer) if mf.writable else None
            result = original_flush(mf, least_pages)
            if snapshot is not None and mf.flushed != before:
                recorder.durable[os.path.realpath(mf.path)] = snapshot
            return result

        def checkpoint_flush(cp: checkpoint_module.Checkpoint) -> None:
            original_checkpoint_flush(cp)
            if cp.writable:
                recorder.durable[os.path.realpath(cp.path)] = Path(cp.path).read_bytes()

        mapped_file_module.MappedFile.flush = flush  # type: ignore[method-assign]
        checkpoint_module.Checkpoint.flush = checkpoint_flush  # type: ignore[method-assign]
        try:
            yield self
        finally:
            mapped_file_module.MappedFile.flush = original_flush  # type: ignore[method-assign]
            checkpoint_module.Checkpoint.flush = original_checkpoint_flush  # type: ignore[method-assign]

    def crash_image(self, store_dir: Path, dest: Path, rng: random.Random) -> None:
        """Write into *dest* one possible disk state of *store_dir* after a power loss now."""
        for src in sorted(store_dir.rglob("*")):
            rel = src.relative_to(store_dir)
            if src.name.endswith(".allocating") and not src.exists():
                continue
            target = dest / rel
            if src.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                current = src.read_bytes()
            except FileNotFoundError:
                continue  # renamed or deleted while we looked (a segment being allocated)
            if rel.name in ("abort", "lock") or rel.parts[0] == "config":
                target.write_bytes(current)
                continue
            durable = self.durable.get(os.path.realpath(src), bytes(len(current)))
            if len(durable) != len(current):
                durable = durable[: len(current)].ljust(len(current), b"\0")
            image = bytearray(durable)
            for start in range(0, len(current), PAGE):
                new = current[start : start + PAGE]
                if new == durable[start : start + PAGE]:
                    continue
                fate = rng.random()
                if fate < 0.45:
                    image[start : start + len(new)] = new  # written back before the power went
                elif fate < 0.55:
                    cut = rng.randrange(len(new))
                    image[start : start + cut] = new[:cut]  # torn inside the page
                # else: lost, the durable content stays
            target.write_bytes(bytes(image))


class SyncRecorder(PowerLossRecorder):
    """Records a file's content as durable at each fdatasync / fsync of a descriptor on it, whoever calls it,
    and a directory's entries at each fsync of the directory.  ``crash_image`` then also drops a file created
    in a directory not synced since (the abort marker) and brings back, with its durable content, a file
    deleted from one (a segment an open deleted), or from a directory removed from one (a dropped queue).

    *entries_need_sync*: every file and directory (but the lock and the abort marker, judged as above) is
    dropped whose name its directory did not hold at its last sync (or ``seed``); a directory never synced
    keeps nothing: a segment created under one vanishes, data and all, as does a config file written into
    a new config/ whose own entry the store root was not synced with."""

    def __init__(self, *, entries_need_sync: bool = False) -> None:
        super().__init__()
        self.entries: dict[str, set[str]] = {}
        self.entries_need_sync = entries_need_sync

    def seed(self, store_dir: Path) -> None:
        """What the disk holds now is durable."""
        self.entries[os.path.realpath(store_dir)] = set(os.listdir(store_dir))
        for path in store_dir.rglob("*"):
            if path.is_file():
                self.durable[os.path.realpath(path)] = path.read_bytes()

    @contextmanager
    def active(self) -> Iterator[PowerLossRecorder]:
        real_fdatasync, real_fsync = os.fdatasync, os.fsync
        recorder = self

        def record(fd: int) -> None:
            try:
                path = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return
            if os.path.isdir(path):
                names = set(os.listdir(path))
                recorder.entries[os.path.realpath(path)] = names
                root = os.path.realpath(path)
                for known in list(recorder.durable):  # deleted for good, or in a directory removed for good
                    if known.startswith(root + os.sep):
                        if os.path.relpath(known, root).split(os.sep)[0] not in names:
                            del recorder.durable[known]
            elif os.path.isfile(path):
                try:
                    content = os.pread(fd, os.fstat(fd).st_size, 0)
                except OSError:  # opened write-only (a config file's .tmp): its name reads the same bytes
                    content = Path(path).read_bytes()
                recorder.durable[os.path.realpath(path)] = content

        def fdatasync(fd: int) -> None:
            real_fdatasync(fd)
            record(fd)

        def fsync(fd: int) -> None:
            real_fsync(fd)
            record(fd)

        os.fdatasync, os.fsync = fdatasync, fsync  # type: ignore[assignment]
        try:
            yield self
        finally:
            os.fdatasync, os.fsync = real_fdatasync, real_fsync  # type: ignore[assignment]

    def crash_image(self, store_dir: Path, dest: Path, rng: random.Random) -> None:
        super().crash_image(store_dir, dest, rng)
        if "abort" not in self.entries.get(os.path.realpath(store_dir), set()):
            (dest / "abort").unlink(missing_ok=True)  # created, its directory never synced since
        root = os.path.realpath(store_dir)
        for path, content in self.durable.items():
            target = dest / os.path.relpath(path, root)
            if path.startswith(root + os.sep) and not os.path.exists(path) and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)  # deleted, its directory never synced since: it comes back
        if self.entries_need_sync:
            self._drop_unsynced_entries(Path(root), dest)

    def _drop_unsynced_entries(self, live: Path, dest: Path) -> None:
        for directory, names, files in os.walk(dest):
            rel = os.path.relpath(directory, dest)
            durable = self.entries.get(os.path.realpath(live / rel), set())
            for name in files:
                exempt = rel == "." and name in ("abort", "lock")
                if not exempt and name not in durable:
                    os.unlink(os.path.join(directory, name))  # created, its directory never synced since
            for name in list(names):
                if name not in durable:
                    shutil.rmtree(os.path.join(directory, name))  # with everything in it
                    names.remove(name)


class EveryUnsyncedPageLost(random.Random):
    """For ``crash_image``: every page written since its file's last sync is lost (none survives or tears)."""

    def random(self) -> float:
        return 0.99  # crash_image: a page written since its last sync keeps its durable content
